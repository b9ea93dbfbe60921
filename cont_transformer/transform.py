"""Change of basis, refinement and graph shortening of whole models.

Like timm's layer converters, each function walks a module tree, transforms every
:class:`~cont_transformer.ode_block.OdeBlock` in place and returns the model. A
module of the tree that carries a ``config`` with the continuous choices
(``basis``, ``num_basis``, ``num_steps``) gets them updated, so a transformed
Hugging Face model saves and reloads as what it now is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from torch import nn

from .ode_block import OdeBlock


def ode_blocks(model: nn.Module) -> list[OdeBlock]:
    """Every OdeBlock in ``model``, in module order."""
    blocks = [m for m in model.modules() if isinstance(m, OdeBlock)]
    if not blocks:
        raise ValueError(f"{type(model).__name__} has no OdeBlock to transform")
    return blocks


def _sync_config(model: nn.Module, blocks: list[OdeBlock]) -> None:
    first = blocks[0]
    choices = {"basis": first.basis_name, "num_basis": first.num_basis, "num_steps": first.num_steps}
    if any(b.state_num_basis != first.state_num_basis for b in blocks[1:]):
        return
    # None: the states share the weights' basis (the default of a config).
    state_num_basis = None if first.state_num_basis == first.num_basis else first.state_num_basis
    if any((b.basis_name, b.num_basis, b.num_steps) != tuple(choices.values()) for b in blocks[1:]):
        return
    for module in model.modules():
        config = getattr(module, "config", None)
        if config is None:
            continue
        for key, value in choices.items():
            if hasattr(config, key):
                setattr(config, key, value)
        if hasattr(config, "state_num_basis"):
            config.state_num_basis = state_num_basis


def change_basis(
    model: nn.Module,
    basis: str | None = None,
    num_basis: int | None = None,
    method: str = "projection",
    state_num_basis: int | None = None,
) -> nn.Module:
    """Re-express every OdeBlock in ``basis`` with ``num_basis`` functions.

    ``method``: ``"projection"`` (L2-optimal, any bases) or ``"interpolation"`` (reads
    the function at the target's control points). ``None`` keeps a block's current
    basis name or K. The running statistics follow the new K unless
    ``state_num_basis`` gives them their own (e.g. the source's K: compress the
    weights, keep the statistics' depth profile; they are buffers, not parameters).
    Parameters become new ``nn.Parameter`` objects: rebuild the optimiser afterwards.
    """
    blocks = ode_blocks(model)
    for block in blocks:
        block.change_basis(basis, num_basis, method, state_num_basis)
    _sync_config(model, blocks)
    return model


def refine(model: nn.Module) -> nn.Module:
    """Refine every OdeBlock's basis (exactly: the function is unchanged) and double N_T."""
    blocks = ode_blocks(model)
    for block in blocks:
        block.refine()
    _sync_config(model, blocks)
    return model


def set_num_steps(model: nn.Module, num_steps: int, read_num_basis: int | None = None) -> nn.Module:
    """Integrate every OdeBlock with ``num_steps`` steps (fewer: a shorter, faster graph);
    ``read_num_basis``: read the weights as their projection onto that K
    (:meth:`OdeBlock.set_num_steps`)."""
    blocks = ode_blocks(model)
    for block in blocks:
        block.set_num_steps(num_steps, read_num_basis)
    _sync_config(model, blocks)
    return model


@contextlib.contextmanager
def integrated_with(model: nn.Module, num_steps: int | None, read_num_basis: int | None = None) -> Iterator[nn.Module]:
    """Integrate with ``num_steps`` steps, reading the weights as their projection onto
    ``read_num_basis`` functions (None: the coefficients themselves), inside the block;
    the model's own N_T and weights after it (``num_steps`` None: unchanged). A forward
    and backward pass through a compressed view of the model, in training."""
    if num_steps is None:
        yield model
        return
    own = ode_blocks(model)[0].num_steps
    set_num_steps(model, num_steps, read_num_basis)
    try:
        yield model
    finally:
        set_num_steps(model, own)
