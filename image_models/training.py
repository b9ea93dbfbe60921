"""The image trainer's names in one place, for ``scripts/train_image.py`` and code written
before the trainer was split (issue #35): every name is defined in its own module.

* :mod:`.arguments`: :class:`ImageTrainingArguments` (the flags), :data:`PRESET_SCHEDULES`
  and :func:`preset_defaults` (the presets' schedules), ``--config-overrides``;
* :mod:`.batching`: the splits as tensors (:func:`load_split_tensors`: the held-out
  validation images, the test split), :func:`build_processor` and an epoch's batches;
* :mod:`.optimization`: SGD, its parameter groups and the learning-rate schedules;
* :mod:`.evaluation`: :func:`evaluate` (top-1 accuracy, sharded, with test-time augmentation);
* :mod:`.trainer`: :class:`ImageTrainer` on the scaffold, and :func:`train`.
"""

from __future__ import annotations

from .arguments import PRESET_SCHEDULES, ImageTrainingArguments, preset_defaults
from .batching import build_processor, load_split_tensors
from .evaluation import evaluate
from .trainer import ImageTrainer, train

__all__ = [
    "PRESET_SCHEDULES",
    "ImageTrainer",
    "ImageTrainingArguments",
    "build_processor",
    "evaluate",
    "load_split_tensors",
    "preset_defaults",
    "train",
]
