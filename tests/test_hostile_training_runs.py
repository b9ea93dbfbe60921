"""Hostile training runs, with test_scaffold's toy trainer: a foreign checkpoint, a
diverging run, a damaged random state and changed arguments are each refused or named; a
finished run extends; the run folder loads and is unlocked."""

import json
import logging
import os
import shutil

import pytest
import torch
from hostile import load_script, one_error_line, toy_trainer
from safetensors.torch import load_file

from cont_transformer.runtime.safe_files import LOCK_FILE, OutputFolderError, hold_lock
from cont_transformer.tools.cli import run_cli
from cont_transformer.training.arguments import RunArguments
from cont_transformer.training.checkpoints import CheckpointError
from cont_transformer.training.divergence import TrainingDiverged
from cont_transformer.training.identity import check_identity, file_fingerprints, record_identity
from cont_transformer.training.recipes import parse_arguments


def test_a_checkpoint_of_another_run_must_carry_this_runs_identity(tmp_path):
    ToyTrainer, toy = toy_trainer()
    ToyTrainer(toy(tmp_path, output_dir=str(tmp_path / "a"), max_steps=8)).run()
    other = ToyTrainer(toy(tmp_path, output_dir=str(tmp_path / "b"), max_steps=4, learning_rate=0.01)).run()
    foreign = str(tmp_path / "a" / "checkpoints" / "step-8")
    with pytest.raises(OutputFolderError, match="step-8 is a checkpoint of another run: --learning-rate"):
        ToyTrainer(toy(tmp_path, output_dir=str(tmp_path / "new"), learning_rate=0.01, resume_from_checkpoint=foreign))
    assert not (tmp_path / "new").exists()  # refused before the folder is made
    # A folder that holds a run of its own (b) is not resumed from another run's checkpoint.
    with pytest.raises(OutputFolderError, match="step-8 is a checkpoint of another run folder, and --output-dir"):
        ToyTrainer(toy(tmp_path, output_dir=str(tmp_path / "b"), learning_rate=0.01, resume_from_checkpoint=foreign))
    assert json.loads((tmp_path / "b" / "metrics.json").read_text())["history"] == other["history"]
    # The same identity: its weights and optimiser go on here, its history stays there.
    resumed = ToyTrainer(toy(tmp_path, output_dir=str(tmp_path / "c"), resume_from_checkpoint=foreign)).run()
    assert [entry["step"] for entry in resumed["history"]] == [12]
    assert resumed["best"] == resumed["history"][0]
    assert (tmp_path / "c" / "best" / "model.pt").is_file()
    loose = tmp_path / "loose"
    shutil.copytree(foreign, loose)
    with pytest.raises(CheckpointError, match="in no run folder"):
        ToyTrainer(toy(tmp_path, output_dir=str(tmp_path / "d"), resume_from_checkpoint=str(loose)))


def test_a_diverging_run_stops_naming_the_step_and_saves_nothing_non_finite(tmp_path):
    ToyTrainer, toy = toy_trainer()
    with pytest.raises(ValueError, match="learning_rate: must be a finite positive number, got inf"):
        parse_arguments(RunArguments, ["--learning-rate", "inf"])
    with pytest.raises(
        TrainingDiverged,
        match=r"^step \d+: the (training loss is|weights are).*--learning-rate 10000 is likely too high",
    ):
        ToyTrainer(toy(tmp_path, learning_rate=1e4, refine_steps="none", eval_steps=1, max_steps=20)).run()
    best = tmp_path / "run" / "best" / "model.pt"
    if best.exists():
        assert all(torch.isfinite(v).all() for v in torch.load(best).values())
    for checkpoint in (tmp_path / "run" / "checkpoints").glob("step-*"):
        assert all(torch.isfinite(v).all() for v in load_file(checkpoint / "model.safetensors").values())


def test_a_resume_from_no_checkpoint_says_what_it_was_given(tmp_path):
    ToyTrainer, toy = toy_trainer()
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a checkpoint")
    for spec, problem in ((tmp_path / "missing", "does not exist"), (a_file, "is a file")):
        with pytest.raises(CheckpointError, match=f"^--resume-from-checkpoint: {spec} {problem}; give a checkpoint"):
            ToyTrainer(toy(tmp_path, output_dir=str(tmp_path / "run"), resume_from_checkpoint=str(spec)))
    with pytest.raises(OutputFolderError, match="run holds no run to resume .no run.json.; start a new run there"):
        ToyTrainer(toy(tmp_path, output_dir=str(tmp_path / "run"), resume_from_checkpoint="latest"))
    assert not (tmp_path / "run").exists()


def test_a_finished_run_extends_with_a_larger_max_steps(tmp_path):
    record_identity(tmp_path, {"max_steps": 100, "cooldown_steps": 20, "learning_rate": 0.1}, "data")
    check_identity(tmp_path, {"max_steps": 200, "cooldown_steps": 40, "learning_rate": 0.1}, "data")
    with pytest.raises(OutputFolderError, match="^--cooldown-steps: 40 differs from 20"):
        check_identity(tmp_path, {"max_steps": 100, "cooldown_steps": 40, "learning_rate": 0.1}, "data")
    ToyTrainer, toy = toy_trainer()
    reference = ToyTrainer(toy(tmp_path, output_dir=str(tmp_path / "reference"))).run()
    ToyTrainer(toy(tmp_path, max_steps=8)).run()
    extended = ToyTrainer(toy(tmp_path, max_steps=12, resume_from_checkpoint="latest")).run()
    assert extended["history"] == reference["history"]


def test_the_final_sizes_are_read_from_run_json_under_their_flags_names_too(tmp_path):
    record_identity(tmp_path, {"num_basis": 8, "num_steps": 8, "learning_rate": 0.1}, "data")
    check_identity(tmp_path, {"final_num_basis": 8, "final_num_steps": 8, "learning_rate": 0.1}, "data")
    with pytest.raises(OutputFolderError, match="^--num-steps: 16 differs from 8"):
        check_identity(tmp_path, {"final_num_basis": 8, "final_num_steps": 16, "learning_rate": 0.1}, "data")


class _PaddedToy:
    """The toy trainer with an attention mask of 3 real positions in 4 (a padding ratio of 4/3)."""

    def __new__(cls, args):
        ToyTrainer, _ = toy_trainer()

        class Padded(ToyTrainer):
            def epoch_batches(self, epoch, skip):
                for batch in super().epoch_batches(epoch, skip):
                    mask = torch.ones(len(batch["y"]), 4, dtype=torch.long)
                    mask[:, -1] = 0
                    yield {**batch, "attention_mask": mask}

            def batch_items(self, batch):
                return batch["attention_mask"].sum()

        return Padded(args)


def test_the_padding_ratio_counts_every_batch_of_a_resumed_run(tmp_path):
    _, toy = toy_trainer()
    _PaddedToy(toy(tmp_path, max_steps=8)).run()
    resumed = _PaddedToy(toy(tmp_path, max_steps=12, resume_from_checkpoint="latest")).run()
    assert resumed["padding_ratio"] == pytest.approx(4 / 3)
    assert resumed["train_items"] == 12 * 16 * 3


def test_a_random_state_that_does_not_load_is_named(tmp_path, caplog):
    ToyTrainer, toy = toy_trainer()
    ToyTrainer(toy(tmp_path, max_steps=8)).run()
    (state,) = (tmp_path / "run" / "checkpoints" / "step-8").glob("random_states_*.pkl")
    state.write_bytes(b"not a pickle")
    with caplog.at_level(logging.WARNING):
        trainer = ToyTrainer(toy(tmp_path, max_steps=12, resume_from_checkpoint="latest"))
    assert f"{state} is damaged" in caplog.text and trainer.state.step == 4
    with pytest.raises(CheckpointError, match=f"^{state}: cannot resume"):
        ToyTrainer(toy(tmp_path, max_steps=12, resume_from_checkpoint=str(state.parent)))


def test_resume_refusals_name_the_real_argument_and_file(tmp_path, capsys):
    # The preset, not the schedule it brought, is what differs.
    record_identity(tmp_path, {"preset": "mnist-small", "lr_decay_epochs": [8, 11]}, "data")
    with pytest.raises(OutputFolderError, match="^--preset: 'cifar10-small' differs"):
        check_identity(tmp_path, {"preset": "cifar10-small", "lr_decay_epochs": []}, "data")
    train, dev = tmp_path / "train.conllu", tmp_path / "dev.conllu"
    train.write_text("a"), dev.write_text("b")
    record_identity(tmp_path, {}, "data-1", file_fingerprints([train, dev]))
    dev.write_text("c")
    with pytest.raises(OutputFolderError, match=f"{dev} differs from the file of that name"):
        check_identity(tmp_path, {}, "data-2", file_fingerprints([train, dev]))
    train_pos = load_script("train_pos")
    with pytest.raises(SystemExit, match="2"):
        run_cli(train_pos.main, ["--max-steps", "-5"])
    assert one_error_line(capsys).startswith("error: max_steps: ")


def test_the_run_folder_loads_with_from_pretrained_and_is_unlocked(tmp_path):
    ToyTrainer, toy = toy_trainer()
    ToyTrainer(toy(tmp_path, max_steps=4)).run()
    run = tmp_path / "run"
    assert (run / "model.pt").read_bytes() == (run / "best" / "model.pt").read_bytes()
    assert json.loads((run / "config.json").read_text())["num_basis"] == 1
    fd = hold_lock(run / LOCK_FILE)
    assert fd is not None  # released at the end of the run
    os.close(fd)
    ToyTrainer(toy(tmp_path, max_steps=4, overwrite_output_dir=True)).run()  # the copies are a run's outputs
