"""Self-training: a saved tagger's tags of unlabelled text, as more training sentences.

A teacher (a tagger of this package, e.g. the recommended English recipe's) tags lines
drawn from unlabelled text (``--silver-text-files``, plain or gzip, checked as
pretraining checks them); its predictions of every column it has become "silver"
sentences, which join the treebank's gold train split. The student, a new tagger, then
trains on both as one split. Its dev scores, its choice of columns and the "unseen"
metric (words absent from the treebank's train split) are the treebank's alone.

Several teachers (e.g. one recipe's runs with different seeds) vote, word by word: the
(UPOS, XPOS, FEATS) triple most of them give wins as one (a consistent bundle, as joint
decoding keeps it), the lemma most give wins on its own (as does the DEPREL, when the
teachers learnt it: an auxiliary column, see ``columns.py``), and a tie goes to the teacher
named first. Three seeds of the pretrained English recipe tag GUM dev by vote 0.2-0.4
points better in UPOS, XPOS, UFeats and AllTags than each alone (docs/experiments.md).
With ``agreement="all"`` (``--silver-agreement all``) the vote becomes a filter, as in
tri-training: a sentence is kept only when every teacher gives every word the same
(UPOS, XPOS, FEATS) triple (lemmas still go by majority), so fewer than ``num_lines``
silver sentences remain, and the ones kept are those the teachers are surest of.

Lines. Every line of 3 to :data:`MAX_LINE_WORDS` whitespace-separated words (a sentence,
rarely a paragraph) may be drawn; ``num_lines`` of them are drawn by reservoir sampling
seeded by ``seed``: the text is read as a stream (after the check, which reads it too),
and only the sample is held. Text without one such line is refused, naming the files and
the window, as is a unanimous vote that keeps no sentence: a student never trains on
nothing while it was asked to self-train. The teacher splits each line into words as ``tag.py --input-format lines`` does (one
sentence a line; ``didn't`` → ``did`` ``n't``) and tags them; the silver sentences are
its words and tags, in the order of the text.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from collections.abc import Sequence

import torch

from ..configuration_cont_transformer import JOINT_COLUMNS
from ..text.reading import open_text, text_files
from ..text_segmentation import tokenize_sentences
from .tag import Tagger

MIN_LINE_WORDS = 3  # shorter lines are headings, list items, speaker names
MAX_LINE_WORDS = 60  # longer lines are paragraphs, which the teacher would tag as one sentence
SILVER_COLUMNS = ("upos", "xpos", "feats", "lemma", "deprel")
_ALONE = tuple(c for c in SILVER_COLUMNS if c not in JOINT_COLUMNS)  # voted word by word, each on its own
AGREEMENTS = ("majority", "all")  # --silver-agreement: the teachers' vote decides, or only unanimity keeps a sentence


def sample_lines(patterns: Sequence[str], num_lines: int, seed: int) -> list[str]:
    """``num_lines`` lines of ``patterns``' files (globs allowed; each checked first) with
    :data:`MIN_LINE_WORDS` to :data:`MAX_LINE_WORDS` words, uniformly at random by
    ``seed``, in the order of the text; all of them when there are fewer. Raises
    ``ValueError`` naming the files when none has such a line."""
    rng = random.Random(seed)
    reservoir: list[tuple[int, str]] = []
    seen = 0
    files = text_files(patterns)
    for path in files:
        with open_text(path) as stream:
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
    if not seen:
        named = ", ".join(str(path) for path in files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        raise ValueError(
            f"--silver-text-files: no line of {named} has {MIN_LINE_WORDS} to {MAX_LINE_WORDS} words, the "
            "lines self-training draws (one sentence a line); give such text or leave out --teacher"
        )
    return [line for _, line in sorted(reservoir)]


def silver_sentences(
    teachers: str | os.PathLike | Sequence[str | os.PathLike],
    patterns: Sequence[str],
    num_lines: int,
    seed: int,
    device: str | torch.device | None = None,
    agreement: str = "majority",
) -> tuple[list[dict[str, list[str]]], tuple[str, ...]]:
    """The teachers' tags of :func:`sample_lines` (one teacher, or several that vote, or
    with ``agreement="all"`` only the sentences they agree on: see above): sentences
    ``{"tokens", *SILVER_COLUMNS}`` as :func:`~.data.read_conllu` reads them (``"_"`` in
    a column that not every teacher predicts), and the columns every teacher predicts."""
    check_agreement(agreement)
    if isinstance(teachers, (str, os.PathLike)):
        teachers = [teachers]
    lines = sample_lines(patterns, num_lines, seed)
    words, votes, columns = None, [], None
    for teacher in teachers:  # one at a time: only one teacher's model is held
        # float32, as the model was trained and scored: the same silver tags on any CPU
        tagger = Tagger.from_pretrained(teacher, device=device, dtype=torch.float32)
        if words is None:  # the first teacher's language splits the lines into words
            words = [sentence.words(line) for sentence, line in zip(tokenize_sentences(lines, tagger.language), lines)]
        votes.append(tagger.predict_columns(words, auxiliary=True))
        known = {column for column in SILVER_COLUMNS if column in tagger.columns + tagger.auxiliary_columns}
        columns = known if columns is None else columns & known
        del tagger
    sentences = []
    for i, sentence in enumerate(words):
        blank = ["_"] * len(sentence)
        tags = [
            {column: predicted[i].get(column, blank) if column in columns else blank for column in SILVER_COLUMNS}
            for predicted in votes
        ]
        if agreement == "all" and not unanimous(tags):
            continue
        sentences.append({"tokens": sentence, **vote(tags)})
    if not sentences:
        raise ValueError(
            f"--silver-agreement all: the teachers agree on no sentence of the {len(words)} drawn from "
            "--silver-text-files; use --silver-agreement majority or draw more with --silver-lines"
        )
    return sentences, tuple(column for column in SILVER_COLUMNS if column in columns)


def vote(tags: Sequence[dict[str, list[str]]]) -> dict[str, list[str]]:
    """One sentence's columns (:data:`SILVER_COLUMNS`) from several teachers' (in their
    order): per word, the (UPOS, XPOS, FEATS) triple most of them give, and the lemma (and
    the DEPREL) most give; a tie goes to the earliest teacher among the tied."""
    words = range(len(tags[0]["lemma"]))
    triples = [_most_common([tuple(t[c][j] for c in JOINT_COLUMNS) for t in tags]) for j in words]
    return {
        **{column: [triple[i] for triple in triples] for i, column in enumerate(JOINT_COLUMNS)},
        **{column: [_most_common([t[column][j] for t in tags]) for j in words] for column in _ALONE},
    }


def unanimous(tags: Sequence[dict[str, list[str]]]) -> bool:
    """Whether every teacher gives every word of a sentence the same (UPOS, XPOS, FEATS)."""
    return all(t[column] == tags[0][column] for t in tags[1:] for column in JOINT_COLUMNS)


def check_agreement(agreement: str) -> None:
    """Refuse, naming ``silver_agreement``, a value other than :data:`AGREEMENTS`."""
    if agreement not in AGREEMENTS:
        raise ValueError(f"silver_agreement: one of {', '.join(AGREEMENTS)}, got {agreement!r}")


def _most_common(values: Sequence):
    """The value given most often; of the tied, the one given first."""
    counts = Counter(values)
    best = max(counts.values())
    return next(value for value in values if counts[value] == best)
