"""The Hub and devices fail early and in one line: --push-to-hub checks the token
and the connection before training, an upload that fails is one line, tag.py's --device,
--num-threads and --torch-compile-mode name themselves; and the tagger needs neither
matplotlib nor pillow (the [plots] and [images] extras)."""

import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hostile import load_script, one_error_line, run_compress, run_tag, save_tagger
from huggingface_hub import HfApi, constants

from cont_transformer.runtime import hub
from cont_transformer.tagging.tag import resolve_device
from cont_transformer.tools.cli import run_cli

REPO = Path(__file__).resolve().parents[1]
REFUSED = "http://127.0.0.1:9"  # the discard port: nothing listens, the connection is refused at once
TRAIN = ["--treebank", "sample", "--max-steps", "2", "--refine-steps", "none", "--push_to_hub", "me/x"]


@pytest.fixture
def unreachable_hub(monkeypatch):
    """The real Hub client, with a token, against an endpoint that refuses connections. Its
    offline mode is off for the test (``HF_HUB_OFFLINE=1`` would stop the client before it
    tries): the refused connection is local, no network is needed."""
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hub, "HfApi", functools.partial(HfApi, endpoint=REFUSED, token="hf_not_a_token"))


# --- the Hub -----------------------------------------------------------------------------
def test_push_to_hub_without_the_hub_stops_before_training(tmp_path, capsys, unreachable_hub):
    output = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_info:
        run_cli(load_script("train_pos").main, [*TRAIN, "--output-dir", str(output)])
    assert exit_info.value.code == 2
    line = one_error_line(capsys)
    assert line.startswith("error: --push-to-hub me/x: cannot use the Hub (cannot reach http://127.0.0.1:9")
    assert not output.exists()  # nothing trained, nothing written


def test_push_to_hub_in_offline_mode_says_so(tmp_path, capsys, unreachable_hub, monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # as HF_HUB_OFFLINE=1 sets it
    output = tmp_path / "run"
    with pytest.raises(SystemExit):
        run_cli(load_script("train_pos").main, [*TRAIN, "--output-dir", str(output)])
    assert one_error_line(capsys) == (
        "error: --push-to-hub me/x: cannot use the Hub (HF_HUB_OFFLINE is set); fix that or leave out --push-to-hub"
    )
    assert not output.exists()


def test_push_to_hub_with_a_read_only_token_stops_before_training(tmp_path, capsys, monkeypatch):
    class ReadOnly:
        def whoami(self):
            return {"name": "me", "auth": {"accessToken": {"role": "read"}}}

    monkeypatch.setattr(hub, "HfApi", ReadOnly)
    with pytest.raises(SystemExit):
        run_cli(load_script("train_pos").main, [*TRAIN, "--output-dir", str(tmp_path / "run")])
    assert "the Hugging Face token is read-only" in one_error_line(capsys)
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_push_to_hub_without_a_token_stops_before_training(tmp_path):
    """The real client and no token at all (an empty Hugging Face home): one line, exit 2."""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE")}
    env.update(HF_HOME=str(tmp_path / "hf"), OMP_NUM_THREADS="1", HF_ENDPOINT=REFUSED)
    output = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "train_pos.py"), *TRAIN, "--output-dir", str(output)],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert errors == [
        (
            "error: --push-to-hub me/x: cannot use the Hub (no Hugging Face token: log in with `hf auth login` "
            "or set HF_TOKEN); fix that or leave out --push-to-hub"
        )
    ]
    assert not output.exists()


def test_a_failed_upload_is_one_line(tmp_path, unreachable_hub):
    with pytest.raises(hub.HubError) as error:
        hub.push_folder_to_hub(tmp_path, "me/x")
    message = str(error.value)
    assert isinstance(error.value, OSError) and "\n" not in message
    assert message.startswith(f"--push-to-hub me/x: the upload of {tmp_path} failed (cannot reach")


def test_compress_push_to_hub_without_the_hub_is_one_line(tmp_path, capsys, tiny_tagger, unreachable_hub):
    source = save_tagger(tmp_path / "tagger", tiny_tagger)
    argv = [str(source), "--num-basis", "1", "--output-dir", str(tmp_path / "k1"), "--push-to-hub", "me/x-k1"]
    line = run_compress(argv, capsys)
    assert line.startswith("error: --push-to-hub me/x-k1: the upload of") and "cannot reach" in line
    assert (tmp_path / "k1" / "config.json").is_file()  # the compressed model is written, as it says


# --- devices and threads -------------------------------------------------------------------
def _missing_cuda_device() -> str:
    """A CUDA device this machine lacks: any on a CPU build of torch, else one past the last GPU."""
    return f"cuda:{torch.cuda.device_count()}" if torch.cuda.is_available() else "cuda"


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["--device", _missing_cuda_device()], "--device"),
        (["--device", "tpu9"], "--device"),
        (["--device", "meta"], "--device"),
        (["--num-threads", "-2"], "--num-threads"),
        (["--num_threads", "0"], "--num-threads"),
        (["--torch-compile-mode", "warp"], "--torch-compile-mode"),
        (["--torch-compile", "--torch_compile_mode", "warp"], "--torch-compile-mode"),
    ],
)
def test_tag_names_a_bad_device_or_thread_count_in_one_line(argv, flag, tmp_path, capsys, tiny_tagger):
    source = save_tagger(tmp_path / "tagger", tiny_tagger)
    (tmp_path / "in.txt").write_text("the cat sat.\n")
    line = run_tag([str(source), "--input", str(tmp_path / "in.txt"), *argv], capsys)
    assert line.startswith(f"error: {flag}: ")


def test_cuda_on_a_cpu_build_of_torch_says_so():
    if torch.version.cuda is not None or getattr(torch.version, "hip", None) is not None:
        pytest.skip("this torch has CUDA")
    with pytest.raises(ValueError, match=r"^--device: cuda needs a build of torch with CUDA"):
        resolve_device("cuda")


def test_the_default_device_is_one_that_works():
    assert resolve_device(None).type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu") == torch.device("cpu")


# --- weight: no plots, no images in the tagger --------------------------------------------
BLOCK = "import sys\nfor name in ('PIL', 'matplotlib'):\n    sys.modules[name] = None  # as if not installed\n"


def _python(code: str, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        check=False,
        input=stdin,
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        timeout=300,
    )


IMPORT = (
    "import importlib\n"
    "for name in ('cont_transformer.tagging.tag', 'cont_transformer.tagging.trainer', 'cont_transformer.runtime.auto'):\n"
    "    importlib.import_module(name)\n"
    "loaded = sorted(n for n, m in sys.modules.items() if m is not None and n.split('.')[0] in ('PIL', 'matplotlib'))\n"
    "print(loaded, file=sys.stderr)\n"
)


@pytest.mark.slow
def test_the_tagging_application_imports_neither_matplotlib_nor_pillow(tmp_path, tiny_tagger):
    """Without the [plots] and [images] extras the tagger imports, registers its models and
    tags (transformers itself imports pillow where it is installed, so both are blocked here);
    with them installed, importing the tagger loads no matplotlib."""
    source = save_tagger(tmp_path / "tagger", tiny_tagger)
    tag = "import runpy\nsys.argv = sys.argv[1:]\nrunpy.run_path(sys.argv[0], run_name='__main__')\n"
    blocked = _python(BLOCK + IMPORT + tag, str(REPO / "scripts" / "tag.py"), str(source), stdin="the cat sat.\n")
    assert blocked.returncode == 0, blocked.stderr[-3000:]
    assert "[]" in blocked.stderr.splitlines() and "1\tthe\t" in blocked.stdout
    installed = _python("import sys\n" + IMPORT)
    assert installed.returncode == 0, installed.stderr[-3000:]
    assert "matplotlib" not in installed.stderr.splitlines()[-1]


def test_the_extras_say_how_to_install_them(monkeypatch):
    from cont_transformer.tools.sweep import figure_class
    from image_models.data import pil_image

    # The submodules too: an earlier test may have imported them, and a dotted import
    # found in sys.modules never looks at its package.
    for name in ("PIL", "PIL.Image", "matplotlib", "matplotlib.figure"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(OSError, match=r'^reading images needs pillow: pip install "cont-transformer\[images\]"$'):
        pil_image()
    with pytest.raises(OSError, match=r'pip install "cont-transformer\[plots\]"$'):
        figure_class()


def test_pillow_and_matplotlib_are_extras():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    names = [requirement.split(">")[0].split("=")[0].strip() for requirement in project["dependencies"]]
    assert "pillow" not in names and "matplotlib" not in names
    extras = project["optional-dependencies"]
    assert extras["images"] == ["pillow>=10.0"] and extras["plots"] == ["matplotlib>=3.8"]
    assert {"pillow>=10.0", "matplotlib>=3.8"} <= set(extras["dev"])  # the tests have both
