"""A tagger's data beside config.json (tagger_files.py): its labels and tag combinations in
``columns.json``, its lemma lexicon in ``lemma_lexicon.json``; config.json keeps the heads'
sizes. Saved, read back, refused when broken, and folders whose config.json holds the labels
itself load as they are."""

import json
import shutil
from pathlib import Path

import pytest
import torch
from tiny import labels
from transformers import AutoConfig, AutoModelForTokenClassification, PreTrainedModel, pipeline

from cont_transformer import ContTransformerConfig, ContTransformerForTokenClassification
from cont_transformer.tagger_files import COLUMNS_FILE, LEMMA_LEXICON_FILE, TAGGER_FIELDS
from cont_transformer.tagging.tag import Tagger

XPOS = ["DT", "NN", "VBD"]
LABELS = {"upos": ["DET", "NOUN", "VERB"], "feats": ["Number=Sing", "Tense=Past", "_"]}
SEEN = [["DET", "DT", "_"], ["NOUN", "NN", "Number=Sing"], ["VERB", "VBD", "Tense=Past"]]
LEXICON = {"xpos": {"NN": {"dogs": "dog"}}}
SENTENCES = [["The", "old", "dog", "saw", "a", "bird", "."], ["Tom", "did", "n't", "see", "it", "!"]]


@pytest.fixture
def tagger(tiny_tagger):
    """``tagger(**overrides)``: the tiny tagger over :data:`XPOS`, with UPOS, FEATS and lemma
    heads, the triples seen and a lemma lexicon."""

    def make(**overrides) -> ContTransformerForTokenClassification:
        options = {
            **labels(XPOS),
            "primary_column": "xpos",
            "column_labels": {**LABELS, "lemma": ["keep|-0+|-0+"]},
            "tag_combinations": SEEN,
            "lemma_lexicon": LEXICON,
        }
        return tiny_tagger(**{**options, **overrides})

    return make


def saved_json(folder: Path, name: str):
    return json.loads((folder / name).read_text())


def test_config_json_keeps_the_head_sizes_and_the_data_files_the_rest(tagger, tmp_path):
    model = tagger()
    model.save_pretrained(tmp_path)
    config = saved_json(tmp_path, "config.json")
    assert not set(TAGGER_FIELDS) & set(config)
    assert config["column_sizes"] == {"upos": 3, "feats": 3, "lemma": 1}
    assert saved_json(tmp_path, COLUMNS_FILE) == {"column_labels": model.config.column_labels, "tag_combinations": SEEN}
    assert saved_json(tmp_path, LEMMA_LEXICON_FILE) == LEXICON
    assert not list(tmp_path.glob(".*.tmp"))
    # AutoConfig reads config.json alone: the sizes, no labels; the model's load reads the rest.
    bare = AutoConfig.from_pretrained(tmp_path)
    assert bare.column_labels is None and bare.predicted_columns == ("xpos", "upos", "feats", "lemma")
    for loaded in (
        AutoModelForTokenClassification.from_pretrained(tmp_path, config=bare),
        ContTransformerForTokenClassification.from_pretrained(tmp_path),
    ):
        assert loaded.config.column_labels == model.config.column_labels
        assert (loaded.config.tag_combinations, loaded.config.lemma_lexicon) == (SEEN, LEXICON)
        torch.testing.assert_close(loaded.state_dict(), model.state_dict(), rtol=0, atol=0)
    assert ContTransformerConfig.from_pretrained(tmp_path).column_labels == model.config.column_labels
    # A model without other columns, saved into the same folder, leaves no stale files.
    tagger(column_labels=None, tag_combinations=None, lemma_lexicon=None).save_pretrained(tmp_path)
    assert not (tmp_path / COLUMNS_FILE).exists() and not (tmp_path / LEMMA_LEXICON_FILE).exists()
    assert ContTransformerForTokenClassification.from_pretrained(tmp_path).config.predicted_columns == ("xpos",)


def test_transformers_own_save_keeps_the_data_files(tagger, tmp_path):
    """transformers' ``save_pretrained`` (as its ``Trainer`` saves where the package's
    override is not reached) writes the config through the config, so the files come too."""
    model = tagger()
    PreTrainedModel.save_pretrained(model, tmp_path)
    assert not set(TAGGER_FIELDS) & set(saved_json(tmp_path, "config.json"))
    assert saved_json(tmp_path, COLUMNS_FILE)["tag_combinations"] == SEEN
    assert saved_json(tmp_path, LEMMA_LEXICON_FILE) == LEXICON
    loaded = ContTransformerForTokenClassification.from_pretrained(tmp_path)
    assert (loaded.config.column_labels, loaded.config.lemma_lexicon) == (model.config.column_labels, LEXICON)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{", "Expecting"),
        ('["DET"]', "an object of them"),
        ('{"column_labels": {"upos": ["DET"], "feats": ["_"], "lemma": ["keep|-0+|-0+"]}}', "column_sizes"),
        ('{"column_labels": {"upos": ["A", "B", "C"], "feats": ["_", "_", "_"]}, "extra": 1}', "an object of them"),
        ('{"column_labels": {"upos": 3, "feats": 3, "lemma": 1}}', "column_labels"),
    ],
)
def test_a_columns_file_that_is_not_the_models_is_refused_naming_it(tagger, tmp_path, text, reason):
    tagger().save_pretrained(tmp_path)
    (tmp_path / COLUMNS_FILE).write_text(text)
    for load in (
        ContTransformerForTokenClassification.from_pretrained,
        AutoModelForTokenClassification.from_pretrained,
    ):
        with pytest.raises(ValueError, match=rf"{COLUMNS_FILE}: not this model's .*{reason}"):
            load(tmp_path)


def test_labels_exchanged_in_the_columns_file_are_refused_by_the_weights_record(tagger, tmp_path):
    tagger().save_pretrained(tmp_path)
    columns = saved_json(tmp_path, COLUMNS_FILE)
    columns["column_labels"]["upos"] = ["NOUN", "DET", "VERB"]
    (tmp_path / COLUMNS_FILE).write_text(json.dumps(columns))
    with pytest.raises(ValueError, match="differs from the config the weights were saved with in column_labels"):
        ContTransformerForTokenClassification.from_pretrained(tmp_path)


def with_labels_inside(folder: Path, target: Path) -> Path:
    """A copy of the saved tagger ``folder`` whose config.json holds its labels and tag
    combinations itself, without ``column_sizes`` or ``columns.json`` (the weights as they are)."""
    shutil.copytree(folder, target)
    config = {**saved_json(target, "config.json"), **saved_json(target, COLUMNS_FILE)}
    del config["column_sizes"]
    (target / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True))
    (target / COLUMNS_FILE).unlink()
    return target


@pytest.mark.slow
def test_a_trained_tagger_tags_the_same_from_either_layout(sample_run_60, tmp_path):
    best = sample_run_60 / "best"
    assert not set(TAGGER_FIELDS) & set(saved_json(best, "config.json"))
    inside = with_labels_inside(best, tmp_path / "inside")
    reference = Tagger.from_pretrained(best, device="cpu")
    old = Tagger.from_pretrained(inside, device="cpu")
    assert old.model.config.column_labels == reference.model.config.column_labels
    assert old.model.config.tag_combinations == reference.model.config.tag_combinations
    assert old.predict_columns(SENTENCES) == reference.predict_columns(SENTENCES)
    # Saved again, it is written with the data files, and tags the same.
    old.model.save_pretrained(tmp_path / "again")
    assert saved_json(tmp_path / "again", COLUMNS_FILE) == saved_json(best, COLUMNS_FILE)
    shutil.copy(best / "tokenizer.json", tmp_path / "again")
    shutil.copy(best / "tokenizer_config.json", tmp_path / "again")
    assert Tagger.from_pretrained(tmp_path / "again", device="cpu").predict_columns(SENTENCES) == (
        reference.predict_columns(SENTENCES)
    )
    # The folder's own code (remote code) reads either layout.
    text = "The old dog saw a bird. Tom didn't see it!"
    entries = pipeline(model=str(best), trust_remote_code=True)(text)
    assert pipeline(model=str(inside), trust_remote_code=True)(text) == entries
    assert any(entry["lemma"] for entry in entries)
