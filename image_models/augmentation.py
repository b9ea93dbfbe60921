"""CIFAR training augmentation as batched tensor ops: padded random crop, horizontal flip.

Every function takes a whole batch (batch, channels, height, width), uint8 or float,
and a `torch.Generator`, so a seeded generator reproduces an epoch exactly. Random
draws are made on the generator's device and moved to the batch's device.
"""

import torch
import torch.nn.functional as F


def random_crop(images: torch.Tensor, generator: torch.Generator, padding: int = 4) -> torch.Tensor:
    """Zero-pad each side by `padding`, then cut a random window of the original size.

    images: (batch, channels, height, width). Returns the same shape and dtype, each
    image shifted by its own offset in [-padding, padding] along both axes.
    """
    batch, channels, height, width = images.shape
    padded = F.pad(images, (padding, padding, padding, padding))
    offsets = torch.randint(
        0, 2 * padding + 1, (2, batch), generator=generator, device=generator.device
    ).to(images.device)
    rows = offsets[0, :, None] + torch.arange(height, device=images.device)  # (batch, height)
    cols = offsets[1, :, None] + torch.arange(width, device=images.device)  # (batch, width)
    batch_index = torch.arange(batch, device=images.device)[:, None, None, None]
    channel_index = torch.arange(channels, device=images.device)[None, :, None, None]
    return padded[batch_index, channel_index, rows[:, None, :, None], cols[:, None, None, :]]


def random_horizontal_flip(
    images: torch.Tensor, generator: torch.Generator, probability: float = 0.5
) -> torch.Tensor:
    """Mirror each image left-right with `probability`. images: (batch, channels, height, width)."""
    flip = torch.rand(images.shape[0], generator=generator, device=generator.device) < probability
    flip = flip.to(images.device)[:, None, None, None]
    return torch.where(flip, images.flip(-1), images)


def augment_cifar(images: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """The standard CIFAR recipe: random crop with padding 4, then random horizontal flip."""
    return random_horizontal_flip(random_crop(images, generator, padding=4), generator)


__all__ = ["augment_cifar", "random_crop", "random_horizontal_flip"]
