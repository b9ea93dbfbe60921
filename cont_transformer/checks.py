"""Checks of plain values (counts, positive numbers, K for a basis), written once.

The core's registries (``basis.py``, ``integrators.py``) check their sizes through these,
and ``choices.py`` builds the continuous choices' validation on them. It imports nothing,
so every layer can use it; remote code copies it with the configuration files.
"""

from __future__ import annotations


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
