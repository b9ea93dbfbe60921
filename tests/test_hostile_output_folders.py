"""Hostile output folders: one run per folder, a lock that goes with a killed run,
leftovers removed, nothing overwritten that a run did not write, no output over its input."""

import os
import subprocess
import sys

import pytest
from hostile import REPO, load_script, run_tag, save_tagger, train_pos

from cont_transformer.runtime.safe_files import (
    LOCK_FILE,
    OutputFolderError,
    hold_lock,
    release_output_folder,
    staged_directory,
)
from cont_transformer.tagging.tag import Tagger
from cont_transformer.tagging.tag_files import tag_file
from cont_transformer.training.outputs import prepare_run_folder


@pytest.fixture(scope="module")
def saved(tmp_path_factory, tiny_tagger):
    return save_tagger(tmp_path_factory.mktemp("tagger"), tiny_tagger)


def test_one_run_per_output_folder_and_the_lock_goes_with_a_killed_run(tmp_path):
    folder = tmp_path / "run"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time; from cont_transformer.training.outputs import prepare_run_folder as p; "
                f"p({str(folder)!r}, resuming=False, overwrite=False); print('locked', flush=True); time.sleep(60)"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(OutputFolderError, match=f"^--output-dir: {folder} is in use by another run"):
            prepare_run_folder(folder, resuming=False, overwrite=False)
    finally:
        holder.kill()
        holder.wait()
    prepare_run_folder(folder, resuming=False, overwrite=False)  # the kill released it
    assert sorted(p.name for p in folder.iterdir()) == [LOCK_FILE]
    release_output_folder(folder)


def test_overwrite_deletes_only_in_a_folder_a_run_wrote(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "metrics.json").write_text('{"mine": 1}')
    with pytest.raises(OutputFolderError, match=f"^--output-dir: {folder} is not empty and no run"):
        prepare_run_folder(folder, resuming=False, overwrite=True)
    assert (folder / "metrics.json").read_text() == '{"mine": 1}'
    release_output_folder(folder)
    failed = tmp_path / "failed"  # a run that failed before saving anything: run.json alone
    failed.mkdir()
    (failed / "run.json").write_text("{}")
    prepare_run_folder(failed, resuming=False, overwrite=False)
    release_output_folder(failed)


def test_the_next_run_removes_what_a_killed_one_left(saved, tmp_path):
    tagger = Tagger.from_pretrained(saved, device="cpu")
    text, output = tmp_path / "in.txt", tmp_path / "out.conllu"
    text.write_text("the dog saw a bird.\n")
    stale = tmp_path / f".out.conllu.{'a' * 32}.tmp"  # a killed tag.py's staging file
    live = tmp_path / f".out.conllu.{'b' * 32}.tmp"  # one being written now
    other = tmp_path / ".out.conllu.notours.tmp"
    stale.write_text("partial")
    other.write_text("keep")
    lock = hold_lock(live)
    try:
        tag_file(tagger, text, output, progress=False)
        assert not stale.exists() and live.exists() and other.exists() and output.is_file()
    finally:
        os.close(lock)
    # compress.py's staging folder (staged_directory) the same way
    target = tmp_path / "compressed"
    (tmp_path / ".staging-compressed-deadbeef").mkdir()
    with staged_directory(target, "model-folder") as staging:
        (staging / "config.json").write_text("{}")
    assert sorted(p.name for p in tmp_path.glob(".staging-*")) == []


def test_tag_refuses_output_equal_to_input_and_a_directory_input(saved, tmp_path, capsys):
    text = tmp_path / "in.txt"
    text.write_text("the dog saw a bird.\n")
    link = tmp_path / "link.txt"
    link.symlink_to(text)
    line = run_tag([str(saved), "--input", str(text), "--output", str(link)], capsys)
    assert f"output: {link} is the input file" in line and "--in-place" in line
    assert text.read_text() == "the dog saw a bird.\n"
    load_script("tag").main([str(saved), "--input", str(text), "--output", str(text), "--in-place", "--no-progress"])
    assert text.read_text().startswith("# newdoc")
    line = run_tag([str(saved), "--input", str(tmp_path), "--output", str(tmp_path / "o")], capsys)
    assert line == f"error: input: {tmp_path} is a directory, not a file"


@pytest.mark.slow
def test_a_bad_treebank_file_loses_no_earlier_run_it_was_to_overwrite(sample_run_60, tmp_path):
    """The data is checked before --overwrite-output-dir deletes anything."""
    import shutil

    bad = tmp_path / "bad.conllu"
    bad.write_text("1\tfoo\n")
    output = tmp_path / "run"
    shutil.copytree(sample_run_60, output)
    weights = (output / "best" / "model.safetensors").read_bytes()
    args = ["recipes/sample.json", "--output-dir", str(output), "--overwrite-output-dir"]
    result = train_pos(*args, "--train-file", str(bad), "--dev-file", str(bad))
    assert result.returncode == 2 and f"{bad}:1:" in result.stderr.strip().splitlines()[-1], result.stderr[-2000:]
    assert (output / "best" / "model.safetensors").read_bytes() == weights
