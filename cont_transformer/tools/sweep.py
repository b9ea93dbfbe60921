"""Compression sweeps (paper Fig. 5): accuracy against model size and against N_T.

One trained model is compressed over a grid, without retraining: every basis of
:data:`SWEEP_BASES` × K at the source's N_T (Fig. 5a, accuracy against non-embedding
parameters), and N_T at the source's basis and K (Fig. 5b, accuracy and inference time
against N_T), next to K projected down to the same N_T. For a model with running
statistics (image models) Fig. 5a gets one more line: K of the weights reduced, the
statistics kept at the source's K. Every point is scored and timed on the same
evaluation set in one run.
:func:`select_smallest` then picks the smallest model within an accuracy budget: an
a posteriori choice of the compressed model.
"""

from __future__ import annotations

import csv
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from ..basis import get_basis
from ..checks import check_count
from ..runtime.compressed_copies import (
    check_arguments,
    check_choices,
    compression_table,
    statistics_num_basis,
    transformed_copy,
)
from ..runtime.families import EvalSet
from ..runtime.model_folders import COMPRESSION_SWEEP
from ..runtime.safe_files import staged_directory
from .compression import (
    Comparison,
    CompressionResult,
    ModelStats,
    PathLike,
    SourceModel,
    compare,
    load_eval_set,
    load_model,
    locked_output_dir,
    model_stats,
    save_compressed,
)

SWEEP_BASES = ("piecewise_constant", "piecewise_linear", "discontinuous_linear")
CSV_NAME = "sweep.csv"
TABLE_NAME = "sweep.md"
PARAMETERS_PLOT = "accuracy_vs_parameters.png"
NUM_STEPS_PLOT = "accuracy_vs_num_steps.png"
# Fig. 5a with the running statistics kept at the source's K (weights reduced only).
STATES_KEPT = "num_basis_states_kept"
# The columns of sweep.md (the rest of a row is in sweep.csv).
SWEEP_COLUMNS = (
    "model",
    "basis",
    "num_basis",
    "state_num_basis",
    "num_steps",
    "non_embedding_parameters",
    "compression_ratio",
    "inference_seconds",
    "speedup",
)


@dataclass
class SweepRow:
    """One measured model: ``grid`` is ``"source"``, ``"num_basis"`` (Fig. 5a),
    ``"num_steps"`` (Fig. 5b), ``"num_basis_and_steps"`` (K = N_T, both reduced) or
    :data:`STATES_KEPT`; the ratios compare it with the source of the same run."""

    grid: str
    method: str
    basis: str
    num_basis: int
    num_steps: int
    embedding_parameters: int
    non_embedding_parameters: int
    compression_ratio: float
    accuracy: float
    accuracy_drop: float  # percentage points below the source
    inference_seconds: float
    speedup: float
    state_num_basis: int | None = None  # K of the running statistics (None: no statistics)

    @classmethod
    def from_stats(cls, grid: str, method: str, comparison: Comparison, source: ModelStats) -> SweepRow:
        """The row of a model measured against ``source`` (only its accuracy and size)."""
        stats = comparison.stats
        return cls(
            grid=grid,
            method=method,
            basis=stats.basis,
            num_basis=stats.num_basis,
            num_steps=stats.num_steps,
            embedding_parameters=stats.embedding_parameters,
            non_embedding_parameters=stats.non_embedding_parameters,
            compression_ratio=source.non_embedding_parameters / stats.non_embedding_parameters,
            accuracy=stats.accuracy,
            accuracy_drop=100 * (source.accuracy - stats.accuracy),
            inference_seconds=stats.inference_seconds,
            speedup=comparison.speedup,
            state_num_basis=stats.state_num_basis,
        )


@dataclass
class SweepResult:
    """The rows of a sweep, the files it wrote and the model it selected (if asked)."""

    output_dir: Path
    rows: list[SweepRow]
    selected: SweepRow | None


def powers_of_two(limit: int) -> list[int]:
    """1, 2, 4, … up to ``limit``, and ``limit`` itself."""
    values = [1 << i for i in range(limit.bit_length()) if 1 << i < limit]
    return [*values, limit]


def sweep_points(
    basis: str,
    num_basis: int,
    num_steps: int,
    time_horizon: float,
    bases: Sequence[str] = SWEEP_BASES,
    num_basis_values: Sequence[int] | None = None,
    num_steps_values: Sequence[int] | None = None,
    state_num_basis: int | None = None,
) -> list[tuple[str, str, int, int]]:
    """The grid ``(grid, basis, K, N_T)`` around a source model of ``basis``, K, N_T.

    Fig. 5a: each of ``bases`` × ``num_basis_values`` (default: powers of two up to the
    source K) at the source N_T; K a basis cannot take (odd K for
    ``discontinuous_linear``) is skipped. Fig. 5b: ``num_steps_values`` (default: powers
    of two up to the source N_T) with the source's basis and K; and the same N_T values
    below the source's with K projected down to N_T as well (``"num_basis_and_steps"``:
    each step then reads a projection over its whole depth window instead of skipping
    coefficients, the paper's remark on N_T ≤ K). With the source's ``state_num_basis``
    (a model with running statistics), the K values below the source's again with the
    statistics kept (:data:`STATES_KEPT`).
    """
    for name in bases:
        check_arguments(name, None, None, "projection")
    num_basis_values = list(num_basis_values or powers_of_two(num_basis))
    num_steps_values = list(num_steps_values or powers_of_two(num_steps))
    for value in num_basis_values:
        check_count("num_basis", value)
    for value in num_steps_values:
        check_count("num_steps", value)
    points = []
    for name in bases:
        for k in sorted(set(num_basis_values)):
            if _takes(name, k, time_horizon):
                points.append(("num_basis", name, k, num_steps))
    if state_num_basis is not None:
        for k in sorted(set(num_basis_values)):
            if k < num_basis and _takes(basis, k, time_horizon):
                points.append((STATES_KEPT, basis, k, num_steps))
    points += [("num_steps", basis, num_basis, n) for n in sorted(set(num_steps_values))]
    for n in sorted(set(num_steps_values)):
        if n < min(num_basis, num_steps) and _takes(basis, n, time_horizon):
            points.append(("num_basis_and_steps", basis, n, n))
    return points


def _takes(basis: str, num_basis: int, time_horizon: float) -> bool:
    try:
        get_basis(basis, num_basis, time_horizon)
    except ValueError:
        return False
    return True


def check_accuracy_drop(max_accuracy_drop: float) -> None:
    """Raise ``ValueError`` unless ``max_accuracy_drop`` is a number of points >= 0."""
    if (
        isinstance(max_accuracy_drop, bool)
        or not isinstance(max_accuracy_drop, (int, float))
        or not max_accuracy_drop >= 0
    ):
        raise ValueError(f"max_accuracy_drop: must be a number of points >= 0, got {max_accuracy_drop!r}")


def select_smallest(rows: Sequence[SweepRow], max_accuracy_drop: float) -> SweepRow:
    """The smallest row within ``max_accuracy_drop`` points of the source: fewest
    non-embedding parameters, then fewest steps, then fastest, then most accurate.

    The source row always qualifies, so there is always an answer.
    """
    check_accuracy_drop(max_accuracy_drop)
    within = [row for row in rows if row.accuracy_drop <= max_accuracy_drop]
    return min(
        within,
        key=lambda r: (r.non_embedding_parameters, r.num_steps, r.inference_seconds, -r.accuracy),
    )


def write_csv(rows: Sequence[SweepRow], path: Path) -> None:
    """One line per row, the :class:`SweepRow` fields as columns."""
    fields = list(asdict(rows[0]))
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(asdict(row) for row in rows)


def read_csv(path: PathLike) -> list[SweepRow]:
    """The rows written by :func:`write_csv`."""
    with open(path, newline="") as handle:
        records = list(csv.DictReader(handle))
    types = {name: field.type for name, field in SweepRow.__dataclass_fields__.items()}
    casts = {"int": int, "float": float, "str": str, "int | None": lambda v: int(v) if v else None}
    return [SweepRow(**{k: casts[types[k]](v) for k, v in record.items()}) for record in records]


def markdown_table(rows: Sequence[SweepRow]) -> str:
    """The rows as :func:`~cont_transformer.runtime.compressed_copies.compression_table` writes every
    compression table (accuracy in percent, time in seconds); a column for the K of the
    running statistics when the model has them."""
    records = [{**asdict(row), "model": row.grid} for row in rows]
    return compression_table(records, ["accuracy"], columns=SWEEP_COLUMNS, name="grid")


def figure_class() -> type:
    """matplotlib's ``Figure`` (the ``[plots]`` extra); OSError in one line without it."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise OSError('the sweep\'s plots need matplotlib: pip install "cont-transformer[plots]"') from None
    return Figure


def plot_parameters(rows: Sequence[SweepRow], path: Path) -> None:
    """Fig. 5a: accuracy against non-embedding parameters, one line per basis."""
    source = next(r for r in rows if r.grid == "source")
    figure = figure_class()(figsize=(6, 4.2))
    axes = figure.subplots()
    for basis in dict.fromkeys(r.basis for r in rows if r.grid == "num_basis"):
        line = sorted(
            (r for r in rows if r.grid == "num_basis" and r.basis == basis),
            key=lambda r: r.non_embedding_parameters,
        )
        axes.plot(
            [r.non_embedding_parameters for r in line],
            [100 * r.accuracy for r in line],
            "o-",
            label=basis,
        )
    kept = sorted((r for r in rows if r.grid == STATES_KEPT), key=lambda r: r.non_embedding_parameters)
    if kept:
        axes.plot(
            [r.non_embedding_parameters for r in [*kept, source]],
            [100 * r.accuracy for r in [*kept, source]],
            "s--",
            label=f"{source.basis}, statistics kept at K = {source.state_num_basis}",
        )
    axes.axhline(100 * source.accuracy, color="gray", linestyle="--", linewidth=1, label="source")
    axes.set_xscale("log")
    axes.set_xlabel("non-embedding parameters")
    axes.set_ylabel("accuracy (%)")
    axes.set_title(f"change of basis ({source.method}), N_T = {source.num_steps}")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def plot_num_steps(rows: Sequence[SweepRow], path: Path) -> None:
    """Fig. 5b: accuracy (left axis) and inference time (right axis) against N_T."""
    source = next(r for r in rows if r.grid == "source")
    line = sorted((r for r in rows if r.grid == "num_steps"), key=lambda r: r.num_steps)
    figure = figure_class()(figsize=(6, 4.2))
    axes = figure.subplots()
    steps = [r.num_steps for r in line]
    axes.plot(steps, [100 * r.accuracy for r in line], "o-", color="tab:red", label=f"K = {source.num_basis}")
    both = sorted((r for r in rows if r.grid == "num_basis_and_steps"), key=lambda r: r.num_steps)
    if both:
        axes.plot(
            [r.num_steps for r in both],
            [100 * r.accuracy for r in both],
            "^-",
            color="tab:orange",
            label="K projected to N_T",
        )
        axes.legend(loc="lower right")
    axes.axhline(100 * source.accuracy, color="gray", linestyle="--", linewidth=1)
    axes.set_xscale("log", base=2)
    axes.set_xticks(steps, [str(n) for n in steps])
    axes.set_xlabel("N_T (num_steps)")
    axes.set_ylabel("accuracy (%)", color="tab:red")
    axes.grid(True, alpha=0.3)
    timing = axes.twinx()
    timing.plot(steps, [r.inference_seconds for r in line], "s--", color="tab:blue", label="time")
    timing.set_ylabel("inference time (s)", color="tab:blue")
    axes.set_title(f"{source.basis}, K = {source.num_basis}")
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def write_sweep_files(rows: Sequence[SweepRow], folder: Path) -> None:
    """The CSV, the Markdown table and both plots, into ``folder``."""
    write_csv(rows, folder / CSV_NAME)
    (folder / TABLE_NAME).write_text(markdown_table(rows) + "\n")
    plot_parameters(rows, folder / PARAMETERS_PLOT)
    plot_num_steps(rows, folder / NUM_STEPS_PLOT)


def _states_for(grid: str, k: int, source_states: int | None) -> int | None:
    """The statistics' K a grid asks for."""
    if grid == STATES_KEPT:
        return source_states
    # Fig. 5a's lines: the statistics follow the weights (compressed_copy would keep them).
    return k if grid == "num_basis" and source_states is not None else None


def _measure_grid(
    source: SourceModel,
    eval_set: EvalSet,
    points: list,
    method: str,
    repeats: int,
    torch_compile: bool,
    source_states: int | None,
    progress: Callable[[SweepRow], object] | None,
) -> tuple[list[SweepRow], list[Comparison], ModelStats]:
    """Each point's copy of the source compared with it on ``eval_set``: the rows (the
    source's first) and their comparisons, and the source's statistics."""
    source_stats = model_stats(source.model, eval_set.accuracy(source.model), None)
    comparisons = []
    for grid, basis, k, n in points:
        model = transformed_copy(source.model, basis, k, n, method, _states_for(grid, k, source_states))
        comparisons.append(compare(source.model, model, eval_set, repeats, torch_compile))
        if progress is not None:
            progress(SweepRow.from_stats(grid, method, comparisons[-1], source_stats))
    # The source was timed beside every point: its time is the median over the whole run.
    source_times = [t for comparison in comparisons for t in comparison.source_seconds]
    source_stats.inference_seconds = statistics.median(source_times)
    comparisons.insert(0, Comparison(source_stats, 1.0, source_times))
    grids = ["source", *(point[0] for point in points)]
    rows = [SweepRow.from_stats(g, method, c, source_stats) for g, c in zip(grids, comparisons)]
    return rows, comparisons, source_stats


def _save_selected(
    source: SourceModel,
    output: Path,
    staging: Path,
    eval_set: EvalSet,
    method: str,
    selected: SweepRow,
    comparison: Comparison,
    source_stats: ModelStats,
    source_states: int | None,
    max_accuracy_drop: float,
) -> None:
    """Save the model the sweep selected into ``staging``, with the rule that chose it and
    links to the sweep's files in its card."""
    stats = comparison.stats
    model = transformed_copy(
        source.model,
        stats.basis,
        stats.num_basis,
        stats.num_steps,
        method,
        _states_for(selected.grid, stats.num_basis, source_states),
    )
    result = CompressionResult(
        source.folder,
        output,
        method,
        source_stats,
        stats,
        comparison.speedup,
        eval_set.description,
        eval_set.split,
    )
    rule = f"the smallest model of the sweep ({CSV_NAME}) within {max_accuracy_drop} accuracy points of the source"
    files = (
        f"[table]({TABLE_NAME}), [CSV]({CSV_NAME}), ![accuracy against parameters]"
        f"({PARAMETERS_PLOT}) ![accuracy against N_T]({NUM_STEPS_PLOT})"
    )
    save_compressed(source, model, staging, result, {"selected": rule, "sweep": files})


def sweep(
    model_dir: PathLike,
    eval_file: PathLike,
    output_dir: PathLike,
    *,
    method: str = "projection",
    bases: Sequence[str] = SWEEP_BASES,
    num_basis_values: Sequence[int] | None = None,
    num_steps_values: Sequence[int] | None = None,
    max_accuracy_drop: float | None = None,
    repeats: int = 3,
    overwrite: bool = False,
    progress: Callable[[SweepRow], object] | None = None,
    torch_compile: bool = False,
) -> SweepResult:
    """Sweep the model in ``model_dir`` (see :func:`sweep_points`) on ``eval_file``.

    Writes ``sweep.csv``, ``sweep.md`` and the two plots into ``output_dir`` (atomically and
    under its lock, like :func:`~cont_transformer.tools.compression.compress`). With
    ``max_accuracy_drop`` (percentage points), the model :func:`select_smallest` picks is
    saved there too, as a complete model folder. ``progress`` is called with each row as it is measured.
    """
    check_arguments(None, None, None, method)
    check_count("repeats", repeats)
    if max_accuracy_drop is not None:
        check_accuracy_drop(max_accuracy_drop)
    figure_class()  # the plots' matplotlib is there before the sweep starts
    with locked_output_dir(output_dir, model_dir, overwrite, COMPRESSION_SWEEP) as output:
        source = load_model(model_dir)
        config = source.model.config
        points = sweep_points(
            config.basis,
            config.num_basis,
            config.num_steps,
            config.time_horizon,
            bases,
            num_basis_values,
            num_steps_values,
            source_states := statistics_num_basis(config),
        )
        for _, basis, k, n in points:
            check_choices(config, basis, k, n, method)
        eval_set = load_eval_set(source, eval_file)
        rows, comparisons, source_stats = _measure_grid(
            source, eval_set, points, method, repeats, torch_compile, source_states, progress
        )
        selected = select_smallest(rows, max_accuracy_drop) if max_accuracy_drop is not None else None
        with staged_directory(output, COMPRESSION_SWEEP) as staging:
            write_sweep_files(rows, staging)
            if selected is not None:
                comparison = comparisons[next(i for i, row in enumerate(rows) if row is selected)]
                _save_selected(
                    source,
                    output,
                    staging,
                    eval_set,
                    method,
                    selected,
                    comparison,
                    source_stats,
                    source_states,
                    max_accuracy_drop,
                )
        return SweepResult(output, rows, selected)
