"""The discrete network the continuous transformer generalises, in plain PyTorch.

:class:`PreLayerNormTagger` stacks ``num_layers`` pre-LayerNorm encoder layers
``x ← x + a + MLP(LayerNorm(x + a))``, ``a = SelfAttention(LayerNorm(x))``: the rate of
:class:`~cont_transformer.modeling_cont_transformer.ContTransformerRate` taken as
residual layers. With Euler, ``piecewise_constant`` and K = N_T = T = ``num_layers``
the continuous model computes exactly this network, which makes it the baseline the
benchmark (:mod:`cont_transformer.benchmarking`) measures that model against. Every
layer owns its weights; there is no basis, integrator or ``functional_call``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from transformers.activations import ACT2FN

from .configuration_cont_transformer import ContTransformerConfig
from .modeling_cont_transformer import sinusoidal_positions


class EncoderLayer(nn.Module):
    """One pre-LayerNorm layer: ``(batch, seq, hidden)`` → ``(batch, seq, hidden)``."""

    def __init__(self, config: ContTransformerConfig):
        super().__init__()
        hidden = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.attention_norm = nn.LayerNorm(hidden, eps=config.layer_norm_eps)
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.output = nn.Linear(hidden, hidden)
        self.mlp_norm = nn.LayerNorm(hidden, eps=config.layer_norm_eps)
        self.fc1 = nn.Linear(hidden, config.intermediate_size)
        self.activation = ACT2FN[config.hidden_act]
        self.fc2 = nn.Linear(config.intermediate_size, hidden)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.attention_dropout = config.attention_probs_dropout_prob

    def attend(self, x: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        batch, seq_len, hidden = x.shape
        heads = (batch, seq_len, self.num_heads, hidden // self.num_heads)
        q = self.query(x).view(heads).transpose(1, 2)  # (batch, heads, seq, head_dim)
        k = self.key(x).view(heads).transpose(1, 2)
        v = self.value(x).view(heads).transpose(1, 2)
        context = F.scaled_dot_product_attention(
            q, k, v, attn_mask=attention_mask, dropout_p=self.attention_dropout if self.training else 0.0
        )  # (batch, heads, seq, head_dim)
        return self.output(context.transpose(1, 2).reshape(batch, seq_len, hidden))

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """``attention_mask``: boolean ``(batch, 1, 1, seq)``, True at keys to attend to."""
        a = self.dropout(self.attend(self.attention_norm(x), attention_mask))
        return x + a + self.dropout(self.fc2(self.activation(self.fc1(self.mlp_norm(x + a)))))


class PreLayerNormTagger(nn.Module):
    """Embeddings → ``num_layers`` :class:`EncoderLayer` → LayerNorm → dropout → Linear over tags.

    Built from a :class:`ContTransformerConfig` (its continuous choices are ignored),
    so it has the continuous tagger's widths, activation, dropout and position
    encoding. ``forward(input_ids, attention_mask)`` takes ``(batch, seq)`` tensors
    (mask: 1 at real tokens) and returns logits ``(batch, seq, num_labels)``.
    """

    def __init__(self, config: ContTransformerConfig, num_layers: int):
        super().__init__()
        if config.position_encoding != "sinusoidal":
            raise ValueError("the baseline implements the sinusoidal position encoding only")
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, config.pad_token_id)
        self.embedding_dropout = nn.Dropout(config.hidden_dropout_prob)
        self.layers = nn.ModuleList(EncoderLayer(config) for _ in range(num_layers))
        self.final_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        words = self.word_embeddings(input_ids)  # (batch, seq, hidden)
        positions = sinusoidal_positions(input_ids.shape[1], words.shape[-1], words.device, words.dtype)
        x = self.embedding_dropout(words + positions)
        if attention_mask is not None:
            attention_mask = attention_mask.bool()[:, None, None, :]  # (batch, 1, 1, seq)
        for layer in self.layers:
            x = layer(x, attention_mask)
        return self.classifier(self.dropout(self.final_norm(x)))  # (batch, seq, num_labels)


__all__ = ["EncoderLayer", "PreLayerNormTagger"]
