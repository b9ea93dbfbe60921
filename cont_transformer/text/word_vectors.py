"""Static word vectors as a tagger reads them (``train_pos.py --word-vectors runs/en-vectors``).

``language_modeling/word_vectors.py`` (``scripts/train_word_vectors.py``) trains them on
unlabelled text. A vector folder holds files none of which can run code when read:

* ``word_vectors.safetensors``: one tensor ``vectors`` ``(words, size)``, float32;
* ``words.txt``: the words, one a line, in the rows' order (most frequent first);
* ``word_vectors.json``: how they were trained (for the record; not read here).

A new tagger's vocabulary is its training words and then the vectors' words it lacks;
the model keeps, fixed, a vector per vocabulary id (``WordRepresentation.static_vectors``):
what the text taught of a word the treebank never shows (docs/design.md §6).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import torch
from safetensors.torch import load_file

VECTORS_FILE = "word_vectors.safetensors"
WORDS_FILE = "words.txt"
SETTINGS_FILE = "word_vectors.json"


class WordVectorError(ValueError):
    """A vector folder that cannot be read, named in the message."""


def load_word_vectors(folder: str | os.PathLike) -> tuple[list[str], torch.Tensor]:
    """The words and their vectors ``(words, size)`` of a vector folder, checked: one word
    a row, no word twice, no empty word, finite values."""
    folder = Path(folder)
    for name in (VECTORS_FILE, WORDS_FILE):
        if not (folder / name).is_file():
            raise WordVectorError(f"word_vectors: {folder} has no {name} (make it with scripts/train_word_vectors.py)")
    try:
        vectors = load_file(str(folder / VECTORS_FILE)).get("vectors")
    except Exception as err:  # noqa: BLE001 (a damaged file: one line)
        raise WordVectorError(f"word_vectors: {folder / VECTORS_FILE} cannot be read ({err})") from None
    if vectors is None or vectors.dim() != 2 or not vectors.is_floating_point():
        raise WordVectorError(f"word_vectors: {folder / VECTORS_FILE} holds no 2-d float tensor 'vectors'")
    try:
        words = (folder / WORDS_FILE).read_text(encoding="utf-8").split("\n")
    except UnicodeDecodeError:
        raise WordVectorError(f"word_vectors: {folder / WORDS_FILE} is not UTF-8 text") from None
    if words and words[-1] == "":
        words.pop()
    if len(words) != vectors.shape[0]:
        raise WordVectorError(
            f"word_vectors: {folder / WORDS_FILE} has {len(words)} words for {vectors.shape[0]} vectors"
        )
    for number, word in enumerate(words, 1):
        if not word or word != word.strip() or any(c.isspace() for c in word):
            raise WordVectorError(f"word_vectors: {folder / WORDS_FILE}:{number}: not one word")
    if len(set(words)) != len(words):
        raise WordVectorError(f"word_vectors: {folder / WORDS_FILE} lists a word twice")
    if not bool(torch.isfinite(vectors).all()):
        raise WordVectorError(f"word_vectors: {folder / VECTORS_FILE} holds non-finite values")
    return words, vectors.float()


def vector_table(
    vocab: dict[str, int], size: int, words: Sequence[str], vectors: torch.Tensor
) -> tuple[torch.Tensor, int]:
    """The ``(size, vector size)`` table of a model's static vectors: row ``vocab[word]`` is
    ``word``'s vector, zeros for ids without one; and how many ids have one."""
    table = torch.zeros(size, vectors.shape[1])
    pairs = [(vocab[w], i) for i, w in enumerate(words) if w in vocab]
    if pairs:
        index = torch.tensor(pairs, dtype=torch.long)
        table[index[:, 0]] = vectors[index[:, 1]]
    return table, len(pairs)
