"""Hostile inputs whose refusal must be one line naming the flag or file: a tokenizer of
another model type, word vectors of width 0, a model_type edited to another family, a word
holding a lone surrogate, a text too short for one batch, a resume refused for a schedule
step that --max-steps sets, and a full disk under tag.py."""

import json
import shutil
import sys

import pytest
import torch
from hostile import needs_a_small_disk, on_a_small_disk, run_script, run_tag, save_tagger
from safetensors.torch import save_file

from cont_transformer.runtime.safe_files import OutputFolderError
from cont_transformer.tagging.tag import Tagger
from cont_transformer.text.word_vectors import WordVectorError, load_word_vectors
from cont_transformer.training.identity import check_identity, record_identity


@pytest.fixture(scope="module")
def saved(tmp_path_factory, tiny_tagger):
    return save_tagger(tmp_path_factory.mktemp("tagger"), tiny_tagger)


@pytest.fixture
def text(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("the dog saw a bird.\n")
    return path


def edited_copy(saved, tmp_path, name, change):
    folder = tmp_path / "edited"
    shutil.copytree(saved, folder)
    content = json.loads((folder / name).read_text())
    change(content)
    (folder / name).write_text(json.dumps(content))
    return folder


@pytest.mark.parametrize("model_type", ["BPE", "Unigram", "Nonsense"])
def test_a_tokenizer_of_another_model_type_is_one_line_naming_it(saved, tmp_path, text, capsys, model_type):
    folder = edited_copy(saved, tmp_path, "tokenizer.json", lambda t: t["model"].update(type=model_type))
    line = run_tag([str(folder), "--input", str(text), "--output", str(tmp_path / "o.conllu")], capsys)
    assert line.startswith(f"error: {folder / 'tokenizer.json'}: the tokenizer does not load"), line


def test_a_model_type_edited_to_another_family_is_named_as_such(saved, tmp_path, text, capsys):
    folder = edited_copy(saved, tmp_path, "config.json", lambda c: c.update(model_type="ode_resnet"))
    line = run_tag([str(folder), "--input", str(text), "--output", str(tmp_path / "o.conllu")], capsys)
    assert line.startswith(f"error: {folder / 'config.json'}: model_type 'ode_resnet' is not the model"), line
    assert "custom code" not in line


def test_word_vectors_of_width_zero_are_named(tmp_path):
    folder = tmp_path / "vectors"
    folder.mkdir()
    save_file({"vectors": torch.zeros(2, 0)}, folder / "word_vectors.safetensors")
    (folder / "words.txt").write_text("dog\nbird\n")
    with pytest.raises(WordVectorError, match=r"word_vectors.safetensors holds vectors of width 0"):
        load_word_vectors(folder)


def test_a_lone_surrogate_is_named_where_it_is(saved):
    tagger = Tagger.from_pretrained(saved, device="cpu")
    with pytest.raises(ValueError, match=r"^sentence 1, word 2: word 'd\\ud800g' holds a lone surrogate"):
        tagger([["the", "d\ud800g"]])
    with pytest.raises(ValueError, match="^text: a lone surrogate .* at character 5"):
        tagger("the d\ud800g barks.")


def test_a_resume_refused_for_a_step_that_max_steps_sets_names_max_steps(tmp_path):
    record_identity(tmp_path, {"max_steps": 100, "refine_steps": [80], "learning_rate": 0.1}, "data")
    with pytest.raises(OutputFolderError, match="^--refine-steps: .*--max-steps sets it: 50 here, 100 in that run"):
        check_identity(tmp_path, {"max_steps": 50, "refine_steps": [40], "learning_rate": 0.1}, "data")


def test_too_little_text_for_one_batch_names_the_batch_size_and_the_file(tmp_path, capsys):
    short = tmp_path / "short.txt"
    short.write_text("the dog saw a bird .\n" * 5)
    argv = ["--text-files", short, "--output-dir", tmp_path / "lm", "--heldout-lines", "1", "--batch-size", "16"]
    line = run_script("pretrain", argv, capsys)
    assert line.startswith(f"error: --batch-size 16: {short} gives 4 training rows"), line


@needs_a_small_disk
def test_tag_on_a_full_disk_names_the_output_file(saved, tmp_path):
    disk, text = tmp_path / "disk", tmp_path / "big.txt"
    disk.mkdir()
    text.write_text("the dog saw a bird .\n" * 20000)
    output = disk / "out.conllu"
    argv = [sys.executable, "scripts/tag.py", str(saved), "--input", str(text), "--output", str(output)]
    result = on_a_small_disk(disk, "64k", [*argv, "--no-progress"])
    last = result.stderr.strip().splitlines()[-1]
    assert (
        result.returncode == 2
        and last == f"error: {output}: no space left on device; free some space there and run again"
    )
