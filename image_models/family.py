"""ODE-ResNet image classifiers as a model family for the tools: see
``cont_transformer/runtime/families.py`` (their model card's text is the model class's,
``cont_transformer/modeling_ode_resnet.py``)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import torch
from transformers import AutoImageProcessor

from cont_transformer.pretrained import check_no_custom_code
from cont_transformer.runtime.families import EvalSet, ModelFamily, register_family

from .data import load_image_dataset, to_tensors
from .evaluation import evaluate

UNKNOWN_CLASS = -1  # scores as an error: no model predicts it


def load_preprocessor(folder: Path):
    if not (folder / "preprocessor_config.json").is_file():
        return None
    check_no_custom_code(folder)
    return AutoImageProcessor.from_pretrained(folder, trust_remote_code=False)


def eval_set(model, processor, folder: Path, path: Path, batch_size: int) -> EvalSet:
    """Scores and times an image classifier on the test split of an image or IDX folder."""
    split = load_image_dataset(path, splits=("test",))["test"]
    images, labels = to_tensors(split)  # uint8 (N, C, H, W), int64 (N,)
    # The folder's classes map onto the model's by name; a class the model lacks scores as an error.
    names = split.features["label"].names
    label2id = {name: i for i, name in model.config.id2label.items()}
    if set(names) & set(label2id):
        labels = torch.tensor([label2id.get(name, UNKNOWN_CLASS) for name in names])[labels]
    # Scoring is preprocessing, a forward pass and an argmax per batch: it is also the timed pass.
    run = partial(evaluate, images=images, labels=labels, processor=processor, batch_size=batch_size)
    return EvalSet(run, run, f"{path.name} (test split, {len(labels):,} images)", "test")


def synthetic_inputs(config, count: int, size: int) -> tuple[dict, str]:
    generator = torch.Generator().manual_seed(0)
    pixels = torch.randn(count, config.num_channels, size, size, generator=generator)
    return {"pixel_values": pixels}, f"random input ({count} images {size}x{size})"


FAMILY = ModelFamily("ode_resnet", load_preprocessor, eval_set, synthetic_inputs)
register_family(FAMILY)
