"""What the package writes: the modes of the user's umask, no leftovers of a killed run, and
no silent empties or gensim tracebacks (``--min-count``, ``--silver-text-files``, vectors out of
range) — each refused in one line before anything is trained or written."""

import os
import re
import stat
import subprocess
import sys
import tempfile
import time

import pytest
import torch
from hostile import REPO, load_script, run_script, save_tagger, toy_trainer
from safetensors.torch import save_file
from test_pretraining import write_text

from cont_transformer.language_modeling.word_vectors import SCRATCH_PREFIX, train_word_vectors
from cont_transformer.runtime.model_folders import VECTORS_FILE, WORDS_FILE
from cont_transformer.runtime.safe_files import hold_lock
from cont_transformer.text.word_vectors import WordVectorError, load_word_vectors
from cont_transformer.tools.compression import compress

pytest.importorskip("gensim")


@pytest.fixture(scope="module")
def saved(tmp_path_factory, tiny_tagger):
    return save_tagger(tmp_path_factory.mktemp("tagger"), tiny_tagger)


def modes(folder):
    """``{path: permission bits}`` of ``folder`` and everything under it."""
    return {str(p.relative_to(folder.parent)): stat.S_IMODE(p.stat().st_mode) for p in [folder, *folder.rglob("*")]}


@pytest.mark.parametrize("mask", [0o022, 0o077], ids=["umask022", "umask077"])
def test_every_file_and_folder_written_gets_the_umasks_mode(saved, tmp_path, mask):
    text = write_text(tmp_path / "t.txt.gz", lines=60)
    plain = tmp_path / "in.txt"
    plain.write_text("the dog saw a bird.\n")
    ToyTrainer, toy = toy_trainer()
    previous = os.umask(mask)
    try:
        out = tmp_path / "out"  # a folder of the user's, holding the outputs
        out.mkdir()
        ToyTrainer(toy(out, max_steps=8)).run()  # a run folder: best/, checkpoints/, the published model
        compress(saved, out / "small", num_basis=2, repeats=1)
        train_word_vectors([text], out / "vectors", vector_size=4, epochs=1)
        load_script("tag").main([str(saved), "--input", str(plain), "--output", str(out / "t.conllu"), "--no-progress"])
    finally:
        os.umask(previous)
    found = modes(out)
    written = ["run/model.pt", "run/best/model.pt", "run/checkpoints/step-8/model.safetensors", "run/.lock"]
    written += ["small/model.safetensors", "small/.cont_transformer_manifest.json", "vectors/word_vectors.safetensors"]
    assert {f"out/{name}" for name in [*written, "t.conllu"]} <= set(found)
    expected = {name: (0o777 if (tmp_path / name).is_dir() else 0o666) & ~mask for name in found if "/logs" not in name}
    assert {name: mode for name, mode in found.items() if name in expected} == expected


@pytest.mark.slow
def test_a_killed_vector_training_leaves_a_scratch_folder_the_next_start_removes(tmp_path, monkeypatch):
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    text = write_text(tmp_path / "big.txt.gz", lines=40000)
    command = [sys.executable, "scripts/train_word_vectors.py", "--text-files", str(text), "--epochs", "50"]
    victim = subprocess.Popen(
        [*command, "--output-dir", str(tmp_path / "v")],
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(temporary), "OMP_NUM_THREADS": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not list(temporary.glob(f"{SCRATCH_PREFIX}*/corpus.txt")):
            assert victim.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        victim.kill()
        victim.wait()
    (left,) = temporary.iterdir()
    assert left.name.startswith(f"{SCRATCH_PREFIX}{victim.pid}-")
    live = temporary / f"{SCRATCH_PREFIX}1-live"  # another training's, being written now
    live.mkdir()
    other = temporary / "someone-elses"
    other.mkdir()
    lock = hold_lock(live)
    try:
        monkeypatch.setattr(tempfile, "tempdir", str(temporary))
        train_word_vectors([write_text(tmp_path / "t.txt.gz", lines=60)], tmp_path / "w", vector_size=4, epochs=1)
    finally:
        os.close(lock)
    assert sorted(p.name for p in temporary.iterdir()) == sorted([live.name, other.name])


def test_a_min_count_no_word_reaches_is_refused_before_training(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    text = write_text(tmp_path / "t.txt.gz", lines=60)
    output = tmp_path / "vectors"
    line = run_script(
        "train_word_vectors", ["--text-files", text, "--output-dir", output, "--min-count", "100000"], capsys
    )
    assert re.fullmatch(
        r"error: --min-count: no word occurs 100000 times in the text \(the most frequent, '\S+', occurs \d+ "
        r"times\), so no word would get a vector; lower --min-count",
        line,
    ), line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.txt.gz"]  # no folder, no scratch left


def test_vectors_out_of_range_are_named_when_a_tagger_reads_them(tmp_path, capsys):
    folder = tmp_path / "vectors"
    folder.mkdir()
    save_file({"vectors": torch.tensor([[0.5, -1.0], [3e38, 1.0]])}, str(folder / VECTORS_FILE))
    (folder / WORDS_FILE).write_text("the\ndog\n", encoding="utf-8")
    expected = (
        f"word_vectors: {folder / VECTORS_FILE} holds values up to 3e+38 (the vector of 'dog', row 2); a tagger "
        "reads entries of a few units (those of scripts/train_word_vectors.py have a standard deviation of 1): "
        "train them again or rescale them"
    )
    with pytest.raises(WordVectorError) as error:
        load_word_vectors(folder)
    assert str(error.value) == expected
    output = tmp_path / "run"
    argv = ["--treebank", "sample", "--word-representation", "word+chars", "--max-steps", "2"]
    line = run_script("train_pos", [*argv, "--word-vectors", folder, "--output-dir", output], capsys)
    assert line == f"error: {expected}"
    assert not output.exists()


def test_self_training_on_text_without_a_drawable_line_is_refused(saved, tmp_path, capsys):
    text = tmp_path / "short.txt"
    text.write_text("Chapter one\n\n" + " ".join(["word"] * 61) + "\nThe end\n")
    output = tmp_path / "run"
    argv = ["--treebank", "sample", "--teacher", saved, "--silver-text-files", text, "--output-dir", output]
    line = run_script("train_pos", [*argv, "--max-steps", "2"], capsys)
    assert line == (
        f"error: --silver-text-files: no line of {text} has 3 to 60 words, the lines self-training draws (one "
        "sentence a line); give such text or leave out --teacher"
    )
    assert not output.exists()
