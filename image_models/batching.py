"""The image trainer's data: the splits as tensors, the held-out validation images and an
epoch's batches.

Model selection never sees the test split: ``validation_size`` training images (a fixed
draw, the same for every seed: :data:`VALIDATION_SEED`) are held out, the best epoch is
chosen on them, and the test split is scored once, with the best model, at the end.

Whole splits are held as uint8 tensors (:func:`.data.to_tensors`); batches are index
slices, augmented and normalised as tensors, never image by image. An epoch's batches
are a function of (seed, epoch), so a resumed run replays the uninterrupted one.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import numpy as np
import torch

from cont_transformer.image_processing_ode_resnet import OdeResNetImageProcessor

from .augmentation import alternating_flip, random_crop, random_horizontal_flip
from .data import load_image_dataset, to_tensors

if TYPE_CHECKING:
    from .arguments import ImageTrainingArguments

# The held-out validation images are the same draw whatever --seed is.
VALIDATION_SEED = 0


def subset(images: torch.Tensor, labels: torch.Tensor, size: int | None, seed: int):
    """A seeded random subset of ``size`` examples (all when None or larger)."""
    if size is None or size >= len(labels):
        return images, labels
    keep = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))[:size]
    return images[keep], labels[keep]


def hold_out(images: torch.Tensor, labels: torch.Tensor, size: int):
    """``(train, validation)``: ``size`` examples drawn with :data:`VALIDATION_SEED` held out."""
    if size >= len(labels):
        raise ValueError(f"validation_size: {size} leaves no training images (of {len(labels)})")
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(VALIDATION_SEED))
    held, kept = order[:size], order[size:]
    return (images[kept], labels[kept]), (images[held], labels[held])


def load_split_tensors(args: ImageTrainingArguments):
    """``(train, validation, test, class_names)``, each split an ``(images, labels)`` pair."""
    data = load_image_dataset(args.dataset)
    train_images, train_labels = to_tensors(data["train"])
    train_split, validation = hold_out(train_images, train_labels, args.validation_size)
    train_split = subset(*train_split, args.max_train_samples, args.seed)
    validation = subset(*validation, args.max_eval_samples, VALIDATION_SEED)
    test = to_tensors(data["test"])  # scored once, in full
    return train_split, validation, test, data["train"].features["label"].names


def build_processor(args: ImageTrainingArguments) -> OdeResNetImageProcessor:
    """Normalisation statistics of the preset's dataset (``cifar10-small`` → ``cifar10``)."""
    return OdeResNetImageProcessor.for_dataset(args.preset.split("-")[0])


def tensor_fingerprint(*splits) -> str:
    """The SHA-256 of the splits' images and labels (the run's data fingerprint)."""
    digest = hashlib.sha256()
    for images, labels in splits:
        digest.update(images.numpy().tobytes())
        digest.update(labels.numpy().tobytes())
    return digest.hexdigest()


def batch_seed(*values: int) -> int:
    """A generator seed from (seed, epoch) or (seed, epoch, batch)."""
    return int(np.random.SeedSequence(list(values)).generate_state(1, np.uint64)[0] >> 1)


def pixel_layout(pixels: torch.Tensor, channels_last: bool) -> torch.Tensor:
    """``pixels`` in channels_last memory format when asked, else as they are."""
    return pixels.contiguous(memory_format=torch.channels_last) if channels_last else pixels


def training_batches(
    args: ImageTrainingArguments,
    split: tuple[torch.Tensor, torch.Tensor],
    processor: OdeResNetImageProcessor,
    epoch: int,
    skip: int,
    steps_per_epoch: int,
    *,
    augment: bool,
    flip_parities: torch.Tensor,
    rank: int,
    world: int,
    device: torch.device,
):
    """The batches of ``epoch`` from its ``skip``-th on: one global batch of ``batch_size``
    images per step, split over the ``world`` processes (this is process ``rank``'s share),
    augmented (translation and flip) when ``augment``, normalised, on ``device``."""
    images, labels = split
    generator = torch.Generator().manual_seed(batch_seed(args.seed, epoch))
    order = torch.randperm(len(labels), generator=generator)
    for index in range(skip, steps_per_epoch):
        chosen = order[index * args.batch_size : (index + 1) * args.batch_size][rank::world]
        batch = images[chosen]
        if augment:
            generator = torch.Generator().manual_seed(batch_seed(args.seed, epoch, index))
            batch = random_crop(batch, generator, args.translate, args.translate_padding)
            if args.flip == "alternating":
                batch = alternating_flip(batch, flip_parities[chosen], epoch)
            elif args.flip == "random":
                batch = random_horizontal_flip(batch, generator)
        pixels = processor.preprocess_tensor(batch).to(device)
        yield {
            "pixel_values": pixel_layout(pixels, args.channels_last),
            "labels": labels[chosen].to(device),
        }
