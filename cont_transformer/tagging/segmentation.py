"""Raw text to UD-style sentences of words, with character offsets (any language), for
``Tagger`` and ``tag.py``.

The rules live in ``cont_transformer/text_segmentation.py``, at the top of the package, so
that the pipeline a saved folder carries (remote code, where this package and spaCy may be
absent) splits raw text with the very same code: the tagger's paths give the same words
and sentences (``tests/test_one_tokenizer.py``). Its docstring gives the rules: tuned ones
for English and German, measured against spaCy's rule-based tokenizer and sentencizer on
the UD English-GUM and German-GSD dev texts, and generic Unicode ones for every other
language code (docs/experiments.md, "Tagging text"; ``benchmarks/segmenters.py``).
"""

from __future__ import annotations

import argparse

from ..text_segmentation import (
    GENERIC,
    TUNED_LANGUAGES,
    Sentence,
    check_language,
    rules,
    split_text,
    tokenize_sentences,
    whitespace_sentences,
    word_splitter,
)


def load_segmenter(language: str):
    """Build ``language``'s word splitter now (it is cached), so that a caller timing the
    tokenizer does not count its setup; the splitter."""
    return word_splitter(rules(language))


def language_argument(value: str) -> str:
    """``argparse`` type of a ``--language`` flag: :func:`check_language`'s code, its
    refusal as the flag's one-line error."""
    try:
        return check_language(value)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("language: ")) from None


__all__ = [
    "GENERIC",
    "TUNED_LANGUAGES",
    "Sentence",
    "check_language",
    "language_argument",
    "load_segmenter",
    "rules",
    "split_text",
    "tokenize_sentences",
    "whitespace_sentences",
]
