"""Hostile model folders: a damaged, non-finite or incomplete folder, or a model of
another kind, is refused when it loads, running no code, with one line naming the file, tensor
or folder and a non-zero exit."""

import pickle
import re
import shutil
from pathlib import Path

import pytest
from hostile import run_compress, run_tag, save_tagger
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from transformers import AutoModelForTokenClassification

from cont_transformer import OdeResNetForImageClassification
from cont_transformer.modeling_cont_transformer import ContTransformerForMaskedLM
from cont_transformer.tagging.tag import Tagger
from cont_transformer.text.tokenization import build_tokenizer


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


def test_a_model_folder_without_its_tokenizer_config_is_named(saved, tmp_path, capsys):
    folder = tmp_path / "model"
    shutil.copytree(saved, folder)
    (folder / "tokenizer_config.json").unlink()  # without it the tokenizer has no [PAD]: a TypeError later
    message = f"error: {folder}: no tokenizer_config.json beside the model"
    text = tmp_path / "in.txt"
    text.write_text("the dog saw a bird.\n")
    assert run_tag([str(folder), "--input", str(text)], capsys).startswith(message)


@pytest.mark.parametrize(("buffer", "value"), [("piece_characters", 2**30), ("piece_lengths", -7)])
def test_a_spelling_buffer_out_of_range_is_named_at_load(tmp_path, capsys, tiny_tagger, buffer, value):
    """Bit flips in an id buffer ended in an IndexError at the first forward pass."""
    folder = save_tagger(tmp_path / "spelling", tiny_tagger, spelling=True)
    with safe_open(folder / "model.safetensors", "pt") as file:
        metadata = file.metadata()
    weights = load_file(folder / "model.safetensors")
    weights[f"cont_transformer.embeddings.{buffer}"].view(-1)[5] = value
    save_file(weights, folder / "model.safetensors", metadata=metadata)
    message = f"{folder}: tensor cont_transformer.embeddings.{buffer} holds values outside [0, "
    with pytest.raises(ValueError, match=re.escape(message)):
        AutoModelForTokenClassification.from_pretrained(folder)
    assert run_compress([str(folder), "--output-dir", str(tmp_path / "c")], capsys).startswith(f"error: {message}")
    text = tmp_path / "in.txt"
    text.write_text("the dog saw a bird.\n")
    assert run_tag([str(folder), "--input", str(text)], capsys).startswith(f"error: {message}")


def test_a_language_model_or_an_image_model_is_no_tagger(tmp_path, capsys, tiny_tagger_config, tiny_ode_resnet_config):
    tokenizer = build_tokenizer(["the", "dog"], mask=True)
    config = tiny_tagger_config(vocab_size=len(tokenizer), architectures=["ContTransformerForMaskedLM"])
    ContTransformerForMaskedLM(config).save_pretrained(tmp_path / "lm")
    tokenizer.save_pretrained(tmp_path / "lm")
    OdeResNetForImageClassification(tiny_ode_resnet_config()).save_pretrained(tmp_path / "image")
    text = tmp_path / "in.txt"
    text.write_text("the dog.\n")
    for name, kind in (("lm", "a masked language model"), ("image", "an image classifier")):
        folder = tmp_path / name
        assert run_tag([str(folder), "--input", str(text)], capsys) == f"error: {folder} is {kind}, not a tagger"
    with pytest.raises(ValueError, match=f"^{tmp_path / 'lm'} is a masked language model, not a tagger$"):
        AutoModelForTokenClassification.from_pretrained(tmp_path / "lm")


# A tagger whose lemmas come from its lexicon: "dog" tagged NN is "hound".
LEXICON_TAGGER = {
    "primary_column": "xpos",
    "column_labels": {"lemma": ["keep|-0+|-0+"]},
    "lemma_lexicon": {"xpos": {tag: {"dog": "hound"} for tag in ("DT", "NN", "VB")}},
}


@pytest.mark.parametrize("damage", ["edited", "deleted", "dangling link"])
def test_a_damaged_lemma_lexicon_is_refused_naming_it(tmp_path_factory, tiny_tagger, tmp_path, capsys, damage):
    folder = save_tagger(tmp_path_factory.mktemp("lexicon"), tiny_tagger, **LEXICON_TAGGER)
    lexicon = folder / "lemma_lexicon.json"
    assert Tagger.from_pretrained(folder, device="cpu")("the dog").sentences[0].words[1].lemma == "hound"
    if damage == "edited":
        lexicon.write_text(lexicon.read_text().replace("hound", "cat"))
    elif damage == "deleted":
        lexicon.unlink()
    else:
        lexicon.unlink()
        lexicon.symlink_to(tmp_path / "gone.json")
    with pytest.raises(ValueError, match="lemma_lexicon.json") as refusal:
        Tagger.from_pretrained(folder, device="cpu")
    assert "\n" not in str(refusal.value)
    text = tmp_path / "in.txt"
    text.write_text("the dog saw a bird.\n")
    line = run_tag([str(folder), "--input", str(text), "--output", str(tmp_path / "o.conllu")], capsys)
    assert "lemma_lexicon.json" in line and ("missing" in line or "differs" in line or "does not exist" in line)
    assert not (tmp_path / "o.conllu").exists()
