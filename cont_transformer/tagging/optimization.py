"""The tagger's optimiser: AdamW with the paper's β = (0.9, 0.98) and ε = 1e-9, and decoupled
weight decay on every parameter but biases and LayerNorm scales (the ODE block's
coefficient mirrors of them included)."""

from __future__ import annotations

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


def build_optimizer(model: nn.Module, learning_rate: float, weight_decay: float) -> torch.optim.AdamW:
    """AdamW with the paper's β and ε; biases and LayerNorm parameters get no weight decay.

    The fused kernel: at K = 64 the coefficients are 64 copies of the rate's weights, and
    the per-tensor loop of the default AdamW costs about ten times as long on a CPU.
    """
    no_decay = _no_decay_parameters(model)
    parameters = list(model.named_parameters())
    groups = [
        {"params": [p for n, p in parameters if n not in no_decay], "weight_decay": weight_decay},
        {"params": [p for n, p in parameters if n in no_decay], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=learning_rate, betas=ADAM_BETAS, eps=ADAM_EPSILON, fused=True)
