"""The CoNLL-U columns a tagger predicts: which a treebank annotates, their labels, label
ids and back.

Columns (:data:`PREDICTED_COLUMNS`): ``upos``, ``xpos``, ``feats`` (UFeats) and ``lemma``,
which a tagger gives (:data:`OUTPUT_COLUMNS`), and ``deprel``, which it may learn besides
as a training signal (:data:`AUXILIARY_COLUMNS`, only when asked for: ``--columns``).
A treebank annotates a column unless its train split has ``_`` for (nearly) every word
there (:func:`annotated_columns`): a treebank without lemmas gets no lemma head. By default a
tagger predicts every annotated output column, XPOS first (the primary column, the model's
``logits``; UPOS where there is no XPOS).

Labels (:func:`column_labels`), per column, from the train split:

* ``upos``, ``xpos``: the tags (the data set's ``ClassLabel`` names);
* ``feats``, ``feats_mode="whole"``: each distinct FEATS string, written canonically
  (:func:`canonical_feats`: features sorted by name, case-insensitively, as UD orders
  them), ``_`` for none; ``"factored"``: per feature name, ``Name=_`` (absent) and
  ``Name=Value`` for each value seen, names sorted as above, ``_`` first;
* ``lemma``: the edit scripts (:mod:`.lemmas`) of the train words seen at least
  ``lemma_min_count`` times;
* ``deprel``: each dependency relation, subtypes kept (``nsubj:pass``).

Ids (:func:`encode_column`). Per word, the label's index; a value that has no label
(a dev tag unseen in train, a rare lemma script) is ``UNSEEN_TAG`` (-1), which the model's
loss skips and the metrics count as an error; factored features give per word a list
with one value id per feature. :func:`decode_column` turns predicted ids back into
column values: a lemma by applying the predicted script to the word, factored
features assembled into the canonical ``Name=Value|...`` string (``_`` when none).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import datasets

from ..column_decoding import canonical_feats, decode_column, decode_columns  # written once, for remote code too
from ..configuration_cont_transformer import (
    ABSENT_FEATURE,
    AUXILIARY_COLUMNS,
    FEATS_MODES,
    LEXICON_COLUMNS,
    OUTPUT_COLUMNS,
    PREDICTED_COLUMNS,
    feature_groups,
)
from ..lemmas import edit_script, lemma_lexicon, script_labels
from .data import UNSEEN_TAG

__all__ = [
    "ABSENT_FEATURE",
    "AUXILIARY_COLUMNS",
    "FEATS_MODES",
    "OUTPUT_COLUMNS",
    "PREDICTED_COLUMNS",
    "annotated_columns",
    "canonical_feats",
    "column_labels",
    "column_values",
    "decode_column",
    "decode_columns",
    "encode_column",
    "feature_groups",
    "label_field",
    "primary_column",
    "treebank_lemma_lexicon",
]


def label_field(column: str, primary: str) -> str:
    """The name of a column's label ids in a batch and in the model's forward: ``labels``
    for the primary column, ``{column}_targets`` for the others (named unlike ``labels``, so
    that transformers' ``Trainer`` takes ``labels`` alone as its label names)."""
    return "labels" if column == primary else f"{column}_targets"


def _features(feats: str) -> dict[str, str]:
    canonical = canonical_feats(feats)
    return {} if canonical == "_" else dict(pair.split("=", 1) for pair in canonical.split("|"))


def column_values(dataset: datasets.Dataset, column: str) -> list[list[str]]:
    """The column's values as strings, per sentence (tag columns are stored as ids)."""
    values = dataset[column]
    feature = dataset.features[column].feature
    if isinstance(feature, datasets.ClassLabel):
        return [[feature.int2str(tag) if tag >= 0 else "_" for tag in tags] for tags in values]
    return values


def annotated_columns(train: datasets.Dataset, candidates: Sequence[str] = OUTPUT_COLUMNS) -> tuple[str, ...]:
    """The columns of ``candidates`` (default: the output columns) that ``train`` fills for
    at least :data:`MIN_FILLED` of its words: a column left ``_`` nearly throughout (Thai-TUD's
    FEATS, a few ``ExtPos`` in 62,000 words) is neither trained nor scored, and is written
    ``_``."""
    annotated = []
    for column in candidates:
        if column not in train.column_names:
            continue
        values = [value for values in column_values(train, column) for value in values]
        if values and sum(value != "_" for value in values) >= MIN_FILLED * len(values):
            annotated.append(column)
    return tuple(annotated)


MIN_FILLED = 0.01


def primary_column(columns: Sequence[str]) -> str:
    """The column a model's ``logits`` predict: XPOS if among ``columns``, else UPOS, else
    the first output column."""
    return next((c for c in ("xpos", "upos") if c in columns), next(c for c in columns if c in OUTPUT_COLUMNS))


def column_labels(
    train: datasets.Dataset,
    columns: Sequence[str] | None = None,
    *,
    feats_mode: str = "whole",
    lemma_min_count: int = 1,
) -> dict[str, list[str]]:
    """Labels of each of ``columns`` (default: every column ``train`` annotates), learnt from
    ``train`` (see the module docstring). Raises ``ValueError`` for an unknown column, one
    ``train`` does not annotate, or an unknown ``feats_mode``."""
    if feats_mode not in FEATS_MODES:
        raise ValueError(f"feats_mode: choose one of {FEATS_MODES}, got {feats_mode!r}")
    annotated = annotated_columns(train, PREDICTED_COLUMNS)
    columns = tuple(c for c in annotated if c in OUTPUT_COLUMNS) if columns is None else tuple(columns)
    for column in columns:
        if column not in PREDICTED_COLUMNS:
            raise ValueError(f"columns: {column!r} is not one of {PREDICTED_COLUMNS}")
        if column not in annotated:
            raise ValueError(f"columns: the train split has no {column} (all '_')")
    labels = {}
    for column in columns:
        values = column_values(train, column)
        if column in ("upos", "xpos"):
            labels[column] = list(train.features[column].feature.names)
        elif column == "lemma":
            forms = train["tokens"]
            labels[column] = script_labels(
                ((form, lemma) for f, ls in zip(forms, values) for form, lemma in zip(f, ls)),
                lemma_min_count,
            )
        elif column in AUXILIARY_COLUMNS:
            labels[column] = sorted({v for vs in values for v in vs})
        elif feats_mode == "whole":
            labels[column] = sorted({canonical_feats(v) for vs in values for v in vs})
        else:
            labels[column] = _factored_labels(v for vs in values for v in vs)
    return labels


def _factored_labels(feats: Iterable[str]) -> list[str]:
    seen: dict[str, set[str]] = {}
    for value in feats:
        for name, feature_value in _features(value).items():
            seen.setdefault(name, set()).add(feature_value)
    return [
        f"{name}={value}" for name in sorted(seen, key=str.lower) for value in [ABSENT_FEATURE, *sorted(seen[name])]
    ]


def encode_column(
    column: str,
    words: Sequence[Sequence[str]],
    values: Sequence[Sequence[str]],
    labels: Sequence[str],
    feats_mode: str = "whole",
) -> list[list[int]] | list[list[list[int]]]:
    """Label ids of ``values`` (a column's strings per sentence; ``words``: the forms),
    ``UNSEEN_TAG`` for a value without a label; factored features: per word a list of
    value ids, one per feature."""
    if column == "feats" and feats_mode == "factored":
        groups = [(name, {v: i for i, v in enumerate(vals)}) for name, vals in feature_groups(list(labels))]
        return [
            [
                [ids.get(_features(value).get(name, ABSENT_FEATURE), UNSEEN_TAG) for name, ids in groups]
                for value in sentence
            ]
            for sentence in values
        ]
    ids = {label: index for index, label in enumerate(labels)}
    if column == "lemma":
        return [
            [ids.get(str(edit_script(form, lemma)), UNSEEN_TAG) for form, lemma in zip(forms, lemmas)]
            for forms, lemmas in zip(words, values)
        ]
    if column == "feats":
        values = [[canonical_feats(v) for v in sentence] for sentence in values]
    return [[ids.get(value, UNSEEN_TAG) for value in sentence] for sentence in values]


def treebank_lemma_lexicon(train, num_treebank: int, labels) -> dict | None:
    """The lemma lexicon (:func:`~cont_transformer.lemmas.lemma_lexicon`) of the first
    ``num_treebank`` sentences of ``train`` (the treebank's, not the silver ones after them),
    keyed by the first of ``LEXICON_COLUMNS`` the tagger predicts (``labels``: its columns);
    None unless it predicts lemmas and one of them."""
    column = next((c for c in LEXICON_COLUMNS if c in labels), None)
    if "lemma" not in labels or column is None:
        return None
    treebank = train.select(range(num_treebank))
    sentences = zip(treebank["tokens"], column_values(treebank, column), column_values(treebank, "lemma"))
    return lemma_lexicon((triple for sentence in sentences for triple in zip(*sentence)), column)
