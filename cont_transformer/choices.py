"""Validation of the continuous choices (basis, K, N_T, scheme, T), written once.

Both model configurations, compression and the trainers' arguments check through these
functions, so a bad value gets the same one-line message (naming the argument)
everywhere. This file sits beside the configuration files because remote code copies
them with it.
"""

from __future__ import annotations

from .basis import BASES
from .checks import check_count, check_even_num_basis, check_positive
from .integrators import SCHEMES


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
    check_even_num_basis(basis, num_basis)
    check_count("num_steps", num_steps)
    check_count("state_num_basis", state_num_basis, optional=True)
    check_positive("time_horizon", time_horizon)
