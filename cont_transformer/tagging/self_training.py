"""Self-training: a saved tagger's tags of unlabelled text, as more training sentences.

A teacher (a tagger of this package, e.g. the recommended English recipe's) tags lines
drawn from unlabelled text (``--silver-text-files``, plain or gzip, checked as
pretraining checks them); its predictions of every column it has become "silver"
sentences, which join the treebank's gold train split. The student, a new tagger, then
trains on both as one split. Its dev scores, its choice of columns and the "unseen"
metric (words absent from the treebank's train split) are the treebank's alone.

Lines. Every line of 3 to :data:`MAX_LINE_WORDS` whitespace-separated words (a sentence,
rarely a paragraph) may be drawn; ``num_lines`` of them are drawn by reservoir sampling
seeded by ``seed``: the text is read as a stream (after the check, which reads it too),
and only the sample is held. The teacher splits each line into words as ``tag.py --input-format lines`` does (one
sentence a line; ``didn't`` → ``did`` ``n't``) and tags them; the silver sentences are
its words and tags, in the order of the text.
"""

from __future__ import annotations

import os
import random
from collections.abc import Sequence

import torch

from ..language_modeling.text import _open, text_files
from ..text_segmentation import tokenize_sentences
from .tag import Tagger

MIN_LINE_WORDS = 3  # shorter lines are headings, list items, speaker names
MAX_LINE_WORDS = 60  # longer lines are paragraphs, which the teacher would tag as one sentence
SILVER_COLUMNS = ("upos", "xpos", "feats", "lemma")


def sample_lines(patterns: Sequence[str], num_lines: int, seed: int) -> list[str]:
    """``num_lines`` lines of ``patterns``' files (globs allowed; each checked first) with
    :data:`MIN_LINE_WORDS` to :data:`MAX_LINE_WORDS` words, uniformly at random by
    ``seed``, in the order of the text; all of them when there are fewer."""
    rng = random.Random(seed)
    reservoir: list[tuple[int, str]] = []
    seen = 0
    for path in text_files(patterns):
        with _open(path) as stream:
            for line in stream:
                line = line.strip()
                if not MIN_LINE_WORDS <= len(line.split()) <= MAX_LINE_WORDS:
                    continue
                if len(reservoir) < num_lines:
                    reservoir.append((seen, line))
                else:
                    slot = rng.randrange(seen + 1)
                    if slot < num_lines:
                        reservoir[slot] = (seen, line)
                seen += 1
    return [line for _, line in sorted(reservoir)]


def silver_sentences(
    teacher: str | os.PathLike,
    patterns: Sequence[str],
    num_lines: int,
    seed: int,
    device: str | torch.device | None = None,
) -> tuple[list[dict[str, list[str]]], tuple[str, ...]]:
    """The teacher's tags of :func:`sample_lines`: sentences ``{"tokens", "upos", "xpos",
    "feats", "lemma"}`` as :func:`~.data.read_conllu` reads them (``"_"`` in a column the
    teacher does not predict), and the columns it predicts."""
    lines = sample_lines(patterns, num_lines, seed)
    tagger = Tagger.from_pretrained(teacher, device=device)
    words = [sentence.words(line) for sentence, line in zip(tokenize_sentences(lines, tagger.language), lines)]
    sentences = []
    for sentence, columns in zip(words, tagger.predict_columns(words)):
        blank = ["_"] * len(sentence)
        sentences.append({"tokens": sentence, **{column: columns.get(column, blank) for column in SILVER_COLUMNS}})
    return sentences, tuple(column for column in SILVER_COLUMNS if column in tagger.columns)
