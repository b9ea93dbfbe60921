"""The training scaffold: folders, identity, checkpoints, refinement of the optimiser,
gradient accumulation, one-line errors; with a toy trainer (an ODE block over a Linear
layer fitting a regression) so that every test runs in a second or two."""

import importlib.util
import json
import logging
import pickle
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from cont_transformer import OdeBlock
from cont_transformer.runtime.compressed_copies import compression_variants
from cont_transformer.runtime.model_folders import BEST_MODEL_DIR, resolve_model_dir
from cont_transformer.runtime.safe_files import (
    MANIFEST_FILE,
    OutputFolderError,
    recover_directory,
    replace_directory,
    staged_directory,
)
from cont_transformer.tools.cli import run_cli
from cont_transformer.training.arguments import RunArguments
from cont_transformer.training.checkpoints import (
    CheckpointError,
    complete_checkpoints,
    staging_folder,
)
from cont_transformer.training.identity import check_identity, record_identity
from cont_transformer.training.outputs import prepare_run_folder
from cont_transformer.training.recipes import parse_arguments
from cont_transformer.training.refinement import refine_with_optimizer
from cont_transformer.training.scaffold import Trainer, split_batch
from cont_transformer.training.schedules import coarse_num_steps

REPO = Path(__file__).resolve().parents[1]


# --- a toy trainer -----------------------------------------------------------------------
class ToyModel(nn.Module):
    """x -> OdeBlock(Linear) -> Linear, with a ``config`` the transforms keep in sync."""

    def __init__(self, num_basis: int, num_steps: int):
        super().__init__()
        self.config = SimpleNamespace(basis="piecewise_constant", num_basis=num_basis, num_steps=num_steps)
        self.block = OdeBlock(nn.Linear(4, 4), num_basis=num_basis, num_steps=num_steps)
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        return self.head(self.block(x)).squeeze(-1)


@dataclass
class ToyArguments(RunArguments):
    num_examples: int = 64


class ToyTrainer(Trainer):
    def load_data(self):
        generator = torch.Generator().manual_seed(0)
        self.x = torch.randn(self.args.num_examples, 4, generator=generator)
        self.y = self.x.sum(-1).tanh()

    @property
    def steps_per_epoch(self):
        return self.args.num_examples // self.args.batch_size

    def epoch_batches(self, epoch, skip):
        order = torch.randperm(self.args.num_examples, generator=torch.Generator().manual_seed(epoch))
        for index in range(skip, self.steps_per_epoch):
            chosen = order[index * self.args.batch_size : (index + 1) * self.args.batch_size]
            yield {"x": self.x[chosen], "y": self.y[chosen]}

    def build_model(self):
        return ToyModel(self.schedule.initial_num_basis, self.schedule.initial_num_steps)

    def build_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=self.args.learning_rate, momentum=0.9)

    def learning_rate(self, step):
        return self.args.learning_rate

    def loss(self, model, batch):
        return ((model(batch["x"]) - batch["y"]) ** 2).mean()

    def batch_items(self, batch):
        return torch.tensor(len(batch["y"]))

    def evaluate(self, model):
        with torch.no_grad():
            return {"accuracy": -((model(self.x) - self.y) ** 2).mean().item()}

    def record_card(self, model, entry):
        pass  # no model card for a toy

    def write_final_card(self):
        pass

    def load_best(self):
        model = ToyModel(self.state.best["num_basis"], self.state.best["num_steps"])
        model.load_state_dict(torch.load(self.output_dir / BEST_MODEL_DIR / "model.pt"))
        return model

    def save_model(self, model, folder, entry):
        torch.save(model.state_dict(), folder / "model.pt")
        (folder / "config.json").write_text(json.dumps(vars(model.config)))


def toy(tmp_path, **overrides) -> ToyArguments:
    values = {
        "output_dir": str(tmp_path / "run"),
        "max_steps": 12,
        "batch_size": 16,
        "eval_steps": 4,
        "save_steps": 4,
        "final_num_basis": 4,
        "refine_steps": "4,8",
        "learning_rate": 0.05,
        "save_total_limit": 3,
    }
    return ToyArguments(**{**values, **overrides})


# --- folders -----------------------------------------------------------------------------
def test_staged_directory_replaces_whole_or_not_at_all(tmp_path):
    target = tmp_path / "best"
    with staged_directory(target, "model-folder") as staging:
        (staging / "a").write_text("1")
    with pytest.raises(RuntimeError), staged_directory(target, "model-folder") as staging:
        (staging / "a").write_text("2")
        raise RuntimeError("killed while writing")
    assert (target / "a").read_text() == "1" and sorted(p.name for p in tmp_path.iterdir()) == ["best"]
    with staged_directory(target, "model-folder") as staging:
        (staging / "b").write_text("3")
    assert sorted(p.name for p in target.iterdir()) == [MANIFEST_FILE, "b"]  # what the package wrote


def test_recover_directory_puts_back_an_interrupted_swap(tmp_path):
    target = tmp_path / "best"
    target.mkdir()
    (target / "config.json").write_text("{}")
    # A two-rename swap killed in between: the old folder retired, the new one not in place.
    target.rename(tmp_path / ".retired-best-1234")
    (tmp_path / ".staging-best-5678").mkdir()
    recover_directory(target)
    assert (target / "config.json").is_file() and sorted(p.name for p in tmp_path.iterdir()) == ["best"]
    staging = tmp_path / "new"
    staging.mkdir()
    (staging / "x").write_text("new")
    replace_directory(staging, target)
    assert sorted(p.name for p in target.iterdir()) == ["x"] and not staging.exists()


def test_a_new_run_refuses_a_folder_with_outputs(tmp_path):
    folder = tmp_path / "run"
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(OutputFolderError, match="^--output-dir: .* is not empty"):
        prepare_run_folder(folder, resuming=False, overwrite=False)
    (folder / "run.json").write_text('{"arguments": {"treebank": "sample"}}')  # a tagger run of this package
    prepare_run_folder(folder, resuming=False, overwrite=True, kind="tagger-run")
    assert sorted(p.name for p in folder.iterdir()) == [".lock", "notes.txt"]  # only run outputs go


def test_resolve_model_dir_accepts_a_run_folder(tmp_path):
    (tmp_path / "run" / BEST_MODEL_DIR).mkdir(parents=True)
    (tmp_path / "run" / BEST_MODEL_DIR / "config.json").write_text("{}")
    assert resolve_model_dir(tmp_path / "run") == tmp_path / "run" / BEST_MODEL_DIR
    with pytest.raises(FileNotFoundError, match="not a saved model folder"):
        resolve_model_dir(tmp_path)


def test_identity_names_the_first_difference(tmp_path):
    record_identity(tmp_path, {"learning_rate": 0.1, "refine_steps": (4, 8)}, "data-a")
    check_identity(tmp_path, {"learning_rate": 0.1, "refine_steps": (4, 8)}, "data-a")
    with pytest.raises(OutputFolderError, match="^--learning-rate: 0.2 differs from 0.1"):
        check_identity(tmp_path, {"learning_rate": 0.2, "refine_steps": (4, 8)}, "data-a")
    with pytest.raises(OutputFolderError, match="data differ"):
        check_identity(tmp_path, {"learning_rate": 0.1, "refine_steps": (4, 8)}, "data-b")


# --- runs --------------------------------------------------------------------------------
def test_toy_run_refines_checkpoints_and_resumes_exactly(tmp_path):
    reference = ToyTrainer(toy(tmp_path, output_dir=str(tmp_path / "reference"))).run()
    assert [(h["step"], h["num_basis"]) for h in reference["history"]] == [(4, 1), (8, 2), (12, 4)]
    # Evaluation at a refinement step scores the model as trained, before refining it.
    first = ToyTrainer(toy(tmp_path, max_steps=8)).run()
    assert first["history"] == reference["history"][:2]
    with pytest.raises(OutputFolderError, match="not empty"):
        ToyTrainer(toy(tmp_path, max_steps=12))
    with pytest.raises(OutputFolderError, match="^--learning-rate"):
        ToyTrainer(toy(tmp_path, max_steps=12, resume_from_checkpoint="latest", learning_rate=0.1))
    resumed = ToyTrainer(toy(tmp_path, max_steps=12, resume_from_checkpoint="latest")).run()
    assert resumed["history"] == reference["history"] and resumed["best"] == reference["best"]


def test_latest_falls_back_past_a_damaged_checkpoint(tmp_path, caplog):
    ToyTrainer(toy(tmp_path, max_steps=8)).run()
    run = tmp_path / "run"
    assert [p.name for p in complete_checkpoints(run)] == ["step-4", "step-8"]
    weights = run / "checkpoints" / "step-8" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])  # a torn write
    staging_folder(run, 12).mkdir()  # and an abandoned, incomplete one
    with caplog.at_level(logging.WARNING):
        trainer = ToyTrainer(toy(tmp_path, max_steps=12, resume_from_checkpoint="latest"))
    assert "step-8/model.safetensors is damaged" in caplog.text
    assert trainer.state.step == 4 and trainer.state.num_basis == 2
    assert [h["step"] for h in trainer.run()["history"]] == [4, 8, 12]
    weights = run / "checkpoints" / "step-12" / "model.safetensors"
    for checkpoint in complete_checkpoints(run):
        (checkpoint / "model.safetensors").write_bytes(b"")
    with pytest.raises(CheckpointError, match="cannot resume"):
        ToyTrainer(toy(tmp_path, max_steps=16, resume_from_checkpoint="latest"))


def test_gradient_accumulation_gives_the_whole_batch_gradient(tmp_path):
    one = ToyTrainer(toy(tmp_path, output_dir=str(tmp_path / "a"), refine_steps="none", final_num_basis=2))
    two = ToyTrainer(
        toy(
            tmp_path,
            output_dir=str(tmp_path / "b"),
            refine_steps="none",
            final_num_basis=2,
            gradient_accumulation_steps=4,
        )
    )
    two.model.load_state_dict(one.model.state_dict())
    for trainer in (one, two):
        trainer._items = torch.zeros((), dtype=torch.long)
        trainer._optimizer_step(next(iter(trainer.epoch_batches(0, 0))))
    for (name, a), b in zip(one.model.named_parameters(), two.model.parameters()):
        torch.testing.assert_close(a, b, msg=name)


class StepRecordingTrainer(ToyTrainer):
    """Records the N_T and the K the weights are read as in each training forward pass."""

    def loss(self, model, batch):
        read = model.block._read_basis
        self.seen = [*getattr(self, "seen", []), (model.block.num_steps, (read or model.block.basis).num_basis)]
        return super().loss(model, batch)


def test_coarse_steps_integrate_with_half_the_steps(tmp_path):
    assert [coarse_num_steps(s, 0.25, 4) for s in range(1, 9)] == [None, None, None, 2] * 2
    assert [coarse_num_steps(s, 1.0, 1) for s in (1, 2)] == [None, None]  # N_T = 1 has no half
    trainer = StepRecordingTrainer(toy(tmp_path, coarse_step_fraction=0.5))
    result = trainer.run()
    # A coarse step is the model compressed to K/2 and N_T/2.
    assert trainer.seen == [(1, 1)] * 4 + [(2, 2), (1, 1)] * 2 + [(4, 4), (2, 2)] * 2
    # Evaluation, checkpoints and refinement see the level's own N_T.
    assert [(h["num_basis"], h["num_steps"]) for h in result["history"]] == [(1, 1), (2, 2), (4, 4)]
    assert trainer.model.config.num_steps == 4 and trainer.model.block._read_basis is None
    with pytest.raises(ValueError, match="^coarse_step_fraction"):
        toy(tmp_path, coarse_step_fraction=1.5)


def test_split_batch_and_compression_variants():
    parts = split_batch({"x": torch.arange(10), "scale": 2}, 3)
    assert [p["x"].tolist() for p in parts] == [[0, 1, 2], [3, 4, 5, 6], [7, 8, 9]]
    assert all(p["scale"] == 2 for p in parts)
    config = SimpleNamespace(basis="piecewise_linear", num_basis=9, num_steps=16)
    assert compression_variants(config) == [
        ("K/2", {"num_basis": 5}),
        ("K/4", {"num_basis": 3}),
        ("N_T/2", {"num_steps": 8}),
        ("N_T/4", {"num_steps": 4}),
        ("K/2, N_T/2", {"num_basis": 5, "num_steps": 8}),
    ]


def test_refinement_projects_sgd_momentum():
    torch.manual_seed(0)
    model = ToyModel(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(8, 4)).sum().backward()
    optimizer.step()
    weight = "block.rate.weight"
    old = optimizer.state[dict(model.named_parameters())[weight]]["momentum_buffer"].clone()
    head = model.head.weight
    optimizer = refine_with_optimizer(model, optimizer, lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9))
    new = optimizer.state[dict(model.named_parameters())[weight]]["momentum_buffer"]
    assert torch.equal(new, old.repeat_interleave(2, 0))  # each new cell inherits its parent's
    assert model.config.num_basis == 4 and optimizer.state[head]["momentum_buffer"] is not None


# --- arguments and the command line --------------------------------------------------------
def test_arguments_take_both_spellings_and_presets():
    args, extra = parse_arguments(
        ToyArguments, ["--learning_rate", "0.5", "--num-basis", "4", "--refine-steps", "none"]
    )
    assert args.learning_rate == 0.5 and args.final_num_basis == 4 and args.refine_steps == ()
    assert extra["given_fields"] == {"learning_rate", "final_num_basis", "refine_steps"}
    args, _ = parse_arguments(
        ToyArguments, ["--max-steps", "1000"], preset_defaults=lambda given: {"max_steps": 5, "seed": 7}
    )
    assert (args.max_steps, args.seed) == (1000, 7)  # a flag given with the default still counts
    with pytest.raises(ValueError, match="^batch_size: must be an integer >= 1"):
        toy(Path("."), batch_size=0)


def _script(name):
    spec = importlib.util.spec_from_file_location(name[:-3], REPO / "scripts" / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "script, arguments, message",
    [
        ("train_pos.py", ["--max-steps", "0"], "error: max_steps: must be an integer >= 1"),
        ("train_pos.py", ["--learning-rate", "fast"], "error: argument --learning_rate/--learning-rate"),
        (
            "train_pos.py",
            ["--train-file", "missing.conllu", "--dev-file", "missing.conllu"],
            "error: split 'train': missing.conllu: no such CoNLL-U file",
        ),
        ("train_image.py", ["--dataset", "x", "--epochs", "0"], "error: epochs: must be an integer >= 1"),
        ("train_image.py", ["--dataset", "x", "--batch-size", "0"], "error: batch_size: must be an integer >= 1"),
        ("train_image.py", ["--dataset", "./missing"], "error: ./missing: no such file or folder"),
    ],
)
def test_scripts_report_bad_input_in_one_line(tmp_path, capsys, script, arguments, message):
    main = _script(script).main
    argv = ["--output-dir", str(tmp_path / "out"), *arguments]
    with pytest.raises(SystemExit) as exit_info:
        run_cli(main, argv)
    assert exit_info.value.code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and lines[0].startswith(message), lines
    if "argument" not in message:  # argparse's own errors have no traceback to show
        with pytest.raises((ValueError, OSError)):
            run_cli(main, [*argv, "--debug"])


class _Planted:
    """A pickle whose loading creates ``marker``: proof that code ran."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_a_malicious_pickle_in_a_checkpoint_runs_no_code(tmp_path, caplog):
    ToyTrainer(toy(tmp_path, max_steps=8)).run()
    run, marker = tmp_path / "run", tmp_path / "code-ran"
    planted = {}
    for checkpoint in complete_checkpoints(run):
        for path in checkpoint.iterdir():
            if path.suffix in (".bin", ".pkl"):
                path.write_bytes(pickle.dumps(_Planted(marker)))
                planted.setdefault(checkpoint.name, path.name)
    assert planted  # the optimiser state and the random states are pickles
    with pytest.raises(CheckpointError, match="cannot resume"):
        ToyTrainer(toy(tmp_path, max_steps=12, resume_from_checkpoint="latest"))
    assert not marker.exists()
    assert "step-8/" in caplog.text and "is damaged" in caplog.text


class WorseningTrainer(ToyTrainer):
    """Scores every evaluation below the one before: the coarse models look best on dev."""

    def evaluate(self, model):
        return {"accuracy": -float(self.state.step)}


def test_a_refined_run_keeps_a_model_of_its_final_sizes(tmp_path):
    """Once the run reaches the K and N_T it was asked for, a coarser model never stays
    best/, however it scored; a run that never reaches them keeps its best by the metric."""
    result = WorseningTrainer(toy(tmp_path)).run()
    assert [h["step"] for h in result["history"]] == [4, 8, 12]
    assert (result["best"]["step"], result["best"]["num_basis"]) == (12, 4)
    assert json.loads((tmp_path / "run" / BEST_MODEL_DIR / "config.json").read_text())["num_basis"] == 4
    result = WorseningTrainer(toy(tmp_path, output_dir=str(tmp_path / "short"), max_steps=8)).run()
    assert (result["best"]["step"], result["best"]["num_basis"]) == (4, 1)
