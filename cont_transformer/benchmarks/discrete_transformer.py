"""The discrete network the continuous transformer generalises, in plain PyTorch.

:class:`PreLayerNormTagger` stacks ``num_layers`` pre-LayerNorm encoder layers
``x ← x + a + MLP(LayerNorm(x + a))``, ``a = SelfAttention(LayerNorm(x))``: the rate of
:class:`~cont_transformer.transformer_rate.ContTransformerRate` taken as
residual layers. With Euler, ``piecewise_constant`` and K = N_T = T = ``num_layers``
the continuous model computes exactly this network, which makes it the baseline the
benchmark (:mod:`.transformer`) measures that model against. Every layer owns its
weights; there is no basis, integrator or ``functional_call``.
"""

from __future__ import annotations

import torch
from torch import nn

from ..configuration_cont_transformer import ContTransformerConfig
from ..modeling_cont_transformer import sinusoidal_positions
from ..transformer_rate import ContTransformerRate


class EncoderLayer(nn.Module):
    """One residual layer ``x + rate(x)`` over its own copy of the continuous model's rate.

    ``(batch, seq, hidden)`` → ``(batch, seq, hidden)``; the same module code as the
    continuous tagger, so the two differ only in how the weights reach it.
    """

    def __init__(self, config: ContTransformerConfig):
        super().__init__()
        self.rate = ContTransformerRate(config)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """``attention_mask``: boolean ``(batch, 1, 1, seq)``, True at keys to attend to."""
        return x + self.rate(x, attention_mask)


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
