"""Raw text to UD-style sentences of words, with character offsets (English, German), for
``Tagger`` and ``tag.py``.

The rules live in ``cont_transformer/text_segmentation.py``, at the top of the package, so
that the pipeline a saved folder carries (remote code, where this package and spaCy may be
absent) splits raw text with the very same code: the tagger's paths give the same words
and sentences (``tests/test_one_tokenizer.py``). Its docstring gives the rules; they were
measured against spaCy's rule-based tokenizer and sentencizer, which the tagger used
before, on the UD English-GUM and German-GSD dev texts (docs/experiments.md, "Tagging
text"; ``benchmarks/segmenters.py``).
"""

from __future__ import annotations

from ..text_segmentation import (
    LANGUAGES,
    Sentence,
    check_language,
    split_text,
    tokenize_sentences,
    whitespace_sentences,
    word_splitter,
)


def load_segmenter(language: str):
    """Build ``language``'s word splitter now (it is cached), so that a caller timing the
    tokenizer does not count its setup; the splitter."""
    return word_splitter(check_language(language))


__all__ = [
    "LANGUAGES",
    "Sentence",
    "check_language",
    "load_segmenter",
    "split_text",
    "tokenize_sentences",
    "whitespace_sentences",
]
