"""Tagging on N worker processes against one: words per wall second, the output's bytes,
and the memory of the whole process tree (``benchmarks/scaling.py``).

Each measured command runs in a fresh process, as a user runs ``scripts/tag.py``, loading
included: the clock is the wall clock from its start to its exit. The timed runs of every N
alternate run by run (1, 2, 1, 2, ...), so a burst of load on a shared machine hits all
alike; each N's figure is the median of its runs. Memory is measured in one more run of
each N: a thread samples the proportional set size (PSS, ``/proc/PID/smaps_rollup``) of the
process and all its descendants every ``interval`` seconds and keeps the peak (pages that
forked workers share with the parent copy-on-write count once over the tree, so the figure
is the memory the tree really takes). Timed runs are not sampled: reading every process's
``smaps_rollup`` fifty times a second takes CPU from the workers, and on two cores it held
two processes' tagging at 1.44x one process's, where unsampled runs give 1.95x. Every
run's output must equal the first one's, byte for byte.

Beside the fresh process's figure, the rate ``tag.py`` reports on its last line (its words
per wall second from the first text read to the last sentence written: loading and imports
left out) is kept for each run, so the two parts of a run, the fixed start and the tagging
that workers share, are seen apart.
"""

from __future__ import annotations

import hashlib
import re
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ..tagging.conllu_document import ConlluDocument

# tag.py's summary line: "tagged 112,564 words in 6,144 sentences: 10,694 words/s (...)".
_REPORTED_RATE = re.compile(r": ([0-9,]+) words/s \(")


def reported_rate(line: str) -> float | None:
    """The words per wall second that ``tag.py``'s summary line ``line`` reports, or None
    for another line."""
    match = _REPORTED_RATE.search(line)
    return float(match.group(1).replace(",", "")) if match else None


def _parents() -> dict[int, int]:
    """Every process's parent (``/proc/PID/stat``'s fourth field)."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # The command name, in parentheses, may hold spaces: the fields follow its last ")".
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # ended since it was listed
    return parents


def process_tree_pss(pid: int) -> int:
    """The PSS in bytes of process ``pid`` and all its descendants (0 for a process that
    has ended)."""
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    total, pending = 0, [pid]
    while pending:
        current = pending.pop()
        pending += children.get(current, [])
        try:
            for line in Path(f"/proc/{current}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024  # kB
                    break
        except OSError:
            continue  # ended since it was listed
    return total


def run_sampled(command: Sequence[str], env: dict[str, str] | None = None, interval: float | None = 0.02) -> dict:
    """Run ``command`` to its end: its wall seconds and the peak PSS of its process tree,
    sampled every ``interval`` seconds (None: not sampled, the peak None). Raises
    ``RuntimeError`` with the end of its stderr if it fails."""
    peak = 0 if interval is not None else None
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, process_tree_pss(process.pid))
            stop.wait(interval)

    sampler = threading.Thread(target=sample, daemon=True) if interval is not None else None
    if sampler is not None:
        sampler.start()
    _, stderr = process.communicate()
    wall = time.perf_counter() - start
    stop.set()
    if sampler is not None:
        sampler.join()
    if process.returncode:
        raise RuntimeError(f"{' '.join(command)} failed ({process.returncode}): {stderr[-2000:]}")
    return {"wall_s": wall, "peak_pss_bytes": peak, "stderr_last_line": (stderr.strip().splitlines() or [""])[-1]}


def conllu_words(path: str | Path) -> int:
    """The words of a CoNLL-U file: its lines whose ID is an integer."""
    with open(path, encoding="utf-8") as lines:
        return sum(1 for line in lines if line[:1].isdigit() and line.split("\t", 1)[0].isdigit())


def repeated_text(conllu: str | Path, repeat: int) -> str:
    """The raw text of a CoNLL-U file (its ``# text`` lines, paragraphs as blank lines),
    ``repeat`` times, a paragraph break between copies."""
    text = ConlluDocument.read(conllu).text()
    return "\n".join([text] * repeat)


def measure_scaling(
    command: Callable[[int, Path], list[str]],
    processes: Sequence[int],
    output_dir: Path,
    runs: int = 3,
    env: dict[str, str] | None = None,
    interval: float = 0.02,
) -> dict:
    """Run ``command(n, output_path)`` ``runs`` times for every ``n`` in ``processes``
    (alternating), each output into ``output_dir``, then once more each with its memory
    sampled every ``interval`` seconds (module docstring). Returns, for each n: the timed
    runs' wall seconds and their median, words per wall second, the sampled run
    (``memory_run``) and its peak PSS, the output's SHA-256 and whether it equals the first
    n's byte for byte; and the ratios of each n to the first.
    Where every run's last stderr line is ``tag.py``'s summary, also the median of the rate
    it reports (``tagging_words_per_wall_s``) and its ratio to the first n's
    (``tagging_speedup``)."""
    results: dict[int, dict] = {n: {"processes": n, "runs": []} for n in processes}
    for run in range(runs + 1):  # the last round samples the memory
        for n in processes:
            output = output_dir / f"processes-{n}-run-{run}.conllu"
            measured = run_sampled(command(n, output), env=env, interval=interval if run == runs else None)
            if run == runs:
                results[n]["memory_run"] = measured
            else:
                results[n]["runs"].append(measured)
            digest = hashlib.sha256(output.read_bytes()).hexdigest()
            if run == 0:
                results[n]["sha256"], results[n]["words"] = digest, conllu_words(output)
            elif digest != results[n]["sha256"]:
                raise RuntimeError(f"{output}: the output of {n} processes differs from run to run")
            output.unlink()
    base = results[processes[0]]
    for entry in results.values():
        entry["wall_s"] = statistics.median(r["wall_s"] for r in entry["runs"])
        entry["peak_pss_bytes"] = entry["memory_run"]["peak_pss_bytes"]
        entry["words_per_wall_s"] = entry["words"] / entry["wall_s"]
        entry["identical_output"] = entry["sha256"] == base["sha256"]
        entry["speedup"] = entry["words_per_wall_s"] / base["words_per_wall_s"]
        reported = [reported_rate(r["stderr_last_line"]) for r in entry["runs"]]
        if None not in reported:  # base is the first entry, so its figure is set before the others'
            entry["tagging_words_per_wall_s"] = statistics.median(reported)
        if "tagging_words_per_wall_s" in entry and "tagging_words_per_wall_s" in base:
            entry["tagging_speedup"] = entry["tagging_words_per_wall_s"] / base["tagging_words_per_wall_s"]
        entry["pss_ratio"] = entry["peak_pss_bytes"] / base["peak_pss_bytes"]
    return {"results": list(results.values())}


def plot_scaling(report: dict, path: str | Path) -> None:
    """Words per wall second (with linear scaling from one process) and peak PSS of the
    process tree against the number of processes, side by side, into a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = report["results"]
    counts = [r["processes"] for r in results]
    base = results[0]["words_per_wall_s"] / results[0]["processes"]
    figure, (speed, memory) = plt.subplots(1, 2, figsize=(9, 3.6))
    speed.plot(counts, [r["words_per_wall_s"] for r in results], "o-", label="measured")
    speed.plot(counts, [base * n for n in counts], "--", color="grey", label="linear")
    speed.set(xlabel="processes", ylabel="words per wall second", xticks=counts, ylim=(0, None))
    speed.legend()
    memory.plot(counts, [r["peak_pss_bytes"] / 2**20 for r in results], "o-")
    memory.set(xlabel="processes", ylabel="peak PSS of the process tree (MiB)", xticks=counts, ylim=(0, None))
    figure.suptitle(report.get("title", "tagging on worker processes"), fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


__all__ = [
    "conllu_words",
    "measure_scaling",
    "plot_scaling",
    "process_tree_pss",
    "repeated_text",
    "reported_rate",
    "run_sampled",
]
