"""Validation of the continuous choices (basis, K, N_T, scheme, T), written once.

Both model configurations, compression and the trainers' arguments check through these
functions, so a bad value gets the same one-line message (naming the argument)
everywhere. This file sits beside the configuration files because remote code copies
them with it.
"""

from __future__ import annotations

# The registries are imported where they are read: basis.py and integrators.py check
# their own sizes through this module.


def check_count(name: str, value: object, *, optional: bool = False) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``value`` is an integer >= 1 (or None
    when ``optional``)."""
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: must be an integer >= 1, got {value!r}")


def check_positive(name: str, value: object) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``value`` is a positive number (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name}: must be a positive number, got {value!r}")


def check_even_num_basis(basis: str, num_basis: int) -> None:
    """Raise ``ValueError`` unless ``num_basis`` suits ``basis`` (``discontinuous_linear``: even,
    two values per element)."""
    if basis == "discontinuous_linear" and num_basis % 2:
        raise ValueError(f"num_basis: must be even for {basis!r} (two values per element), got {num_basis}")


def check_basis_name(name: str, value: object, *, optional: bool = False) -> None:
    """Raise ``ValueError`` unless ``value`` names a registered basis."""
    from .basis import BASES

    if optional and value is None:
        return
    if value not in BASES:
        raise ValueError(f"{name}: unknown basis {value!r}; choose one of {sorted(BASES)}")


def check_scheme_name(name: str, value: object, *, optional: bool = False) -> None:
    """Raise ``ValueError`` unless ``value`` names a registered Runge–Kutta scheme."""
    from .integrators import SCHEMES

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
