"""Tampered model folders are refused: weights the model lacks or does not expect
(a strict load), a tokenizer that is not the model's (its size, the vocabulary fingerprint in
the config), weights beyond a sane magnitude, a config.json other than the one the weights were
saved with (test_config_record.py has each field); each in one line naming the tensor, file or
field, and the card says what is checked."""

import json
import re
import shutil

import pytest
import torch
from hostile import load_script, one_error_line, run_compress, run_tag, save_tagger
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from transformers import AutoModelForMaskedLM, AutoModelForTokenClassification, AutoTokenizer

from cont_transformer import ContTransformerConfig
from cont_transformer.model_card import UNIT_HEADING
from cont_transformer.modeling_cont_transformer import ContTransformerForMaskedLM
from cont_transformer.pretrained import MAX_ABS_WEIGHT, MAX_RUNNING_VARIANCE, check_finite
from cont_transformer.tagging.tag import Tagger
from cont_transformer.text.tokenization import TOKENIZER_FILE, vocabulary_fingerprint
from cont_transformer.tools.cli import run_cli


@pytest.fixture(scope="module")
def saved(tmp_path_factory, tiny_tagger):
    """A tiny tagger saved by hand (no vocabulary fingerprint in its config)."""
    return save_tagger(tmp_path_factory.mktemp("tagger"), tiny_tagger)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tagger run of two steps on the sample treebank: the trainer saved it."""
    output = tmp_path_factory.mktemp("trained") / "pos"
    load_script("train_pos").main(
        ["--max-steps", "2", "--eval-steps", "2", "--save-steps", "2", "--warmup-steps", "0"]
        + ["--refine-steps", "none", "--num-basis", "2", "--hidden-size", "16", "--intermediate-size", "16"]
        + ["--char-hidden-size", "8", "--output-dir", str(output)]
    )
    return output / "best"


def copy_of(folder, tmp_path, name):
    copy = tmp_path / name
    shutil.copytree(folder, copy)
    return copy


def edit_weights(folder, edit):
    """``edit`` the tensors of ``folder``'s weights, keeping the file's metadata (its config record)."""
    with safe_open(folder / "model.safetensors", "pt") as file:
        metadata = file.metadata()
    weights = load_file(folder / "model.safetensors")
    edit(weights)
    save_file(weights, folder / "model.safetensors", metadata=metadata)


def edit_json(path, edit):
    value = json.loads(path.read_text())
    edit(value)
    path.write_text(json.dumps(value))


def refused_everywhere(folder, tmp_path, capsys, pattern, named, weights=True):
    """``folder`` is refused by the Auto class (for its ``weights``), the tagger, tag.py and
    compress.py, each time in one line naming ``named``."""
    if weights:
        with pytest.raises(ValueError, match=pattern):
            AutoModelForTokenClassification.from_pretrained(folder)
    with pytest.raises(ValueError, match=pattern):
        Tagger.from_pretrained(folder, device="cpu")
    text = tmp_path / "in.txt"
    text.write_text("the dog sat.\n")
    assert named in run_tag([str(folder), "--input", str(text), "--output", str(tmp_path / "o.conllu")], capsys)
    assert named in run_compress([str(folder), "--output-dir", str(tmp_path / "c"), "--num-basis", "2"], capsys)
    assert not (tmp_path / "o.conllu").exists() and not (tmp_path / "c").exists()


QUERY = "cont_transformer.encoder.rate.attention.query.weight"


@pytest.mark.parametrize("kind", ["missing", "unexpected"])
def test_weights_that_are_not_the_models_are_refused_by_name(saved, tmp_path, capsys, kind):
    folder = copy_of(saved, tmp_path, kind)
    if kind == "missing":
        edit_weights(folder, lambda weights: weights.pop(QUERY))
        name, pattern = QUERY, f"^{folder}: tensor {QUERY} is missing from the weights"
    else:
        name = "cont_transformer.encoder.rate.planted"
        edit_weights(folder, lambda weights: weights.__setitem__(name, torch.zeros(3)))
        pattern = f"^{folder}: tensor {name} in the weights is not one of the model's"
    refused_everywhere(folder, tmp_path, capsys, pattern, name)


def test_a_config_that_changes_the_tensors_is_refused_by_name(saved, tmp_path, capsys):
    # word -> word+chars: the config the weights were saved with is named first.
    folder = copy_of(saved, tmp_path, "chars")
    edit_json(folder / "config.json", lambda c: c.update(word_representation="word+chars", unk_token_id=1))
    pattern = f"^{folder}: config.json differs .* in unk_token_id \\(1, saved with None\\), word_representation"
    refused_everywhere(folder, tmp_path, capsys, pattern, "word_representation ('word+chars', saved with 'word')")
    # Without the record (a folder saved before it), the strict load names the missing tensors.
    unrecorded = copy_of(saved, tmp_path, "chars-unrecorded")
    save_file(load_file(unrecorded / "model.safetensors"), unrecorded / "model.safetensors", metadata={"format": "pt"})
    edit_json(unrecorded / "config.json", lambda c: c.update(word_representation="word+chars", unk_token_id=1))
    with pytest.raises(ValueError, match=f"^{unrecorded}: tensor .*characters.* is missing"):
        AutoModelForTokenClassification.from_pretrained(unrecorded)
    # One label fewer: the labels differ from the record, and the classifier's shape from the config's.
    shorter = copy_of(saved, tmp_path, "labels")
    edit_json(shorter / "config.json", lambda c: (c["id2label"].popitem(), c["label2id"].popitem()))
    with pytest.raises(ValueError, match=f"^{shorter}: config.json differs .* in id2label, label2id "):
        AutoModelForTokenClassification.from_pretrained(shorter)
    save_file(load_file(shorter / "model.safetensors"), shorter / "model.safetensors", metadata={"format": "pt"})
    labels = len(json.loads((saved / "config.json").read_text())["id2label"])
    pattern = rf"^{shorter}: tensor classifier\.bias has shape \[{labels}\] in the weights, but config.json gives"
    with pytest.raises(ValueError, match=pattern):
        AutoModelForTokenClassification.from_pretrained(shorter)


def test_the_masked_language_models_tied_decoder_is_no_missing_tensor(tmp_path, tiny_tagger_config):
    config = ContTransformerConfig(
        **{**tiny_tagger_config().to_dict(), "architectures": ["ContTransformerForMaskedLM"]}
    )
    torch.manual_seed(0)
    model = ContTransformerForMaskedLM(config).eval()
    model.save_pretrained(tmp_path)
    assert "lm_head.decoder.weight" not in load_file(tmp_path / "model.safetensors")  # tied, not saved
    loaded = AutoModelForMaskedLM.from_pretrained(tmp_path)
    embeddings = loaded.cont_transformer.embeddings.word_embeddings.weight
    assert loaded.lm_head.decoder.weight.data_ptr() == embeddings.data_ptr()
    torch.testing.assert_close(embeddings, model.cont_transformer.embeddings.word_embeddings.weight)


def test_the_trainer_records_the_vocabulary_fingerprint(trained):
    config = json.loads((trained / "config.json").read_text())
    assert config["vocab_fingerprint"] == vocabulary_fingerprint(AutoTokenizer.from_pretrained(trained))
    assert json.loads((trained.parent / "config.json").read_text())["vocab_fingerprint"] == config["vocab_fingerprint"]


def test_a_tokenizer_of_another_model_is_refused(trained, saved, tmp_path, capsys):
    # Another model's tokenizer, of another size.
    swapped = copy_of(trained, tmp_path, "swapped")
    for name in (TOKENIZER_FILE, "tokenizer_config.json"):
        shutil.copy(saved / name, swapped / name)
    pattern = rf"^{swapped / TOKENIZER_FILE}: the tokenizer has \d+ entries but config.json's vocab_size is \d+"
    refused_everywhere(swapped, tmp_path, capsys, pattern, str(swapped / TOKENIZER_FILE), weights=False)
    with pytest.raises(SystemExit, match="2"):
        run_cli(load_script("train_pos").main, ["--eval-only", str(swapped)])
    assert one_error_line(capsys).startswith(f"error: {swapped / TOKENIZER_FILE}: the tokenizer has")
    # The same size, two words' ids exchanged: only the fingerprint tells.
    exchanged = copy_of(trained, tmp_path, "exchanged")

    def exchange(tokenizer):
        vocab = tokenizer["model"]["vocab"]
        first, second = [word for word in vocab if word.isalpha()][:2]
        vocab[first], vocab[second] = vocab[second], vocab[first]

    edit_json(exchanged / TOKENIZER_FILE, exchange)
    pattern = rf"^{exchanged / TOKENIZER_FILE}: the vocabulary is not the one the model was saved with"
    refused_everywhere(exchanged, tmp_path, capsys, pattern, str(exchanged / TOKENIZER_FILE), weights=False)
    # A folder saved without a fingerprint loads as before.
    assert json.loads((saved / "config.json").read_text()).get("vocab_fingerprint") is None
    Tagger.from_pretrained(saved, device="cpu")


def test_a_weight_beyond_a_sane_magnitude_is_refused_by_name(saved, tmp_path, capsys):
    folder = copy_of(saved, tmp_path, "huge")
    edit_weights(folder, lambda weights: weights["classifier.weight"].__setitem__((0, 0), 3e38))
    pattern = f"^{folder}: tensor classifier.weight holds a value of magnitude 3e\\+38, beyond the {MAX_ABS_WEIGHT:g}"
    refused_everywhere(folder, tmp_path, capsys, pattern, "classifier.weight")
    within = copy_of(saved, tmp_path, "within")
    edit_weights(within, lambda weights: weights["classifier.weight"].__setitem__((0, 0), MAX_ABS_WEIGHT / 2))
    AutoModelForTokenClassification.from_pretrained(within)


def test_a_running_variance_may_reach_the_square_of_the_weight_limit():
    """Variances are in squared units: an activation of magnitude 125 gives 1.56e4."""
    norm = torch.nn.BatchNorm2d(3)
    norm.running_var.fill_(1.56e4)
    check_finite(norm, "bn")
    norm.running_mean.fill_(1.56e4)
    with pytest.raises(ValueError, match=f"^bn: tensor running_mean holds .* beyond the {MAX_ABS_WEIGHT:g}"):
        check_finite(norm, "bn")
    norm.running_mean.zero_()
    norm.running_var.fill_(3e38)
    with pytest.raises(
        ValueError, match=f"^bn: tensor running_var holds .* beyond the {re.escape(f'{MAX_RUNNING_VARIANCE:g}')}"
    ):
        check_finite(norm, "bn")


def test_a_config_edit_that_keeps_the_shapes_is_refused_and_the_card_says_so(trained, tmp_path):
    card = (trained / "README.md").read_text()
    assert f"## {UNIT_HEADING}" in card and "`time_horizon`" in card and "`layer_norm_eps`" in card
    assert "an edit of `config.json` is refused" in card
    folder = copy_of(trained, tmp_path, "edited")
    edit_json(folder / "config.json", lambda c: c.update(time_horizon=1e6, layer_norm_eps=10.0))
    pattern = "in layer_norm_eps \\(10.0, saved with 1e-06\\), time_horizon \\(1000000.0, saved with 1.0\\)"
    with pytest.raises(ValueError, match=pattern):
        AutoModelForTokenClassification.from_pretrained(folder)
