"""The continuous transformer encoder's arguments, shared by the tagger and the language model.

:class:`EncoderArguments` holds the encoder's sizes and input representation (names match
``ContTransformerConfig``); :func:`encoder_config` turns them, a tokenizer and the
refinement schedule's first K and N_T into config fields; :meth:`EncoderArguments.adopt_saved`
makes fine-tuning (or pretraining further) keep a saved model's continuous choices, given
its config (the run's start reads it: no argument reads a folder).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..basis import get_basis, refined_num_steps
from ..configuration_cont_transformer import ContTransformerConfig
from ..training.arguments import flag_help
from .pretrained_encoder import ENCODER_FIELDS, is_language_model

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

    @property
    def sizes_pending(self) -> bool:
        """A run that starts from a saved model (``model_name_or_path``, a field of the
        arguments these extend) takes its sizes from it (:meth:`adopt_saved`)."""
        return getattr(self, "model_name_or_path", None) is not None

    def adopt_saved(self, config) -> None:
        """Fine-tuning (and pretraining further) keeps the saved model's continuous choices:
        the basis, scheme, time horizon, K and N_T of ``config`` (the model the run starts
        from, :func:`~.pretrained_encoder.read_saved_config`), grown by the refinements
        ``refine_steps`` asks for, and a language model's encoder sizes; then checked
        (``adopt_sizes`` of the run's arguments, which these extend)."""
        if is_language_model(config):  # a pretrained encoder: its sizes are kept
            for name in ENCODER_FIELDS:
                setattr(self, name, getattr(config, name))
        current = get_basis(config.basis, config.num_basis, config.time_horizon)
        for _ in self.refine_steps:
            current = current.refine()
        steps = refined_num_steps(config.num_steps, len(self.refine_steps))
        self.adopt_sizes(config.basis, config.scheme, config.time_horizon, current.num_basis, steps)


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
