"""A run that diverges stops, saying at which step and why, before anything non-finite
is saved.

A non-finite training loss (checked at every step: the loss is read on the host anyway)
or non-finite weights (checked before every evaluation and checkpoint, so ``best/`` and
the checkpoints only ever hold finite models) raise :class:`TrainingDiverged`, one line
naming the step and the likely cause: a learning rate too high for the model (or, in
float16, an overflow). The last checkpoint and ``best/`` stay as they were.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class TrainingDiverged(ValueError):
    """The loss or the weights stopped being finite (the message names the step)."""


def _cause(learning_rate: float, peak: float, fp16: bool) -> str:
    cause = (
        f"--learning-rate {peak:g} is likely too high (the rate at this step was "
        f"{learning_rate:.3g}); lower it or clip with --max-grad-norm"
    )
    return cause + (", or float16 overflowed (try --bf16)" if fp16 else "")


def check_loss(loss: float, step: int, learning_rate: float, peak: float, fp16: bool = False) -> None:
    """Raise :class:`TrainingDiverged` when the training loss of ``step`` is not finite."""
    if not math.isfinite(loss):
        raise TrainingDiverged(
            f"step {step}: the training loss is {loss}, the run diverged: {_cause(learning_rate, peak, fp16)}; "
            "nothing of this step was saved (the run's checkpoints and best/, if any, are its last finite ones)"
        )


def check_weights(model: nn.Module, step: int, learning_rate: float, peak: float, fp16: bool = False) -> None:
    """Raise :class:`TrainingDiverged` naming the first parameter of ``model`` that holds a
    non-finite value after ``step``."""
    parameters = [(name, p) for name, p in model.named_parameters() if p.is_floating_point()]
    if not parameters:
        return
    finite = torch.stack([torch.isfinite(p).all() for _, p in parameters])
    if bool(finite.all()):
        return
    name = parameters[int((~finite).nonzero()[0])][0]
    raise TrainingDiverged(
        f"step {step}: the weights are no longer finite ({name}), the run diverged: "
        f"{_cause(learning_rate, peak, fp16)}; nothing of this step was saved"
    )
