"""Validation of the continuous choices (basis, K, N_T, scheme, T), written once.

Both model configurations, compression and the trainers' arguments check through these
functions, so a bad value gets the same one-line message (naming the argument)
everywhere. This file sits beside the configuration files because remote code copies
them with it.
"""

from __future__ import annotations

from .basis import BASES
from .integrators import SCHEMES


def check_count(name: str, value: object, *, optional: bool = False) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``value`` is an integer >= 1 (or None
    when ``optional``)."""
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: must be an integer >= 1, got {value!r}")


def check_basis_name(name: str, value: object, *, optional: bool = False) -> None:
    """Raise ``ValueError`` unless ``value`` names a registered basis."""
    if optional and value is None:
        return
    if value not in BASES:
        raise ValueError(f"{name}: unknown basis {value!r}; choose one of {sorted(BASES)}")


def check_scheme_name(name: str, value: object, *, optional: bool = False) -> None:
    """Raise ``ValueError`` unless ``value`` names a registered Runge–Kutta scheme."""
    if optional and value is None:
        return
    if value not in SCHEMES:
        raise ValueError(f"{name}: unknown scheme {value!r}; choose one of {sorted(SCHEMES)}")


def check_continuous_choices(
    basis: str,
    num_basis: int,
    num_steps: int,
    scheme: str,
    time_horizon: float,
    state_num_basis: int | None = None,
) -> None:
    """Raise ``ValueError`` naming the first invalid choice of an ODE block."""
    check_basis_name("basis", basis)
    check_scheme_name("scheme", scheme)
    check_count("num_basis", num_basis)
    if basis == "discontinuous_linear" and num_basis % 2:
        raise ValueError(f"num_basis: must be even for 'discontinuous_linear' (two per element), got {num_basis}")
    check_count("num_steps", num_steps)
    check_count("state_num_basis", state_num_basis, optional=True)
    if isinstance(time_horizon, bool) or not isinstance(time_horizon, (int, float)) or not time_horizon > 0:
        raise ValueError(f"time_horizon: must be a positive number, got {time_horizon!r}")
