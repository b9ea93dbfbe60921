"""The training scaffold: one loop, refinement, checkpoints, staged saves and resume for
every trainer of the package (the tagger, the image classifiers).

A trainer subclasses :class:`Trainer` and supplies its data, model, optimiser, the loss
of a batch and the evaluation; the scaffold does the rest the same way for all:

* Steps. ``batch_size`` examples per optimiser step over all processes (each process
  takes its share), optionally in ``gradient_accumulation_steps`` micro-batches whose
  losses are weighted by their share of the scored items, so accumulation gives the
  gradient of the whole batch. Optional gradient clipping. Before every step torch's RNG
  is seeded from ``(seed, step, process)``, and the subclass's batches of an epoch are a
  function of ``(seed, epoch)``, so a resumed run replays the uninterrupted one exactly.
* Order within a step ``s``: the optimiser step; an evaluation if due (the best model is
  written to ``best/`` through a staging folder; once the run has reached its final K and
  N_T, only evaluations at those sizes compete: :meth:`.records.RunRecords._rank`); the refinement
  if ``s`` is a refinement step (:func:`.refinement.refine_with_optimizer`: the
  optimiser's state is projected like the coefficients); a checkpoint if due. A checkpoint therefore holds the sizes the
  refinement schedule gives after ``s``, and resuming rebuilds them before loading.
* Folders. The folder's rules are checked first (touching nothing), then the data is
  loaded (and checked) and a resumed run's identity compared, and only then is
  ``output_dir`` touched. A new run
  refuses a non-empty ``output_dir`` unless ``overwrite_output_dir``, which replaces only
  what the earlier run's manifest names (:mod:`.outputs`), never a model the run reads
  (:meth:`Trainer.sources`) inside the folder, and only once the new run has saved its
  first best model: until then it is built beside the folder, the earlier run whole;
  ``run.json`` records the run's identity and a resumed run must match it
  (:mod:`.identity`), also when resuming from a checkpoint of another run folder, whose
  history then stays out of this run's ``metrics.json``; checkpoints are complete or
  absent, and ``latest`` falls back past a damaged one (:mod:`.checkpoints`);
  ``metrics.json`` is replaced atomically.
* A non-finite loss or non-finite weights stop the run before anything of them is saved
  (:mod:`.divergence`).
* After training: the compression report (optional: the best model at K/2, K/4, N_T/2,
  N_T/4, both halved, scored on dev), the subclass's ``finish`` (e.g. a final test
  evaluation), the best model's files at the top of ``output_dir`` (``from_pretrained``
  loads the run folder, as after transformers' ``Trainer``), the Hub upload (its token and
  connection checked at the start, before anything is trained), and the output folder's
  lock released.
* transformers' flags (:mod:`.arguments`): ``eval_strategy`` / ``save_strategy`` set the
  plan's cadence (``epoch``: every pass; ``no``: one evaluation at the end, no
  checkpoints), ``warmup_ratio`` the warm-up steps of the planned run,
  ``gradient_checkpointing`` the model's activation checkpointing, ``use_cpu`` the
  device, ``logging_dir`` / ``run_name`` the trackers' folder and run.

docs/design.md describes how the tagger and the image trainer fill the hooks.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import torch
from torch import nn
from tqdm.auto import tqdm

from ..runtime.compiling import compile_model, compiled_graphs
from ..runtime.hub import check_hub_access, push_folder_to_hub
from ..runtime.model_folders import (
    BEST_MODEL_DIR,
    CHECKPOINTS_DIR,
    METRICS_FILE,
    RUN_FILE,
    TRAINING_RUN,
    UNCOMPRESSED_MODEL_DIR,
)
from ..runtime.safe_files import OutputFolderError, naming_full_disk, release_output_folder
from ..transform import refine
from .accelerator import end_distributed, make_accelerator
from .arguments import RunArguments, check_trackers
from .checkpoints import (
    CheckpointError,
    check_random_states,
    damaged_file,
    finish_checkpoint,
    foreign_run_folder,
    read_state,
    resume_candidates,
    staging_folder,
)
from .outputs import LOGS_DIR, RunFolder, check_run_folder, publish_best_model
from .records import COMPRESSED_BEST, COMPRESSION_FILE, RunRecords
from .schedules import RefinementSchedule, RunPlan
from .steps import OptimizerSteps, TrainerState, enable_activation_checkpointing, model_sizes, seed_step, split_batch

logger = logging.getLogger(__name__)

# What every run writes at the top of its output folder, recorded in its manifest at the
# start (a trainer records what it adds, e.g. the tagger's predictions/). logs/ (the
# trackers' files) is the run's as a whole.
RUN_WRITES = (
    BEST_MODEL_DIR,
    UNCOMPRESSED_MODEL_DIR,
    CHECKPOINTS_DIR,
    METRICS_FILE,
    RUN_FILE,
    COMPRESSION_FILE,
    LOGS_DIR,
)


class Trainer(RunFolder, RunRecords, OptimizerSteps):
    """One training run under Accelerate; subclasses fill the hooks marked below.

    Hooks: :meth:`load_data` (data, preprocessing; prepare loaders here), optionally
    :meth:`run_plan` (step counts that depend on the data size), :attr:`steps_per_epoch`, :meth:`epoch_batches`, :meth:`build_model` (at the schedule's
    initial sizes), :meth:`build_optimizer`, :meth:`learning_rate`, :meth:`loss`,
    :meth:`evaluate` (returns at least ``selection_metric``), :meth:`save_model` (writes a
    complete model folder), and optionally :meth:`sources`, :meth:`after_optimizer_step`,
    :meth:`data_fingerprint`, :meth:`data_files`, :meth:`summary`, :meth:`finish`. An optimiser's param group
    with an ``lr_scale`` gets that multiple of :meth:`learning_rate`.
    """

    item_name = "items"  # what train_items counts, for metrics.json ("tokens", "images")
    run_kind = TRAINING_RUN  # what its run folder holds (model_folders.KINDS): what it may overwrite
    overwrite_command = "--overwrite-output-dir"  # how a refusal to replace another kind names the command
    selection_metric = "accuracy"  # higher is better; picks the best model on dev

    def __init__(self, args: RunArguments):
        self.args = args
        self.started = time.perf_counter()
        self.extra_metrics: dict = {}  # added after training (compression report, test)
        self.compiled = False
        self.output_dir = self.run_folder = Path(args.output_dir)  # where it writes now, and in the end
        resuming = args.resume_from_checkpoint is not None
        self._check_selection_metric()
        if args.push_to_hub:  # a token and the connection, before anything is trained
            check_hub_access(args.push_to_hub)
        trackers = check_trackers(args.report_to)
        logging_dir = args.logging_dir or str(self.output_dir / LOGS_DIR)
        tracker = {"log_with": trackers, "project_dir": logging_dir} if trackers else {}
        self.accelerator = accelerator = make_accelerator(args.mixed_precision, cpu=args.use_cpu, **tracker)
        self._resolve_batch_size()
        # A checkpoint of another run folder: that run must be this one (its identity).
        self.source_run = foreign_run_folder(args.resume_from_checkpoint, self.output_dir) if resuming else None
        resume_here = resuming and self.source_run is None  # else a new run here, from that checkpoint
        # The folder's rules are checked first, touching nothing; then the data is loaded, so
        # that a bad file is refused before --overwrite-output-dir deletes an earlier run.
        folder_rules = {
            "resuming": resume_here,
            "overwrite": args.overwrite_output_dir,
            "sources": self.sources(),
            "kind": self.run_kind,
            "command": self.overwrite_command,
            "foreign_checkpoint": args.resume_from_checkpoint if self.source_run is not None else None,
        }
        check_run_folder(self.output_dir, **folder_rules)
        self.load_data()
        self.plan = self._follow_strategies(self.run_plan())  # derived once, after the data size is known
        args.resolve_warmup(self.plan.max_steps)  # --warmup-ratio: a share of the planned steps
        try:
            self._check_identity_and_prepare_folder(folder_rules, RUN_WRITES)
            self._start_or_resume(resuming)
        except BaseException:
            self._abandon_replacement()
            raise
        if tracker:  # --run-name: the trackers' run (tensorboard's folder, wandb's run name)
            accelerator.init_trackers(
                args.run_name or "train",
                config=_loggable(dataclasses.asdict(args)),
                init_kwargs={"wandb": {"name": args.run_name}} if args.run_name else None,
            )

    def _start_or_resume(self, resuming: bool) -> None:
        """Build the model and optimiser from the start, or resume them from the newest
        checkpoint that loads (falling back past a damaged one, named)."""
        args, accelerator = self.args, self.accelerator
        candidates = resume_candidates(args.resume_from_checkpoint, self.output_dir) if resuming else [None]
        for index, checkpoint in enumerate(candidates):
            try:
                self._start(checkpoint)
                break
            except Exception as err:
                if checkpoint is None or index + 1 == len(candidates):
                    if checkpoint is None:
                        raise
                    bad = damaged_file(checkpoint)
                    raise CheckpointError(f"{bad or checkpoint}: cannot resume from it ({err})") from err
                accelerator.free_memory()
                logger.warning(
                    "%s is damaged (%s); resuming from the previous checkpoint %s",
                    damaged_file(checkpoint) or checkpoint,
                    err,
                    candidates[index + 1],
                )
        if resuming and self.state.step > self.plan.max_steps:  # before anything is written
            epochs = getattr(args, "num_train_epochs", None) is not None
            flag = "--num-train-epochs" if epochs else "--epochs" if hasattr(args, "epochs") else "--max-steps"
            raise OutputFolderError(
                f"{flag}: the run would end at step {self.plan.max_steps}, but {checkpoint} has done "
                f"{self.state.step} steps; resume with at least as many, resume an earlier checkpoint by its "
                "path, or train into another --output-dir"
            )

    def _resolve_batch_size(self) -> None:
        args, processes = self.args, self.accelerator.num_processes
        if args.per_device_train_batch_size is not None:
            args.batch_size = args.per_device_train_batch_size * processes * args.gradient_accumulation_steps
        if args.batch_size % (processes * args.gradient_accumulation_steps):
            raise ValueError(
                f"batch_size: {args.batch_size} must be divisible by the {processes} processes "
                f"x {args.gradient_accumulation_steps} accumulation steps"
            )
        # Evaluation batches over all processes (split like the training batches).
        per_device = args.per_device_eval_batch_size
        self.eval_batch_size = args.batch_size if per_device is None else per_device * processes

    def _check_selection_metric(self) -> None:
        """``--metric-for-best-model`` names the metric this trainer selects by, or is refused."""
        wanted, metric = self.args.metric_for_best_model, self.selection_metric
        if wanted is not None and wanted.removeprefix("eval_") != metric:
            raise ValueError(
                f"metric_for_best_model: this trainer selects the best model by dev {metric} (higher is "
                f"better); {wanted} is not offered"
            )

    def _follow_strategies(self, plan: RunPlan) -> RunPlan:
        """``plan`` with the cadence of ``--eval-strategy`` / ``--save-strategy``: ``epoch``
        every pass over the training data, ``no`` one evaluation at the end (the final model
        is the best) and no checkpoint (``save_steps`` 0); ``steps`` as planned."""
        changes = {}
        for name, strategy in (("eval_steps", self.args.eval_strategy), ("save_steps", self.args.save_strategy)):
            if strategy == "epoch":
                changes[name] = self.steps_per_epoch
            elif strategy == "no":
                changes[name] = plan.max_steps if name == "eval_steps" else 0
        return dataclasses.replace(plan, **changes)

    def _start(self, checkpoint: Path | None) -> None:
        """Build the model and optimiser at the sizes of ``checkpoint`` (or the start) and
        load its state."""
        args, accelerator = self.args, self.accelerator
        self.state = TrainerState(**read_state(checkpoint)) if checkpoint else TrainerState()
        torch.manual_seed(args.seed)
        model = self.build_model()
        for _ in range(self.schedule.num_refinements(self.state.step)):
            refine(model)
        sizes = model_sizes(model)
        if checkpoint is None:
            self.state.num_basis, self.state.num_steps = sizes
        elif sizes != (self.state.num_basis, self.state.num_steps):
            raise CheckpointError(
                f"{checkpoint} holds K, N_T = {self.state.num_basis}, {self.state.num_steps} but "
                f"the refinement schedule gives {sizes} at step {self.state.step}"
            )
        if args.gradient_checkpointing:
            enable_activation_checkpointing(model)
        if args.torch_compile:
            self.graphs_before = compiled_graphs()  # the counter is per process
            self.compiled = compile_model(
                model, accelerator.device, args.torch_compile_backend, args.torch_compile_mode
            )
        self.model, self.optimizer = accelerator.prepare(model, self.build_optimizer(model))
        if checkpoint is not None:
            accelerator.load_state(str(checkpoint))
            check_random_states(checkpoint)
            if self.source_run is not None:  # its weights and optimiser state, not its evaluations
                self.state.history, self.state.best = [], None
            logger.info("resumed from %s at step %d", checkpoint, self.state.step)

    @property
    def schedule(self) -> RefinementSchedule:
        """When K and N_T are refined (the plan's); :meth:`build_model` starts at its initial sizes."""
        return self.plan.schedule

    # --- hooks ---------------------------------------------------------------------
    def sources(self) -> dict[str, str | list[str] | None]:
        """What the run reads besides its data, by flag (``{"--model-name-or-path": path}``):
        a run may not replace the folder that holds one (:func:`.outputs.check_run_folder`)."""
        return {"--model-name-or-path": getattr(self.args, "model_name_or_path", None)}

    def load_data(self) -> None:
        raise NotImplementedError

    def run_plan(self) -> RunPlan:
        """The run's step counts and refinement schedule, after :meth:`load_data`; by
        default the arguments' own, ``num_train_epochs`` in :attr:`steps_per_epoch` steps
        (a trainer counting epochs derives them from the data size here, without writing
        them back into the arguments)."""
        epochs = self.args.num_train_epochs is not None
        return RunPlan.from_arguments(self.args, self.steps_per_epoch if epochs else None)

    @property
    def steps_per_epoch(self) -> int:
        raise NotImplementedError

    def epoch_batches(self, epoch: int, skip: int) -> Iterable[dict]:
        """This process's share of every optimiser step's batch in ``epoch``, from batch
        ``skip`` on; a function of ``(seed, epoch)`` only."""
        raise NotImplementedError

    def build_model(self) -> nn.Module:
        raise NotImplementedError

    def build_optimizer(self, model: nn.Module) -> torch.optim.Optimizer:
        raise NotImplementedError

    def learning_rate(self, step: int) -> float:
        raise NotImplementedError

    def loss(self, model: nn.Module, batch: dict) -> torch.Tensor:
        """The mean loss of ``batch`` (this process's share of a step, or a micro-batch)."""
        raise NotImplementedError

    def batch_items(self, batch: dict) -> torch.Tensor:
        """How many items (scored tokens, images) the loss of ``batch`` averages over, as a
        tensor on the device (no host synchronisation)."""
        raise NotImplementedError

    def after_optimizer_step(self, step: int) -> None:
        """After the optimiser's step ``step``, before any evaluation, refinement or
        checkpoint of that step (e.g. an average of the weights)."""

    def evaluate(self, model: nn.Module) -> dict:
        """Dev metrics of ``model`` (wrapped or not), computed on every process."""
        raise NotImplementedError

    def save_model(self, model: nn.Module, folder: Path, entry: dict) -> None:
        """Write ``model`` (unwrapped, the best so far, scored as ``entry``) and what loads
        with it into the empty ``folder``; main process only."""
        raise NotImplementedError

    def card_facts(self, entry: dict) -> dict:
        """Keyword arguments of :func:`~cont_transformer.model_card.write_model_card` for the
        best model scored as ``entry`` (data set, language, licence, results)."""
        return {}

    def reported_metrics(self) -> list[str]:
        """What the compression report and the model card show of an evaluation (keys of
        :meth:`evaluate`'s result, higher is better): by default the selection metric."""
        return [self.selection_metric]

    def data_fingerprint(self) -> str:
        return ""

    def data_files(self) -> list[Path]:
        """The files (or folders) the data was read from, fingerprinted one by one in
        ``run.json`` so that a resume on changed data names the file; by default the
        ``--dataset`` argument's path."""
        dataset = getattr(self.args, "dataset", None)
        return [Path(dataset)] if dataset and Path(dataset).exists() else []

    def summary(self) -> dict:
        """Facts for metrics.json (data set, baseline, ...)."""
        return {}

    def finish(self) -> None:
        """After training and the compression report (may add to ``extra_metrics``)."""

    # --- the loop ------------------------------------------------------------------
    def run(self) -> dict:
        """Train from the current step to the plan's ``max_steps``; returns the final metrics."""
        args, accelerator, state, plan = self.args, self.accelerator, self.state, self.plan
        progress = tqdm(
            total=plan.max_steps,
            initial=state.step,
            desc="training",
            dynamic_ncols=True,
            disable=not accelerator.is_local_main_process,
            mininterval=1 if sys.stderr.isatty() else 30,  # a log file gets a line every 30 s
        )
        self.model.train()
        self._items = torch.zeros((), dtype=torch.long, device=accelerator.device)
        self._slots = 0
        tick = time.perf_counter()
        try:  # closed also when the run stops, so an error starts its own line
            while state.step < plan.max_steps:
                epoch, skip = divmod(state.step, self.steps_per_epoch)
                for batch in self.epoch_batches(epoch, skip):
                    loss, learning_rate = self._optimizer_step(batch)
                    progress.set_postfix(
                        loss=f"{loss:.4f}",
                        lr=f"{learning_rate:.2e}",
                        K=state.num_basis,
                        N_T=state.num_steps,
                        refresh=False,
                    )
                    progress.update(1)
                    evaluate_now = state.step % plan.eval_steps == 0 or state.step == plan.max_steps
                    save_now = bool(plan.save_steps) and (
                        state.step % plan.save_steps == 0 or state.step == plan.max_steps
                    )
                    refine_now = state.step in self.schedule.refine_steps
                    if evaluate_now or save_now:
                        state.train_seconds += time.perf_counter() - tick
                        state.train_items += int(accelerator.reduce(self._items, "sum"))
                        slots = torch.tensor(self._slots, device=accelerator.device)
                        state.train_slots += int(accelerator.reduce(slots, "sum"))
                        self._items.zero_()
                        self._slots = 0
                        self.check_weights(learning_rate)
                    if evaluate_now:
                        entry = self.evaluate_and_keep_best(learning_rate)
                        if accelerator.is_main_process:
                            progress.write(self._describe(entry))
                        if state.best is not None:
                            self._replace_earlier_run()
                    if refine_now:
                        self._refine()
                    if save_now:
                        self.save_checkpoint()
                    if evaluate_now or save_now:
                        tick = time.perf_counter()
                    if state.step >= plan.max_steps:
                        break
            self._replace_earlier_run()
        except BaseException:
            self._abandon_replacement()
            raise
        finally:
            progress.close()
        if self.compiled:
            self.extra_metrics["compiled_graphs"] = compiled_graphs() - self.graphs_before
        self.write_metrics()
        if args.compression_report:
            self.extra_metrics["compression"] = self.compression_report()
        if args.best_num_basis is not None or args.best_num_steps is not None:
            self.extra_metrics[COMPRESSED_BEST] = self.compress_best()
        self.finish()
        metrics = self.write_metrics()
        if accelerator.is_main_process and state.best is not None:
            self.write_final_card()
            publish_best_model(self.output_dir)
        if args.push_to_hub and accelerator.is_main_process:
            logger.info("pushed to %s", push_folder_to_hub(self.output_dir / BEST_MODEL_DIR, args.push_to_hub))
        end_distributed(accelerator)
        release_output_folder(self.output_dir)
        return metrics

    def save_checkpoint(self) -> None:
        """Accelerate's state and ``trainer_state.json`` in ``checkpoints/step-N``, complete
        or absent; all but the newest ``save_total_limit`` are deleted."""
        accelerator, step = self.accelerator, self.state.step
        staging = staging_folder(self.output_dir, step)
        if accelerator.is_main_process:
            staging.mkdir(parents=True, exist_ok=True)
        accelerator.wait_for_everyone()
        with naming_full_disk(staging):
            accelerator.save_state(str(staging))
        accelerator.wait_for_everyone()
        if accelerator.is_main_process:
            state = dataclasses.replace(self.state, total_seconds=self._total_seconds())
            finish_checkpoint(self.output_dir, step, dataclasses.asdict(state), self.args.save_total_limit)
        accelerator.wait_for_everyone()


def _loggable(values: dict) -> dict:
    return {k: v if isinstance(v, (int, float, str, bool)) else str(v) for k, v in values.items()}


__all__ = [
    "Trainer",
    "TrainerState",
    "seed_step",
    "split_batch",
]
