"""Shared tiny models of the tests, defined once (as transformers' model testers do).

Fixtures that return factories: a test asks for ``tiny_tagger`` and calls it with the
keyword overrides it changes from the tiny default, so the numbers that matter to it stay
visible where it asserts. The factories are pure, so the fixtures are session-scoped and
module-scoped fixtures may use them. Their words, tags and label maps are in ``tiny.py``.

Two fixtures run code as its own process would, for less than a fresh interpreter's seconds of
imports: ``script_here`` runs a script's ``main`` in the test's process, and ``fresh`` forks
a process from a server that has imported torch (for the tests of what an import loads).
"""

import importlib.util
import io
import json
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

REPO = Path(__file__).resolve().parents[1]


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
        cwd=REPO,
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


# Imported by the fork server before it forks a check: torch and what lies under transformers'
# import of it, never a module whose loading a check watches (NEVER_PRELOADED).
PRELOADED = ("torch", "torch._dynamo", "torch.distributed.tensor", "torch.export", "numpy", "scipy.optimize", "sympy")
NEVER_PRELOADED = ("transformers", "datasets", "cont_transformer", "image_models")

# Reads one request a line ({"code", "argv", "out", "err"}) and runs it as ``python -c code
# *argv`` would, in a child forked for it (stdout and stderr to the files named, stdin empty);
# answers with the child's exit status.
FORK_SERVER = """
import importlib, json, os, sys, traceback
for name in sys.argv[2:]:
    importlib.import_module(name)
early = [name for name in sys.modules if name.split(".")[0] in sys.argv[1].split(",")]
assert not early, f"the server loaded {early}"
print(json.dumps("ready"), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        for fd, path in ((1, request["out"]), (2, request["err"])):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
        sys.argv = ["-c", *request["argv"]]
        status = 0
        try:
            exec(compile(request["code"], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        except SystemExit as exit_info:
            status = exit_info.code if isinstance(exit_info.code, int) else int(exit_info.code is not None)
        except BaseException:
            traceback.print_exc()
            status = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    print(json.dumps(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])), flush=True)
"""


@pytest.fixture(scope="session")
def fresh(tmp_path_factory):
    """``fresh(code, *argv)``: the last line ``code`` prints, run as ``python -c code *argv`` in
    the source tree (first on ``PYTHONPATH``) by a fresh process, forked from the fork server,
    which has imported ``PRELOADED`` and nothing of ``NEVER_PRELOADED``: for the tests of what
    an import loads, each in a process of its own without the seconds of importing torch."""
    folder = tmp_path_factory.mktemp("fresh")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    command = [sys.executable, "-c", FORK_SERVER, ",".join(NEVER_PRELOADED), *PRELOADED]
    with (folder / "server.err").open("w") as server_err:
        server = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=server_err, text=True, env=env, cwd=REPO
        )
    assert server.stdout.readline(), (folder / "server.err").read_text()

    def run(code: str, *argv: str) -> str:
        out, err = folder / "out", folder / "err"
        server.stdin.write(json.dumps({"code": code, "argv": argv, "out": str(out), "err": str(err)}) + "\n")
        server.stdin.flush()
        reply = server.stdout.readline()
        assert reply, (folder / "server.err").read_text()
        assert json.loads(reply) == 0, err.read_text()
        return out.read_text().splitlines()[-1]

    yield run
    server.stdin.close()
    server.wait(timeout=60)
