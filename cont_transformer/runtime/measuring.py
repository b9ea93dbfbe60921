"""The measuring harness: speed and memory of a candidate against a baseline, in one process.

Every figure is a ratio of a *candidate* (a continuous model) to a *baseline* (the
discrete network it generalises, or the same model in another setting), measured in
the same process on the same inputs. A :class:`Case` names the comparison and its
target; :func:`run_case` measures it, :func:`write_report` writes ``benchmark.json``
and ``benchmark.md``, and :func:`run_benchmark` (``scripts/benchmark.py``) measures a
list of cases one by one, writing the report after each. The cases themselves live with
what they measure, in :mod:`cont_transformer.benchmarks`: the continuous
transformer's in ``transformer``, ``representations``, ``training`` and ``text_tagging``,
the image models' in ``images``, built of the workloads of ``workloads``.

Timing (:func:`time_interleaved`): after warm-up runs, candidate and baseline
alternate rep by rep (candidate first on even reps, baseline first on odd ones), so
slow drifts and bursts of load on a shared machine hit both alike. The reported
ratio is the median of the per-rep ratios; the medians of the raw times are
reported beside it. The garbage collector runs before, and is paused during, the
series; CUDA work is synchronised before the clock is read.

Peak memory (:func:`peak_memory`): the bytes the workload holds before it runs
(the unique storages of its parameters, buffers, gradients, optimiser state and
inputs) plus the highest rise in allocated bytes while it runs. The rise comes
from the allocator: ``torch.cuda.max_memory_allocated`` on a GPU; on the CPU, the
allocation and free events that PyTorch's CPU allocator reports to
``torch.profiler`` (``profile_memory=True``), summed in time order. Both count
every tensor the step allocates, autograd's saved tensors and the kernels'
scratch buffers included, and neither counts allocator caching or Python objects.
The CPU profiler does not report frees of blocks allocated before it started, so a
run must not free resident tensors: a training step's ``zero_grad`` (to None) runs
in ``prepare``, outside the measurement.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from .compiling import default_mode

# --- workloads and cases ---------------------------------------------------------


@dataclass
class Workload:
    """A named piece of work: ``run()`` is what is measured.

    ``prepare()`` runs, unmeasured, before every ``run()`` (an optimiser's
    ``zero_grad``, a fresh copy of a model to transform). ``resident()`` yields the
    tensors the workload keeps between runs; their bytes count towards its peak memory.
    """

    name: str
    run: Callable[[], object]
    prepare: Callable[[], object] = lambda: None
    resident: Callable[[], Iterable[torch.Tensor]] = lambda: ()


@dataclass(frozen=True)
class Settings:
    """How many unmeasured warm-up runs and measured repeats each timing makes."""

    warmup: int
    repeats: int


@dataclass
class Case:
    """One comparison: ``build()`` returns ``(candidate, baseline)`` workloads.

    ``metric`` is ``"time"`` (seconds per run) or ``"memory"`` (peak bytes of a run).
    The target is ``quantity <= limit``, with ``quantity`` either ``"ratio"``
    (candidate / baseline) or ``"candidate"`` (the candidate's own median value).
    """

    name: str
    measure: int
    description: str
    build: Callable[[], tuple[Workload, Workload]]
    limit: float
    target: str
    metric: str = "time"
    quantity: str = "ratio"
    sizes: dict = field(default_factory=dict)
    settings: Settings | None = None  # instead of the run's (e.g. one run of a long workload)


QUICK = Settings(warmup=1, repeats=3)
FULL = Settings(warmup=2, repeats=9)


# --- measurement -----------------------------------------------------------------


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(workload: Workload, device: torch.device) -> float:
    workload.prepare()
    _synchronize(device)
    start = time.perf_counter()
    workload.run()
    _synchronize(device)
    return time.perf_counter() - start


def time_interleaved(
    candidate: Workload, baseline: Workload, *, warmup: int, repeats: int, device: torch.device
) -> tuple[list[float], list[float]]:
    """Seconds per run of ``candidate`` and ``baseline``, measured alternately.

    Returns two lists of ``repeats`` times; rep ``i`` of both lists was measured
    back to back, in swapped order on odd reps. The garbage collector is paused for
    the whole series (a full collection takes long in a process that imported
    transformers, and would land on whichever run it interrupts).
    """
    gc.collect()
    gc.disable()
    try:
        for _ in range(warmup):
            _timed(candidate, device)
            _timed(baseline, device)
        candidate_times, baseline_times = [], []
        for rep in range(repeats):
            if rep % 2 == 0:
                candidate_times.append(_timed(candidate, device))
                baseline_times.append(_timed(baseline, device))
            else:
                baseline_times.append(_timed(baseline, device))
                candidate_times.append(_timed(candidate, device))
    finally:
        gc.enable()
    return candidate_times, baseline_times


def resident_bytes(tensors: Iterable[torch.Tensor]) -> int:
    """Bytes of the distinct storages behind ``tensors`` (views and repeats count once)."""
    storages = {}
    for tensor in tensors:
        storage = tensor.untyped_storage()
        storages[(storage.device, storage.data_ptr())] = storage.nbytes()
    return sum(storages.values())


def _cpu_allocation_peak(run: Callable[[], object]) -> int:
    """Highest running sum of the CPU allocator's allocations and frees during ``run()``.

    The events are the profiler's raw ``[memory]`` records (``kineto_results``): the
    aggregated ``FunctionEvent`` view nets each op's allocations and loses the peak
    inside an op.
    """
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        run()
    events = [
        e
        for e in prof.profiler.kineto_results.events()
        if e.name() == "[memory]" and e.device_type() == torch.autograd.DeviceType.CPU
    ]
    current = peak = 0
    for event in sorted(events, key=lambda e: e.start_ns()):
        current += event.nbytes()
        peak = max(peak, current)
    return peak


def peak_memory(workload: Workload, device: torch.device) -> int:
    """Peak bytes of one run: resident bytes plus the largest rise in allocated bytes.

    Run the workload once beforehand, so that lazily created state (optimiser
    moments) already exists and counts as resident. The garbage collector is paused
    during the run, as in :func:`time_interleaved`.
    """
    workload.prepare()
    resident = resident_bytes(workload.resident())
    gc.disable()
    try:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            start = torch.cuda.memory_allocated(device)
            torch.cuda.reset_peak_memory_stats(device)
            workload.run()
            torch.cuda.synchronize(device)
            rise = torch.cuda.max_memory_allocated(device) - start
        else:
            rise = _cpu_allocation_peak(workload.run)
    finally:
        gc.enable()
    return resident + rise


def _quartiles(values: list[float]) -> list[float]:
    if len(values) < 2:
        return [values[0], values[0]]
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return [q1, q3]


def run_case(case: Case, settings: Settings, device: torch.device) -> dict:
    """Measure one case; returns its JSON entry (``ratio``, ``target``, ``pass``, …)."""
    candidate, baseline = case.build()
    settings = case.settings or settings
    if case.metric == "time":
        candidate_times, baseline_times = time_interleaved(
            candidate, baseline, warmup=settings.warmup, repeats=settings.repeats, device=device
        )
        ratios = [c / b for c, b in zip(candidate_times, baseline_times)]
        candidate_value = statistics.median(candidate_times)
        baseline_value = statistics.median(baseline_times)
        ratio = statistics.median(ratios)
        spread = _quartiles(ratios)
        unit = "s"
    elif case.metric == "memory":
        for workload in (candidate, baseline):
            _timed(workload, device)
        candidate_value = peak_memory(candidate, device)
        baseline_value = peak_memory(baseline, device)
        ratio = candidate_value / baseline_value
        spread = [ratio, ratio]
        unit = "bytes"
    else:
        raise ValueError(f"unknown metric {case.metric!r}")
    measured = ratio if case.quantity == "ratio" else candidate_value
    return {
        "name": case.name,
        "measure": case.measure,
        "description": case.description,
        "metric": case.metric,
        "unit": unit,
        "candidate": candidate.name,
        "baseline": baseline.name,
        "candidate_value": candidate_value,
        "baseline_value": baseline_value,
        "ratio": ratio,
        "ratio_quartiles": spread,
        "target": case.target,
        "target_quantity": case.quantity,
        "target_limit": case.limit,
        "pass": bool(measured <= case.limit),
        "sizes": case.sizes,
    }


# --- the machine -----------------------------------------------------------------


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; else what ``platform`` says)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info(device: torch.device) -> dict:
    """CPU model and core count, load, torch version and threads, and the GPU if used."""
    info = {
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "device": str(device),
        "gpu": None,
        "cuda": None,
    }
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
        info["cuda"] = torch.version.cuda
    return info


# --- the report ------------------------------------------------------------------


def _format_value(value: float, unit: str) -> str:
    if unit == "bytes":
        return f"{value / 2**20:.1f} MiB"
    return f"{value * 1e3:.1f} ms" if value < 1 else f"{value:.2f} s"


def failed_case(case: Case, error: Exception) -> dict:
    """The JSON entry of a case whose measurement raised ``error`` (it fails its target)."""
    message = " ".join(str(error).split())[:300]
    return {
        "name": case.name,
        "measure": case.measure,
        "description": case.description,
        "target": case.target,
        "error": f"{type(error).__name__}: {message}",
        "pass": False,
    }


def markdown_table(results: list[dict]) -> str:
    """The results as a Markdown table, one row per case."""
    rows = [
        "| # | case | candidate | baseline | ratio (IQR) | target | pass |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if "error" in r:
            rows.append(f"| {r['measure']} | {r['description']} | error: {r['error']} | | | {r['target']} | **no** |")
            continue
        low, high = r["ratio_quartiles"]
        spread = f" ({low:.2f}–{high:.2f})" if r["metric"] == "time" else ""
        rows.append(
            f"| {r['measure']} | {r['description']} | {r['candidate']}: {_format_value(r['candidate_value'], r['unit'])} "
            f"| {r['baseline']}: {_format_value(r['baseline_value'], r['unit'])} | {r['ratio']:.3f}{spread} "
            f"| {r['target']} | {'yes' if r['pass'] else '**no**'} |"
        )
    return "\n".join(rows)


def machine_line(machine: dict) -> str:
    gpu = f", GPU {machine['gpu']} (CUDA {machine['cuda']})" if machine["gpu"] else ""
    load = machine.get("load_average")
    load_text = f", load average {load[0]:.1f}" if load else ""
    return (
        f"{machine['cpu']}, {machine['cpu_count']} cores{load_text}; torch {machine['torch']}, "
        f"{machine['torch_threads']} threads; device {machine['device']}{gpu}"
    )


def write_report(output_dir: str | Path, report: dict) -> tuple[Path, Path]:
    """Write ``benchmark.json`` (the whole report) and ``benchmark.md`` (machine + table)."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    json_path = output_dir / "benchmark.json"
    md_path = output_dir / "benchmark.md"
    json_path.write_text(json.dumps(report, indent=2) + "\n")
    md_path.write_text(
        f"# Benchmark ({report['mode']} mode)\n\n{machine_line(report['machine'])}\n\n"
        f"{markdown_table(report['results'])}\n"
    )
    return json_path, md_path


# --- a run -----------------------------------------------------------------------


def run_benchmark(
    cases: Callable[[str, torch.device, str], list[Case]],
    *,
    quick: bool = False,
    output_dir: str | Path = ".",
    device: str | None = None,
    num_threads: int | None = None,
    only: Sequence[str] | None = None,
    compile_mode: str | None = None,
    program: str = "benchmark.py",
) -> dict:
    """Measure every case of ``cases(mode, device, compile_mode)`` and return the report.

    ``mode`` is ``"quick"`` (tiny sizes, :data:`QUICK`) or ``"full"`` (:data:`FULL`);
    ``device`` defaults to CUDA when available, ``compile_mode`` to
    :func:`~cont_transformer.runtime.compiling.default_mode` (``"none"``: the cases leave
    their compiled variants out). ``only`` keeps the cases whose name contains one of its
    strings. Prints the machine line and each case's verdict as it finishes, then the
    table. ``benchmark.json`` and ``benchmark.md`` are written into ``output_dir`` after
    every case, so a run stopped by a time limit keeps what it measured; a case that
    raises becomes an error row (:func:`failed_case`). ``SystemExit`` naming ``program``
    when ``only`` matches no case, or when a case failed with an error.
    """
    if num_threads:
        torch.set_num_threads(num_threads)
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    mode = "quick" if quick else "full"
    settings = QUICK if quick else FULL
    compile_mode = compile_mode or default_mode(device)
    selected = cases(mode, device, compile_mode)
    if only:
        selected = [case for case in selected if any(name in case.name for name in only)]
        if not selected:
            raise SystemExit(f"{program}: --only {' '.join(only)}: no case's name contains any of these")
    machine = machine_info(device)
    print(machine_line(machine), flush=True)
    start = time.perf_counter()
    results = []
    report = {
        "mode": mode,
        "compile_mode": compile_mode,
        "settings": {"warmup": settings.warmup, "repeats": settings.repeats},
        "machine": machine,
    }
    for case in selected:
        try:
            results.append(run_case(case, settings, device))
        except Exception as error:  # noqa: BLE001  one broken case (a compiler failing on a GPU) must not lose the rest
            results.append(failed_case(case, error))
        r = results[-1]
        verdict = (
            f"ERROR {r['error']}"
            if "error" in r
            else f"ratio {r['ratio']:.3f} ({r['target']}: {'pass' if r['pass'] else 'FAIL'})"
        )
        print(f"{case.name}: {verdict}", flush=True)
        # Written after every case, so a run stopped by a time limit keeps what it measured.
        report.update(
            seconds=time.perf_counter() - start,
            complete=len(results) == len(selected),
            results=results,
            passed=sum(r["pass"] for r in results),
            failed=sum(not r["pass"] for r in results),
            errors=sum("error" in r for r in results),
        )
        json_path, md_path = write_report(output_dir, report)
    print(f"\n{markdown_table(results)}\n\nwrote {json_path} and {md_path}")
    if report["errors"]:
        raise SystemExit(f"{program}: {report['errors']} case(s) failed with an error (see {json_path})")
    return report


__all__ = [
    "FULL",
    "QUICK",
    "Case",
    "Settings",
    "Workload",
    "cpu_model",
    "failed_case",
    "machine_info",
    "machine_line",
    "markdown_table",
    "peak_memory",
    "resident_bytes",
    "run_benchmark",
    "run_case",
    "time_interleaved",
    "write_report",
]
