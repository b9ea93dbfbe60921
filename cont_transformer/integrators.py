"""Explicit Runge–Kutta integrators: Butcher tableaux as data, one fixed-step stepper.

A scheme is looked up by name in :data:`SCHEMES`. :func:`odeint` integrates
``dx/dt = f(t, x, side)`` from 0 to T in ``num_steps`` equal steps with any tableau;
it can return the whole trajectory at the step boundaries and checkpoint each step
(activation checkpointing). :func:`odeint_stepwise` is the same stepper for a rate
built once per step.

``side`` tells ``f`` from which side a stage time is seen: a stage at the end of its
step (``c_i = 1``) reads ``"left"`` (the limit from inside the step), every other
stage ``"right"``. A piecewise basis is discontinuous at element edges, so this
choice is what makes Euler + piecewise constant + K = N_T a residual network.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch

from .checks import check_count, check_positive


@dataclass(frozen=True)
class ButcherTableau:
    """An explicit scheme: stage matrix ``a`` (strictly lower triangular), weights ``b``,
    nodes ``c``, and its order of accuracy."""

    a: tuple[tuple[float, ...], ...]
    b: tuple[float, ...]
    c: tuple[float, ...]
    order: int

    def __post_init__(self):
        stages = len(self.b)
        if len(self.c) != stages or len(self.a) != stages:
            raise ValueError("a, b and c must describe the same number of stages")
        for i, row in enumerate(self.a):
            if len(row) != i:
                raise ValueError(f"row {i} of an explicit tableau needs {i} entries, got {len(row)}")


EULER = ButcherTableau(a=((),), b=(1.0,), c=(0.0,), order=1)
MIDPOINT = ButcherTableau(a=((), (0.5,)), b=(0.0, 1.0), c=(0.0, 0.5), order=2)
HEUN = ButcherTableau(a=((), (1.0,)), b=(0.5, 0.5), c=(0.0, 1.0), order=2)
RK3 = ButcherTableau(a=((), (0.5,), (-1.0, 2.0)), b=(1 / 6, 2 / 3, 1 / 6), c=(0.0, 0.5, 1.0), order=3)
RK4 = ButcherTableau(
    a=((), (0.5,), (0.0, 0.5), (0.0, 0.0, 1.0)),
    b=(1 / 6, 1 / 3, 1 / 3, 1 / 6),
    c=(0.0, 0.5, 0.5, 1.0),
    order=4,
)
RK4_38 = ButcherTableau(
    a=((), (1 / 3,), (-1 / 3, 1.0), (1.0, -1.0, 1.0)),
    b=(1 / 8, 3 / 8, 3 / 8, 1 / 8),
    c=(0.0, 1 / 3, 2 / 3, 1.0),
    order=4,
)

SCHEMES: dict[str, ButcherTableau] = {
    "euler": EULER,
    "midpoint": MIDPOINT,
    "heun": HEUN,
    "rk3": RK3,
    "rk4": RK4,
    "rk4_38": RK4_38,
}


def get_scheme(name: str) -> ButcherTableau:
    """The tableau registered as ``name``."""
    if name not in SCHEMES:
        raise ValueError(f"unknown scheme {name!r}; choose one of {sorted(SCHEMES)}")
    return SCHEMES[name]


def check_num_steps(num_steps: int) -> int:
    check_count("num_steps", num_steps)
    return num_steps


def stage_times(num_steps: int, time_horizon: float, scheme: str | ButcherTableau) -> list[tuple[float, str]]:
    """Every ``(t, side)`` at which :func:`odeint` evaluates ``f``, in order."""
    tableau = get_scheme(scheme) if isinstance(scheme, str) else scheme
    return [stage for n in range(num_steps) for stage in step_stage_times(n, num_steps, time_horizon, tableau)]


def step_stage_times(
    n: int, num_steps: int, time_horizon: float, scheme: str | ButcherTableau
) -> list[tuple[float, str]]:
    """The ``(t, side)`` of the stages of step ``n``, in order."""
    tableau = get_scheme(scheme) if isinstance(scheme, str) else scheme
    return [_stage_time(n, c, num_steps, time_horizon) for c in tableau.c]


def _stage_time(n: int, c: float, num_steps: int, time_horizon: float) -> tuple[float, str]:
    # (n + c) / N_T · T rather than n·Δt + c·Δt keeps element edges exact.
    return (n + c) * time_horizon / num_steps, "left" if c == 1.0 else "right"


def _axpy(x: torch.Tensor, terms: list[tuple[float, torch.Tensor]]) -> torch.Tensor:
    """x + Σ w·k, skipping zero weights."""
    for w, k in terms:
        if w != 0.0:
            x = torch.add(x, k, alpha=w) if w != 1.0 else x + k
    return x


Rate = Callable[[float, torch.Tensor, str], torch.Tensor]


def odeint(
    f: Rate,
    x0: torch.Tensor,
    *,
    num_steps: int,
    time_horizon: float = 1.0,
    scheme: str | ButcherTableau = "euler",
    checkpoint: Callable | None = None,
    return_trajectory: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, ...]:
    """Integrate ``dx/dt = f(t, x, side)`` from ``t = 0`` to ``time_horizon``.

    ``x0``: the state at t = 0, any shape; returns the state at t = T, same shape, or
    with ``return_trajectory`` the states at the step boundaries
    ``(x(t_0), x(t_1), ..., x(t_{N_T}))``, ``t_n = n·T/N_T`` (N_T + 1 tensors, ``x0`` first).
    ``checkpoint`` (e.g. ``torch.utils.checkpoint.checkpoint`` with ``use_reentrant=False``)
    wraps every step, ``x_{n+1} = checkpoint(step, x_n)``: the backward pass recomputes a
    step's stages instead of keeping their activations. See :func:`odeint_stepwise`.
    """
    return odeint_stepwise(
        lambda n: f,
        x0,
        num_steps=num_steps,
        time_horizon=time_horizon,
        scheme=scheme,
        checkpoint=checkpoint,
        return_trajectory=return_trajectory,
    )


def odeint_stepwise(
    step_rate: Callable[[int], Rate],
    x0: torch.Tensor,
    *,
    num_steps: int,
    time_horizon: float = 1.0,
    scheme: str | ButcherTableau = "euler",
    checkpoint: Callable | None = None,
    return_trajectory: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, ...]:
    """:func:`odeint` with a rate made once per step: ``step_rate(n)`` returns the
    ``f(t, x, side)`` of step ``n`` (from ``t_n`` to ``t_{n+1}``).

    What ``f`` needs for all the stages of a step (the weights θ(t) at each stage time)
    is then computed once, at the start of the step, and inside the step's checkpoint,
    so that the backward pass recomputes it rather than keeping it.
    """
    tableau = get_scheme(scheme) if isinstance(scheme, str) else scheme
    check_num_steps(num_steps)
    check_positive("time_horizon", time_horizon)
    dt = time_horizon / num_steps

    def step(n: int, x: torch.Tensor) -> torch.Tensor:
        f = step_rate(n)
        slopes: list[torch.Tensor] = []
        for i, c in enumerate(tableau.c):
            stage_x = _axpy(x, [(dt * a, k) for a, k in zip(tableau.a[i], slopes)])
            t, side = _stage_time(n, c, num_steps, time_horizon)
            slopes.append(f(t, stage_x, side))
        return _axpy(x, [(dt * b, k) for b, k in zip(tableau.b, slopes)])

    x, trajectory = x0, [x0]
    for n in range(num_steps):
        x = step(n, x) if checkpoint is None else checkpoint(partial(step, n), x)
        if return_trajectory:
            trajectory.append(x)
    return tuple(trajectory) if return_trajectory else x
