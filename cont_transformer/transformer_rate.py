"""The continuous transformer's rate: what its ODE block integrates.

``dx/dt = a + MLP(LN(x + a))``, ``a = Attn(LN(x))``: :class:`ContTransformerRate`, the
pre-LayerNorm encoder layer's residual branches as one function of the state, built from
:class:`ContTransformerSelfAttention` and :class:`ContTransformerMLP`. The ODE block
(``ode_block.py``) holds its weights as functions of depth-time and calls it at every stage;
``modeling_cont_transformer.py`` builds the models around it (docs/design.md §6).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from transformers.activations import ACT2FN

from .configuration_cont_transformer import ContTransformerConfig


class ContTransformerSelfAttention(nn.Module):
    """Multi-head scaled dot-product self-attention (PyTorch SDPA) with an output projection."""

    def __init__(self, config: ContTransformerConfig):
        super().__init__()
        hidden = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.output = nn.Linear(hidden, hidden)
        self.dropout_prob = config.attention_probs_dropout_prob

    def forward(
        self, x: torch.Tensor, attention_mask: torch.Tensor | None = None, attentions: list | None = None
    ) -> torch.Tensor:
        """``x`` ``(batch, seq, hidden)``; ``attention_mask`` boolean ``(batch, 1, 1, seq)``,
        True at the keys to attend to, or None. Returns ``(batch, seq, hidden)``. A list
        ``attentions`` gets the attention weights ``(batch, heads, seq, seq)`` appended
        (before dropout).

        In training and on accelerators, PyTorch's SDPA (attention dropout, its fused
        backward, its fused kernels); otherwise, on a CPU, the same arithmetic in three
        batched matrix products (:func:`attend`), which a CPU runs two to three times faster
        than SDPA at these sizes in bfloat16 (docs/design.md §6).
        """
        batch, seq_len, hidden = x.shape
        heads = (batch, seq_len, self.num_heads, hidden // self.num_heads)
        q = self.query(x).view(heads).transpose(1, 2)  # (batch, heads, seq, head_dim)
        k = self.key(x).view(heads).transpose(1, 2)
        v = self.value(x).view(heads).transpose(1, 2)
        if self.training or x.device.type != "cpu":
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask, dropout_p=self.dropout_prob)
            if attentions is not None:
                attentions.append(attend(q, k, v, attention_mask)[1])
        else:
            context, weights = attend(q, k, v, attention_mask)
            if attentions is not None:
                attentions.append(weights)
        return self.output(context.transpose(1, 2).reshape(batch, seq_len, hidden))


def attend(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attention_mask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention: ``softmax(q kᵀ / √d + mask) v``.

    ``q``, ``k``, ``v`` ``(batch, heads, seq, head_dim)``; ``attention_mask`` boolean
    ``(batch, 1, 1, seq)``, True at the keys to attend to, or None. Returns the context
    ``(batch, heads, seq, head_dim)`` and the weights ``(batch, heads, seq, seq)``.
    """
    batch, num_heads, seq_len, head_dim = q.shape
    rows = batch * num_heads
    q3, k3, v3 = (t.reshape(rows, seq_len, head_dim) for t in (q, k, v))
    scale = 1.0 / math.sqrt(head_dim)
    if attention_mask is None:
        scores = torch.bmm(q3, k3.transpose(1, 2)).mul_(scale)
    else:
        bias = torch.zeros(attention_mask.shape, dtype=q.dtype, device=q.device).masked_fill_(
            ~attention_mask, float("-inf")
        )  # (batch, 1, 1, seq)
        bias = bias.expand(batch, num_heads, 1, seq_len).reshape(rows, 1, seq_len)
        scores = torch.baddbmm(bias, q3, k3.transpose(1, 2), alpha=scale)  # (rows, seq, seq)
    weights = scores.softmax(-1)
    context = torch.bmm(weights, v3)
    return context.view(batch, num_heads, seq_len, head_dim), weights.view(batch, num_heads, seq_len, seq_len)


class ContTransformerMLP(nn.Module):
    """Linear -> activation -> Linear."""

    def __init__(self, config: ContTransformerConfig):
        super().__init__()
        self.fc1 = nn.Linear(config.hidden_size, config.intermediate_size)
        self.activation = ACT2FN[config.hidden_act]
        self.fc2 = nn.Linear(config.intermediate_size, config.hidden_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(batch, seq, hidden)`` -> ``(batch, seq, hidden)``."""
        return self.fc2(self.activation(self.fc1(x)))


class ContTransformerRate(nn.Module):
    """The encoder's rate dx/dt (paper eq. for the continuous transformer).

    ``a = SelfAttention(LayerNorm(x))``, ``dx/dt = a + MLP(LayerNorm(x + a))``: one
    Euler step of size 1 is one pre-LayerNorm transformer layer. This module is the
    template of the OdeBlock; its weights are θ(t), supplied by the block.
    """

    def __init__(self, config: ContTransformerConfig):
        super().__init__()
        self.attention_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.attention = ContTransformerSelfAttention(config)
        self.mlp_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.mlp = ContTransformerMLP(config)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(
        self, x: torch.Tensor, attention_mask: torch.Tensor | None = None, attentions: list | None = None
    ) -> torch.Tensor:
        """``x`` ``(batch, seq, hidden)`` -> ``dx/dt`` ``(batch, seq, hidden)``; a list
        ``attentions`` collects the attention weights of this evaluation."""
        a = self.dropout(self.attention(self.attention_norm(x), attention_mask, attentions))
        return a + self.dropout(self.mlp(self.mlp_norm(x + a)))
