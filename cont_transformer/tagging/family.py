"""The tagger as a model family for the tools (compression, sweeps): see ``families.py``. Its
model card's text is the model classes' (``modeling_cont_transformer.py``)."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

import torch

from ..column_decoding import model_column_labels
from ..modeling_cont_transformer import ContTransformerForTokenClassification
from ..pretrained import check_model_kind
from ..runtime.families import EvalSet, ModelFamily, forward_batches, register_family
from ..runtime.model_folders import METRICS_FILE
from ..runtime.safe_files import write_json
from ..text.batching import PaddingCollator
from ..text.tokenization import load_tokenizer
from ..training.accelerator import make_accelerator
from .data import load_treebank
from .evaluation import evaluate, reported_rows, scoring_rows
from .sample_treebank import write_sample_treebank
from .segmenter_training import carry_segmenter
from .tag import saved_tag_column


def load_preprocessor(folder: Path):
    if not (folder / "tokenizer_config.json").is_file():
        return None
    return load_tokenizer(folder)


def eval_set(model, tokenizer, folder: Path, path: Path, batch_size: int) -> EvalSet:
    """Scores (every predicted column, see :mod:`.evaluation`) and times a tagger on a
    CoNLL-U file."""
    config = model.config
    try:
        check_model_kind(folder, ContTransformerForTokenClassification)
    except ValueError as err:
        raise ValueError(f"eval_file: scores a tagger's columns; {err}") from None
    labels = model_column_labels(config, saved_tag_column(folder))
    primary = next(iter(labels))
    dataset = load_treebank({"eval": [path]})["eval"]
    rows, gold = scoring_rows(
        tokenizer,
        dataset,
        labels,
        primary,
        config.max_position_embeddings,
        feats_mode=config.feats_mode,
    )
    rows.sort(key=lambda row: len(row["input_ids"]))  # little padding in a batch
    collate = PaddingCollator(tokenizer.pad_token_id)
    batches = [collate(rows[i : i + batch_size]) for i in range(0, len(rows), batch_size)]
    accelerator = make_accelerator()
    shown = ["accuracy", *reported_rows(gold.columns)]

    def scores(model: torch.nn.Module) -> dict[str, float]:
        with torch.no_grad():
            result = evaluate(model, batches, accelerator, gold)
        return {name: result[name] for name in shown}

    inputs = [{"input_ids": b["input_ids"], "attention_mask": b["attention_mask"]} for b in batches]
    description = f"{path.name} ({', '.join(c.upper() for c in gold.columns)}, {gold.num_words:,} words)"
    return EvalSet(
        lambda model: scores(model)["accuracy"],
        partial(forward_batches, batches=inputs),
        description,
        ud_split(path),
        scores=scores,
    )


def ud_split(path: Path) -> str | None:
    """The split a CoNLL-U file's name gives (UD's ``*-ud-dev.conllu``, or ``dev.conllu``)."""
    match = re.search(r"(?:^|[-_.])(train|dev|test)\.conllu$", path.name)
    return match.group(1) if match else None


def synthetic_inputs(config, count: int, size: int) -> tuple[dict, str]:
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(0, config.vocab_size, (count, size), generator=generator)
    inputs = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}
    return inputs, f"random input ({count} sentences x {size} tokens)"


def write_record(source: Path, folder: Path, accuracy: float | None, description: str) -> None:
    """A compressed tagger's metrics.json (its primary column, for evaluation, and accuracy:
    the selection score, the mean over its columns) and the source's learned segmenter, with
    its card's row (:func:`.segmenter_training.carry_segmenter`)."""
    record = {"tag_column": saved_tag_column(source), "accuracy": accuracy, "eval_data": description}
    write_json(folder / METRICS_FILE, record)
    carry_segmenter(source, folder)


def sample_dev_file(arguments, directory: Path) -> Path | None:
    """The dev split of the generated sample treebank, for a run trained on it (``treebank``
    ``sample``): the sample is the same at every generation."""
    if arguments.get("treebank") != "sample" or arguments.get("train_file") or arguments.get("dev_file"):
        return None
    return write_sample_treebank(directory)["validation"]


FAMILY = ModelFamily(
    "cont_transformer",
    load_preprocessor,
    eval_set,
    synthetic_inputs,
    write_record,
    run_eval_file=sample_dev_file,
)
register_family(FAMILY)
