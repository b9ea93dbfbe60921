"""Scoring a tagger: token accuracy over words, also split over the words seen and unseen
in training, during training (:func:`evaluate`) and for a saved model
(:func:`evaluate_saved_model`).

Predictions are gathered across processes with ``gather_for_metrics``, so every dev word
and sentence counts exactly once; a gold tag unseen in train counts as an error (see
``data.UNSEEN_TAG``). Long sentences are scored in full, in windows (see
:mod:`.batching`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import torch
from torch.utils.data import DataLoader
from transformers import AutoConfig, AutoTokenizer

from ..modeling_cont_transformer import ContTransformerForTokenClassification
from ..training.outputs import resolve_model_dir
from ..training.scaffold import end_distributed, make_accelerator
from .arguments import MODEL_TYPE
from .batching import IGNORE_INDEX, PaddingCollator, encode_for_evaluation
from .data import SPLIT_ALIASES, load_treebank
from .metrics import load_token_accuracy
from .tag import saved_tag_column
from .tokenization import training_words


def eval_loader(
    rows: list[dict], batch_size: int, pad_token_id: int, lengths: Sequence[int] = ()
) -> DataLoader:
    """Evaluation batches, longest first: similar lengths share a batch, and the largest
    batch comes first."""
    rows = sorted(rows, key=lambda row: -len(row["input_ids"]))
    collate = PaddingCollator(pad_token_id, lengths)
    return DataLoader(rows, batch_size=batch_size, shuffle=False, collate_fn=collate)


@torch.no_grad()
def evaluate(model, dataloader, accelerator, metric) -> dict[str, float | int]:
    """Token accuracy over words of ``model`` on a prepared evaluation loader.

    Predictions are gathered from all processes (``gather_for_metrics`` drops the rows
    Accelerate repeats to even out the last batch), so every word counts once.
    Returns ``accuracy``, ``num_words`` and ``num_sentences``; with batches that carry
    ``unseen`` (see ``encode_for_evaluation``), also ``accuracy_seen``,
    ``accuracy_unseen`` and ``num_unseen_words``.
    """
    was_training = model.training
    model.eval()
    num_sentences = 0
    split = torch.zeros(4, dtype=torch.long)  # correct seen, seen, correct unseen, unseen
    has_split = False
    for batch in dataloader:
        has_split |= "unseen" in batch
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        predictions, labels, unseen = (
            accelerator.pad_across_processes(tensor, dim=1, pad_index=pad)
            for tensor, pad in (
                (logits.argmax(-1), IGNORE_INDEX),
                (batch["labels"], IGNORE_INDEX),
                (batch.get("unseen", torch.zeros_like(batch["labels"])), 0),
            )
        )
        predictions, labels, unseen, starts = accelerator.gather_for_metrics(
            (predictions, labels, unseen, batch["sentence_start"])
        )
        scored = labels != IGNORE_INDEX
        metric.add_batch(
            predictions=predictions[scored].tolist(), references=labels[scored].tolist()
        )
        num_sentences += int(starts.sum())
        split += _seen_unseen_counts(predictions, labels, unseen.bool())
    model.train(was_training)
    result = {**metric.compute(), "num_sentences": num_sentences}
    correct_seen, seen, correct_unseen, num_unseen = split.tolist()
    if has_split:
        result.update(
            accuracy_seen=correct_seen / seen if seen else None,
            accuracy_unseen=correct_unseen / num_unseen if num_unseen else None,
            num_unseen_words=num_unseen,
        )
    return result


def _seen_unseen_counts(
    predictions: torch.Tensor, labels: torch.Tensor, unseen: torch.Tensor
) -> torch.Tensor:
    """``[correct seen, seen, correct unseen, unseen]`` scored words of a batch ``(batch, seq)``."""
    scored = labels != IGNORE_INDEX
    correct = scored & (predictions == labels)
    return torch.stack(
        [(correct & ~unseen).sum(), (scored & ~unseen).sum(), (correct & unseen).sum(),
         (scored & unseen).sum()]
    ).cpu()  # fmt: skip


def load_metric(accelerator):
    """The package's token-accuracy metric (loaded by path, no Hub access)."""
    with accelerator.main_process_first():  # evaluate copies the module into its cache
        return load_token_accuracy(keep_in_memory=True)


def load_tagger(model_dir: str | os.PathLike):
    """A saved tagger of this package (a model folder or a run folder's ``best/``) and its
    folder; ``ValueError`` naming the folder for any other model type."""
    folder = resolve_model_dir(model_dir)
    config = AutoConfig.from_pretrained(folder)
    if config.model_type != MODEL_TYPE:
        raise ValueError(
            f"{folder} holds a {config.model_type!r} model, not a {MODEL_TYPE!r} tagger"
        )
    return ContTransformerForTokenClassification.from_pretrained(folder), folder


def evaluate_saved_model(
    model_dir: str | os.PathLike,
    treebank: str = "sample",
    data_dir: str | None = None,
    split: str = "validation",
    eval_file: Sequence[str] = (),
    tag_column: str | None = None,
    batch_size: int = 64,
) -> dict:
    """Token accuracy of a saved tagger on a treebank split or on CoNLL-U file(s), also over
    the words seen and unseen in its training data (see ``tokenization.training_words``).

    ``model_dir`` is a model folder or a training run's folder (its ``best/`` model).
    ``tag_column`` None reads it from the model folder's ``metrics.json`` (``xpos`` if
    absent). Tags the model does not know count as errors. Sentences longer than the
    model's ``max_position_embeddings`` are scored in full, in windows.
    """
    model, folder = load_tagger(model_dir)
    accelerator = make_accelerator()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tag_column = tag_column or saved_tag_column(folder)
    config = model.config
    label_names = {tag_column: [config.id2label[i] for i in range(config.num_labels)]}
    if eval_file:
        dataset = load_treebank({"eval": list(eval_file)}, label_names=label_names)["eval"]
    else:
        splits = load_treebank(treebank, data_dir, label_names=label_names)
        split = SPLIT_ALIASES.get(split, split)
        if split not in splits:
            raise ValueError(
                f"eval_split: treebank {treebank!r} has no split {split!r} (found {sorted(splits)})"
            )
        dataset = splits[split]
    rows = encode_for_evaluation(
        tokenizer, dataset["tokens"], dataset[tag_column], config.max_position_embeddings,
        training_words(tokenizer, model),
    )  # fmt: skip
    batch_size = math.ceil(batch_size / accelerator.num_processes) * accelerator.num_processes
    model, loader = accelerator.prepare(model, eval_loader(rows, batch_size, tokenizer.pad_token_id))
    result = evaluate(model, loader, accelerator, load_metric(accelerator))
    result.update(
        model_dir=str(folder),
        tag_column=tag_column,
        split=split if not eval_file else list(eval_file),
        num_basis=config.num_basis,
        num_steps=config.num_steps,
    )
    end_distributed(accelerator)
    return result
