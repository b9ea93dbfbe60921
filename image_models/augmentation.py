"""CIFAR training augmentation as batched tensor ops: padded random crop (translation),
horizontal flip, alternating flip.

Every function takes a whole batch (batch, channels, height, width), uint8 or float,
and a `torch.Generator` (or, for the alternating flip, a fixed parity per image), so a
seeded generator reproduces an epoch exactly. Random draws are made on the generator's
device and moved to the batch's device.

Alternating flip (Jordan 2024, airbench): instead of a fresh coin per image and epoch,
each image has one coin (its parity) and is mirrored in every other epoch, so any two
consecutive epochs show both orientations of every image.
"""

import torch
import torch.nn.functional as F

PADDING_MODES = ("constant", "reflect")


def random_crop(
    images: torch.Tensor, generator: torch.Generator, padding: int = 4, mode: str = "constant"
) -> torch.Tensor:
    """Pad each side by `padding` (zeros, or `mode="reflect"`: mirrored pixels), then cut
    a random window of the original size.

    images: (batch, channels, height, width). Returns the same shape and dtype, each
    image shifted by its own offset in [-padding, padding] along both axes.
    """
    batch, channels, height, width = images.shape
    padded = F.pad(images, (padding, padding, padding, padding), mode=mode)
    offsets = torch.randint(0, 2 * padding + 1, (2, batch), generator=generator, device=generator.device).to(
        images.device
    )
    rows = offsets[0, :, None] + torch.arange(height, device=images.device)  # (batch, height)
    cols = offsets[1, :, None] + torch.arange(width, device=images.device)  # (batch, width)
    batch_index = torch.arange(batch, device=images.device)[:, None, None, None]
    channel_index = torch.arange(channels, device=images.device)[None, :, None, None]
    return padded[batch_index, channel_index, rows[:, None, :, None], cols[:, None, None, :]]


def random_horizontal_flip(images: torch.Tensor, generator: torch.Generator, probability: float = 0.5) -> torch.Tensor:
    """Mirror each image left-right with `probability`. images: (batch, channels, height, width)."""
    flip = torch.rand(images.shape[0], generator=generator, device=generator.device) < probability
    flip = flip.to(images.device)[:, None, None, None]
    return torch.where(flip, images.flip(-1), images)


def flip_parities(count: int, seed: int) -> torch.Tensor:
    """One coin per image of a ``count``-image training set, a function of ``seed``: (count,) bool."""
    return torch.randint(0, 2, (count,), generator=torch.Generator().manual_seed(seed)).bool()


def alternating_flip(images: torch.Tensor, parities: torch.Tensor, epoch: int) -> torch.Tensor:
    """Mirror the images whose parity differs from ``epoch``'s: each image is flipped in
    every other epoch. images: (batch, channels, height, width); parities: (batch,) bool,
    the :func:`flip_parities` of the images' indices in the training set."""
    flip = (parities ^ bool(epoch % 2)).to(images.device)[:, None, None, None]
    return torch.where(flip, images.flip(-1), images)


def augment_cifar(images: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """The standard CIFAR recipe: random crop with padding 4, then random horizontal flip."""
    return random_horizontal_flip(random_crop(images, generator, padding=4), generator)


__all__ = [
    "PADDING_MODES",
    "alternating_flip",
    "augment_cifar",
    "flip_parities",
    "random_crop",
    "random_horizontal_flip",
]
