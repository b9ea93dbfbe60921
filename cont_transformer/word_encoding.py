"""Words to token ids, each given word kept whole: written once for the package's ``Tagger``
and for the pipeline a saved tagger carries.

:func:`encode_words` keeps each given word whole (the saved tokenizer's raw-text
pre-tokenizer set aside); :func:`word_shortener` cuts a word too long to spell quickly
without changing what a spelling model computes for it; :func:`continuation_prefix` reads
the prefix of a tokenizer's continuation pieces.

Remote code (``trust_remote_code=True``) copies a saved folder's model and pipeline files
and every file they reach through one-level relative imports, flat; this module is one of
them, so it imports only the standard library, torch, ``tokenizers`` and the package root's
own carried modules (docs/design.md §10).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tokenizers import models, pre_tokenizers

# The continuation prefix of spelling tokenizers whose WordPiece model names none (folders
# whose tokenizer was built with a spaced prefix, ``text/tokenization.py``): a space, which
# no word contains, so that no word could be read as a continuation piece.
SPACED_CONTINUATION_PREFIX = " ##"


# What stands for the spaces inside a word (Vietnamese writes a word's syllables apart:
# ``học sinh``) in a tokenizer's vocabulary, so that such a word is one entry: a tokenizer
# built from words with spaces holds it (text/tokenization.py), and then every word given
# to it is read with its inner spaces joined by it (:func:`joined_words`).
SPACE_IN_WORD = "\u2581"
_SPACES = re.compile(r"\s+")


def joined(word: str) -> str:
    """``word`` with each run of spaces inside it as :data:`SPACE_IN_WORD` (``học sinh`` ->
    ``học▁sinh``): the vocabulary entry of a word written with spaces."""
    return _SPACES.sub(SPACE_IN_WORD, word.strip()) or word


def joined_words(tokenizer, words: Sequence[str]) -> list[str]:
    """``words``, each :func:`joined` for a ``tokenizer`` whose vocabulary holds
    :data:`SPACE_IN_WORD`; else as they are (each piece of a spaced word is then looked up
    alone, as a tokenizer built before words kept their spaces reads it)."""
    if not any(" " in word or not word.isprintable() for word in words):
        return list(words)
    if tokenizer.convert_tokens_to_ids(SPACE_IN_WORD) in (None, getattr(tokenizer, "unk_token_id", None)):
        return list(words)
    return [joined(word) for word in words]


def continuation_prefix(tokenizer) -> str:
    """The prefix that marks ``tokenizer``'s continuation pieces: its WordPiece model's
    ``continuing_subword_prefix`` (``"##"`` for a spelling tokenizer built now, a longer run
    of ``#`` when a training word starts with ``##``), else :data:`SPACED_CONTINUATION_PREFIX`,
    which no entry of any other tokenizer starts with (a word-level vocabulary, a slow
    tokenizer, an empty prefix), so stripping it changes nothing there."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    model = getattr(backend, "model", None)
    prefix = model.continuing_subword_prefix if isinstance(model, models.WordPiece) else None
    return prefix or SPACED_CONTINUATION_PREFIX


def encode_words(tokenizer, sentences: Sequence[Sequence[str]], **options):
    """``tokenizer(sentences, is_split_into_words=True, **options)`` with each given word kept whole: the
    raw-text pre-tokenizer (``text/tokenization.py``, ``ud_pre_tokenizer``) is replaced by a whitespace split
    meanwhile, and a word's inner spaces are joined where the vocabulary holds such words
    (:func:`joined_words`).

    A given word that starts with the continuation prefix (``##x`` for a tokenizer whose prefix is
    ``##``; no training word does) is encoded as ``[UNK]``: WordPiece would match a continuation piece
    at its start, and the model, which finds words by their continuation pieces, would read it as the
    end of the word before. The raw-text pre-tokenizer never makes such a word (it splits ``#`` off)."""
    prefix, unknown = continuation_prefix(tokenizer), getattr(tokenizer, "unk_token", None)
    sentences = [joined_words(tokenizer, words) for words in sentences]
    if unknown is not None and not prefix[:1].isspace():
        sentences = [[unknown if word.startswith(prefix) else word for word in words] for words in sentences]
    backend = getattr(tokenizer, "backend_tokenizer", None)
    saved = backend.pre_tokenizer if backend is not None else None
    if backend is not None:
        backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    try:
        return tokenizer(sentences, is_split_into_words=True, **options)
    finally:
        if backend is not None:
            backend.pre_tokenizer = saved


def word_shortener(tokenizer, max_word_length: int) -> WordShortener | None:
    """A function that cuts a word too long to tokenize quickly, without changing what a
    spelling model computes for it; None for a tokenizer that is not WordPiece (a
    word-level vocabulary looks a word up in constant time) or whose continuation pieces
    are not single characters (not a spelling tokenizer: its own ``max_input_chars_per_word``
    bounds the time, and a cut word would split into other pieces).

    A word longer than ``limit`` (one more than the longest vocabulary entry, and at
    least ``max_word_length``, the characters the model reads) keeps its first ``limit -
    limit // 2`` and last ``limit // 2`` characters: the model reads the same clipped
    spelling (``word_representation.clip_spelling``) and the word is still no training
    word. A character the vocabulary lacks, from the cut middle, is kept so that such a
    word stays ``[UNK]``.
    """
    backend = tokenizer.backend_tokenizer.model if tokenizer.is_fast else None
    if not isinstance(backend, models.WordPiece):
        return None
    special, prefix = set(tokenizer.all_special_tokens), continuation_prefix(tokenizer)
    vocab = [t for t in tokenizer.get_vocab() if t not in special]
    if any(len(t) - len(prefix) > 1 for t in vocab if t.startswith(prefix)):
        return None  # not a spelling tokenizer (pieces of several characters): cutting would change its pieces
    texts = [t.removeprefix(prefix) for t in vocab]
    alphabet = set("".join(texts))
    limit = max(1 + max(map(len, texts), default=0), max_word_length)
    limit = min(limit, backend.max_input_chars_per_word - 1)
    return WordShortener(limit, alphabet)


class WordShortener:
    """Cuts a word longer than ``limit`` to its first ``limit - limit // 2`` and last
    ``limit // 2`` characters, keeping the first character of the cut middle that is not in
    ``alphabet`` (see :func:`word_shortener`). A class, not a closure, so that a tagger
    holding one pickles (worker processes, Ray, Spark)."""

    def __init__(self, limit: int, alphabet: set[str]):
        self.limit, self.alphabet = limit, alphabet
        self.head, self.tail = limit - limit // 2, limit // 2

    def __call__(self, word: str) -> str:
        if len(word) <= self.limit:
            return word
        middle = word[self.head : len(word) - self.tail]
        unknown = next((c for c in middle if c not in self.alphabet), "")
        return word[: self.head] + unknown + word[len(word) - self.tail :]
