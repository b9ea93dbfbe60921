"""Scoring a tagger: every column it predicts, as the CoNLL 2018 UD shared task scores it
on gold tokens, during training (:func:`evaluate`) and for a saved model
(:func:`evaluate_saved_model`).

Rows (keys of the result, fractions): ``upos``, ``xpos``, ``ufeats`` (universal
features only, order-insensitive), ``lemmas`` (gold ``_`` counts as right) for the
columns predicted, and ``alltags`` (UPOS, XPOS and UFeats all right) when all three
are. They are the official script's aligned accuracies, computed with its comparison
(:func:`.metrics.conll18.ud_eval.tag_counts`) on the decoded predictions (a predicted
lemma is its edit script applied to the form; factored features are assembled into a
FEATS string), so they equal :func:`.metrics.load_conll18` on the same predictions
written as CoNLL-U. A gold value with no label (a tag unseen in train) counts as an error.

``accuracy`` is the model-selection score: the mean of the predicted columns' rows
(UPOS, XPOS, UFeats, Lemmas; AllTags is not averaged in). For a one-column model it is
that column's accuracy. ``accuracy_seen`` / ``accuracy_unseen`` split the primary
column's accuracy over the words seen and unseen in training (a lemma primary's, the
Lemmas row's, from the decoded lemmas).

Predictions are gathered across processes with ``gather_for_metrics``, each word placed
by its index in the data, so every dev word and sentence counts exactly once. Long
sentences are scored in full, in windows (see :mod:`.batching`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Container, Sequence
from dataclasses import dataclass

import torch
from transformers import AutoConfig, AutoTokenizer

from ..column_decoding import model_column_labels
from ..configuration_cont_transformer import AUXILIARY_COLUMNS, PREDICTED_COLUMNS
from ..modeling_cont_transformer import ContTransformerForTokenClassification
from ..pretrained import check_no_custom_code
from ..processing_cont_transformer import ContTransformerTaggerProcessor
from ..runtime.model_folders import resolve_model_dir
from ..text.batching import IGNORE_INDEX, WORD_INDEX, encode_for_evaluation, eval_loader
from ..text.pretrained_encoder import MODEL_TYPE
from ..text.tokenization import check_tokenizer, training_words
from ..training.accelerator import end_distributed, make_accelerator
from .columns import column_values, encode_column, label_field
from .data import SPLIT_ALIASES, load_treebank
from .metrics.conll18.ud_eval import Word, tag_counts
from .tag import saved_tag_column

# The result's name of each CoNLL 2018 row; the columns a row needs predicted.
ROW_NAMES = {"UPOS": "upos", "XPOS": "xpos", "UFeats": "ufeats", "AllTags": "alltags", "Lemmas": "lemmas"}
ROW_COLUMNS = {
    "UPOS": {"upos"},
    "XPOS": {"xpos"},
    "UFeats": {"feats"},
    "AllTags": {"upos", "xpos", "feats"},
    "Lemmas": {"lemma"},
}
ROW_TITLES = {name: row for row, name in ROW_NAMES.items()}
SELECTION_ROWS = ("upos", "xpos", "ufeats", "lemmas")  # averaged into ``accuracy``


def reported_rows(columns: Sequence[str]) -> list[str]:
    """The result's rows for a tagger predicting ``columns`` (``accuracy`` not included)."""
    return [ROW_NAMES[row] for row in _rows(columns)]


@dataclass
class GoldColumns:
    """What scoring a tagger's columns on some data needs: the words, the gold values of
    every column the data has, and per predicted column its labels (the primary first)."""

    words: list[list[str]]
    gold: dict[str, list[list[str]]]
    labels: dict[str, list[str]]
    primary: str
    tokenizer: object  # the tagger's, whose processor predicts and decodes

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(self.labels)

    @property
    def num_words(self) -> int:
        return sum(map(len, self.words))

    def processor(self, config) -> ContTransformerTaggerProcessor:
        """The processor of the tagger ``config`` describes, which predicts and decodes these
        columns as every other door to the tagger does."""
        return ContTransformerTaggerProcessor.for_model(self.tokenizer, config, column=self.primary)

    def scores(self, predicted: dict[str, torch.Tensor], processor: ContTransformerTaggerProcessor) -> dict[str, float]:
        """The rows of :func:`reported_rows` and ``accuracy`` from predicted label ids per
        column, one per word of the data in order (factored features: a row per word),
        decoded by the tagger's ``processor`` (its lemma lexicon too); and ``deprel``, the share
        of words whose relation is right, when the tagger learnt it and the data has it."""
        pairs, gold, system = self._decoded(predicted, processor)
        counts = tag_counts(pairs)
        result = {ROW_NAMES[row]: counts[row] / len(pairs) if pairs else 0.0 for row in _rows(self.columns)}
        averaged = [result[row] for row in SELECTION_ROWS if row in result]
        for column in AUXILIARY_COLUMNS:  # learnt as a training signal: scored, never selected on
            # ... where the data has it (a tagger with DEPREL fine-tuned on a treebank without)
            if column in system and any(value != "_" for value in gold[column]):
                result[column] = sum(map(str.__eq__, system[column], gold[column])) / len(pairs)
        return {"accuracy": sum(averaged) / len(averaged), **result}

    def words_right(
        self, predicted: dict[str, torch.Tensor], processor: ContTransformerTaggerProcessor, row: str
    ) -> torch.Tensor:
        """Per word of the data, whether the CoNLL 2018 ``row`` (``"Lemmas"``, ...) counts its
        decoded prediction right: ``(num_words,)`` bool."""
        pairs, _, _ = self._decoded(predicted, processor)
        return torch.tensor([bool(tag_counts([pair])[row]) for pair in pairs], dtype=torch.bool)

    def _decoded(self, predicted: dict[str, torch.Tensor], processor: ContTransformerTaggerProcessor):
        """``(gold, system)`` word pairs of the data, and the gold and system values per column."""
        system = {column: [] for column in self.columns}
        offset = 0
        for words in self.words:
            ids = {column: predicted[column][offset : offset + len(words)].tolist() for column in self.columns}
            for column, values in processor.decode(words, ids).items():
                system[column].extend(values)
            offset += len(words)
        gold = {
            c: [v for values in self.gold.get(c, [["_"] * len(w) for w in self.words]) for v in values]
            for c in PREDICTED_COLUMNS
        }
        forms = [word for words in self.words for word in words]
        pairs = [(_word(forms[i], gold, i), _word(forms[i], {**gold, **system}, i)) for i in range(len(forms))]
        return pairs, gold, system


def _rows(columns: Sequence[str]) -> list[str]:
    return [row for row, needed in ROW_COLUMNS.items() if needed <= set(columns)]


def _word(form: str, values: dict[str, list[str]], i: int) -> Word:
    return Word.of(form, values["lemma"][i], values["upos"][i], values["xpos"][i], values["feats"][i])


def scoring_rows(
    tokenizer,
    dataset,
    labels: dict[str, list[str]],
    primary: str,
    max_length: int,
    known_words: Container[str] | None = None,
    feats_mode: str = "whole",
) -> tuple[list[dict], GoldColumns]:
    """Evaluation rows of ``dataset`` (a split from ``load_treebank``) for a tagger with
    ``labels`` per predicted column (``primary`` the column of its ``logits``), and what
    :func:`evaluate` scores them against. Rows carry each word's index in the data
    (``WORD_INDEX``) and, with ``known_words``, ``unseen`` (see ``encode_for_evaluation``)."""
    words = [list(w) for w in dataset["tokens"]]
    gold = {c: column_values(dataset, c) for c in PREDICTED_COLUMNS if c in dataset.column_names}
    for column in labels:
        if column not in gold:
            raise ValueError(f"the data has no {column} column, which the tagger predicts")
    fields = {
        label_field(column, primary): encode_column(column, words, gold[column], labels[column], feats_mode)
        for column in labels
    }
    offsets, index = 0, []
    for sentence in words:
        index.append(list(range(offsets, offsets + len(sentence))))
        offsets += len(sentence)
    tags = fields.pop("labels")
    rows = encode_for_evaluation(tokenizer, words, tags, max_length, known_words, columns={**fields, WORD_INDEX: index})
    return rows, GoldColumns(words, gold, dict(labels), primary, tokenizer)


@torch.no_grad()
def evaluate(model, dataloader, accelerator, gold: GoldColumns) -> dict[str, float | int]:
    """Every predicted column of ``model`` on a prepared evaluation loader (rows from
    :func:`scoring_rows`), scored against ``gold`` (see the module docstring).

    Returns ``accuracy`` (the selection score), the CoNLL 2018 rows, ``num_words`` and
    ``num_sentences``; with batches that carry ``unseen``, also ``accuracy_seen``,
    ``accuracy_unseen`` and ``num_unseen_words`` (the primary column).
    """
    was_training = model.training
    model.eval()
    columns, num_words = gold.columns, gold.num_words
    predicted: dict[str, torch.Tensor] = {}
    num_sentences = 0
    split = torch.zeros(4, dtype=torch.long)  # correct seen, seen, correct unseen, unseen
    unseen_words = torch.zeros(num_words, dtype=torch.bool)  # a lemma primary's split, per word
    processor = gold.processor(accelerator.unwrap_model(model).config)
    has_split = False
    for batch in dataloader:
        has_split |= "unseen" in batch
        ids = list(processor.predict_batch(model, batch["input_ids"], batch["attention_mask"], columns).values())
        padded = [
            accelerator.pad_across_processes(tensor, dim=1, pad_index=pad)
            for tensor, pad in (
                *((i, IGNORE_INDEX) for i in ids),
                (batch[WORD_INDEX], IGNORE_INDEX),
                (batch["labels"], IGNORE_INDEX),
                (batch.get("unseen", torch.zeros_like(batch["labels"])), 0),
            )
        ]
        *ids, index, labels, unseen, starts = accelerator.gather_for_metrics((*padded, batch["sentence_start"]))
        scored = index != IGNORE_INDEX
        for column, column_ids in zip(columns, ids):
            if column not in predicted:
                predicted[column] = torch.zeros((num_words, *column_ids.shape[2:]), dtype=torch.long)
            predicted[column][index[scored].cpu()] = column_ids[scored].cpu()
        num_sentences += int(starts.sum())
        if gold.primary == "lemma":  # scored as strings below (several edit scripts give one lemma)
            unseen_words[index[scored].cpu()] = unseen[scored].bool().cpu()
        else:
            split += _seen_unseen_counts(ids[columns.index(gold.primary)], labels, unseen.bool())
    model.train(was_training)
    scores = gold.scores(predicted, processor)
    if gold.primary == "lemma" and has_split:
        right = gold.words_right(predicted, processor, "Lemmas")
        split = torch.stack([(right & ~unseen_words).sum(), (~unseen_words).sum(), (right & unseen_words).sum()])
        split = torch.cat([split, unseen_words.sum().reshape(1)])
    result = {**scores, "num_words": num_words, "num_sentences": num_sentences}
    correct_seen, seen, correct_unseen, num_unseen = split.tolist()
    if has_split:
        result.update(
            accuracy_seen=correct_seen / seen if seen else None,
            accuracy_unseen=correct_unseen / num_unseen if num_unseen else None,
            num_unseen_words=num_unseen,
        )
    return result


def _seen_unseen_counts(predictions: torch.Tensor, labels: torch.Tensor, unseen: torch.Tensor) -> torch.Tensor:
    """``[correct seen, seen, correct unseen, unseen]`` scored words of a batch ``(batch, seq)``."""
    scored = labels != IGNORE_INDEX
    correct = scored & (predictions == labels)
    return torch.stack(
        [(correct & ~unseen).sum(), (scored & ~unseen).sum(), (correct & unseen).sum(), (scored & unseen).sum()]
    ).cpu()


def load_tagger(model_dir: str | os.PathLike):
    """A saved tagger of this package (a model folder or a run folder's ``best/``) and its
    folder; ``ValueError`` naming the folder for any other model type."""
    folder = resolve_model_dir(model_dir)
    check_no_custom_code(folder)
    config = AutoConfig.from_pretrained(folder, trust_remote_code=False)
    if config.model_type != MODEL_TYPE:
        raise ValueError(f"{folder} holds a {config.model_type!r} model, not a {MODEL_TYPE!r} tagger")
    return ContTransformerForTokenClassification.from_pretrained(folder, trust_remote_code=False), folder


def evaluate_saved_model(
    model_dir: str | os.PathLike,
    treebank: str = "sample",
    data_dir: str | None = None,
    split: str = "validation",
    eval_file: Sequence[str] = (),
    tag_column: str | None = None,
    batch_size: int = 64,
) -> dict:
    """Every column a saved tagger predicts, scored on a treebank split or on CoNLL-U
    file(s) (see the module docstring), the primary column also over the words seen and
    unseen in its training data (see ``tokenization.training_words``).

    ``model_dir`` is a model folder or a training run's folder (its ``best/`` model).
    ``tag_column``: the primary column of a model whose config does not record it
    (None: from the folder's ``metrics.json``, ``xpos`` if absent). Sentences longer
    than the model's ``max_position_embeddings`` are scored in full, in windows.
    """
    model, folder = load_tagger(model_dir)
    accelerator = make_accelerator()
    tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=False)  # checked by load_tagger
    check_tokenizer(tokenizer, model.config, folder, model)
    config = model.config
    labels = model_column_labels(config, tag_column or saved_tag_column(folder))
    primary = next(iter(labels))
    if eval_file:
        dataset = load_treebank({"eval": list(eval_file)})["eval"]
    else:
        splits = load_treebank(treebank, data_dir)
        split = SPLIT_ALIASES.get(split, split)
        if split not in splits:
            raise ValueError(f"eval_split: treebank {treebank!r} has no split {split!r} (found {sorted(splits)})")
        dataset = splits[split]
    rows, gold = scoring_rows(
        tokenizer,
        dataset,
        labels,
        primary,
        config.max_position_embeddings,
        training_words(tokenizer, model),
        config.feats_mode,
    )
    batch_size = math.ceil(batch_size / accelerator.num_processes) * accelerator.num_processes
    model, loader = accelerator.prepare(model, eval_loader(rows, batch_size, tokenizer.pad_token_id))
    result = evaluate(model, loader, accelerator, gold)
    result.update(
        model_dir=str(folder),
        tag_column=primary,
        columns=list(gold.columns),
        split=split if not eval_file else list(eval_file),
        num_basis=config.num_basis,
        num_steps=config.num_steps,
    )
    end_distributed(accelerator)
    return result
