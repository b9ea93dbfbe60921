"""The tagger's optimiser: AdamW with the paper's β = (0.9, 0.98) and ε = 1e-9, and decoupled
weight decay on every parameter but biases and LayerNorm scales (the ODE block's
coefficient mirrors of them included)."""

from __future__ import annotations

from collections.abc import Container, Mapping

import torch
from torch import nn

from ..ode_block import Coefficients

ADAM_BETAS = (0.9, 0.98)
ADAM_EPSILON = 1e-9


def _no_decay_parameters(model: nn.Module) -> set[str]:
    """Names of biases and LayerNorm parameters (the ODE block's mirrors of them included)."""
    names = set()
    for module_name, module in model.named_modules():
        kind = module.template_cls if isinstance(module, Coefficients) else type(module)
        for name, _ in module.named_parameters(recurse=False):
            if name == "bias" or issubclass(kind, nn.LayerNorm):
                names.add(f"{module_name}.{name}" if module_name else name)
    return names


def build_optimizer(
    model: nn.Module,
    learning_rate: float,
    weight_decay: float,
    scales: Mapping[str, float] | None = None,
    no_decay: Container[str] = (),
) -> torch.optim.AdamW:
    """AdamW with the paper's β and ε; biases and LayerNorm parameters (and the parameters
    named in ``no_decay``) get no weight decay, and a parameter named in ``scales`` its
    multiple of the learning rate (the scaffold's ``lr_scale``; 1 for any other).

    The fused kernel: at K = 64 the coefficients are 64 copies of the rate's weights, and
    the per-tensor loop of the default AdamW costs about ten times as long on a CPU.
    """
    scales = scales or {}
    undecayed = _no_decay_parameters(model) | set(no_decay)
    groups = []
    for decay in (True, False):
        for scale in sorted({1.0, *scales.values()}):
            params = [
                p for n, p in model.named_parameters() if (n not in undecayed) == decay and scales.get(n, 1.0) == scale
            ]
            if params:
                groups.append({"params": params, "weight_decay": weight_decay if decay else 0.0, "lr_scale": scale})
    return torch.optim.AdamW(groups, lr=learning_rate, betas=ADAM_BETAS, eps=ADAM_EPSILON, fused=True)
