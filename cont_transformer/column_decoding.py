"""A tagger's outputs to the CoNLL-U columns of words, written once for the package's
``Tagger``, dev scoring and the pipeline a saved tagger carries.

:func:`model_column_labels` / :func:`parsed_labels` read a config's columns and labels;
:func:`combination_index` and :func:`predicted_label_ids` decode UPOS, XPOS and FEATS (those
a tagger predicts, two or more) jointly over the triples seen in training (``config.tag_combinations``), or each head
alone; :func:`decode_column` turns label ids into values (a lemma by its edit script,
:mod:`.lemmas`; factored features into one canonical FEATS string,
:func:`canonical_feats`); :func:`decode_columns` decodes a sentence's every column, a word
of the lemma lexicon (``config.lemma_lexicon``) taking its lemma from there.

Remote code (``trust_remote_code=True``) copies a saved folder's model and pipeline files
and every file they reach through one-level relative imports, flat; this module is one of
them, so it imports only the standard library, torch, ``tokenizers`` and the package root's
own carried modules (docs/design.md §10).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .configuration_cont_transformer import ABSENT_FEATURE, JOINT_COLUMNS, feature_groups, joint_columns
from .lemmas import choose_lemma, lemma_candidates, parse_script


def canonical_feats(feats: str) -> str:
    """``"Number=Sing|Case=Nom"`` -> ``"Case=Nom|Number=Sing"`` (UD's order: by feature
    name, case-insensitively); ``_`` stays ``_``."""
    if feats == "_" or not feats:
        return "_"
    return "|".join(sorted(feats.split("|"), key=lambda pair: pair.partition("=")[0].lower()))


def model_column_labels(config, column: str = "xpos") -> dict[str, list[str]]:
    """Every column a tagger's ``config`` predicts -> its labels (lemma scripts as text),
    the primary column first (``config.primary_column``, else ``column``: a config
    that does not record it); a ``ValueError`` when the config's ``columns.json``
    was not read."""
    primary = getattr(config, "primary_column", None) or column
    primary_labels = [config.id2label[i] for i in range(config.num_labels)]
    others = getattr(config, "column_labels", None)
    if others is None and getattr(config, "column_sizes", None):
        raise ValueError(
            "column_labels: not read; they are in the folder's columns.json (a loaded model's config has them, "
            "tagger_files.read_tagger_files reads them into a config read alone)"
        )
    return {primary: primary_labels, **(others or {})}


def parsed_labels(labels: dict[str, list]) -> dict[str, list]:
    """``labels`` with the lemma scripts parsed (decoding applies them word by word)."""
    if "lemma" not in labels:
        return dict(labels)
    return {**labels, "lemma": [parse_script(text) for text in labels["lemma"]]}


def combination_index(config, labels: dict[str, list], device=None) -> torch.Tensor | None:
    """``(n, j)`` label ids of the config's ``tag_combinations`` in the ``j`` joint columns
    that ``labels`` has (:func:`joint_columns`: UPOS, XPOS, FEATS, those predicted), for
    the combinations whose labels are all in ``labels``, on ``device``; None when the config
    records none or fewer than two columns are joint (each column is then decoded on its own)."""
    combinations = getattr(config, "tag_combinations", None)
    joint = joint_columns(labels)
    if not combinations or getattr(config, "feats_mode", "whole") != "whole" or len(joint) < 2:
        return None
    ids = [{label: i for i, label in enumerate(labels[column])} for column in joint]
    places = [JOINT_COLUMNS.index(column) for column in joint]
    values = [[triple[place] for place in places] for triple in combinations]
    index = [
        [i[label] for i, label in zip(ids, row)] for row in values if all(label in i for i, label in zip(ids, row))
    ]
    return torch.tensor(index, dtype=torch.long, device=device) if index else None


def predicted_label_ids(
    output,
    columns: Sequence[str],
    primary: str,
    labels: dict[str, list],
    feats_mode: str,
    combinations: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """Each of ``columns`` -> its ``(batch, seq)`` label ids from a tagger's ``output``
    (``logits`` for the ``primary`` column; factored features ``(batch, seq, features)``).
    Each column's argmax, except with ``combinations`` (from :func:`combination_index`):
    the joint columns (UPOS, XPOS and FEATS, those predicted) then come from the combination
    with the highest summed log-probability. Lemmas: ``(batch, seq, LEMMA_CANDIDATES)``
    script ids (:func:`lemma_candidates`), for :func:`choose_lemma`."""

    def logits(column: str) -> torch.Tensor:
        return output.logits if column == primary else output[f"{column}_logits"]

    ids: dict[str, torch.Tensor] = {}
    if combinations is not None:
        joint = joint_columns(labels)
        combinations = combinations.to(output.logits.device)
        total = sum(
            torch.log_softmax(logits(column).float(), -1)[..., combinations[:, i]] for i, column in enumerate(joint)
        )  # (batch, seq, combinations)
        best = combinations[total.argmax(-1)]  # (batch, seq, joint columns)
        ids = {column: best[..., i] for i, column in enumerate(joint)}
    for column in columns:
        if column in ids:
            continue
        if column == "lemma":
            ids[column] = lemma_candidates(logits(column))
        elif column != "feats" or feats_mode != "factored":
            ids[column] = logits(column).argmax(-1)
        else:
            groups = logits(column).split([len(v) for _, v in feature_groups(labels["feats"])], dim=-1)
            ids[column] = torch.stack([group.argmax(-1) for group in groups], dim=-1)
    return {column: ids[column] for column in columns}


def decode_column(
    column: str,
    words: Sequence[str],
    ids: Sequence[int] | Sequence[Sequence[int]],
    labels: Sequence,
    feats_mode: str = "whole",
    vocabulary=frozenset(),
) -> list[str]:
    """The column's values for one sentence's ``words`` from predicted label ``ids``
    (factored features: per word one value id per feature; lemma labels: scripts, as
    text or parsed, and per word one id or its candidates, chosen among with
    ``vocabulary`` by :func:`choose_lemma`)."""
    if column == "feats" and feats_mode == "factored":
        groups = feature_groups(list(labels))
        result = []
        for word_ids in ids:
            pairs = [
                f"{name}={values[i]}" for (name, values), i in zip(groups, word_ids) if values[i] != ABSENT_FEATURE
            ]
            result.append(canonical_feats("|".join(pairs)))
        return result
    if column == "lemma":
        return [choose_lemma(word, i, labels, vocabulary) for word, i in zip(words, ids)]
    return [labels[i] for i in ids]


def decode_columns(
    words: Sequence[str],
    ids: dict[str, Sequence],
    labels: dict[str, Sequence],
    feats_mode: str = "whole",
    lemma_lexicon: dict[str, dict[str, dict[str, str]]] | None = None,
    vocabulary=frozenset(),
) -> dict[str, list[str]]:
    """Every column of ``ids`` decoded for one sentence's ``words`` (:func:`decode_column`,
    lemmas with the tokenizer's ``vocabulary``, :func:`vocabulary_words`); with a
    ``lemma_lexicon`` (``config.lemma_lexicon``), a word whose form and predicted tag it
    holds takes the lemma it gives."""
    columns = {
        column: decode_column(column, words, ids[column], labels[column], feats_mode, vocabulary) for column in ids
    }
    if lemma_lexicon and "lemma" in columns:
        ((tag_column, lexicon),) = lemma_lexicon.items()
        if tag_column in columns:
            columns["lemma"] = [
                lexicon.get(tag, {}).get(word, lemma)
                for word, tag, lemma in zip(words, columns[tag_column], columns["lemma"])
            ]
    return columns
