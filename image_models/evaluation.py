"""Scoring an image classifier: top-1 accuracy on uint8 image tensors, on one process or
sharded over several (:func:`evaluate`), optionally over test-time augmentation's views
(:mod:`.tta`) and under autocast.

The image trainer scores the held-out validation images after every epoch and the test
split once, with the best model, at the end; the image family (:mod:`.family`) scores a
saved model the same way for the compression tools. Before an evaluation on several
processes the running statistics are averaged over them (:func:`average_running_statistics`),
so the model scored is the model saved.
"""

from __future__ import annotations

import torch
from torch import nn

from .batching import pixel_layout
from .tta import mean_logits, views_of


def autocast_context(device: torch.device, dtype: torch.dtype | None):
    """Autocast to ``dtype`` on ``device``'s type; a no-op context when ``dtype`` is None."""
    return torch.autocast(device.type, dtype=dtype, enabled=dtype is not None)


@torch.no_grad()
def evaluate(
    model,
    images,
    labels,
    processor,
    batch_size: int = 256,
    accelerator=None,
    *,
    views: str = "none",
    autocast_dtype: torch.dtype | None = None,
    channels_last: bool = False,
) -> float:
    """Top-1 accuracy of ``model`` in eval mode on uint8 ``images`` (N, C, H, W), ``labels`` (N,).

    With an ``accelerator``, each process scores its shard and the counts are summed.
    ``views`` names the test-time augmentation (:data:`.tta.VIEW_SETS`: the logits are
    averaged over them); ``autocast_dtype`` runs the model under autocast.
    """
    rank, world = (accelerator.process_index, accelerator.num_processes) if accelerator else (0, 1)
    device = accelerator.device if accelerator else next(model.parameters()).device
    if accelerator is not None:
        # No collectives inside: the shards may differ by a batch.
        model = accelerator.unwrap_model(model)
    was_training = model.training
    model.eval()
    correct = torch.zeros((), dtype=torch.long, device=device)
    shard = torch.arange(rank, len(labels), world)
    for start in range(0, len(shard), batch_size):
        index = shard[start : start + batch_size]
        pixels = pixel_layout(processor.preprocess_tensor(images[index]).to(device), channels_last)
        with autocast_context(device, autocast_dtype):
            logits = mean_logits(model, pixels, views_of(views))
        correct += (logits.argmax(-1) == labels[index].to(device)).sum()
    model.train(was_training)
    if accelerator is not None:
        correct = accelerator.reduce(correct, reduction="sum")
    return correct.item() / len(labels)


@torch.no_grad()
def average_running_statistics(model: nn.Module, accelerator) -> None:
    """Average the floating-point buffers (running statistics) over the processes, so every
    process evaluates, and the main process saves, one and the same model."""
    if accelerator.num_processes == 1:
        return
    for buffer in model.buffers():
        if buffer.is_floating_point():
            buffer.copy_(accelerator.reduce(buffer, reduction="mean"))
