"""The discrete network an ODE-ResNet generalises: a pre-activation ResNet.

:class:`DiscreteResNet` has the stages of an :class:`OdeResNetConfig` but replaces
each OdeBlock by ``num_layers`` residual layers ``x ← x + RateUnit(x)``, every layer
with its own convolutions and its own BatchNorms. With Euler, ``piecewise_constant``
and K = N_T = T = ``num_layers`` the ODE-ResNet computes exactly this network, which
makes it the baseline of the image measures of the benchmark (:mod:`.images`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..configuration_ode_resnet import OdeResNetConfig
from ..modeling_ode_resnet import RateUnit, StitchBlock


class ResidualLayer(nn.Module):
    """``x + RateUnit(x)``: (batch, C, H, W) → same."""

    def __init__(self, channels: int, use_normalization: bool = True):
        super().__init__()
        self.unit = RateUnit(channels, use_normalization)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.unit(x)


class DiscreteResNet(nn.Module):
    """Stem conv → per stage (StitchBlock, ``num_layers`` ResidualLayers) → BN → ReLU →
    global average pool → Linear.

    ``forward(pixel_values)`` maps (batch, num_channels, H, W) to logits (batch, num_labels).
    """

    def __init__(self, config: OdeResNetConfig, num_layers: int):
        super().__init__()
        widths = config.stage_channels
        norm = config.use_normalization
        self.stem = nn.Conv2d(config.num_channels, widths[0], 3, padding=1, bias=False)
        self.stages = nn.ModuleList(
            nn.Sequential(
                StitchBlock(c_in, c_out, stride, norm),
                *(ResidualLayer(c_out, norm) for _ in range(num_layers)),
            )
            for c_in, c_out, stride in zip([widths[0], *widths[:-1]], widths, config.stage_strides)
        )
        self.norm = nn.BatchNorm2d(widths[-1]) if norm else nn.Identity()
        self.classifier = nn.Linear(widths[-1], config.num_labels)

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        x = self.stem(pixel_values)  # (batch, C0, H, W)
        for stage in self.stages:
            x = stage(x)
        x = F.relu(self.norm(x))  # (batch, C, H', W')
        return self.classifier(x.mean((2, 3)))  # (batch, num_labels)


__all__ = ["DiscreteResNet", "ResidualLayer"]
