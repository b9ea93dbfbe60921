"""Hostile replacements: ``--overwrite-output-dir`` keeps the earlier run whole, and
loadable, until the new run's first save; a new run that diverges, is stopped, is killed
or meets a full disk before then leaves the earlier run as it was, byte for byte."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from hostile import REPO, folder_digest, needs_a_small_disk, on_a_small_disk, toy_trainer, train_pos

from cont_transformer.runtime.model_folders import resolve_model_dir
from cont_transformer.runtime.safe_files import DiskFullError, naming_full_disk
from cont_transformer.training.divergence import TrainingDiverged


def run_id(folder: Path) -> str:
    return json.loads((folder / "run.json").read_text())["run_id"]


def loaded_toy_run(folder: Path) -> str:
    """The run id of the toy run in ``folder``, after loading its best model whole."""
    best = resolve_model_dir(folder)
    torch.load(best / "model.pt", weights_only=True)
    json.loads((best / "config.json").read_text())
    return run_id(folder)


def siblings(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.parent.iterdir() if p != folder)


def test_a_replacing_run_that_diverges_or_is_stopped_leaves_the_earlier_run_whole(tmp_path, monkeypatch):
    ToyTrainer, toy = toy_trainer()
    ToyTrainer(toy(tmp_path, max_steps=8)).run()
    run = tmp_path / "run"
    (run / "MY_NOTES.txt").write_text("mine")
    before, others = folder_digest(run), siblings(run)
    with pytest.raises(TrainingDiverged):
        ToyTrainer(toy(tmp_path, learning_rate=1e6, overwrite_output_dir=True)).run()
    assert folder_digest(run) == before and siblings(run) == others

    def interrupted(self, model, batch):
        raise KeyboardInterrupt

    stopped = ToyTrainer(toy(tmp_path, overwrite_output_dir=True))
    monkeypatch.setattr(ToyTrainer, "loss", interrupted)
    with pytest.raises(KeyboardInterrupt):
        stopped.run()
    assert folder_digest(run) == before and siblings(run) == others


def test_a_replacing_run_takes_the_folder_at_its_first_save_with_the_users_files(tmp_path, monkeypatch):
    ToyTrainer, toy = toy_trainer()
    ToyTrainer(toy(tmp_path, max_steps=8)).run()
    run = tmp_path / "run"
    old = run_id(run)
    seen = []

    def watched_evaluate(self, model):
        seen.append((self.state.step, run_id(run), (run / "best" / "model.pt").is_file()))
        return {"accuracy": float(-self.state.step)}  # the first evaluation stays the best

    monkeypatch.setattr(ToyTrainer, "evaluate", watched_evaluate)
    for where in (run, run / "best", run / "checkpoints"):
        (where / "MY_NOTES.txt").write_text(where.name)
    ToyTrainer(toy(tmp_path, max_steps=12, overwrite_output_dir=True)).run()
    # The earlier run was whole until the first evaluation saved; the new one from then on.
    assert seen[0] == (4, old, True) and all(entry[1] != old for entry in seen[1:])
    assert loaded_toy_run(run) != old and siblings(run) == []
    for where in (run, run / "best", run / "checkpoints"):
        assert (where / "MY_NOTES.txt").read_text() == where.name


FULL_DISK_RUN = """
import json, os, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from hostile import folder_digest, toy_trainer
ToyTrainer, toy = toy_trainer()
disk = Path({disk!r})
ToyTrainer(toy(disk, max_steps=8)).run()
before = folder_digest(disk / "run")
statvfs = os.statvfs(disk)
try:  # the disk's last bytes, beside the run
    with open(disk / "filler", "wb") as filler:
        filler.write(b"x" * (statvfs.f_bavail * statvfs.f_frsize))
except OSError:
    pass
try:
    ToyTrainer(toy(disk, overwrite_output_dir=True)).run()
    error = None
except OSError as err:
    error = str(err)
print(json.dumps({{"error": error, "same": folder_digest(disk / "run") == before,
                  "left": sorted(p.name for p in disk.iterdir())}}))
"""


@needs_a_small_disk
def test_a_replacing_run_on_a_full_disk_says_so_and_loses_nothing(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    script = FULL_DISK_RUN.format(tests=str(REPO / "tests"), disk=str(disk))
    result = on_a_small_disk(disk, "2m", [sys.executable, "-c", script])
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["error"] is not None and "no space left on device" in report["error"], report
    assert str(disk) in report["error"]
    assert report["same"] and report["left"] == ["filler", "run"], report


@needs_a_small_disk
def test_torchs_short_write_on_a_full_disk_is_named_with_its_path(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    script = (
        "import torch, sys\n"
        "from cont_transformer.runtime.safe_files import naming_full_disk\n"
        f"path = {str(disk / 'weights.pt')!r}\n"
        "try:\n"
        "    with naming_full_disk(path):\n"
        "        torch.save({'w': torch.zeros(100000)}, path)\n"
        "except OSError as err:\n"
        "    print(type(err).__name__, err)\n"
    )
    result = on_a_small_disk(disk, "64k", [sys.executable, "-c", script], timeout=120)
    assert result.stdout.strip() == (
        f"DiskFullError {disk / 'weights.pt'}: no space left on device; free some space there and run again"
    ), result.stderr[-2000:]
    with pytest.raises(ValueError, match="unexpected pos"), naming_full_disk(tmp_path):  # a roomy disk: not named
        raise ValueError("unexpected pos 1 vs 2")
    with pytest.raises(DiskFullError, match=f"^{tmp_path}: no space left on device"), naming_full_disk(tmp_path):
        raise OSError(28, "No space left on device")


KILLED_RUN = """
import sys
sys.path.insert(0, {tests!r})
from hostile import toy_trainer
ToyTrainer, toy = toy_trainer()
from pathlib import Path
print("started", flush=True)
ToyTrainer(toy(Path({tmp!r}), max_steps=120, eval_steps=40, save_steps=40, refine_steps="none",
               final_num_basis=1, overwrite_output_dir=True)).run()
"""


def kill_a_replacing_run(tmp_path: Path, delay: float) -> None:
    """Start a toy run over the run in ``tmp_path/run`` and kill -9 it ``delay`` seconds
    after its imports."""
    script = KILLED_RUN.format(tests=str(REPO / "tests"), tmp=str(tmp_path))
    process = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"},
    )
    assert process.stdout.readline().strip() == "started"
    time.sleep(delay)
    process.send_signal(signal.SIGKILL)
    process.wait()


@pytest.mark.slow
def test_a_replacing_run_killed_at_any_moment_leaves_one_whole_run(tmp_path):
    ToyTrainer, toy = toy_trainer()
    ToyTrainer(toy(tmp_path, max_steps=8)).run()
    run = tmp_path / "run"
    runs = {loaded_toy_run(run)}
    for delay in (0.0, 0.3, 0.8, 1.5, 3.0):
        kill_a_replacing_run(tmp_path, delay)
        found = loaded_toy_run(run)  # whole and loadable: the earlier run or a new one
        assert found in runs or delay > 0, delay
        runs.add(found)
    ToyTrainer(toy(tmp_path, max_steps=8, overwrite_output_dir=True)).run()  # leftovers are cleaned up
    assert siblings(run) == []


@pytest.mark.slow
def test_train_pos_diverging_over_an_earlier_run_leaves_it_whole(sample_run_60, tmp_path):
    import shutil

    output = tmp_path / "run"
    shutil.copytree(sample_run_60, output, symlinks=True)
    before = folder_digest(output)
    args = ["recipes/sample.json", "--output-dir", str(output), "--overwrite-output-dir", "--max-steps", "20"]
    result = train_pos(*args, "--learning-rate", "1e6")
    assert result.returncode == 2 and "--learning-rate" in result.stderr.strip().splitlines()[-1], result.stderr[-2000:]
    assert folder_digest(output) == before and siblings(output) == []
