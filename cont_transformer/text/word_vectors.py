"""Static word vectors as a tagger reads them (``train_pos.py --word-vectors runs/en-vectors``).

``language_modeling/word_vectors.py`` (``scripts/train_word_vectors.py``) trains them on
unlabelled text. A vector folder holds files none of which can run code when read:

* ``word_vectors.safetensors``: one tensor ``vectors`` ``(words, size)``, float32;
* ``words.txt``: the words, one a line, in the rows' order (most frequent first);
* ``word_vectors.json``: how they were trained (for the record; not read here).

(The names are ``model_folders``', where a folder's kind is read from its files.) A
vector that is not finite or holds an entry above :data:`MAX_MAGNITUDE` is refused,
naming the file and the word.

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

from ..runtime.model_folders import VECTORS_FILE, WORDS_FILE

# A larger entry is no vector a tagger can read (it diverges): scripts/train_word_vectors.py's
# have a standard deviation of 1.
MAX_MAGNITUDE = 1e4


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
    if vectors.shape[1] == 0:
        raise WordVectorError(f"word_vectors: {folder / VECTORS_FILE} holds vectors of width 0; train them again")
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
    finite = torch.isfinite(vectors).all(dim=1)
    if not bool(finite.all()):
        row = int((~finite).nonzero()[0])
        raise WordVectorError(
            f"word_vectors: {folder / VECTORS_FILE} holds non-finite values (the vector of {words[row]!r}, "
            f"row {row + 1}); train the vectors again"
        )
    largest = vectors.abs().amax(dim=1)
    if bool((largest > MAX_MAGNITUDE).any()):
        row = int(largest.argmax())
        raise WordVectorError(
            f"word_vectors: {folder / VECTORS_FILE} holds values up to {float(largest[row]):.3g} (the vector of "
            f"{words[row]!r}, row {row + 1}); a tagger reads entries of a few units (those of "
            "scripts/train_word_vectors.py have a standard deviation of 1): train them again or rescale them"
        )
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
