"""Score a system CoNLL-U against gold the way the CoNLL 2018 UD shared task does.

The algorithm (character-offset alignment of tokens, multiword tokens, the longest
common subsequence inside mismatched regions) is written once, in
:mod:`.metrics.conll18.ud_eval` (standard library only, so scoring loads neither
`evaluate` nor `datasets`; the local `evaluate` metric module :mod:`.metrics.conll18`
wraps it; its docstring describes the algorithm); this module applies it to
:class:`ConlluDocument` s and names the rows by the package's column names:

* ``tokens``, ``sentences``, ``words``: F1 of spans / aligned words;
* ``upos``, ``xpos``, ``feats`` (CoNLL 2018's UFeats: universal features,
  order-insensitive), ``lemma`` (Lemmas) and ``alltags`` (UPOS, XPOS and UFeats all
  right): aligned words whose column also agrees, over system words (precision) and
  gold words (recall); ``aligned_accuracy`` is the same over aligned words only (what a
  tagger gets right of the words it was given correctly).

It counts as UD's own ``udeval`` (PyPI ``udtools``, the official script's successor) does,
row for row (``tests/test_ud_tools.py``; docs/experiments.md, "The scorer against UD's
udeval"), which cannot take its place: ``udeval`` reads only files whose every word has a
HEAD, and a tagger writes ``_`` there.
"""

from __future__ import annotations

from collections.abc import Sequence

from .conllu_document import ConlluDocument
from .data import TAG_COLUMNS
from .metrics.conll18.ud_eval import counts, scores

UNITS = ("tokens", "sentences", "words")
# The package's names of the CoNLL 2018 rows.
ROWS = {
    "tokens": "Tokens",
    "sentences": "Sentences",
    "words": "Words",
    "upos": "UPOS",
    "xpos": "XPOS",
    "feats": "UFeats",
    "alltags": "AllTags",
    "lemma": "Lemmas",
}


def scored_columns(columns: Sequence[str]) -> tuple[str, ...]:
    """The rows to report for a tagger predicting ``columns``: each of them, and
    ``alltags`` when it predicts UPOS, XPOS and features."""
    wanted = set(columns) | ({"alltags"} if {"upos", "xpos", "feats"} <= set(columns) else set())
    return tuple(c for c in ROWS if c in wanted and c not in UNITS)


def score(
    gold: ConlluDocument, system: ConlluDocument, columns: Sequence[str] = TAG_COLUMNS
) -> dict[str, dict[str, float]]:
    """Tokens, sentences, words and the ``columns`` (``upos``, ``xpos``, ``feats``,
    ``lemma``, ``alltags``) of ``system`` against ``gold``.

    Returns ``{"tokens" | "sentences" | "words" | column: {"precision", "recall", "f1",
    "gold", "system"}}``, the column entries with ``aligned_accuracy``.
    Raises ``ValueError`` naming both files when their texts differ.
    """
    unknown = [c for c in columns if c not in ROWS]
    if unknown:
        raise ValueError(f"columns: {unknown[0]!r} is not one of {[r for r in ROWS if r not in UNITS]}")
    try:
        rows = counts("\n".join(gold.lines), "\n".join(system.lines))
    except ValueError as err:
        raise ValueError(f"{gold.name} and {system.name}: {err}") from err
    result = {}
    for name in (*UNITS, *columns):
        values = scores(rows[ROWS[name]])
        keys = ["precision", "recall", "f1", "gold", "system"]
        result[name] = {k: values[k] for k in keys + ([] if values["aligned"] is None else ["aligned_accuracy"])}
    return result


def format_scores(result: dict[str, dict[str, float]]) -> str:
    """A small table of :func:`score`'s result (percentages)."""
    lines = [f"{'':10} {'precision':>9} {'recall':>7} {'F1':>7} {'aligned acc.':>12}"]
    for unit, values in result.items():
        aligned = values.get("aligned_accuracy")
        lines.append(
            f"{unit:10} {100 * values['precision']:9.2f} {100 * values['recall']:7.2f} "
            f"{100 * values['f1']:7.2f} {'' if aligned is None else f'{100 * aligned:12.2f}'}"
        )
    return "\n".join(lines)
