"""Lookahead of the weights (Zhang et al. 2019), as airbench uses it: every few steps
the slow copy moves towards the trained weights, ``slow ← decay·slow + (1-decay)·fast``,
and the trained weights jump back to it, ``fast ← slow``. The running statistics
(floating-point buffers) are averaged alike.

The decay grows over the run as ``decay_base · (step / max_steps)³``: no averaging at the
start, the most at the end, where a last update with decay 1 hands the slow weights to
the model. The image trainer starts a fresh slow copy at every epoch start and syncs at
every epoch's end, so a checkpoint (taken at an epoch's end) needs no extra state; it
syncs before a refinement too and restarts the copy from the refined model, so the copy
never has the old size (a refinement falls inside an epoch of the data under
``--max-steps``).
"""

from __future__ import annotations

import torch
from torch import nn


def lookahead_decay(step: int, max_steps: int, decay_base: float) -> float:
    """The decay of the sync after step ``step``; 1.0 at the last step (the slow weights win)."""
    if step >= max_steps:
        return 1.0
    return decay_base * (step / max_steps) ** 3


class Lookahead:
    """The slow copy of a model's parameters and floating buffers."""

    def __init__(self, model: nn.Module):
        self.slow = {name: t.detach().clone() for name, t in _tensors(model)}

    @torch.no_grad()
    def sync(self, model: nn.Module, decay: float) -> None:
        """Move the slow copy towards the model by ``1 - decay``, then copy it back."""
        for name, tensor in _tensors(model):
            slow = self.slow[name]
            slow.lerp_(tensor.detach(), 1 - decay)
            tensor.copy_(slow)


def _tensors(model: nn.Module):
    yield from model.named_parameters()
    yield from ((n, b) for n, b in model.named_buffers() if b.is_floating_point())


__all__ = ["Lookahead", "lookahead_decay"]
