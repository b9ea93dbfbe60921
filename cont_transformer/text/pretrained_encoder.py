"""A saved model a run starts from (``--model-name-or-path``: :func:`read_saved_config`), and
a tagger started from a pretrained language model (``train_pos.py --model-name-or-path runs/en-lm``).

The tagger keeps everything the language model learnt: its encoder (the ODE block's
coefficients, the final LayerNorm), the character CNN and the word embeddings. Its
vocabulary is the language model's words, in their order, then the training words the
language model lacks; so a word of the pretraining text that the treebank never shows
keeps its pretrained row (the point of pretraining: these are the words a treebank alone
cannot teach), and a treebank word new to the language model gets a freshly initialised
row. Characters new to the language model likewise get fresh rows of the character
embedding. The heads are new; the masked-word head is dropped.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
from transformers import AutoConfig

from ..configuration_cont_transformer import ContTransformerConfig
from ..modeling_cont_transformer import ContTransformerForMaskedLM, ContTransformerForTokenClassification
from ..pretrained import check_no_custom_code
from ..word_encoding import continuation_prefix
from .tokenization import build_tokenizer, character_ids, training_words

LANGUAGE_MODEL = ContTransformerForMaskedLM.__name__
MODEL_TYPE = ContTransformerConfig.model_type
# The encoder's fields a tagger takes from the language model it starts from.
ENCODER_FIELDS = (
    "hidden_size",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "position_encoding",
    "word_representation",
    "char_embedding_size",
    "char_hidden_size",
    "char_kernel_size",
    "max_word_length",
)


def check_model_location(name: str) -> None:
    """Refuse, naming ``model_name_or_path``, a ``name`` that is a path (absolute, from ``.``
    or ``~``, or of more parts than a Hub id's ``owner/name``) to no folder; transformers
    would take it for a Hub id and say how one is spelt."""
    path = Path(name).expanduser()
    looks_like_path = path.is_absolute() or name.startswith((".", "~")) or len(Path(name).parts) > 2
    if looks_like_path and not path.is_dir():
        raise FileNotFoundError(f"model_name_or_path: no such folder: {name}")


def read_saved_config(name: str):
    """The config of the saved tagger or language model ``name`` (``--model-name-or-path``)
    that a run starts from, read without running code of the folder's; a missing folder, a
    folder asking for code of its own or one of another model type is refused in one line."""
    check_model_location(name)
    check_no_custom_code(name)
    config = AutoConfig.from_pretrained(name, trust_remote_code=False)
    if config.model_type != MODEL_TYPE:
        raise ValueError(
            f"model_name_or_path: {name} holds a {config.model_type!r} model, not a {MODEL_TYPE!r} "
            "tagger or language model"
        )
    return config


def is_language_model(config) -> bool:
    """Whether a saved model's config is a masked language model of this package."""
    return LANGUAGE_MODEL in (getattr(config, "architectures", None) or [])


def load_language_model(folder: str | os.PathLike) -> ContTransformerForMaskedLM:
    """The masked language model saved in ``folder`` (a folder asking for code of its own is refused)."""
    check_no_custom_code(folder)
    return ContTransformerForMaskedLM.from_pretrained(folder)


def language_model_words(language_model, tokenizer) -> list[str]:
    """The language model's vocabulary words (its whole words, no special token), in id order."""
    vocab = tokenizer.get_vocab()
    return sorted(training_words(tokenizer, language_model), key=vocab.__getitem__)


def extended_tokenizer(language_model, tokenizer, words):
    """A tokenizer over the language model's words (same ids) and then the ``words`` it lacks."""
    ordered = language_model_words(language_model, tokenizer)
    known = set(ordered)
    new = [word for word in dict.fromkeys(words) if word not in known]
    spelling = language_model.config.word_representation != "word"
    return build_tokenizer([*ordered, *new], spelling=spelling, mask=tokenizer.mask_token is not None)


def _rows(target: torch.Tensor, source: torch.Tensor, new_ids: dict, old_ids: dict) -> int:
    """Copy ``source``'s row of each key of ``old_ids`` into ``target``'s row of the same key,
    where ``target`` has that row (a tagger's word embeddings may end before its pieces and
    its vectors' words: ``config.num_word_embeddings``; the language model's words all fit)."""
    pairs = [(new_ids[k], old) for k, old in old_ids.items() if new_ids.get(k, len(target)) < len(target)]
    index = torch.tensor(pairs, dtype=torch.long).reshape(-1, 2)
    target[index[:, 0]] = source[index[:, 1]].to(target.dtype)
    return len(pairs)


@torch.no_grad()
def tagger_from_language_model(
    language_model: ContTransformerForMaskedLM,
    old_tokenizer,
    config: ContTransformerConfig,
    new_tokenizer,
    spelling: dict | None,
) -> ContTransformerForTokenClassification:
    """A new tagger (``config``, ``new_tokenizer``'s vocabulary and ``spelling`` tables) whose
    encoder, character CNN and word embeddings are the language model's (module docstring)."""
    tagger = ContTransformerForTokenClassification(config)
    embeddings = tagger.cont_transformer.embeddings
    if spelling is not None:
        embeddings.set_spelling(**spelling)
    source = language_model.cont_transformer.state_dict()
    target = tagger.cont_transformer.state_dict()
    remapped = {"embeddings.word_embeddings.weight", "embeddings.characters.embedding.weight"}
    spelling_buffers = {"piece_characters", "piece_lengths", "continuation", "whole_word", "word_dropout"}
    for key, value in source.items():
        if key in remapped or key.rsplit(".", 1)[-1] in spelling_buffers:
            continue
        if key not in target or target[key].shape != value.shape:
            raise ValueError(f"model_name_or_path: the language model's {key} does not fit the tagger")
        target[key].copy_(value)
    # Rows matched by text; a continuation piece under its new tokenizer's prefix (a language model
    # saved with the old " ##" prefix gives its pieces' rows to the new "##" ones).
    old_prefix, new_prefix = continuation_prefix(old_tokenizer), continuation_prefix(new_tokenizer)
    old_vocab = {
        new_prefix + token[len(old_prefix) :] if token.startswith(old_prefix) else token: index
        for token, index in old_tokenizer.get_vocab().items()
    }
    _rows(
        target["embeddings.word_embeddings.weight"],
        source["embeddings.word_embeddings.weight"],
        new_tokenizer.get_vocab(),
        old_vocab,
    )
    if "embeddings.characters.embedding.weight" in source:
        old_chars, new_chars = character_ids(old_tokenizer), character_ids(new_tokenizer)
        reserved = {i: i for i in range(min(old_chars.values(), default=3))}
        _rows(
            target["embeddings.characters.embedding.weight"],
            source["embeddings.characters.embedding.weight"],
            {**reserved, **new_chars},
            {**reserved, **old_chars},
        )
    return tagger


def freeze_rows(weight: torch.nn.Parameter, rows) -> None:
    """Keep ``rows`` of ``weight`` as they are in training: their gradient is zeroed (give
    the parameter no weight decay, which would still shrink them)."""
    keep = torch.ones(weight.shape[0], 1, dtype=weight.dtype, device=weight.device)
    keep[torch.as_tensor(list(rows), dtype=torch.long, device=weight.device)] = 0
    weight.register_hook(lambda grad: grad * keep.to(grad.device, grad.dtype))
