"""One optimiser step of the scaffold (:mod:`.scaffold`) and its pieces: what a checkpoint
holds besides Accelerate's state, the per-step seed, micro-batches, the model's activation
checkpointing, and :class:`OptimizerSteps` (the step, its micro-batches, refinement and the
weights' check; a mixin of :class:`.scaffold.Trainer`)."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..runtime.compiling import after_refinement
from ..runtime.compressed_copies import coarser_num_basis
from ..transform import integrated_with
from .divergence import check_loss, check_weights
from .refinement import refine_with_optimizer
from .schedules import coarse_num_steps


@dataclass
class TrainerState:
    """What a checkpoint holds besides Accelerate's state (``trainer_state.json``).

    ``num_basis`` / ``num_steps`` are K and N_T after ``step``. The loss sums cover the
    steps since the last evaluation; times and item counts add up over resumed runs
    (``train_slots``: the positions of the batches that hold an ``attention_mask``, padding
    included, for the padding ratio).
    """

    step: int = 0
    num_basis: int = 0
    num_steps: int = 0
    best: dict | None = None
    history: list[dict] = dataclasses.field(default_factory=list)
    loss_sum: float = 0.0
    loss_count: int = 0
    train_seconds: float = 0.0
    train_items: int = 0
    train_slots: int = 0
    total_seconds: float = 0.0


def seed_step(seed: int, step: int, process_index: int) -> None:
    """Seed torch's global RNG (all devices) for optimiser step ``step`` of a process, so
    every step's randomness (dropout, word dropout) is a function of ``(seed, step,
    process)`` whatever else consumed random numbers in between."""
    state = np.random.SeedSequence([seed, 1, step, process_index]).generate_state(1, np.uint64)[0]
    torch.manual_seed(int(state >> 1))


def split_batch(batch: dict, parts: int) -> list[dict]:
    """``batch`` (tensors with a leading batch axis, other values shared) in ``parts``
    micro-batches along that axis."""
    if parts == 1:
        return [batch]
    size = next(v for v in batch.values() if torch.is_tensor(v)).shape[0]
    bounds = [round(i * size / parts) for i in range(parts + 1)]
    return [
        {k: v[a:b] if torch.is_tensor(v) and v.dim() and v.shape[0] == size else v for k, v in batch.items()}
        for a, b in itertools.pairwise(bounds)
        if b > a
    ]


def enable_activation_checkpointing(model: nn.Module) -> None:
    """``--gradient-checkpointing``: transformers' activation checkpointing of ``model``
    (every ``OdeBlock`` recomputes its steps in the backward pass); ValueError for a model
    without it."""
    enable = getattr(model, "activation_checkpointing_enable", None)  # transformers >= 5.x's name
    enable = enable or getattr(model, "gradient_checkpointing_enable", None)
    if enable is None or not getattr(model, "supports_gradient_checkpointing", False):
        raise ValueError(f"gradient_checkpointing: {type(model).__name__} does not support it")
    enable()


def model_sizes(model: nn.Module) -> tuple[int, int]:
    """``(K, N_T)`` of an (unwrapped) model."""
    return model.config.num_basis, model.config.num_steps


class OptimizerSteps:
    """The optimiser step of a :class:`.scaffold.Trainer` (its ``args``, ``state``,
    ``accelerator``, ``model``, ``optimizer`` and hooks): the learning rate, a coarse step,
    micro-batches, clipping, the loss's check and logging; refinement with the optimiser's
    state; the weights' check."""

    def _optimizer_step(self, batch: dict) -> tuple[float, float]:
        args, state, accelerator = self.args, self.state, self.accelerator
        state.step += 1
        seed_step(args.seed, state.step, accelerator.process_index)
        learning_rate = self.learning_rate(state.step)
        for group in self.optimizer.param_groups:  # a group may scale the rate ("lr_scale")
            group["lr"] = learning_rate * group.get("lr_scale", 1.0)
        # A coarse step (--coarse-step-fraction) trains the model as compressed to K/2 and N_T/2.
        coarse = coarse_num_steps(state.step, args.coarse_step_fraction, state.num_steps)
        read_num_basis = coarser_num_basis(args.basis, state.num_basis) if coarse else None
        with integrated_with(accelerator.unwrap_model(self.model), coarse, read_num_basis):
            total = self._accumulate(split_batch(batch, args.gradient_accumulation_steps))
        if args.max_grad_norm is not None:
            accelerator.clip_grad_norm_(self.model.parameters(), args.max_grad_norm)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.after_optimizer_step(state.step)
        loss_value = float(total)
        check_loss(loss_value, state.step, learning_rate, args.learning_rate, accelerator.mixed_precision == "fp16")
        state.loss_sum += loss_value
        state.loss_count += 1
        if args.report_to and state.step % args.logging_steps == 0:
            accelerator.log(
                {
                    "train/loss": loss_value,
                    "train/learning_rate": learning_rate,
                    "train/num_basis": state.num_basis,
                    "train/num_steps": state.num_steps,
                },
                step=state.step,
            )
        return loss_value, learning_rate

    def _accumulate(self, micro_batches: list[dict]) -> torch.Tensor | float:
        """Forward and backward passes over a step's micro-batches; their summed loss."""
        accelerator = self.accelerator
        counts = [self.batch_items(micro) for micro in micro_batches]
        total = 0.0
        for index, micro in enumerate(micro_batches):
            last = index + 1 == len(micro_batches)
            # Gradients are averaged over processes once, at the last micro-batch.
            with contextlib.nullcontext() if last else accelerator.no_sync(self.model):
                loss = self.loss(self.model, micro)
                if len(micro_batches) > 1:  # each micro-batch weighs by its share of the items
                    loss = loss * counts[index] / sum(counts)
                accelerator.backward(loss)
            total += loss.detach()
            self._items += counts[index]
            if "attention_mask" in micro:  # the padded positions, for the padding ratio
                self._slots += micro["attention_mask"].numel()
        return total

    def _refine(self) -> None:
        """Refine the prepared model, rebuild the optimiser carrying its state, re-prepare."""
        accelerator = self.accelerator
        unwrapped = accelerator.unwrap_model(self.model)
        optimizer = refine_with_optimizer(unwrapped, self.optimizer.optimizer, self.build_optimizer)
        # Drop Accelerate's references to the old model and optimiser (and to the data
        # loaders, which only stateful loaders would need for save_state; ours are not).
        accelerator.free_memory()
        if self.compiled:
            after_refinement()
        self.model, self.optimizer = accelerator.prepare(unwrapped, optimizer)
        self.state.num_basis, self.state.num_steps = model_sizes(unwrapped)
        self.after_refinement()

    def after_refinement(self) -> None:
        """After each refinement, the model re-prepared: a trainer's own state shaped like
        the model (the image trainer's Lookahead copy) follows it. Nothing by default."""

    def check_weights(self, learning_rate: float) -> None:
        """Stop a run whose weights are no longer finite (:mod:`.divergence`)."""
        check_weights(
            self.model,
            self.state.step,
            learning_rate,
            self.args.learning_rate,
            self.accelerator.mixed_precision == "fp16",
        )


__all__ = [
    "OptimizerSteps",
    "TrainerState",
    "enable_activation_checkpointing",
    "model_sizes",
    "seed_step",
    "split_batch",
]
