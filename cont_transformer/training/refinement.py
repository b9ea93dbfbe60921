"""Multi-level refinement during training, with the optimiser's state carried over.

Refining an ODE block replaces its coefficient parameters (K → 2K for piecewise
constant), so the optimiser must be rebuilt over the new ones. Its per-parameter state
is not thrown away: every state tensor shaped like its parameter (Adam's two moments,
SGD's momentum buffer, ...) is projected onto the new basis with the same change of
basis as the coefficients — for piecewise constant each new cell inherits its parent's
moments — so the first updates after a refinement move each new coefficient like its
parent instead of restarting from a cold optimiser. Non-negative statistics (Adam's
second moments, whose names contain ``sq``) are clamped at 0; scalar state (step counts)
is kept.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ..basis import apply_matrix, change_of_basis_matrix
from ..ode_block import OdeBlock
from ..transform import refine


@torch.no_grad()
def refine_with_optimizer(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    build_optimizer: Callable[[nn.Module], torch.optim.Optimizer],
) -> torch.optim.Optimizer:
    """Refine every ODE block of ``model`` and return ``build_optimizer(model)`` carrying
    ``optimizer``'s state (projected for the refined coefficients, kept for the rest)."""
    names = {p: n for n, p in model.named_parameters()}
    old_state = {names[p]: state for p, state in optimizer.state.items() if p in names}
    old_shapes = {n: p.shape for n, p in model.named_parameters()}
    blocks = {name: block for name, block in model.named_modules() if isinstance(block, OdeBlock)}
    old_bases = {name: block.basis for name, block in blocks.items()}
    refine(model)
    matrices = {
        name: change_of_basis_matrix(old_bases[name], block.basis, "projection") for name, block in blocks.items()
    }
    new_optimizer = build_optimizer(model)
    for name, parameter in model.named_parameters():
        if name not in old_state:
            continue
        owner = next((b for b in blocks if name.startswith(f"{b}.")), None)
        state = {}
        for key, value in old_state[name].items():
            if owner is not None and torch.is_tensor(value) and value.shape == old_shapes[name]:
                value = apply_matrix(matrices[owner], value)
                if "sq" in key:  # exp_avg_sq, max_exp_avg_sq: must stay >= 0
                    value.clamp_(min=0)
            state[key] = value
        new_optimizer.state[parameter] = state
    return new_optimizer
