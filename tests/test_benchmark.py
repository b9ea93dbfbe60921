"""The benchmark: its report's shape (not its timings), its memory probe, and baselines
that compute what the continuous models compute."""

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tiny import labels

from cont_transformer import (
    ContTransformerForTokenClassification,
    OdeResNetForImageClassification,
)
from cont_transformer.benchmarks.discrete_resnet import DiscreteResNet
from cont_transformer.benchmarks.discrete_transformer import PreLayerNormTagger
from cont_transformer.benchmarks.text_tagging import column_tagging_cases
from cont_transformer.runtime.measuring import (
    QUICK,
    Case,
    Workload,
    failed_case,
    markdown_table,
    peak_memory,
    run_case,
)

ROOT = Path(__file__).resolve().parents[1]
ENTRY_KEYS = {
    "name",
    "measure",
    "description",
    "metric",
    "unit",
    "candidate",
    "baseline",
    "candidate_value",
    "baseline_value",
    "ratio",
    "ratio_quartiles",
    "target",
    "target_quantity",
    "target_limit",
    "pass",
}
MACHINE_KEYS = {"cpu", "cpu_count", "torch", "torch_threads", "device", "gpu"}


@pytest.mark.slow
def test_quick_benchmark_writes_report(tmp_path):
    out = tmp_path / "tmp"
    subprocess.run(
        [
            sys.executable,
            "scripts/benchmark.py",
            "--quick",
            "--num-threads",
            "1",
            "--output-dir",
            str(out),
            "--compile-mode",
            "none",
        ],  # compiling takes minutes
        cwd=ROOT,
        check=True,
        timeout=300,
        capture_output=True,
    )
    report = json.loads((out / "benchmark.json").read_text())
    assert {"mode", "settings", "machine", "results", "passed", "failed"} <= set(report)
    assert report["complete"] and report["errors"] == 0
    assert report["mode"] == "quick"
    assert MACHINE_KEYS <= set(report["machine"])
    results = report["results"]
    assert {r["measure"] for r in results} == {*range(1, 9), 10, 11, 12}  # 9 needs --training-steps
    for entry in results:
        assert ENTRY_KEYS <= set(entry), entry["name"]
        assert isinstance(entry["pass"], bool)
        assert entry["ratio"] > 0 and entry["target_limit"] > 0
        assert entry["metric"] in ("time", "memory")
    assert report["passed"] + report["failed"] == len(results)
    table = (out / "benchmark.md").read_text()
    assert "| # | case |" in table and len(table.splitlines()) >= len(results) + 2


def test_a_case_that_raises_is_reported_as_an_error_row_that_fails():
    def build():
        raise RuntimeError("the compiler\nbroke")

    case = Case("broken", 1, "a case whose workloads cannot be built", build, 1.1, "ratio <= 1.1")
    with pytest.raises(RuntimeError) as raised:
        run_case(case, QUICK, torch.device("cpu"))
    entry = failed_case(case, raised.value)
    assert entry["pass"] is False and entry["error"] == "RuntimeError: the compiler broke"
    row = markdown_table([entry]).splitlines()[-1]
    assert "error: RuntimeError: the compiler broke" in row and row.endswith("**no** |")


def _word_lines(conllu: str) -> list[list[str]]:
    return [line.split("\t") for line in conllu.splitlines() if line[:1].isdigit() and "-" not in line.split("\t")[0]]


def test_column_tagging_case_tags_raw_text_with_every_column_and_the_same_xpos():
    case, _ = column_tagging_cases("quick", torch.device("cpu"))
    every, xpos_only = case.build()
    every_lines, xpos_lines = _word_lines(every.run()), _word_lines(xpos_only.run())
    assert len(every_lines) == len(xpos_lines) >= 300 * 0.9
    assert [line[1] for line in every_lines] == [line[1] for line in xpos_lines]  # the same words
    assert [line[4] for line in every_lines] == [line[4] for line in xpos_lines]  # the same XPOS
    for lemma, upos, feats in (line[2:4] + line[5:6] for line in every_lines):
        assert lemma and lemma != "_" and upos != "_" and feats  # every column filled
    assert all(line[2] == line[3] == line[5] == "_" for line in xpos_lines)
    result = run_case(case, QUICK, torch.device("cpu"))
    assert result["measure"] == 11 and result["ratio"] > 0 and result["target_limit"] == pytest.approx(1 / 0.9)


def test_a_pretrained_vocabulary_tags_the_same_words_as_the_treebanks():
    """Measure 12: the tagger with a pretrained vocabulary in front and static vectors tags
    the same text into the same words, every column filled."""
    _, case = column_tagging_cases("quick", torch.device("cpu"))
    pretrained, treebank = case.build()
    pretrained_lines, treebank_lines = _word_lines(pretrained.run()), _word_lines(treebank.run())
    assert [line[1] for line in pretrained_lines] == [line[1] for line in treebank_lines]
    assert all(line[3] != "_" and line[4] != "_" for line in pretrained_lines)
    result = run_case(case, QUICK, torch.device("cpu"))
    assert result["measure"] == 12 and result["target_limit"] == pytest.approx(1 / 0.95)


def test_peak_memory_counts_resident_bytes_and_the_highest_rise():
    kept = torch.zeros(256)  # 1 KiB
    mib = 2**20

    def run():
        first = torch.empty(mib, dtype=torch.uint8)
        second = torch.empty(2 * mib, dtype=torch.uint8)
        del first
        third = torch.empty(mib // 2, dtype=torch.uint8)
        return second, third

    workload = Workload("pattern", run, resident=lambda: [kept, kept[:10]])
    assert peak_memory(workload, torch.device("cpu")) == 1024 + 3 * mib


def _continuous_to_layers(state: dict, num_layers: int) -> dict:
    """The continuous tagger's weights as the discrete tagger's: coefficient k → layer k."""
    out = {}
    for name, value in state.items():
        if ".encoder.rate." in name:
            leaf = name.split(".encoder.rate.")[1]
            for k in range(num_layers):
                out[f"layers.{k}.rate.{leaf}"] = value[k]
        elif name == "cont_transformer.embeddings.word_dropout":
            continue  # a training-time buffer (the discrete baseline has no word dropout)
        elif name.startswith("cont_transformer.embeddings."):
            out[name.removeprefix("cont_transformer.embeddings.")] = value
        else:
            out[name.removeprefix("cont_transformer.")] = value
    return out


def test_pre_layer_norm_tagger_is_the_continuous_tagger_with_euler(tiny_tagger_config):
    num_layers = 3
    config = tiny_tagger_config(
        vocab_size=30,
        hidden_size=8,
        intermediate_size=12,
        num_basis=num_layers,
        time_horizon=num_layers,
        **labels("ABC"),
    )
    continuous = ContTransformerForTokenClassification(config).eval()
    discrete = PreLayerNormTagger(config, num_layers).eval()
    discrete.load_state_dict(_continuous_to_layers(continuous.state_dict(), num_layers))
    input_ids = torch.randint(1, 30, (2, 5))
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    expected = continuous(input_ids, mask).logits
    torch.testing.assert_close(discrete(input_ids, mask), expected)


def test_discrete_resnet_is_the_ode_resnet_with_euler(tiny_ode_resnet_config):
    num_layers = 2
    config = tiny_ode_resnet_config(num_channels=3, scheme="euler", num_basis=num_layers, time_horizon=num_layers)
    continuous = OdeResNetForImageClassification(config)
    discrete = DiscreteResNet(config, num_layers)
    state = {}
    for name, value in continuous.state_dict().items():
        name = name.removeprefix("ode_resnet.")
        if ".ode.rate." in name:
            stage, leaf = name.split(".ode.rate.")
            for k in range(num_layers):
                # integer counters have no K axis
                state[f"{stage}.{k + 1}.unit.{leaf}"] = value[k] if value.is_floating_point() else value
        else:
            state[name.replace(".stitch.", ".0.")] = value
    discrete.load_state_dict(state)
    pixels = torch.randn(4, 3, 8, 8)
    for mode in (True, False):
        continuous.train(mode)
        discrete.train(mode)
        torch.testing.assert_close(discrete(pixels), continuous(pixels).logits)


@pytest.mark.slow
def test_only_matching_no_case_is_one_line_naming_the_flag():
    run = subprocess.run(
        [sys.executable, "scripts/benchmark.py", "--quick", "--only", "no_such_case", "--output-dir", "/nonexistent"],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode != 0 and run.stderr.strip().splitlines() == [
        "benchmark.py: --only no_such_case: no case's name contains any of these"
    ]


@pytest.mark.slow
def test_the_gpu_check_script_needs_its_arguments_and_runs_only_the_chosen_steps(tmp_path):
    script = ROOT / "benchmarks" / "gpu_check.sh"
    missing = subprocess.run(["bash", str(script)], check=False, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert missing.returncode != 0 and "usage: gpu_check.sh OUT DATA" in missing.stderr
    data = tmp_path / "data" / "UD_English-GUM"
    data.mkdir(parents=True)
    (data / "en_gum-ud-dev.conllu.gz").write_bytes(
        gzip.compress(b"# text = Hi\n1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_\n\n")
    )
    out = tmp_path / "out"
    run = subprocess.run(
        ["bash", str(script), str(out), str(tmp_path / "data"), "60"],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DEVICE": "cpu", "GPU_STEPS": "none", "PYTHON": sys.executable},
    )
    assert run.returncode == 0, run.stdout[-2000:]
    log = (out / "gpu_check.log").read_text()
    assert "environment" in log and "done" in log and "1. the CIFAR-10 recipe" not in log  # no step chosen
    assert "torch" in log and "datasets" in log  # the versions it runs with
    assert "UD data for measure 9: 3 en_gum-ud-dev.conllu" in log  # unpacked for measure 9
