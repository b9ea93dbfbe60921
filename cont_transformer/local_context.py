"""Local context before the ODE block: each word's vector mixed with its neighbours'.

A tagger decides most tags from the word and the words right beside it (``did`` + ``n't``,
``to`` + verb, a determiner before a noun). Attention with absolute positions reaches
them only indirectly, so ``config.context_window = w > 0`` adds, outside the ODE block,

    x_i <- x_i + GELU(W [x_{i-w}; ...; x_i; ...; x_{i+w}] + b)

a convolution over the word vectors of width ``2w + 1`` (padding words and positions past
the sentence are zeros) with a residual connection. ``w = 0`` (the paper) adds nothing.
It belongs to the input representation: compression (change of basis, fewer steps)
never touches it. See docs/design.md.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .configuration_cont_transformer import ContTransformerConfig


class LocalContext(nn.Module):
    """``(batch, words, hidden)`` word vectors and their ``(batch, words)`` mask (1 at real
    words, or None) -> word vectors of the same shape, each mixed with its ``context_window``
    neighbours on either side."""

    def __init__(self, config: ContTransformerConfig):
        super().__init__()
        width = config.context_window
        self.convolution = nn.Conv1d(
            config.hidden_size, config.hidden_size, 2 * width + 1, padding=width
        )

    def forward(self, vectors: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        inputs = vectors if mask is None else vectors * mask[..., None].to(vectors.dtype)
        mixed = self.convolution(inputs.transpose(1, 2)).transpose(1, 2)  # (batch, words, hidden)
        return vectors + F.gelu(mixed)


__all__ = ["LocalContext"]
