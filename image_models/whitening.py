"""Patch-whitening initialisation of a network's first convolution.

The filters of the stem are set from the training data instead of drawn at random: the
eigenvectors of the covariance of the image patches the stem sees (its kernel's size,
every position), each scaled by ``1 / sqrt(eigenvalue + eps)``. The stem's output is then
decorrelated, with unit variance in every direction of patch space, so the first layers
start from features on a common scale (the ZCA-style first layer of fast CIFAR recipes,
Jordan 2024). When the stem has room for twice the patch dimension, the second half
holds the negated filters, so a following ReLU keeps both signs of every component.
"""

from __future__ import annotations

import torch
from torch import nn

DEFAULT_EPS = 5e-4


def image_patches(images: torch.Tensor, kernel_size: tuple[int, int]) -> torch.Tensor:
    """Every ``kernel_size`` patch of ``images`` (N, C, H, W), flattened: (patches, C·kh·kw)."""
    kh, kw = kernel_size
    patches = images.unfold(2, kh, 1).unfold(3, kw, 1)  # (N, C, H', W', kh, kw)
    return patches.permute(0, 2, 3, 1, 4, 5).reshape(-1, images.shape[1] * kh * kw)


@torch.no_grad()
def whitening_filters(images: torch.Tensor, kernel_size: tuple[int, int], eps: float = DEFAULT_EPS) -> torch.Tensor:
    """Whitening filters of the patches of ``images`` (N, C, H, W), largest variance first:
    (C·kh·kw, C, kh, kw). A convolution with them maps the patches to outputs whose
    covariance is ``diag(λ / (λ + eps))``, the identity up to ``eps``."""
    patches = image_patches(images.float(), kernel_size).double()
    covariance = torch.cov(patches.T)  # (D, D), centred: the stem's bias-free output is too
    eigenvalues, eigenvectors = torch.linalg.eigh(covariance)  # ascending
    eigenvalues, eigenvectors = eigenvalues.flip(0), eigenvectors.flip(1)
    filters = eigenvectors.T / torch.sqrt(eigenvalues.clamp(min=0) + eps)[:, None]
    return filters.reshape(-1, images.shape[1], *kernel_size).float()


@torch.no_grad()
def whiten_conv_(conv: nn.Conv2d, images: torch.Tensor, eps: float = DEFAULT_EPS) -> None:
    """Set ``conv``'s filters to the whitening filters of ``images`` (N, C, H, W), normalised as
    the network sees them. With D = C·kh·kw: the first min(D, out) output channels whiten
    (the top principal directions when out < D); channels D..2D-1, where they exist, are
    their negatives; any further channels keep their initialisation."""
    if conv.groups != 1 or conv.in_channels != images.shape[1]:
        raise ValueError(f"images: {images.shape[1]} channels do not fit the conv ({conv})")
    filters = whitening_filters(images, conv.kernel_size, eps).to(conv.weight)
    weight = conv.weight  # (out, C, kh, kw)
    kept = min(len(filters), weight.shape[0])
    weight[:kept] = filters[:kept]
    negated = min(len(filters), weight.shape[0] - kept)
    if negated > 0:
        weight[kept : kept + negated] = -filters[:negated]


__all__ = ["DEFAULT_EPS", "image_patches", "whiten_conv_", "whitening_filters"]
