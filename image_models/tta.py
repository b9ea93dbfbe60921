"""Test-time augmentation: a prediction is the mean of the logits over several views of
each image (mirror, one-pixel translations with mirrored borders).

A view is a function of a normalised batch (batch, channels, height, width) to a batch
of the same shape. :data:`VIEW_SETS` names the sets the training flags use:
``none`` (the image itself), ``flip`` (and its mirror image), ``flip-translate`` (both,
each also shifted one pixel up-left and down-right: six views).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F

View = Callable[[torch.Tensor], torch.Tensor]


def identity(pixels: torch.Tensor) -> torch.Tensor:
    return pixels


def mirror(pixels: torch.Tensor) -> torch.Tensor:
    return pixels.flip(-1)


def shift(rows: int, cols: int) -> View:
    """The view that moves the content ``rows`` down and ``cols`` right (negative: up,
    left), filling the border with mirrored pixels."""
    pad = max(abs(rows), abs(cols))

    def view(pixels: torch.Tensor) -> torch.Tensor:
        height, width = pixels.shape[-2:]
        padded = F.pad(pixels, (pad, pad, pad, pad), mode="reflect")
        top, left = pad - rows, pad - cols
        return padded[..., top : top + height, left : left + width]

    return view


def _then(first: View, second: View) -> View:
    return lambda pixels: second(first(pixels))


_SHIFTS = (shift(-1, -1), shift(1, 1))
VIEW_SETS: dict[str, tuple[View, ...]] = {
    "none": (identity,),
    "flip": (identity, mirror),
    "flip-translate": (identity, mirror, *_SHIFTS, *(_then(s, mirror) for s in _SHIFTS)),
}


def views_of(name: str) -> tuple[View, ...]:
    """The views of a :data:`VIEW_SETS` name."""
    if name not in VIEW_SETS:
        raise ValueError(f"test_time_augmentation: choose one of {sorted(VIEW_SETS)}, got {name!r}")
    return VIEW_SETS[name]


def mean_logits(model: Callable, pixels: torch.Tensor, views: Sequence[View]) -> torch.Tensor:
    """The mean over ``views`` of ``model(view(pixels)).logits``: (batch, num_labels)."""
    total = None
    for view in views:
        logits = model(view(pixels)).logits.float()
        total = logits if total is None else total + logits
    return total / len(views)


__all__ = ["VIEW_SETS", "identity", "mean_logits", "mirror", "shift", "views_of"]
