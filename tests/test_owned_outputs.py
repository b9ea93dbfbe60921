"""Overwrite only what a run owns: --overwrite-output-dir and compress.py --overwrite
delete only what the package wrote (its manifest), a user's files beside the outputs stay, the
source model is never inside what gets replaced, compress.py writes under the output folder's
lock, and tag.py writes nothing into a model folder."""

import json
import os
import subprocess
import sys

import pytest
from hostile import REPO, load_script, one_error_line, run_compress, run_tag, save_tagger, toy_trainer
from transformers import AutoModelForTokenClassification

from cont_transformer.runtime.safe_files import (
    LOCK_FILE,
    MANIFEST_FILE,
    OutputFolderError,
    read_manifest,
    release_output_folder,
)
from cont_transformer.tools.cli import run_cli
from cont_transformer.tools.compression import compress
from cont_transformer.training.outputs import prepare_run_folder

NOTES = "MY_NOTES.txt"


@pytest.fixture(scope="module")
def saved(tmp_path_factory, tiny_tagger):
    return save_tagger(tmp_path_factory.mktemp("tagger"), tiny_tagger)


def tree(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_overwriting_a_run_keeps_the_users_files_in_best_checkpoints_and_beside(tmp_path):
    ToyTrainer, toy = toy_trainer()
    ToyTrainer(toy(tmp_path, max_steps=8)).run()
    run = tmp_path / "run"
    assert set(read_manifest(run)["outputs"]) >= {"best", "checkpoints", "metrics.json", "run.json", "model.pt"}
    for where in (run, run / "best", run / "checkpoints"):
        (where / NOTES).write_text(f"mine, in {where.name}")
    old_id = json.loads((run / "run.json").read_text())["run_id"]
    ToyTrainer(toy(tmp_path, max_steps=8, overwrite_output_dir=True)).run()
    for where in (run, run / "best", run / "checkpoints"):
        assert (where / NOTES).read_text() == f"mine, in {where.name}"
    assert json.loads((run / "run.json").read_text())["run_id"] != old_id  # the run itself was replaced
    assert (run / "model.pt").read_bytes() == (run / "best" / "model.pt").read_bytes()
    assert NOTES not in read_manifest(run / "best")["outputs"]  # carried over each save, never ours
    # Replaced once more: everything the run wrote goes, the notes alone stay (and the lock).
    release_output_folder(run)
    prepare_run_folder(run, resuming=False, overwrite=True)
    assert tree(run) == sorted(
        [LOCK_FILE, NOTES, "best", f"best/{MANIFEST_FILE}", f"best/{NOTES}", "checkpoints"]
        + [f"checkpoints/{MANIFEST_FILE}", f"checkpoints/{NOTES}", MANIFEST_FILE]
    )
    release_output_folder(run)


def test_a_damaged_manifest_is_named_and_deletes_nothing(tmp_path):
    ToyTrainer, toy = toy_trainer()
    ToyTrainer(toy(tmp_path, max_steps=4)).run()
    run = tmp_path / "run"
    (run / MANIFEST_FILE).write_text(json.dumps({"outputs": ["best", "../../elsewhere"]}))
    before = tree(run)
    with pytest.raises(OutputFolderError, match=f"^{run / MANIFEST_FILE}: '../../elsewhere' is not the name"):
        prepare_run_folder(run, resuming=False, overwrite=True)
    assert tree(run) == before
    release_output_folder(run)


def test_the_model_to_start_from_is_never_inside_what_gets_replaced(saved, tmp_path, capsys):
    run = tmp_path / "run"
    (run / "best").mkdir(parents=True)
    for path in saved.iterdir():  # a tagger run's folder: best/ and the published copy
        (run / "best" / path.name).write_bytes(path.read_bytes())
        (run / path.name).write_bytes(path.read_bytes())
    (run / "run.json").write_text(json.dumps({"arguments": {"treebank": "sample"}}))  # a tagger run
    (run / LOCK_FILE).touch()
    before = tree(run)
    train_pos = load_script("train_pos")
    for source in (run, run / "best"):
        argv = ["--output-dir", str(run), "--overwrite-output-dir", "--model-name-or-path", str(source)]
        with pytest.raises(SystemExit) as exit_info:
            run_cli(train_pos.main, [*argv, "--max-steps", "2"])
        assert exit_info.value.code == 2
        line = one_error_line(capsys)
        assert line.startswith(f"error: --model-name-or-path: {source} lies inside --output-dir {run}"), line
        assert tree(run) == before
        release_output_folder(run)
    AutoModelForTokenClassification.from_pretrained(run / "best")  # still there, whole


def test_compress_overwrite_replaces_only_what_a_compression_wrote(saved, tmp_path, capsys):
    out = tmp_path / "small"
    compress(saved, out, num_basis=2, repeats=1)
    assert set(read_manifest(out)["outputs"]) >= {"config.json", "model.safetensors", "tokenizer.json", "README.md"}
    (out / NOTES).write_text("mine")
    compress(saved, out, num_basis=1, repeats=1, overwrite=True)
    assert (out / NOTES).read_text() == "mine"
    assert json.loads((out / "config.json").read_text())["num_basis"] == 1
    # A model folder no compression wrote (no manifest) is not replaced.
    mine = tmp_path / "mine"
    mine.mkdir()
    for path in saved.iterdir():
        (mine / path.name).write_bytes(path.read_bytes())
    line = run_compress([str(saved), "--output-dir", str(mine), "--overwrite", "--num-basis", "2"], capsys)
    assert line.startswith(f"error: output_dir: {mine} holds a model no compression of this package wrote")


def test_compress_never_writes_over_a_training_run(saved, tmp_path, capsys):
    ToyTrainer, toy = toy_trainer()
    ToyTrainer(toy(tmp_path, max_steps=4)).run()
    run = tmp_path / "run"
    before = tree(run)
    for output, where in ((run, "is the training run folder"), (run / "best", "lies inside the outputs of")):
        line = run_compress([str(saved), "--output-dir", str(output), "--overwrite", "--num-basis", "2"], capsys)
        assert line.startswith(f"error: output_dir: {output} {where}"), line
    # A folder that holds the source is refused as well (the source is never replaced).
    line = run_compress([str(saved), "--output-dir", str(saved.parent), "--overwrite"], capsys)
    assert "contains the source model folder" in line
    assert tree(run) == before


def test_compress_holds_the_output_folders_lock(saved, tmp_path, capsys):
    out = tmp_path / "locked"
    holder = subprocess.Popen(  # another compression (or run) writing into it
        [
            sys.executable,
            "-c",
            (
                "import time; from cont_transformer.runtime.safe_files import lock_output_folder; "
                f"lock_output_folder({str(out)!r}); print('locked', flush=True); time.sleep(60)"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        line = run_compress([str(saved), "--output-dir", str(out), "--num-basis", "2", "--repeats", "1"], capsys)
        assert line == (
            f"error: --output-dir: {out} is in use by another run (it holds {out / LOCK_FILE}); "
            "wait for it to end or choose another folder"
        )
    finally:
        holder.kill()
        holder.wait()
    assert sorted(p.name for p in out.iterdir()) == [LOCK_FILE]
    # A compression that fails leaves no folder behind.
    line = run_compress(
        [str(saved), "--output-dir", str(tmp_path / "failed"), "--eval-file", str(tmp_path / "no")], capsys
    )
    assert str(tmp_path / "no") in line
    assert not (tmp_path / "failed").exists()


def test_two_compressions_into_one_new_folder_one_succeeds(saved, tmp_path):
    out = tmp_path / "both"
    command = [sys.executable, str(REPO / "scripts" / "compress.py"), str(saved), "--output-dir", str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    options = {"env": env, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    runs = [subprocess.Popen([*command, "--num-basis", k, "--repeats", "20"], **options) for k in ("2", "1")]
    results = [(run.wait(timeout=300), *run.communicate()) for run in runs]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 2], results
    _, _, err = next(result for result in results if result[0] == 2)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    assert f"{out}" in errors[0]
    winner = next(index for index, result in enumerate(results) if result[0] == 0)
    model = AutoModelForTokenClassification.from_pretrained(out)  # one complete model
    assert model.config.num_basis == (2, 1)[winner]
    assert sorted(p.name for p in out.iterdir()) == sorted([*read_manifest(out)["outputs"], MANIFEST_FILE, LOCK_FILE])
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left


def test_tag_writes_nothing_inside_a_model_folder(saved, tmp_path, capsys):
    model = tmp_path / "model"
    model.mkdir()
    for path in saved.iterdir():
        (model / path.name).write_bytes(path.read_bytes())
    config = (model / "config.json").read_bytes()
    text = tmp_path / "in.txt"
    text.write_text("the dog sat.\n")
    for output in (model / "config.json", model / "new.conllu"):
        line = run_tag([str(model), "--input", str(text), "--output", str(output)], capsys)
        assert (
            line == f"error: output: {output} lies inside the model folder {model}; write it outside the model's folder"
        )
    assert (model / "config.json").read_bytes() == config and not (model / "new.conllu").exists()
    ToyTrainer, toy = toy_trainer()
    ToyTrainer(toy(tmp_path, max_steps=4)).run()
    line = run_tag([str(model), "--input", str(text), "--output", str(tmp_path / "run" / "best" / "x")], capsys)
    assert "lies inside the model folder" in line
    load_script("tag").main(
        [str(model), "--input", str(text), "--output", str(tmp_path / "out.conllu"), "--no-progress"]
    )
    assert (tmp_path / "out.conllu").read_text().startswith("# newdoc")
