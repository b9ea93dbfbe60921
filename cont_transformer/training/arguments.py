"""The arguments every training run shares, as a dataclass the scripts parse.

:class:`RunArguments` holds what the scaffold (:mod:`.scaffold`) needs: where to write,
the continuous choices and their refinement, optimisation, evaluation and checkpoint
cadence, resuming, logging. Each trainer's arguments extend it with their own fields.
:func:`~.recipes.parse_arguments` builds the command line from the fields with
``transformers.HfArgumentParser`` (help from each field's ``metadata``), so every field is
a flag in both spellings (``--learning-rate`` and ``--learning_rate``), and a value the
user left out keeps the field's default. Defaults that depend on other flags (a preset)
come from ``preset_defaults``: a mapping from the given arguments to defaults.

Recipes and the command line: :mod:`.recipes`.

The flags a transformers user brings mean what they mean in ``Trainer``: ``--bf16`` /
``--fp16`` (mixed precision through Accelerate; fp16 needs a GPU), ``--num_train_epochs``
(a trainer converts it to steps once it knows the data size, :class:`.schedules.RunPlan`;
``--max_steps`` given too wins, as in transformers, unless only a recipe gave it),
``--do_train`` / ``--do_eval``, ``--push_to_hub`` (a switch; ``--hub_model_id`` names the
repository, or ``--push-to-hub REPO_ID``), ``--report_to`` any Accelerate tracker, and
the aliases in :data:`.recipes.ALIASES` (``--validation_file`` is ``--dev-file``,
``--dataset_name`` the tagger's ``--treebank``, ``--max_seq_length`` its ``--max-length``).
So do ``--eval_strategy`` / ``--save_strategy`` (``steps``, ``epoch``, ``no``: the run
plan's cadence, set by :mod:`.scaffold`), ``--warmup_ratio`` (warm-up steps once the
run's length is known), ``--per_device_eval_batch_size``, ``--logging_dir`` and
``--run_name`` (the trackers'), ``--gradient_checkpointing``, ``--use_cpu``, and the flags
that name what this package always does: ``--lr_scheduler_type`` the trainer's own
schedule, ``--load_best_model_at_end`` true, ``--metric_for_best_model`` its selection
metric, ``--dataloader_num_workers`` 0. A value this package cannot honour is refused in
one line saying why.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ..checks import check_count
from ..choices import check_basis_name, check_scheme_name
from ..runtime.compiling import check_compile_mode
from .identity import RESUMABLE, SPELT_AS_FLAGS
from .schedules import RefinementSchedule, parse_steps

logger = logging.getLogger(__name__)

# Seeds seed Python's, numpy's and torch's generators: numpy takes [0, 2**32).
SEED_LIMIT = 2**32
# --report_to: "none", "all" (every tracker installed) or Accelerate trackers, comma-separated.
TRACKERS = ("aim", "clearml", "comet_ml", "dvclive", "mlflow", "swanlab", "tensorboard", "trackio", "wandb")
# --eval-strategy / --save-strategy: transformers' values this package's plan follows.
STRATEGIES = ("steps", "epoch", "no")


# The final K and N_T a run trains to are ``final_num_basis`` / ``final_num_steps`` in the
# arguments, apart from a model's current ``num_basis``; on the command line they are also
# spelt as the config's K and N_T are (``--num-basis``: identity.SPELT_AS_FLAGS).
FINAL_NUM_BASIS_FLAGS, FINAL_NUM_STEPS_FLAGS = (
    [f"--{SPELT_AS_FLAGS[name].replace('_', '-')}", f"--{SPELT_AS_FLAGS[name]}"]
    for name in ("final_num_basis", "final_num_steps")
)


def flag_help(text: str, **extra) -> dict:
    return {"metadata": {"help": text, **extra}}


@dataclass
class RunArguments:
    """What every training run needs besides its data and model (see the module docstring)."""

    output_dir: str = field(
        default="runs/run",
        **flag_help("run folder: best/ (the best model), checkpoints/, metrics.json, run.json"),
    )
    overwrite_output_dir: bool = field(
        default=False, **flag_help("replace the outputs of an earlier run in --output-dir")
    )
    seed: int = field(default=42, **flag_help("model initialisation, data order, dropout"))
    batch_size: int = field(
        default=64, **flag_help("examples per optimiser step, over all processes", aliases=["--train-batch-size"])
    )
    per_device_train_batch_size: int | None = field(
        default=None,
        **flag_help(
            "examples per process and micro-batch; sets --batch-size to this x processes x "
            "--gradient-accumulation-steps (the transformers convention)"
        ),
    )
    gradient_accumulation_steps: int = field(
        default=1, **flag_help("micro-batches per optimiser step (same gradient, less memory)")
    )
    max_grad_norm: float | None = field(
        default=None, **flag_help("clip the gradient's global norm to this (default: no clipping)")
    )
    learning_rate: float = field(default=1e-3, **flag_help("peak learning rate"))
    weight_decay: float = field(default=0.0, **flag_help("decoupled weight decay"))
    basis: str = field(default="piecewise_constant", **flag_help("basis of the ODE blocks' weights"))
    final_num_basis: int = field(
        default=8, **flag_help("final K, the number of basis functions", aliases=FINAL_NUM_BASIS_FLAGS)
    )
    final_num_steps: int | None = field(
        default=None, **flag_help("final N_T, integration steps (default: --num-basis)", aliases=FINAL_NUM_STEPS_FLAGS)
    )
    scheme: str = field(default="euler", **flag_help("Runge-Kutta scheme"))
    time_horizon: float = field(default=1.0, **flag_help("T, the end of depth-time"))
    coarse_step_fraction: float = field(
        default=0.0,
        **flag_help(
            "share of optimiser steps, spread evenly, that train the model as compressed to "
            "K/2 and N_T/2 (0.5: every second step, once N_T >= 2): the compressions cost "
            "less, and so do those steps"
        ),
    )
    max_steps: int = field(default=1000, **flag_help("optimiser steps to train for"))
    refine_steps: str | None = field(
        default=None,
        **flag_help("comma-separated steps after which K and N_T are refined ('none': never)"),
    )
    eval_steps: int = field(default=1000, **flag_help("evaluate every N steps (and at the end)"))
    save_steps: int = field(default=1000, **flag_help("checkpoint every N steps (and at the end)"))
    save_total_limit: int = field(default=2, **flag_help("checkpoints kept (the newest)"))
    resume_from_checkpoint: str | None = field(
        default=None, **flag_help("a checkpoint folder, or 'latest' in --output-dir")
    )
    push_to_hub: str | None = field(
        default=None,
        **flag_help(
            "upload the best model to the Hub at the end: a switch (to --hub-model-id, or "
            "the --output-dir's name) or a repository id",
            nargs="?",
            const="",
            metavar="REPO_ID",
        ),
    )
    hub_model_id: str | None = field(default=None, **flag_help("Hub repository of --push-to-hub"))
    report_to: str = field(
        default="none",
        **flag_help(
            "log losses, dev metrics, learning rate, K and N_T to Accelerate trackers: "
            f"none, all, or comma-separated {', '.join(TRACKERS)} (tensorboard writes "
            "under --output-dir/logs; pip install 'cont-transformer[tensorboard]')"
        ),
    )
    bf16: bool = field(default=False, **flag_help("bfloat16 mixed precision (autocast) on a CPU or GPU"))
    fp16: bool = field(default=False, **flag_help("float16 mixed precision (a GPU only)"))
    num_train_epochs: float | None = field(
        default=None,
        **flag_help(
            "train for this many passes over the training data (replaces --max-steps; "
            "converted to steps once the data size is known)"
        ),
    )
    do_train: bool = field(default=False, **flag_help("train (the default; as in transformers)"))
    do_eval: bool = field(
        default=False, **flag_help("without --do-train: evaluate a saved model only, as --eval-only does")
    )
    logging_steps: int = field(default=50, **flag_help("log the training loss every N steps"))
    compression_report: bool = field(
        default=False,
        **flag_help(
            "after training, score the best model at K/2, K/4, N_T/2, N_T/4 and K, N_T "
            "halved on dev; write compression.md/.json and add the table to its card"
        ),
    )
    best_num_basis: int | None = field(
        default=None,
        **flag_help(
            "after training, save best/ compressed without retraining to this K, the model a "
            "user loads from the run folder (the model as trained moves to uncompressed/; the "
            "card and metrics.json's compressed_best say what it costs on dev); default: as trained"
        ),
    )
    best_num_steps: int | None = field(
        default=None, **flag_help("the same for N_T, the integration steps; default: as trained")
    )
    torch_compile: bool = field(
        default=False, **flag_help("compile the model with torch.compile (eager where it cannot)")
    )
    torch_compile_mode: str | None = field(
        default=None,
        **flag_help(
            "torch.compile mode: default, reduce-overhead (CUDA graphs), max-autotune "
            "(default: reduce-overhead on a GPU, default on a CPU)"
        ),
    )
    torch_compile_backend: str = field(
        default="inductor", **flag_help("torch.compile backend (inductor; aot_eager to debug)")
    )
    # transformers' Trainer flags (module docstring).
    eval_strategy: str | None = field(
        default=None,
        **flag_help(
            "when to evaluate on dev: steps (every --eval-steps, the default), epoch (after every "
            "pass over the training data) or no (once, at the end: best/ is the final model)"
        ),
    )
    save_strategy: str | None = field(
        default=None,
        **flag_help(
            "when to write a checkpoint: steps (every --save-steps, the default), epoch or no "
            "(none: the run cannot be resumed); best/ holds the best model either way"
        ),
    )
    lr_scheduler_type: str | None = field(
        default=None,
        **flag_help(
            "transformers' name of the learning-rate schedule: only this trainer's own (the tagger's: inverse_sqrt)"
        ),
    )
    warmup_ratio: float | None = field(
        default=None,
        **flag_help("the warm-up as a share of the run's steps (instead of --warmup-steps; from the planned steps)"),
    )
    per_device_eval_batch_size: int | None = field(
        default=None, **flag_help("evaluation examples per process (default: --batch-size over all processes)")
    )
    logging_dir: str | None = field(
        default=None, **flag_help("the trackers' folder (--report-to; default: --output-dir/logs)")
    )
    run_name: str | None = field(
        default=None,
        **flag_help("the trackers' run name (default: train; tensorboard writes under --logging-dir/RUN_NAME)"),
    )
    load_best_model_at_end: bool = field(
        default=True,
        **flag_help(
            "always true here: the best evaluation's model is kept in best/ and copied to --output-dir at the end"
        ),
    )
    metric_for_best_model: str | None = field(
        default=None, **flag_help("the dev metric that selects the best model: only the trainer's own (accuracy)")
    )
    dataloader_num_workers: int = field(
        default=0, **flag_help("0 only: batches are built in the main process from data already in memory")
    )
    gradient_checkpointing: bool = field(
        default=False,
        **flag_help("recompute each ODE step's activations in the backward pass: less memory, more time"),
    )
    use_cpu: bool = field(default=False, **flag_help("train on the CPU even where a GPU is available"))

    # What a trainer honours of transformers' flags (set by the subclasses):
    # --lr-scheduler-type values that name its schedule, and the schedule in words.
    lr_scheduler_types: ClassVar[tuple[str, ...]] = ()
    lr_schedule_description: ClassVar[str] = (
        "this trainer's learning-rate schedule is none of transformers' (its own flags set it: see --help)"
    )
    # Whether its evaluation takes batches of --per-device-eval-batch-size.
    takes_eval_batch_size: ClassVar[bool] = False
    # Whether --max-steps may be left out (None: the trainer's own length, e.g. its epochs).
    max_steps_optional: ClassVar[bool] = False

    def __post_init__(self):
        self.refine_steps = parse_steps(self.refine_steps)
        check_count("max_steps", self.max_steps, optional=self.max_steps_optional)
        if not 0 <= self.seed < SEED_LIMIT:
            raise ValueError(f"seed: must lie in [0, 2**32) (numpy's and torch's seeds), got {self.seed}")
        for name in (
            "batch_size",
            "gradient_accumulation_steps",
            "eval_steps",
            "save_steps",
            "save_total_limit",
            "logging_steps",
        ):
            check_count(name, getattr(self, name))
        check_count("per_device_train_batch_size", self.per_device_train_batch_size, optional=True)
        for name in ("best_num_basis", "best_num_steps"):
            check_count(name, getattr(self, name), optional=True)
        check_basis_name("basis", self.basis)
        check_scheme_name("scheme", self.scheme)
        for name in ("learning_rate", "time_horizon", "max_grad_norm", "num_train_epochs"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name}: must be a finite positive number, got {value}")
        if not (math.isfinite(self.coarse_step_fraction) and 0 <= self.coarse_step_fraction <= 1):
            raise ValueError(f"coarse_step_fraction: must be between 0 and 1, got {self.coarse_step_fraction}")
        if not (math.isfinite(self.weight_decay) and self.weight_decay >= 0):
            raise ValueError(f"weight_decay: must be a finite number >= 0, got {self.weight_decay}")
        if self.bf16 and self.fp16:
            raise ValueError("fp16: choose one of --bf16 and --fp16")
        self.report_to = ",".join(check_trackers(self.report_to))
        check_compile_mode(self.torch_compile_mode, "torch_compile_mode")
        self._check_trainer_flags()
        self._resolve_hub_repository()
        epochs = getattr(self, "epochs", None)
        if self.num_train_epochs is not None and isinstance(epochs, int):
            # A trainer that counts whole epochs (the image trainer) takes it as its --epochs.
            if self.num_train_epochs != int(self.num_train_epochs):
                raise ValueError(f"num_train_epochs: this trainer counts whole epochs, got {self.num_train_epochs}")
            self.epochs = int(self.num_train_epochs)
        if self.num_train_epochs is None and self.max_steps is not None:  # else once the plan knows the steps
            self.resolve_warmup(self.max_steps)
        if not self.sizes_pending:
            self.check_sizes()

    @property
    def sizes_pending(self) -> bool:
        """Whether the continuous choices (basis, scheme, T, K, N_T) come from a saved model
        that the run reads, set by :meth:`adopt_sizes` once it is read (no argument reads a
        folder); checked then, not before."""
        return False

    def adopt_sizes(
        self, basis: str, scheme: str, time_horizon: float, final_num_basis: int, final_num_steps: int
    ) -> None:
        """Take a saved model's continuous choices (and the final K and N_T) and check them."""
        self.basis, self.scheme, self.time_horizon = basis, scheme, time_horizon
        self.final_num_basis, self.final_num_steps = final_num_basis, final_num_steps
        self.check_sizes()

    def check_sizes(self) -> None:
        """N_T by default K; K and N_T fit the refinements; ``--best-num-*`` compress."""
        if self.final_num_steps is None:
            self.final_num_steps = self.final_num_basis
        for name, trained in (("best_num_basis", self.final_num_basis), ("best_num_steps", self.final_num_steps)):
            value = getattr(self, name)
            if value is not None and value > trained:
                flag = name.removeprefix("best_")
                raise ValueError(
                    f"{name}: {value} is more than --{flag.replace('_', '-')} {trained}; it compresses the model"
                )
        self.refinement_schedule  # noqa: B018 (validates K and N_T against the refinements)

    def _check_trainer_flags(self) -> None:
        """transformers' Trainer flags: a value this trainer cannot honour is refused in one
        line saying why (module docstring)."""
        counted_in_epochs = not any(f.name == "eval_steps" and f.init for f in dataclasses.fields(self))
        for name in ("eval_strategy", "save_strategy"):
            value = getattr(self, name)
            if value is None:
                continue
            if value == "best" and name == "save_strategy":
                raise ValueError(
                    "save_strategy: best is not offered: every new best evaluation's model is written to best/ "
                    "whatever the strategy, and checkpoints (for resuming) follow steps, epoch or no"
                )
            if value not in STRATEGIES:
                raise ValueError(f"{name}: choose one of {', '.join(STRATEGIES)}, got {value!r}")
            if value == "steps" and counted_in_epochs:
                raise ValueError(f"{name}: this trainer counts its run in epochs (no --eval-steps): give epoch or no")
        if self.lr_scheduler_type is not None and self.lr_scheduler_type not in self.lr_scheduler_types:
            offered = f"accepted: {', '.join(self.lr_scheduler_types)}" if self.lr_scheduler_types else "none accepted"
            raise ValueError(
                f"lr_scheduler_type: {self.lr_schedule_description}; {self.lr_scheduler_type} is not offered ({offered})"
            )
        if self.warmup_ratio is not None:
            if not (math.isfinite(self.warmup_ratio) and 0 <= self.warmup_ratio <= 1):
                raise ValueError(f"warmup_ratio: must lie between 0 and 1, got {self.warmup_ratio}")
            if not any(f.name == "warmup_steps" and f.init for f in dataclasses.fields(self)):
                raise ValueError(
                    "warmup_ratio: this trainer has no warm-up counted in steps (see --help for its schedule)"
                )
        check_count("per_device_eval_batch_size", self.per_device_eval_batch_size, optional=True)
        if self.per_device_eval_batch_size is not None and not self.takes_eval_batch_size:
            raise ValueError("per_device_eval_batch_size: this trainer sets its evaluation batches itself")
        if not self.load_best_model_at_end:
            raise ValueError(
                "load_best_model_at_end: this package always keeps the best model in best/ (and copies it to "
                "--output-dir at the end); it cannot be turned off"
            )
        if self.dataloader_num_workers != 0:
            raise ValueError(
                "dataloader_num_workers: 0 only: this package builds its batches in the main process from data "
                f"already in memory (tokenised sentences, image tensors), got {self.dataloader_num_workers}"
            )

    def resolve_warmup(self, max_steps: int) -> None:
        """``--warmup-ratio`` in steps of a run of ``max_steps`` (rounded up, as transformers does)."""
        if self.warmup_ratio is not None:
            self.warmup_steps = math.ceil(self.warmup_ratio * max_steps)

    def _resolve_hub_repository(self) -> None:
        """``--push-to-hub`` as a switch (also ``true`` in a recipe) pushes to
        ``--hub-model-id`` or the output folder's name, as transformers' Trainer does."""
        switch = str(self.push_to_hub).lower()
        if self.push_to_hub is None or switch == "false":
            self.push_to_hub = None
        elif switch in ("", "true"):
            self.push_to_hub = self.hub_model_id or Path(self.output_dir).resolve().name

    @property
    def mixed_precision(self) -> str | None:
        """Accelerate's mixed precision the flags ask for (None: Accelerate's default,
        e.g. ``accelerate launch --mixed_precision bf16``)."""
        return "bf16" if self.bf16 else "fp16" if self.fp16 else None

    @property
    def refinement_schedule(self) -> RefinementSchedule:
        return RefinementSchedule(self.basis, self.final_num_basis, self.final_num_steps, self.refine_steps)

    def identity(self) -> dict[str, Any]:
        """The arguments that determine what the run computes (see :data:`RESUMABLE`); with
        ``--warmup-ratio``, the ratio (its steps follow the run's length)."""
        derived = {"warmup_steps"} if self.warmup_ratio is not None else set()
        return {k: v for k, v in dataclasses.asdict(self).items() if k not in RESUMABLE | derived}


def check_trackers(report_to: str) -> list[str]:
    """The Accelerate trackers ``--report-to`` names (``[]`` for none); ValueError in one line
    for an unknown name or a tracker whose package is not installed."""
    names = [name.strip() for name in report_to.split(",") if name.strip()]
    if names in ([], ["none"]):
        return []
    if names == ["all"]:
        return [name for name in TRACKERS if importlib.util.find_spec(name) is not None]
    for name in names:
        if name not in TRACKERS:
            raise ValueError(f"report_to: choose none, all or of {', '.join(TRACKERS)}, got {name!r}")
        if importlib.util.find_spec(name) is None:
            raise ValueError(f"report_to: {name} needs its package, which is not installed (pip install {name})")
    return names
