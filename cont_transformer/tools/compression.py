"""A posteriori compression of a saved model: change of basis and graph shortening.

Paper §5: the weights of a trained model are functions θ(t) = Σ_k φ_k(t) θ̂_k, so a
smaller model follows, without retraining or data, by re-expressing them in a basis
with fewer functions (``num_basis``; ``projection`` or ``interpolation``), and a faster
one by integrating with fewer steps (``num_steps``).

:func:`compress` does it end to end for a ``save_pretrained`` folder of any model family
of this package (:mod:`cont_transformer.runtime.families`: a ``cont_transformer`` tagger, an
``ode_resnet`` image classifier, ...) or a training run's ``best/``: load, transform,
measure accuracy and inference time before and after in the same run, and write a
complete folder (weights, config, tokenizer or image processor, model card) atomically.
The pieces (:func:`load_model`, :func:`load_eval_set`, :func:`compare`,
:func:`save_compressed`) serve the sweep in :mod:`cont_transformer.tools.sweep` too; the
checks, the transformed copy and the card's compression section come from
:mod:`cont_transformer.runtime.compressed_copies`, which the training scaffold's report uses as well.
The source folder is only ever read.
"""

from __future__ import annotations

import contextlib
import os
import statistics
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import torch
from huggingface_hub import ModelCard
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForImageClassification,
    AutoModelForMaskedLM,
    AutoModelForTokenClassification,
    PretrainedConfig,
)

from ..checks import check_count
from ..model_card import CARD_NAME, Evaluation, record_card_facts, write_model_card
from ..pretrained import check_no_custom_code
from ..runtime.compiling import compiled
from ..runtime.compressed_copies import (
    SECTION_HEADING,
    check_arguments,
    check_reachable,
    compression_section,
    statistics_num_basis,
    transformed_copy,
)
from ..runtime.families import EvalSet, ModelFamily, forward_batches, get_family
from ..runtime.measuring import Workload, time_interleaved
from ..runtime.model_folders import (
    COMPRESSED_MODEL,
    COMPRESSION_SWEEP,
    check_replaceable,
    resolve_model_dir,
    run_folder_owning,
)
from ..runtime.safe_files import (
    LOCK_FILE,
    MANIFEST_FILE,
    holding_output_folder,
    read_manifest,
    staged_directory,
)

PathLike = str | os.PathLike

# Architecture name suffix -> the Auto class that loads it and its Hub pipeline tag.
HEADS = {
    "ForTokenClassification": (AutoModelForTokenClassification, "token-classification"),
    "ForImageClassification": (AutoModelForImageClassification, "image-classification"),
    "ForMaskedLM": (AutoModelForMaskedLM, "fill-mask"),
}
# How a refusal to replace a folder of another kind names the command that writes each kind.
OVERWRITE_COMMANDS = {COMPRESSED_MODEL: "compress.py --overwrite", COMPRESSION_SWEEP: "compress.py --sweep --overwrite"}
# Timing input when no evaluation data is given: (sentences, words) or (images, side).
SYNTHETIC_BATCH = (64, 32)


@dataclass
class SourceModel:
    """A loaded model folder: the model in eval mode and its tokenizer or image processor."""

    folder: Path
    model: torch.nn.Module
    preprocessor: object | None
    family: ModelFamily

    @property
    def model_type(self) -> str:
        return self.model.config.model_type


@dataclass
class ModelStats:
    """What a model is and how it did: the facts a compression report compares."""

    basis: str
    num_basis: int
    num_steps: int
    embedding_parameters: int
    non_embedding_parameters: int
    accuracy: float | None = None  # fraction of scored items, None without labels
    # Every metric where the family reports several (``accuracy`` among them; a tagger:
    # one per predicted column), else None.
    scores: dict[str, float] | None = None
    inference_seconds: float | None = None  # median of timed passes over the eval set
    # K of the running statistics where the model has them (image models), else None.
    state_num_basis: int | None = None

    @property
    def total_parameters(self) -> int:
        return self.embedding_parameters + self.non_embedding_parameters


@dataclass
class CompressionResult:
    """A compression measured in one run: what the model card and the caller are told."""

    source_dir: Path
    output_dir: Path
    method: str
    source: ModelStats
    compressed: ModelStats
    speedup: float  # median over repeats of (source seconds / compressed seconds)
    eval_description: str
    eval_split: str | None = None


# --- loading -------------------------------------------------------------------------
def load_model(folder: PathLike) -> SourceModel:
    """Load a saved model of this package (a model folder, or a training run's ``best/``)
    through the Auto classes, with its family's preprocessor.

    Raises ``ValueError`` naming the folder when it holds no config or its ``model_type``
    is not a model family of this package.
    """
    try:
        folder = resolve_model_dir(folder)
    except FileNotFoundError as err:
        raise ValueError(f"model_dir: {err}") from err
    check_no_custom_code(folder)
    config_dict, _ = PretrainedConfig.get_config_dict(str(folder))
    try:
        family = get_family(config_dict.get("model_type"))
    except ValueError as err:
        raise ValueError(f"model_dir: {folder}: {err}") from err
    config = AutoConfig.from_pretrained(folder, trust_remote_code=False)
    model = _head(config)[0].from_pretrained(folder, trust_remote_code=False)
    model.eval()
    return SourceModel(folder, model, family.load_preprocessor(folder), family)


def _head(config: PretrainedConfig) -> tuple[type, str | None]:
    """The Auto class for ``config``'s architecture and its pipeline tag (AutoModel, None
    for a model without a classification head)."""
    architecture = (config.architectures or [""])[0]
    return next((head for suffix, head in HEADS.items() if architecture.endswith(suffix)), (AutoModel, None))


# --- evaluation data -------------------------------------------------------------------
def load_eval_set(source: SourceModel, eval_file: PathLike, batch_size: int = 128) -> EvalSet:
    """The evaluation pass of ``source`` on ``eval_file``, as its family reads it (taggers:
    a CoNLL-U file; image classifiers: an image or IDX folder's test split)."""
    if source.preprocessor is None:
        raise ValueError(f"model_dir: {source.folder} has no tokenizer or image processor to read eval_file")
    return source.family.eval_set(source.model, source.preprocessor, source.folder, Path(eval_file), batch_size)


def synthetic_eval_set(source: SourceModel) -> EvalSet:
    """Random input of a fixed size, for timing a model when no eval data is given."""
    inputs, description = source.family.synthetic_inputs(source.model.config, *SYNTHETIC_BATCH)
    return EvalSet(lambda model: None, partial(forward_batches, batches=[inputs]), description)


# --- measuring -------------------------------------------------------------------------
def model_stats(
    model: torch.nn.Module,
    accuracy: float | None,
    seconds: float | None,
    scores: dict[str, float] | None = None,
) -> ModelStats:
    """The :class:`ModelStats` of ``model`` (basis, K, N_T, parameter counts) with its scores."""
    counts = model.num_parameters_split()
    config = model.config
    return ModelStats(
        basis=config.basis,
        num_basis=config.num_basis,
        num_steps=config.num_steps,
        embedding_parameters=counts["embedding"],
        non_embedding_parameters=counts["non_embedding"],
        accuracy=accuracy,
        scores=scores,
        inference_seconds=seconds,
        state_num_basis=statistics_num_basis(config),
    )


@dataclass
class Comparison:
    """A compressed model scored, and timed against its source, in one run."""

    stats: ModelStats
    speedup: float  # median over repeats of (source seconds / model seconds), back to back
    source_seconds: list[float]  # the source's timed passes


def compare(
    source: torch.nn.Module,
    model: torch.nn.Module,
    eval_set: EvalSet,
    repeats: int = 3,
    torch_compile: bool = False,
) -> Comparison:
    """Score ``model`` on ``eval_set``, then time its inference pass against ``source``'s.

    The two alternate pass by pass (``measuring.time_interleaved``), so load on a
    shared machine hits both alike; the scoring pass is ``model``'s warm-up (the caller
    has run ``source`` before). Timing-only data gets one warm-up pass each.
    ``torch_compile`` times both compiled (``torch.compile``, after a warm-up pass that
    compiles every shape); the scores come from the models as they are.
    """
    check_count("repeats", repeats)
    scores, accuracy = score(eval_set, model)
    device = next(model.parameters()).device
    timed_model, timed_source = (
        (compiled(model, device, dynamic=True), compiled(source, device, dynamic=True))
        if torch_compile
        else (model, source)
    )
    times, source_times = time_interleaved(
        Workload("compressed", partial(eval_set.forward, timed_model)),
        Workload("source", partial(eval_set.forward, timed_source)),
        warmup=0 if accuracy is not None and not torch_compile else 1,
        repeats=repeats,
        device=device,
    )
    speedup = statistics.median(s / t for s, t in zip(source_times, times))
    return Comparison(model_stats(model, accuracy, statistics.median(times), scores), speedup, source_times)


def score(eval_set: EvalSet, model: torch.nn.Module) -> tuple[dict[str, float] | None, float | None]:
    """``(every metric or None, accuracy)`` of ``model`` on ``eval_set``, in one pass."""
    if eval_set.scores is None:
        return None, eval_set.accuracy(model)
    scores = eval_set.scores(model)
    return scores, scores["accuracy"]


# --- writing ---------------------------------------------------------------------------
def check_output_dir(
    output_dir: PathLike, source_dir: PathLike, overwrite: bool = False, kind: str = COMPRESSED_MODEL
) -> Path:
    """Refuse an output folder that is, holds or lies in the source folder, one that is or
    lies in a training run's outputs (what that run's ``--overwrite-output-dir`` would
    delete), one of the package that holds another ``kind`` than this writer's (a
    compressed model; a sweep: ``model_folders.KINDS``), named with both kinds, and a
    non-empty existing one unless ``overwrite`` and a writer of that kind wrote it (its
    manifest, ``safe_files.py``): replacing it then deletes only what the manifest names.
    Returns the resolved output path."""
    output, source = Path(output_dir).resolve(), Path(source_dir).resolve()
    if output == source or source in output.parents:
        raise ValueError(f"output_dir: {output_dir} is inside the source model folder {source_dir}")
    if output in source.parents:
        raise ValueError(f"output_dir: {output_dir} contains the source model folder {source_dir}")
    if output.exists() and not output.is_dir():
        raise ValueError(f"output_dir: {output_dir} exists and is not a folder")
    run = run_folder_owning(output)
    if run is not None:
        where = "is the training run folder" if run == output else "lies inside the outputs of the training run"
        raise ValueError(f"output_dir: {output_dir} {where} {run}; write the compressed model elsewhere")
    if output.is_dir() and {p.name for p in output.iterdir()} - {LOCK_FILE}:
        if read_manifest(output) is not None:
            check_replaceable(output_dir, kind, OVERWRITE_COMMANDS[kind], flag="output_dir")
        if not overwrite:
            raise ValueError(f"output_dir: {output_dir} exists and is not empty (pass overwrite to replace it)")
        if read_manifest(output) is not None:
            return output
        if not (output / "config.json").is_file():
            raise ValueError(
                f"output_dir: {output_dir} is not a saved model folder (no config.json); "
                "overwrite only replaces a model"
            )
        raise ValueError(
            f"output_dir: {output_dir} holds a model no compression of this package wrote (no "
            f"{MANIFEST_FILE}); overwrite replaces only what one wrote: choose another folder"
        )
    return output


@contextlib.contextmanager
def locked_output_dir(
    output_dir: PathLike, source_dir: PathLike, overwrite: bool = False, kind: str = COMPRESSED_MODEL
) -> Iterator[Path]:
    """:func:`check_output_dir` (``kind``: what the caller writes), then hold the output
    folder's lock (made if missing) while the caller computes and writes it through
    :func:`staged_directory`, as a training run holds its folder: a second compression into
    the same folder is refused in one line, or, once the first is done, finds the folder
    written. A folder this call made is removed again when the caller fails."""
    output = check_output_dir(output_dir, source_dir, overwrite, kind)
    with holding_output_folder(output):
        check_output_dir(output_dir, source_dir, overwrite, kind)  # again: another may have written it meanwhile
        yield output


def write_compression_card(
    folder: Path,
    model: torch.nn.Module,
    result: CompressionResult,
    extra: Mapping[str, object] | None = None,
    base_model: str | None = None,
) -> Path:
    """Write ``folder/README.md`` for a compressed model with the shared card builder
    (:func:`~cont_transformer.model_card.write_model_card`).

    The card holds the architecture, the compression section
    (:func:`~cont_transformer.runtime.compressed_copies.compression_section`) comparing the source and
    the compressed model, the same facts as ``compression`` metadata, and the accuracy
    as a ``model-index`` result (the model named after ``result.output_dir``; ``folder``
    may be a staging folder). The data the source was trained on (``language``,
    ``license``, ``datasets`` of its card) carries over. ``base_model``: the source's
    Hub id, recorded as ``base_model`` with ``base_model_relation: quantized`` (the
    Hub's relation for a model compressed without training; its others are adapter,
    merge and finetune); without it the card names the source folder only. ``extra``
    facts are listed after the table, with the other notes.
    """
    before, after, method = result.source, result.compressed, result.method
    ratio = before.non_embedding_parameters / after.non_embedding_parameters
    rows = [
        {"model": "source", **asdict(before), **(before.scores or {}), "total_parameters": before.total_parameters},
        {
            "model": "compressed",
            **asdict(after),
            **(after.scores or {}),
            "total_parameters": after.total_parameters,
            "compression_ratio": ratio,
            "speedup": result.speedup,
        },
    ]
    metrics = list(after.scores or ["accuracy"])
    notes = [
        f"source model: `{base_model or result.source_dir}`",
        f"method: {method} (no retraining, no data)",
        f"compression ratio (non-embedding parameters): {ratio:.2f}x",
        f"inference speed-up: {result.speedup:.2f}x",
        (
            f"measured in one run on {result.eval_description}: median of repeated passes,"
            f" source and compressed model alternating (CPU threads: {torch.get_num_threads()})"
        ),
        *(f"{key}: {value}" for key, value in (extra or {}).items()),
    ]
    section = compression_section(rows, metrics, notes, scored_on=result.eval_description)
    compression = {
        "source_model": base_model or str(result.source_dir),
        "method": method,
        "basis": after.basis,
        "num_basis": after.num_basis,
        "num_steps": after.num_steps,
        **({"state_num_basis": after.state_num_basis} if after.state_num_basis is not None else {}),
        "embedding_parameters_before": before.embedding_parameters,
        "embedding_parameters_after": after.embedding_parameters,
        "non_embedding_parameters_before": before.non_embedding_parameters,
        "non_embedding_parameters_after": after.non_embedding_parameters,
        "compression_ratio": round(ratio, 4),
        "accuracy_before": before.accuracy,
        "accuracy_after": after.accuracy,
        **({"scores_before": before.scores, "scores_after": after.scores} if after.scores else {}),
        "inference_seconds_before": before.inference_seconds,
        "inference_seconds_after": after.inference_seconds,
        "speedup": round(result.speedup, 4),
        "eval_data": result.eval_description,
    }
    path = write_model_card(
        model,
        folder,
        **compressed_card_facts(result, base_model),
        tags=["compressed"],
        sections={SECTION_HEADING: section},
        metadata={"compression": compression},
        overwrite=True,
    )
    return path


def compressed_card_facts(result: CompressionResult, base_model: str | None = None) -> dict[str, object]:
    """The card facts of a compressed model (:func:`~cont_transformer.model_card.record_card_facts`):
    the data its source was trained on (:func:`_training_data`), and its own results, name and
    relation to the source, which replace the source's."""
    after = result.compressed
    named = {k: v for k, v in (after.scores or {}).items() if k != "accuracy"}
    results = (
        [
            Evaluation(result.eval_description, result.eval_split, value, metric_name=f"{name} accuracy")
            for name, value in named.items()
        ]
        or [Evaluation(result.eval_description, result.eval_split, after.accuracy)]
        if after.accuracy is not None
        else []
    )
    return {
        **_training_data(result.source_dir),
        "results": results,
        "model_name": result.output_dir.name,
        "base_model": base_model,
        "base_model_relation": "quantized" if base_model else None,
    }


def _training_data(source_dir: Path) -> dict[str, object]:
    """``language``, ``license`` and ``datasets`` of the source's card, where it has them."""
    card = source_dir / CARD_NAME
    if not card.is_file():
        return {}
    data = ModelCard.load(card).data
    return {key: getattr(data, key) for key in ("language", "license", "datasets") if getattr(data, key, None)}


def save_compressed(
    source: SourceModel,
    model: torch.nn.Module,
    folder: Path,
    result: CompressionResult,
    extra: Mapping[str, object] | None = None,
    base_model: str | None = None,
) -> None:
    """Write ``model`` with ``save_pretrained``, the source's tokenizer or image processor,
    the compression model card and the family's record (a tagger's metrics.json: tag column
    and accuracy; its learned segmenter) (``base_model``: the source's Hub id, see
    :func:`write_compression_card`) into ``folder``. The config keeps the compressed model's
    card facts (:func:`compressed_card_facts`), so a later save states them, not the source's."""
    record_card_facts(model.config, **compressed_card_facts(result, base_model))
    model.save_pretrained(folder)
    if source.preprocessor is not None:
        source.preprocessor.save_pretrained(folder)
    write_compression_card(folder, model, result, extra, base_model)
    if source.family.write_record is not None:  # after the card, which the family's files may note on
        source.family.write_record(source.folder, folder, result.compressed.accuracy, result.eval_description)


def compress(
    model_dir: PathLike,
    output_dir: PathLike,
    *,
    basis: str | None = None,
    num_basis: int | None = None,
    num_steps: int | None = None,
    method: str = "projection",
    eval_file: PathLike | None = None,
    repeats: int = 3,
    overwrite: bool = False,
    state_num_basis: int | None = None,
    torch_compile: bool = False,
    base_model: str | None = None,
) -> CompressionResult:
    """Compress the model in ``model_dir`` and write it to ``output_dir``.

    ``basis`` / ``num_basis`` / ``num_steps`` (``None``: keep the source's) choose the
    target; ``method`` is ``"projection"`` or ``"interpolation"``; ``state_num_basis``
    gives the running statistics of an image model their own K (default: kept when only
    the weights' K shrinks, else the new K);
    ``base_model``: the source's Hub id, for the card's ``base_model`` lineage.
    With ``eval_file`` both models are scored on it and timed on it, otherwise timed on
    random input; ``torch_compile`` times them compiled.
    The folder is written atomically, under its lock (:func:`locked_output_dir`); bad
    arguments raise ``ValueError`` before anything is written, and the source folder is
    never modified. ``overwrite`` replaces only what an earlier compression wrote there.
    """
    check_arguments(basis, num_basis, num_steps, method, state_num_basis)
    check_count("repeats", repeats)
    with locked_output_dir(output_dir, model_dir, overwrite) as output:
        source = load_model(model_dir)
        check_reachable(source.model.config, basis, num_basis, method, state_num_basis, num_steps)
        eval_set = load_eval_set(source, eval_file) if eval_file is not None else synthetic_eval_set(source)
        source_scores, source_accuracy = score(eval_set, source.model)
        model = transformed_copy(source.model, basis, num_basis, num_steps, method, state_num_basis)
        comparison = compare(source.model, model, eval_set, repeats, torch_compile)
        before = model_stats(source.model, source_accuracy, statistics.median(comparison.source_seconds), source_scores)
        result = CompressionResult(
            source.folder,
            output,
            method,
            before,
            comparison.stats,
            comparison.speedup,
            eval_set.description,
            eval_set.split,
        )
        with staged_directory(output, COMPRESSED_MODEL) as staging:
            save_compressed(source, model, staging, result, base_model=base_model)
        return result
