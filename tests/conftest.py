"""Shared tiny models of the tests, defined once (as transformers' model testers do).

Fixtures that return factories: a test asks for ``tiny_tagger`` and calls it with the
keyword overrides it changes from the tiny default, so the numbers that matter to it stay
visible where it asserts. The factories are pure, so the fixtures are session-scoped and
module-scoped fixtures may use them. Their words, tags and label maps are in ``tiny.py``.
"""

import importlib.util
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tiny import TAGS, WORDS, labels

from cont_transformer import (
    ContTransformerConfig,
    ContTransformerForTokenClassification,
    OdeResNetConfig,
)
from cont_transformer.tools.cli import run_cli


def _tiny_tagger_config(**overrides) -> ContTransformerConfig:
    """A continuous tagger of width 16 over ``tiny.WORDS`` (and the three special tokens),
    tagging ``tiny.TAGS``, with K = 3; ``overrides`` replace any field."""
    options = {
        "vocab_size": len(WORDS) + 3,
        "hidden_size": 16,
        "num_attention_heads": 2,
        "intermediate_size": 24,
        "num_basis": 3,
        **labels(TAGS),
    }
    return ContTransformerConfig(**{**options, **overrides})


def _tiny_tagger(seed=0, **overrides) -> ContTransformerForTokenClassification:
    """A :func:`_tiny_tagger_config` model initialised from ``seed``, in eval mode."""
    torch.manual_seed(seed)
    return ContTransformerForTokenClassification(_tiny_tagger_config(**overrides)).eval()


def _tiny_ode_resnet_config(**overrides) -> OdeResNetConfig:
    """A one-channel ODE-ResNet of two stages (4 and 6 channels) over three classes, K = 3."""
    values = {
        "num_channels": 1,
        "stage_channels": [4, 6],
        "stage_strides": [1, 2],
        "num_labels": 3,
        "num_basis": 3,
    }
    return OdeResNetConfig(**{**values, **overrides})


@pytest.fixture(scope="session")
def tiny_tagger_config():
    """``tiny_tagger_config(**overrides)``: the config of the tiny continuous tagger."""
    return _tiny_tagger_config


@pytest.fixture(scope="session")
def tiny_tagger():
    """``tiny_tagger(seed=0, **overrides)``: the tiny continuous tagger, in eval mode."""
    return _tiny_tagger


@pytest.fixture(scope="session")
def tiny_ode_resnet_config():
    """``tiny_ode_resnet_config(**overrides)``: the config of the tiny one-channel ODE-ResNet."""
    return _tiny_ode_resnet_config


@pytest.fixture(scope="session")
def sample_run_60(tmp_path_factory) -> Path:
    """``scripts/train_pos.py recipes/sample.json --max-steps 60``: a run folder whose tagger
    predicts every column, with enough steps for the columns to vary from word to word."""
    output = tmp_path_factory.mktemp("sample_run_60") / "run"
    result = subprocess.run(
        [sys.executable, "scripts/train_pos.py", "recipes/sample.json", "--max-steps", "60", "--output-dir", output],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return output


@pytest.fixture
def script_here(capsys, monkeypatch):
    """``script_here(script, *args, stdin="")``: the script at path ``script`` run as its command
    line runs it (``main(args)`` under ``run_cli``), but in this process, with ``stdin`` on
    ``sys.stdin``; its exit status, stdout and stderr as a ``subprocess.CompletedProcess``. For
    a refusal or a quick result, where a fresh interpreter costs seconds of imports; each
    script keeps tests of its own process elsewhere."""

    def run(script, *args, stdin: str = "") -> subprocess.CompletedProcess:
        spec = importlib.util.spec_from_file_location(f"script_{Path(script).stem}", script)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        capsys.readouterr()
        argv = [str(arg) for arg in args]
        try:
            run_cli(module.main, argv)
            code = 0
        except SystemExit as exit_info:
            code = exit_info.code if isinstance(exit_info.code, int) else int(exit_info.code is not None)
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess([str(script), *argv], code, out, err)

    return run
