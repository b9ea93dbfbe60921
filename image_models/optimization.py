"""The image trainer's optimiser and learning-rate schedules.

SGD (optionally Nesterov) over two parameter groups: the BatchNorm biases, whose
learning rate is ``bias_lr_scale`` times the rest (the scaffold multiplies each group's
``lr_scale`` into the step's learning rate), and everything else that trains.

Decoupled hyper-parameters (Page 2018; Jordan 2024, airbench): ``learning_rate`` and
``weight_decay`` are given per 1,024 images and independent of the momentum and of each
other. With momentum m, the steps of SGD on a constant gradient grow to
``1 + 1 / (1 - m)`` times the gradient; the step's rate divides that out and scales with
the batch (the loss is a mean over the batch), and each group's weight decay is divided
by its rate, so the decay per step is ``weight_decay · batch / (1024 · (1 + 1/(1-m)))``
times the schedule's factor, whatever the rate and the group's ``lr_scale``.

Schedules are pure functions of the step: ``step`` decay (the paper's) and ``triangle``
(a linear warm-up from ``start`` to 1 over the first ``warmup_fraction`` of the run, then
a linear decline to ``end`` at the last step: the decline is the run's cool-down).
:func:`build_optimizer` and :func:`learning_rate` read them from the image trainer's
arguments (:class:`.arguments.ImageTrainingArguments`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from cont_transformer.ode_block import Coefficients

if TYPE_CHECKING:
    from .arguments import ImageTrainingArguments

KILO = 1024


def is_norm(module: nn.Module) -> bool:
    """A BatchNorm layer, or the coefficients of one inside an ODE block."""
    kind = module.template_cls if isinstance(module, Coefficients) else type(module)
    return issubclass(kind, nn.modules.batchnorm._BatchNorm)


def momentum_gain(momentum: float) -> float:
    """How much longer than the gradient SGD's steps grow under constant gradients."""
    return 1 + 1 / (1 - momentum)


def decoupled_rate(learning_rate: float, batch_size: int, momentum: float) -> float:
    """Torch's rate for a mean loss from a decoupled ``learning_rate`` per 1,024 images."""
    return learning_rate * batch_size / (KILO * momentum_gain(momentum))


def build_sgd(
    model: nn.Module,
    *,
    learning_rate: float,
    weight_decay: float,
    momentum: float,
    nesterov: bool = False,
    bias_lr_scale: float = 1.0,
    decoupled: bool = False,
) -> torch.optim.SGD:
    """SGD over the trainable parameters of ``model`` in two groups (see the module
    docstring); ``learning_rate`` is the group rate's base, set per step by the scaffold."""
    biases = {id(m.bias) for m in model.modules() if is_norm(m) and getattr(m, "bias", None) is not None}
    trainable = [p for p in model.parameters() if p.requires_grad]
    if bias_lr_scale == 1 and not decoupled:  # plain SGD: one group
        return torch.optim.SGD(
            trainable, lr=learning_rate, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov
        )
    groups = []
    for params, scale in (
        ([p for p in trainable if id(p) in biases], bias_lr_scale),
        ([p for p in trainable if id(p) not in biases], 1.0),
    ):
        if params:
            decay = weight_decay / (learning_rate * scale) if decoupled else weight_decay
            groups.append({"params": params, "lr_scale": scale, "weight_decay": decay})
    return torch.optim.SGD(groups, lr=learning_rate, momentum=momentum, nesterov=nesterov)


def triangle_factor(step: int, max_steps: int, start: float, warmup_fraction: float, end: float) -> float:
    """The triangle schedule's factor at step ``step`` (from 1) of ``max_steps``."""
    peak = warmup_fraction * max_steps
    if step <= peak:
        return start + (1 - start) * step / peak
    return 1 + (end - 1) * (step - peak) / max(max_steps - peak, 1)


def build_optimizer(model: nn.Module, args: ImageTrainingArguments) -> torch.optim.SGD:
    """:func:`build_sgd` with the run's settings."""
    return build_sgd(
        model,
        learning_rate=args.learning_rate,
        weight_decay=args.weight_decay,
        momentum=args.momentum,
        nesterov=args.nesterov,
        bias_lr_scale=args.bias_lr_scale,
        decoupled=args.decoupled_hyperparameters,
    )


def learning_rate_at(args: ImageTrainingArguments, epoch: int) -> float:
    """Step decay: the base rate times the factor once per decay epoch reached."""
    decays = sum(1 for e in args.lr_decay_epochs if epoch >= e)
    return args.learning_rate * args.lr_decay_factor**decays


def learning_rate(args: ImageTrainingArguments, step: int, max_steps: int, steps_per_epoch: float) -> float:
    """The rate of ``step`` (from 1 of ``max_steps``) for the groups without an ``lr_scale``
    (``steps_per_epoch``: the schedule's epoch in steps, a fraction with ``--max-steps``)."""
    if args.lr_schedule == "triangle":
        factor = triangle_factor(step, max_steps, args.lr_start_factor, args.warmup_fraction, args.lr_end_factor)
        base = args.learning_rate * factor
    else:
        base = learning_rate_at(args, (step - 1) // steps_per_epoch)
    if args.decoupled_hyperparameters:
        return decoupled_rate(base, args.batch_size, args.momentum)
    return base


__all__ = [
    "KILO",
    "build_optimizer",
    "build_sgd",
    "decoupled_rate",
    "is_norm",
    "learning_rate",
    "learning_rate_at",
    "momentum_gain",
    "triangle_factor",
]
