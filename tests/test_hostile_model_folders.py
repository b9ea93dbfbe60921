"""Hostile model folders (issue 23): a damaged, non-finite or incomplete folder is refused
when it loads, running no code, with one line naming the file and a non-zero exit."""

import pickle
import shutil
from pathlib import Path

import pytest
from hostile import run_compress, run_tag, save_tagger
from safetensors.torch import load_file, save_file
from transformers import AutoModelForTokenClassification

from cont_transformer.tagging.tag import Tagger


@pytest.fixture(scope="module")
def saved(tmp_path_factory, tiny_tagger):
    return save_tagger(tmp_path_factory.mktemp("tagger"), tiny_tagger)


class _Planted:
    """A pickle whose loading creates ``marker``: proof that code ran."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def damaged_copy(saved: Path, tmp_path: Path, kind: str) -> tuple[Path, Path]:
    folder = tmp_path / kind
    folder.mkdir()
    for path in saved.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    if kind == "pickle":
        (folder / "model.safetensors").unlink()
        damaged = folder / "pytorch_model.bin"
        damaged.write_bytes(pickle.dumps(_Planted(tmp_path / "code-ran")))
    else:
        damaged = folder / "model.safetensors"
        damaged.write_bytes(damaged.read_bytes()[:300])
    return folder, damaged


@pytest.mark.parametrize("kind", ["pickle", "truncated"])
def test_a_damaged_weights_file_runs_no_code_and_is_named(saved, tmp_path, capsys, kind):
    folder, damaged = damaged_copy(saved, tmp_path, kind)
    with pytest.raises(OSError, match=f"^{damaged}: cannot be loaded"):
        AutoModelForTokenClassification.from_pretrained(folder)
    with pytest.raises(OSError, match=f"^{damaged}: cannot be loaded"):
        Tagger.from_pretrained(folder, device="cpu")
    text = tmp_path / "in.txt"
    text.write_text("the dog saw a bird.\n")
    assert str(damaged) in run_tag([str(folder), "--input", str(text), "--output", str(tmp_path / "o")], capsys)
    assert str(damaged) in run_compress([str(folder), "--output-dir", str(tmp_path / "c")], capsys)
    assert not (tmp_path / "code-ran").exists()
    assert not (tmp_path / "o").exists() and not (tmp_path / "c").exists()
    if kind == "pickle":
        with pytest.raises(OSError, match="could run code; it was not run"):
            AutoModelForTokenClassification.from_pretrained(folder)


def test_a_non_finite_model_is_refused_at_load(saved, tmp_path, capsys):
    folder = tmp_path / "nan"
    folder.mkdir()
    for path in saved.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    weights = load_file(folder / "model.safetensors")
    name = sorted(key for key in weights if weights[key].is_floating_point())[3]
    weights[name][0] = float("nan")
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    message = f"^{folder}: tensor .* holds NaN or infinite values"
    with pytest.raises(ValueError, match=message):
        AutoModelForTokenClassification.from_pretrained(folder)
    with pytest.raises(ValueError, match=message):
        Tagger.from_pretrained(folder, device="cpu")
    text = tmp_path / "in.txt"
    text.write_text("the dog saw a bird.\n")
    line = run_tag([str(folder), "--input", str(text), "--output", str(tmp_path / "o")], capsys)
    assert str(folder) in line and "NaN" in line
    line = run_compress([str(folder), "--output-dir", str(tmp_path / "c")], capsys)
    assert str(folder) in line and "NaN" in line


def test_a_model_folder_without_its_tokenizer_is_named(saved, tmp_path, capsys, monkeypatch):
    folder = tmp_path / "model"
    shutil.copytree(saved, folder)
    (folder / "tokenizer.json").unlink()
    monkeypatch.chdir(tmp_path)
    message = run_tag([f"../{tmp_path.name}/model"], capsys)
    assert message.startswith(f"error: ../{tmp_path.name}/model: no tokenizer.json beside the model")
    assert "sentencepiece" not in message
