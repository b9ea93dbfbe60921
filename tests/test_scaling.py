"""The scaling benchmark's measures (``cont_transformer.benchmarks.scaling``): the PSS of a
process tree, and runs over process counts with their outputs compared byte for byte."""

import os
import signal
import subprocess
import sys

import pytest

from cont_transformer.benchmarks.scaling import (
    conllu_words,
    measure_scaling,
    plot_scaling,
    process_tree_pss,
    reported_rate,
    run_sampled,
)
from cont_transformer.tagging.tag_files import TaggingStats

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# A child that holds 96 MiB of its own pages, written so they are resident.
HOLDER = (
    "import os, time; b = bytearray(96 << 20); b[::4096] = b'x' * len(b[::4096]); "
    "print(os.getpid(), flush=True); time.sleep(30)"
)
CONLLU = "1\tHello\t_\t_\t_\t_\t_\t_\t_\t_\n2\t.\t_\t_\t_\t_\t_\t_\t_\t_\n\n"


def test_the_tree_counts_a_grandchild_and_an_ended_process_counts_nothing():
    shell = subprocess.Popen(["sh", "-c", f'"{sys.executable}" -c "{HOLDER}"; true'], stdout=subprocess.PIPE)
    grandchild = int(shell.stdout.readline())  # it holds its pages now
    try:
        assert process_tree_pss(shell.pid) > 96 << 20
    finally:
        os.kill(grandchild, signal.SIGKILL)
        shell.wait()
    assert process_tree_pss(shell.pid) == 0


def test_a_sampled_run_sees_the_memory_it_held_and_names_a_failure():
    result = run_sampled([sys.executable, "-c", HOLDER.replace("time.sleep(30)", "time.sleep(0.5)")])
    assert result["peak_pss_bytes"] > 96 << 20 and result["wall_s"] >= 0.5
    unsampled = run_sampled([sys.executable, "-c", "pass"], interval=None)
    assert unsampled["peak_pss_bytes"] is None and unsampled["wall_s"] > 0
    with pytest.raises(RuntimeError, match="failed"):
        run_sampled([sys.executable, "-c", "import sys; sys.exit('broken')"])


def _writer(depends_on_n):
    def command(n, output):
        lines = CONLLU * (n if depends_on_n else 3)
        return [sys.executable, "-c", f"open({str(output)!r}, 'w').write({lines!r})"]

    return command


def test_runs_over_process_counts_compare_their_outputs_byte_for_byte(tmp_path):
    same = measure_scaling(_writer(False), [1, 2], tmp_path, runs=2)["results"]
    assert [(r["processes"], r["words"], r["identical_output"]) for r in same] == [(1, 6, True), (2, 6, True)]
    assert same[0]["speedup"] == 1.0 and len(same[1]["runs"]) == 2
    # Timed runs are not sampled (the sampler's reads take CPU); one more run per count is.
    assert all(r["peak_pss_bytes"] is None for entry in same for r in entry["runs"])
    assert all(entry["peak_pss_bytes"] == entry["memory_run"]["peak_pss_bytes"] > 0 for entry in same)
    assert same[1]["words_per_wall_s"] == pytest.approx(6 / same[1]["wall_s"])
    differing = measure_scaling(_writer(True), [1, 2], tmp_path, runs=1)["results"]
    assert [r["identical_output"] for r in differing] == [True, False]
    assert not list(tmp_path.iterdir())  # each output is removed once compared
    pytest.importorskip("matplotlib")
    plot_scaling({"results": same}, tmp_path / "scaling.png")
    assert (tmp_path / "scaling.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_words_are_the_lines_with_an_integer_id(tmp_path):
    path = tmp_path / "a.conllu"
    path.write_text("# text = Don't.\n1-2\tDon't\t_\n1\tDo\t_\n2\tn't\t_\n2.1\tx\t_\n3\t.\t_\n\n")
    assert conllu_words(path) == 3


def test_the_rate_tag_py_reports_is_read_from_its_summary_line(tmp_path):
    stats = TaggingStats(sentences=3, words=12_345)
    stats.wall["model"] = 2.0
    assert reported_rate(stats.summary()) == pytest.approx(6172, abs=1)
    assert reported_rate("Traceback (most recent call last):") is None

    def summarizing(n, output):  # n processes tag twice as fast per process count, as reported
        line = f"tagged 6 words in 2 sentences: {1000 * n:,} words/s (model 0.01 s)"
        program = f"import sys; open({str(output)!r}, 'w').write({CONLLU * 3!r}); print({line!r}, file=sys.stderr)"
        return [sys.executable, "-c", program]

    results = measure_scaling(summarizing, [1, 2], tmp_path, runs=1)["results"]
    assert [r["tagging_words_per_wall_s"] for r in results] == [1000, 2000]
    assert [r["tagging_speedup"] for r in results] == [1.0, 2.0]
    silent = measure_scaling(_writer(False), [1, 2], tmp_path, runs=1)["results"]
    assert not any("tagging_speedup" in r for r in silent)  # a command that reports no rate
