"""A model folder's config.json and weights agree, or the load refuses (docs/design.md §11, "A
model folder is a unit"): ``save_pretrained`` records the config fields that change what the
model computes in the safetensors metadata (``cont_transformer.config_record``); an edit of
config.json that keeps every shape is refused in one line naming the fields, for the tagger and
the ODE-ResNet; compression writes a new record; a folder saved without one loads with one
warning."""

import json
import logging
import shutil

import pytest
import torch
from hostile import run_compress, run_tag, save_tagger
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from transformers import AutoModelForImageClassification, AutoModelForTokenClassification

from cont_transformer import OdeResNetForImageClassification
from cont_transformer.config_record import DIGEST_KEY, FIELDS_KEY, UNRECORDED_FIELDS, recorded_fields
from cont_transformer.tagging.tag import Tagger
from cont_transformer.tools.compression import compress

RECORD_LOGGER = "cont_transformer.config_record"


@pytest.fixture(scope="module")
def saved(tmp_path_factory, tiny_tagger):
    """A tiny tagger that spells words (its spelling buffers come from its tokenizer), saved."""
    return save_tagger(tmp_path_factory.mktemp("tagger"), tiny_tagger, spelling=True)


def copy_of(folder, tmp_path, name):
    copy = tmp_path / name
    shutil.copytree(folder, copy)
    return copy


def edit_json(path, edit):
    value = json.loads(path.read_text())
    edit(value)
    path.write_text(json.dumps(value))


def metadata(folder):
    with safe_open(folder / "model.safetensors", "pt") as file:
        return file.metadata()


def swap_two_labels(config):
    first, second = config["id2label"]["0"], config["id2label"]["1"]
    config["id2label"]["0"], config["id2label"]["1"] = second, first
    config["label2id"][first], config["label2id"][second] = 1, 0


# Each edit keeps every tensor's shape: before the record, each loaded and tagged worse.
EDITS = {
    "legendre": (lambda c: c.update(basis="legendre"), "basis ('legendre', saved with 'piecewise_constant')"),
    "piecewise_linear": (
        lambda c: c.update(basis="piecewise_linear"),
        "basis ('piecewise_linear', saved with 'piecewise_constant')",
    ),
    "time_horizon": (lambda c: c.update(time_horizon=1e6), "time_horizon (1000000.0, saved with 1.0)"),
    "hidden_act": (lambda c: c.update(hidden_act="relu"), "hidden_act ('relu', saved with 'gelu')"),
    "heads": (lambda c: c.update(num_attention_heads=4), "num_attention_heads (4, saved with 2)"),
    "eps": (lambda c: c.update(layer_norm_eps=10), "layer_norm_eps (10, saved with 1e-06)"),
    "positions": (lambda c: c.update(max_position_embeddings=2), "max_position_embeddings (2, saved with 32)"),
    "labels": (swap_two_labels, "in id2label, label2id ("),
}


@pytest.mark.parametrize("edit", EDITS)
def test_an_edit_of_config_json_that_keeps_the_shapes_is_refused_naming_the_field(saved, tmp_path, capsys, edit):
    change, named = EDITS[edit]
    folder = copy_of(saved, tmp_path, edit)
    edit_json(folder / "config.json", change)
    pattern = f"^{folder}: config.json differs from the config the weights were saved with in "
    with pytest.raises(ValueError, match=pattern) as refusal:
        AutoModelForTokenClassification.from_pretrained(folder)
    assert named in str(refusal.value)
    assert "\n" not in str(refusal.value)
    with pytest.raises(ValueError, match=pattern):
        Tagger.from_pretrained(folder, device="cpu")
    text = tmp_path / "in.txt"
    text.write_text("the dog saw a bird.\n")
    assert named in run_tag([str(folder), "--input", str(text), "--output", str(tmp_path / "o.conllu")], capsys)
    assert not (tmp_path / "o.conllu").exists()


def test_an_untouched_folder_loads_without_a_warning_and_records_its_fields(saved, caplog):
    with caplog.at_level(logging.WARNING):
        model = AutoModelForTokenClassification.from_pretrained(saved)
        Tagger.from_pretrained(saved, device="cpu")
    assert not [r for r in caplog.records if r.name == RECORD_LOGGER]
    record = metadata(saved)
    assert record["format"] == "pt" and len(record[DIGEST_KEY]) == 64
    fields = json.loads(record[FIELDS_KEY])
    assert (
        fields["basis"] == "piecewise_constant" and fields["num_basis"] == 2 and set(fields["id2label"]) == {"sha256"}
    )
    assert not set(fields) & UNRECORDED_FIELDS
    assert set(fields) == set(recorded_fields(model.config))
    # The folder carries the module for remote code (pretrained.py imports it).
    assert (saved / "config_record.py").is_file()


def test_settings_that_do_not_change_the_computation_may_differ(saved, tmp_path):
    folder = copy_of(saved, tmp_path, "dropout")
    edit_json(folder / "config.json", lambda c: c.update(hidden_dropout_prob=0.3, initializer_range=0.5))
    AutoModelForTokenClassification.from_pretrained(folder)


def test_an_edited_spelling_buffer_is_named_against_the_tokenizer(saved, tmp_path, capsys):
    folder = copy_of(saved, tmp_path, "piece_lengths")
    record = metadata(folder)
    weights = load_file(folder / "model.safetensors")
    lengths = weights["cont_transformer.embeddings.piece_lengths"]
    lengths[lengths.nonzero()[0]] -= 1  # still in range: only the tokenizer tells
    save_file(weights, folder / "model.safetensors", metadata=record)
    AutoModelForTokenClassification.from_pretrained(folder)  # the weights alone are consistent
    message = f"{folder}: buffer cont_transformer.embeddings.piece_lengths of the weights is not the spelling of"
    with pytest.raises(ValueError, match=f"^{message}"):
        Tagger.from_pretrained(folder, device="cpu")
    text = tmp_path / "in.txt"
    text.write_text("the dog saw a bird.\n")
    line = run_tag([str(folder), "--input", str(text), "--output", str(tmp_path / "o.conllu")], capsys)
    assert line.startswith(f"error: {message}")


def test_a_folder_saved_without_a_record_warns_once(saved, tmp_path, caplog):
    folder = copy_of(saved, tmp_path, "unrecorded")
    weights = load_file(folder / "model.safetensors")
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})  # as transformers alone saves
    edit_json(folder / "config.json", lambda c: c.update(time_horizon=2.0))  # not detectable without a record
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            Tagger.from_pretrained(folder, device="cpu")
    warnings = [r.getMessage() for r in caplog.records if r.name == RECORD_LOGGER]
    assert len(warnings) == 1 and "\n" not in warnings[0], warnings
    assert warnings[0].startswith(f"{folder / 'model.safetensors'}: saved without a record of its config")
    # Saving it again records the config it now has.
    again = tmp_path / "again"
    AutoModelForTokenClassification.from_pretrained(folder).save_pretrained(again)
    assert json.loads(metadata(again)[FIELDS_KEY])["time_horizon"] == 2.0


def test_a_compressed_folder_carries_its_own_record_and_loads(saved, tmp_path, capsys, caplog):
    out = tmp_path / "compressed"
    compress(saved, out, num_basis=1, repeats=1)
    assert json.loads(metadata(out)[FIELDS_KEY])["num_basis"] == 1
    with caplog.at_level(logging.WARNING):
        tagger = Tagger.from_pretrained(out, device="cpu")
    assert tagger.model.config.num_basis == 1
    assert not [r for r in caplog.records if r.name == RECORD_LOGGER]
    # compress.py refuses a source whose config was edited, naming the field.
    edited = copy_of(saved, tmp_path, "edited")
    edit_json(edited / "config.json", lambda c: c.update(scheme="rk4"))
    line = run_compress([str(edited), "--output-dir", str(tmp_path / "c"), "--num-basis", "1"], capsys)
    assert "scheme ('rk4', saved with 'euler')" in line
    assert not (tmp_path / "c").exists()


def test_an_image_models_edited_config_is_refused(tmp_path, tiny_ode_resnet_config):
    torch.manual_seed(0)
    OdeResNetForImageClassification(tiny_ode_resnet_config()).eval().save_pretrained(tmp_path / "image")
    AutoModelForImageClassification.from_pretrained(tmp_path / "image")
    folder = copy_of(tmp_path / "image", tmp_path, "edited")
    edit_json(folder / "config.json", lambda c: c.update(activation="gelu", time_horizon=3.0))
    with pytest.raises(ValueError, match="in activation \\('gelu', saved with 'relu'\\), time_horizon \\(3.0, saved"):
        AutoModelForImageClassification.from_pretrained(folder)
    momentum = copy_of(tmp_path / "image", tmp_path, "momentum")  # a training-only setting
    edit_json(momentum / "config.json", lambda c: c.update(batch_norm_momentum=0.5))
    AutoModelForImageClassification.from_pretrained(momentum)
