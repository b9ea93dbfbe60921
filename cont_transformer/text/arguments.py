"""The continuous transformer encoder's arguments, shared by the tagger and the language model.

:class:`EncoderArguments` holds the encoder's sizes and input representation (names match
``ContTransformerConfig``); :func:`encoder_config` turns them, a tokenizer and the
refinement schedule's first K and N_T into config fields; :func:`adopt_saved_sizes` makes
fine-tuning (or pretraining further) keep a saved model's continuous choices.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from transformers import AutoConfig, PretrainedConfig

from ..basis import get_basis, refined_num_steps
from ..configuration_cont_transformer import ContTransformerConfig
from ..pretrained import check_no_custom_code
from ..training.arguments import flag_help
from ..training.schedules import parse_steps
from .pretrained_encoder import ENCODER_FIELDS, is_language_model

MODEL_TYPE = "cont_transformer"
# The learning-rate schedule, as transformers names it (--lr-scheduler-type).
INVERSE_SQRT = "inverse_sqrt"
INVERSE_SQRT_DESCRIPTION = (
    "the recipe's schedule is inverse_sqrt (a linear warm-up over --warmup-steps, then 1/sqrt(step)) "
    "with a linear cool-down over --cooldown-steps"
)


@dataclass
class EncoderArguments:
    """The continuous transformer encoder's sizes and input representation, shared by the
    tagger's and the language model's arguments (names match ``ContTransformerConfig``)."""

    hidden_size: int = field(default=128, **flag_help("embedding and ODE state width"))
    num_attention_heads: int = field(default=1, **flag_help("attention heads"))
    intermediate_size: int = field(default=128, **flag_help("MLP hidden width"))
    hidden_act: str = field(default="gelu", **flag_help("MLP activation: gelu or relu"))
    hidden_dropout_prob: float = field(
        default=0.1, **flag_help("dropout on embeddings, rate outputs and before the classifier")
    )
    attention_probs_dropout_prob: float = field(default=0.1, **flag_help("dropout on attention probabilities"))
    position_encoding: str = field(default="sinusoidal", **flag_help("sinusoidal or learned"))
    word_representation: str = field(
        default="word+chars",
        **flag_help(
            "word+chars: word embeddings plus a character CNN over the spelling (unknown "
            "words are read from their form); word: the paper's word-only model; chars: "
            "the character CNN alone"
        ),
    )
    char_embedding_size: int = field(default=32, **flag_help("character embedding width"))
    char_hidden_size: int = field(
        default=ContTransformerConfig.char_hidden_size,
        **flag_help(
            "filters of the character CNN (512: words never seen in training are tagged "
            "best; docs/experiments.md, the screening)"
        ),
    )
    char_kernel_size: int = field(default=3, **flag_help("width (odd) of the character CNN"))
    max_word_length: int = field(
        default=20, **flag_help("characters of a word the CNN reads (a longer word: first and last)")
    )
    max_length: int = field(
        default=128,
        **flag_help(
            "longest training sentence in words, root included (longer: truncated; "
            "evaluation scores long sentences in full, in windows)"
        ),
    )

    def encoder_config(self) -> dict:
        """The ``ContTransformerConfig`` fields these arguments set (``max_length`` is the
        config's ``max_position_embeddings``)."""
        names = [f.name for f in dataclasses.fields(EncoderArguments) if f.name != "max_length"]
        return {**{name: getattr(self, name) for name in names}, "max_position_embeddings": self.max_length}


def encoder_config(args, tokenizer, language: str | None, char_vocab_size: int) -> dict:
    """The fields of a ``ContTransformerConfig`` that the encoder's arguments (a tagger's or a
    language model's), its tokenizer and the refinement schedule's initial K and N_T set."""
    schedule = args.refinement_schedule
    return {
        **args.encoder_config(),
        "vocab_size": len(tokenizer),
        "basis": args.basis,
        "num_basis": schedule.initial_num_basis,
        "num_steps": schedule.initial_num_steps,
        "scheme": args.scheme,
        "time_horizon": args.time_horizon,
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": tokenizer.bos_token_id,
        "unk_token_id": tokenizer.unk_token_id,
        "language": language,
        "char_vocab_size": char_vocab_size,
    }


def check_model_location(name: str) -> None:
    """Refuse, naming ``model_name_or_path``, a ``name`` that is a path (absolute, from ``.``
    or ``~``, or of more parts than a Hub id's ``owner/name``) to no folder; transformers
    would take it for a Hub id and say how one is spelt."""
    path = Path(name).expanduser()
    looks_like_path = path.is_absolute() or name.startswith((".", "~")) or len(Path(name).parts) > 2
    if looks_like_path and not path.is_dir():
        raise FileNotFoundError(f"model_name_or_path: no such folder: {name}")


def adopt_saved_sizes(args) -> PretrainedConfig:
    """Fine-tuning (and pretraining further) keeps the saved model's continuous choices:
    ``args`` (a tagger's or a language model's arguments) take the basis, scheme, time
    horizon, K and N_T of the model in ``args.model_name_or_path``, grown by the refinements
    ``args.refine_steps`` asks for, and a language model's encoder sizes. Returns the saved
    model's config; a folder of another model type is refused in one line."""
    check_model_location(args.model_name_or_path)
    check_no_custom_code(args.model_name_or_path)
    config = AutoConfig.from_pretrained(args.model_name_or_path, trust_remote_code=False)
    if config.model_type != MODEL_TYPE:
        raise ValueError(
            f"model_name_or_path: {args.model_name_or_path} holds a {config.model_type!r} "
            f"model, not a {MODEL_TYPE!r} tagger or language model"
        )
    if is_language_model(config):  # a pretrained encoder: its sizes are kept
        for name in ENCODER_FIELDS:
            setattr(args, name, getattr(config, name))
    current = get_basis(config.basis, config.num_basis, config.time_horizon)
    refinements = len(parse_steps(args.refine_steps))
    for _ in range(refinements):
        current = current.refine()
    args.basis, args.scheme, args.time_horizon = config.basis, config.scheme, config.time_horizon
    args.num_basis, args.num_steps = current.num_basis, refined_num_steps(config.num_steps, refinements)
    return config
