"""What ``scripts/compress.py`` runs: compress one model, or sweep a grid, and print the report.

:func:`compress_command` takes the script's flags as keyword arguments: without ``sweep``
it compresses one model (:func:`~cont_transformer.tools.compression.compress`) and prints
the source and the compressed model side by side; with ``sweep`` it measures a grid
(:func:`~cont_transformer.tools.sweep.sweep`), printing each row as it is measured, then
the table and the model ``max_accuracy_drop`` selected. Either way it names the folder
written, and uploads it with ``push_to_hub``. Any model family of the package.

Without ``eval_file``, a tagger of a training run on the generated sample treebank (its
``run.json``: ``treebank`` ``sample``, no data files of its own) is scored on the sample's
dev split, generated again as the run generated it (:func:`run_dev_file`, through the tagger's family), so the
quickstart's ``compress.py runs/pos ...`` reports the accuracy; any other model without
``eval_file`` is timed on random input, and its accuracy is ``–``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

import torch

from ..runtime.families import get_family
from ..runtime.hub import push_folder_to_hub
from ..runtime.model_folders import resolve_model_dir, run_folder_owning
from ..runtime.safe_files import OutputFolderError
from ..training.accelerator import inference_autocast
from ..training.identity import read_identity
from .compression import CompressionResult, compress
from .sweep import SWEEP_BASES, SweepResult, SweepRow, markdown_table
from .sweep import sweep as sweep_grid


def sweep_row_line(row: SweepRow) -> str:
    """One measured point of a sweep: grid, basis, K, N_T, accuracy, time and speed-up."""
    states = "" if row.state_num_basis in (None, row.num_basis) else f"(statistics K={row.state_num_basis}) "
    return (
        f"{row.grid:>9} {row.basis:>20} K={row.num_basis:<3} N_T={row.num_steps:<3} "
        + states
        + f"accuracy {100 * row.accuracy:6.2f}%  {row.inference_seconds:.3f} s "
        f"({row.speedup:.2f}x)"
    )


def sweep_report(result: SweepResult) -> str:
    """The sweep's table, and the model it selected (if any)."""
    text = markdown_table(result.rows)
    if result.selected is not None:
        s = result.selected
        text += (
            f"\n\nselected: {s.basis}, K = {s.num_basis}, N_T = {s.num_steps} "
            f"({s.accuracy_drop:+.2f} points, {s.compression_ratio:.2f}x fewer non-embedding parameters)"
        )
    return text


def compression_report(result: CompressionResult) -> str:
    """Source and compressed model, one line each (grid, size, accuracy, time), and the speed-up."""
    lines = []
    for name, stats in (("source", result.source), ("compressed", result.compressed)):
        accuracy = "–" if stats.accuracy is None else f"{100 * stats.accuracy:.2f}%"
        columns = {k: v for k, v in (stats.scores or {}).items() if k != "accuracy"}
        if columns:  # a tagger of several columns: accuracy is their mean
            accuracy += " (" + ", ".join(f"{k} {100 * v:.2f}%" for k, v in columns.items()) + ")"
        states = (
            "" if stats.state_num_basis in (None, stats.num_basis) else f" (statistics K = {stats.state_num_basis})"
        )
        lines.append(
            f"{name:>10}: {stats.basis}, K = {stats.num_basis}{states}, N_T = {stats.num_steps}, "
            f"{stats.non_embedding_parameters:,} non-embedding parameters, accuracy {accuracy}, "
            f"{stats.inference_seconds:.3f} s"
        )
    lines.append(f"speed-up {result.speedup:.2f}x (median over interleaved passes)")
    return "\n".join(lines)


def run_dev_file(model_dir: str | Path, directory: str | Path) -> Path | None:
    """The dev file of the training run that ``model_dir`` is or lies in (``runs/pos``,
    ``runs/pos/best``), where that run made its data rather than read it (a tagger trained
    on the generated sample treebank alone: the sample is the same at every generation, so
    its family writes it again into ``directory``). Its ``run.json`` and ``config.json`` are
    read as JSON. None for any other model or run."""
    run = run_folder_owning(model_dir)
    try:
        identity = read_identity(run) if run is not None else None
        config = json.loads((resolve_model_dir(model_dir) / "config.json").read_text(encoding="utf-8"))
        family = get_family(config["model_type"])
    except (OutputFolderError, OSError, ValueError, KeyError, TypeError):
        return None
    if identity is None or identity.get("files") or family.run_eval_file is None:
        return None
    return family.run_eval_file(identity["arguments"], Path(directory))


def _check_flags(sweep: bool, targets: Sequence, push_to_hub: str | None, max_accuracy_drop: float | None) -> bool:
    """Whether a sweep is asked for (``--max-accuracy-drop`` implies it); flags that do not go
    together raise ``ValueError`` naming them."""
    sweep = sweep or max_accuracy_drop is not None
    if sweep and any(value is not None for value in targets):
        raise ValueError(
            "--sweep takes --sweep-bases / --sweep-num-basis / --sweep-num-steps, "
            "not --basis / --num-basis / --num-steps / --state-num-basis (see --help)"
        )
    if push_to_hub is not None and sweep and max_accuracy_drop is None:
        raise ValueError("--push-to-hub needs a model: compress one, or --sweep with --max-accuracy-drop (see --help)")
    return sweep


def _eval_file(model_dir: str, eval_file: str | None, directory: str, sweep: bool) -> str | Path | None:
    """``eval_file``, or else the dev split of the sample treebank the model was trained on,
    written into ``directory`` (None if neither; a sweep needs one)."""
    if eval_file is None:
        eval_file = run_dev_file(model_dir, directory)
        if eval_file is not None:
            print(f"scoring on the dev split of the generated sample treebank that {model_dir} was trained on")
    if sweep and eval_file is None:
        raise ValueError("--sweep and --max-accuracy-drop need --eval-file (see --help)")
    return eval_file


def _sweep_and_report(model_dir: str, eval_file: str | Path, output_dir: str, **options) -> Path:
    """:func:`~cont_transformer.tools.sweep.sweep` with ``options``, each row printed as it is
    measured and then the report; returns the folder written."""
    result = sweep_grid(
        model_dir, eval_file, output_dir, progress=lambda row: print(sweep_row_line(row), flush=True), **options
    )
    print(sweep_report(result))
    return result.output_dir


def _compress_and_report(model_dir: str, output_dir: str, **options) -> Path:
    """:func:`~cont_transformer.tools.compression.compress` with ``options``, then the report;
    returns the folder written."""
    result = compress(model_dir, output_dir, **options)
    print(compression_report(result))
    return result.output_dir


def compress_command(
    model_dir: str,
    output_dir: str,
    *,
    sweep: bool = False,
    basis: str | None = None,
    num_basis: int | None = None,
    num_steps: int | None = None,
    state_num_basis: int | None = None,
    method: str = "projection",
    eval_file: str | None = None,
    repeats: int = 3,
    num_threads: int | None = None,
    overwrite: bool = False,
    base_model: str | None = None,
    torch_compile: bool = False,
    push_to_hub: str | None = None,
    hub_model_id: str | None = None,
    bf16: bool = False,
    fp16: bool = False,
    sweep_bases: Sequence[str] = SWEEP_BASES,
    sweep_num_basis: Sequence[int] | None = None,
    sweep_num_steps: Sequence[int] | None = None,
    max_accuracy_drop: float | None = None,
) -> None:
    """Compress (or with ``sweep``, sweep) the model in ``model_dir`` into ``output_dir``,
    printing the report (see the module's doc); the arguments are ``compress.py``'s flags.

    ``max_accuracy_drop`` implies ``sweep``. ``push_to_hub``: a repository id, or ``""``
    for ``hub_model_id`` (default: the ``output_dir``'s name). ``bf16`` / ``fp16``: the
    models run under autocast. Flags that do not go together raise ``ValueError`` naming
    them, before anything is read.
    """
    sweep = _check_flags(sweep, (basis, num_basis, num_steps, state_num_basis), push_to_hub, max_accuracy_drop)
    with tempfile.TemporaryDirectory(prefix="cont_transformer_sample_") as directory:
        eval_file = _eval_file(model_dir, eval_file, directory, sweep)
        if push_to_hub == "":
            push_to_hub = hub_model_id or Path(output_dir).resolve().name
        if num_threads:
            torch.set_num_threads(num_threads)
        with inference_autocast(bf16, fp16, "cuda" if torch.cuda.is_available() else "cpu"):
            shared = {"method": method, "repeats": repeats, "overwrite": overwrite, "torch_compile": torch_compile}
            if sweep:
                written = _sweep_and_report(
                    model_dir,
                    eval_file,
                    output_dir,
                    bases=sweep_bases,
                    num_basis_values=sweep_num_basis,
                    num_steps_values=sweep_num_steps,
                    max_accuracy_drop=max_accuracy_drop,
                    **shared,
                )
            else:
                written = _compress_and_report(
                    model_dir,
                    output_dir,
                    basis=basis,
                    num_basis=num_basis,
                    num_steps=num_steps,
                    eval_file=eval_file,
                    state_num_basis=state_num_basis,
                    base_model=base_model,
                    **shared,
                )
            print(f"wrote {written}")
            if push_to_hub:
                print(f"pushed to {push_folder_to_hub(written, push_to_hub)}")


__all__ = ["compress_command", "compression_report", "run_dev_file", "sweep_report", "sweep_row_line"]
