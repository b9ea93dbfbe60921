"""Training schedules: the learning rate, and when the ODE block is refined.

Learning rate. :func:`inverse_sqrt_learning_rate` is the transformer schedule the paper
uses: a linear warm-up to ``learning_rate`` over ``warmup_steps`` steps, then a decay
as ``1/sqrt(step)``. It is a pure function of the step, so nothing about it needs
saving in a checkpoint, and rebuilding the optimiser at a refinement keeps the
schedule's position. ``learning_rate`` is the peak: the paper's "initial value 0.1"
with 8000 warm-up steps is the Flax convention ``0.1 * min(1, step / 8000) / sqrt(max(step,
8000))``, whose peak is ``0.1 / sqrt(8000) ≈ 1.1e-3``.

Cool-down. :func:`cooldown_factor` scales any schedule down linearly to (almost) zero
over the last ``cooldown_steps`` steps of a run (as in warm-up–stable–decay schedules):
the weights settle, and, with a late refinement inside the cool-down, the coefficients
of neighbouring basis functions stay close, which is what makes a model compressible.

Plan. :class:`RunPlan` holds a run's step counts and refinement schedule, derived once
from its arguments (and, for a trainer that counts epochs, the data size) and never
written back into them.

Refinement. :class:`RefinementSchedule` turns the final K and N_T and the steps at
which to refine (multi-level refinement training) into the sizes to start from and
the sizes at any step: each refinement refines the basis (K → 2K for piecewise
constant, 2K − 1 for piecewise linear, ...) and doubles N_T.

Coarse steps. :func:`coarse_num_steps` picks the optimiser steps (a share of them,
spread evenly) that train the model as compressed to K/2 and N_T/2 (the scaffold reads
the weights through the K/2 projection there): the network learns to run compressed,
which a user is promised for free, and those steps cost less.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..basis import get_basis, initial_num_basis, refined_num_steps


def inverse_sqrt_learning_rate(step: int, learning_rate: float, warmup_steps: int) -> float:
    """Learning rate of optimiser step ``step`` (counted from 1).

    ``learning_rate * min(step / warmup_steps, sqrt(warmup_steps / step))``: linear
    warm-up, peak ``learning_rate`` at ``step == warmup_steps``, then ``1/sqrt(step)``
    decay. ``warmup_steps = 0`` means no warm-up: the decay starts from the peak at step 1.
    """
    if step < 1:
        raise ValueError(f"step counts from 1, got {step}")
    if warmup_steps < 0:
        raise ValueError(f"warmup_steps must be >= 0, got {warmup_steps}")
    if warmup_steps == 0:
        return learning_rate / math.sqrt(step)
    return learning_rate * min(step / warmup_steps, math.sqrt(warmup_steps / step))


def cooldown_factor(step: int, max_steps: int, cooldown_steps: int) -> float:
    """The factor on the learning rate of step ``step`` (from 1) of a ``max_steps`` run with a
    linear cool-down over its last ``cooldown_steps`` steps: 1 before it, then
    ``(max_steps - step + 1) / cooldown_steps`` (the last step gets ``1 / cooldown_steps``).
    ``cooldown_steps = 0``: no cool-down."""
    if cooldown_steps < 0:
        raise ValueError(f"cooldown_steps must be >= 0, got {cooldown_steps}")
    if cooldown_steps == 0:
        return 1.0
    return min(1.0, max(0.0, (max_steps - step + 1) / cooldown_steps))


@dataclass(frozen=True)
class RefinementSchedule:
    """Sizes of the ODE block over training under multi-level refinement.

    The model is refined right after optimiser step ``s`` for every ``s`` in
    ``refine_steps``, so the sizes after step ``s`` (what a checkpoint at ``s`` holds)
    count the refinements at steps ``<= s``.

    Attributes:
        basis: basis name (refinement rules differ by basis).
        final_num_basis: K after the last refinement.
        final_num_steps: N_T after the last refinement; it doubles at every refinement.
        refine_steps: strictly increasing optimiser steps, each >= 1.
    """

    basis: str
    final_num_basis: int
    final_num_steps: int
    refine_steps: tuple[int, ...] = ()

    def __post_init__(self):
        steps = tuple(self.refine_steps)
        if any(s < 1 for s in steps) or any(b <= a for a, b in itertools.pairwise(steps)):
            raise ValueError(f"refine_steps: must be strictly increasing steps >= 1, got {list(steps)}")
        object.__setattr__(self, "refine_steps", steps)
        scale = refined_num_steps(1, len(steps))
        if self.final_num_steps % scale:
            raise ValueError(
                f"num_steps={self.final_num_steps} must be divisible by 2**{len(steps)}={scale}: "
                f"N_T doubles at each of the {len(steps)} refinements"
            )
        initial_num_basis(self.basis, self.final_num_basis, len(steps))  # validates K

    @property
    def initial_num_basis(self) -> int:
        """K at step 0."""
        return initial_num_basis(self.basis, self.final_num_basis, len(self.refine_steps))

    @property
    def initial_num_steps(self) -> int:
        """N_T at step 0."""
        return self.final_num_steps // refined_num_steps(1, len(self.refine_steps))

    def num_refinements(self, step: int) -> int:
        """Refinements done by the end of optimiser step ``step``."""
        return sum(1 for s in self.refine_steps if s <= step)

    def sizes(self, step: int) -> tuple[int, int]:
        """``(K, N_T)`` after optimiser step ``step`` (step 0: the initial sizes)."""
        basis = get_basis(self.basis, self.initial_num_basis)
        for _ in range(self.num_refinements(step)):
            basis = basis.refine()
        return basis.num_basis, refined_num_steps(self.initial_num_steps, self.num_refinements(step))


def coarse_num_steps(step: int, fraction: float, num_steps: int) -> int | None:
    """N_T for optimiser step ``step`` (from 1) when it is one of the coarse steps: a
    ``fraction`` of all steps, spread evenly (0.5: every second step), integrate with
    ``num_steps // 2``. None for a step at the current ``num_steps`` (always while N_T is 1)."""
    if num_steps < 2 or fraction <= 0 or math.floor(step * fraction) == math.floor((step - 1) * fraction):
        return None
    return num_steps // 2


@dataclass(frozen=True)
class RunPlan:
    """A run's step counts and refinement schedule, derived once (see the module docstring).

    Attributes:
        max_steps: optimiser steps to train for.
        eval_steps: evaluate every this many steps (and at the end).
        save_steps: checkpoint every this many steps (and at the end).
        schedule: when K and N_T are refined, in optimiser steps.
    """

    max_steps: int
    eval_steps: int
    save_steps: int
    schedule: RefinementSchedule

    @classmethod
    def from_arguments(cls, args, steps_per_epoch: int | None = None) -> RunPlan:
        """The plan of arguments that count in steps (:class:`~.arguments.RunArguments`);
        ``num_train_epochs`` (when given) replaces ``max_steps`` by that many passes of
        ``steps_per_epoch`` steps, rounded up. (On the command line a ``--max-steps``
        given with it wins, as in transformers: :func:`~.arguments.parse_arguments` drops
        ``num_train_epochs`` then.)"""
        max_steps = args.max_steps
        epochs = getattr(args, "num_train_epochs", None)
        if epochs is not None:
            if not steps_per_epoch:
                raise ValueError("num_train_epochs: this trainer does not count its data in epochs")
            max_steps = max(1, math.ceil(epochs * steps_per_epoch))
        return cls(max_steps, args.eval_steps, args.save_steps, args.refinement_schedule)


def scale_steps(steps: Sequence[float], ratio: float) -> tuple[int, ...]:
    """``steps`` (increasing) times ``ratio``, rounded, kept distinct and >= 1 (a schedule's
    steps for a run ``ratio`` times as long)."""
    scaled: list[int] = []
    for step in steps:
        scaled.append(max(round(step * ratio), scaled[-1] + 1 if scaled else 1))
    return tuple(scaled)


def parse_steps(text: str | Sequence[int] | None) -> tuple[int, ...]:
    """Refinement steps from the CLI: ``"1000,2000"`` (or ints) -> ``(1000, 2000)``;
    ``""``, ``"none"`` or None -> ``()``; a ``ValueError`` naming ``refine_steps`` for text
    that is not whole numbers."""
    if text is None:
        return ()
    if not isinstance(text, str):
        return tuple(int(s) for s in text)
    if text.strip().lower() in ("", "none"):
        return ()
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ValueError(f"refine_steps: comma-separated step numbers (or 'none'), got {text!r}") from None
