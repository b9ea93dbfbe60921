"""The pieces of one optimiser step the scaffold (:mod:`.scaffold`) puts together: what a
checkpoint holds besides Accelerate's state, the per-step seed, micro-batches, and the
model's activation checkpointing."""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn


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


__all__ = ["TrainerState", "enable_activation_checkpointing", "seed_step", "split_batch"]
