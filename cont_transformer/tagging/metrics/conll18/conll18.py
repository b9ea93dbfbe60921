"""The CoNLL 2018 UD shared task's evaluation of tokens, words and tags, as a local
`evaluate` metric module.

Load it by path (no Hub): ``evaluate.load(".../tagging/metrics/conll18")``. The algorithm
lives beside it in ``ud_eval.py`` (standard library only; its docstring describes it),
which `evaluate` copies with this file into its module cache: neither imports anything
from the package (``cont_transformer.tagging.scoring`` imports ``ud_eval`` itself, without
`evaluate`).

``compute(predictions=[system CoNLL-U text, ...], references=[gold CoNLL-U text, ...])``
scores each system document against its gold one and adds the counts over the documents.
The rows: ``Tokens``, ``Sentences``, ``Words``, ``UPOS``, ``XPOS``, ``UFeats``,
``AllTags`` and ``Lemmas``, each ``{"precision", "recall", "f1", "aligned_accuracy",
"correct", "gold", "system", "aligned"}``.
"""

from __future__ import annotations

import datasets
import evaluate

from .ud_eval import evaluate_documents

_DESCRIPTION = "CoNLL 2018 UD shared task scores (tokens, words, UPOS, XPOS, UFeats, AllTags, Lemmas)."
_KWARGS_DESCRIPTION = """
Args:
    predictions: system CoNLL-U texts, one per document.
    references: the gold CoNLL-U texts, in the same order (same text, whitespace aside).
Returns:
    per row (Tokens, Sentences, Words, UPOS, XPOS, UFeats, AllTags, Lemmas): precision,
    recall, f1, aligned_accuracy, correct, gold, system, aligned.
Example:
    >>> metric = evaluate.load("cont_transformer/tagging/metrics/conll18")
    >>> metric.compute(predictions=[system_text], references=[gold_text])["UPOS"]["f1"]
"""


class Conll18(evaluate.Metric):
    """The CoNLL 2018 UD shared task scores of system CoNLL-U documents against gold."""

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="Zeman et al., CoNLL 2018 Shared Task: Multilingual Parsing from Raw Text to Universal Dependencies",
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
            ),
        )

    def _compute(self, predictions: list[str], references: list[str]) -> dict[str, dict]:
        return evaluate_documents(list(references), list(predictions))
