"""The image application of the ODE-ResNets: data, augmentation, training.

Training: :mod:`.arguments` (``ImageTrainingArguments``, the presets' schedules),
:mod:`.batching` (the splits as tensors, an epoch's batches), :mod:`.optimization` (SGD,
learning rates), :mod:`.evaluation` (accuracy), :mod:`.trainer` (``ImageTrainer``,
``train``).

The models themselves (``OdeResNetConfig``, ``OdeResNetModel``,
``OdeResNetForImageClassification``, ``OdeResNetImageProcessor``) live in the models
layer, ``cont_transformer.configuration_ode_resnet`` / ``modeling_ode_resnet`` /
``image_processing_ode_resnet``, so that a saved folder carries their code for
``trust_remote_code``; ``from image_models import OdeResNetConfig`` finds them too.

Every name loads on first use (a module ``__getattr__``), so ``import image_models.augmentation``
loads neither the training scaffold nor ``datasets``; the first use of a model's name also
registers the models with the Auto classes (:mod:`cont_transformer.runtime.auto`). The family
(:mod:`.family`: model cards, tools) registers itself where it is needed: the trainer
imports it, and the tools find it through the ``cont_transformer.model_families`` entry
point.
"""

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what type checkers see; at run time the names load in __getattr__
    from cont_transformer.configuration_ode_resnet import PRESETS, OdeResNetConfig
    from cont_transformer.image_processing_ode_resnet import NORMALIZATION_STATS, OdeResNetImageProcessor
    from cont_transformer.modeling_ode_resnet import (
        OdeResNetForImageClassification,
        OdeResNetModel,
        OdeResNetPreTrainedModel,
        RateUnit,
        StitchBlock,
    )

    from .augmentation import augment_cifar, random_crop, random_horizontal_flip
    from .data import load_image_dataset, to_tensors

# Every public name -> the module that defines it, imported when the name is first asked for.
_MODELS = {
    "PRESETS": "cont_transformer.configuration_ode_resnet",
    "OdeResNetConfig": "cont_transformer.configuration_ode_resnet",
    "NORMALIZATION_STATS": "cont_transformer.image_processing_ode_resnet",
    "OdeResNetImageProcessor": "cont_transformer.image_processing_ode_resnet",
    "OdeResNetForImageClassification": "cont_transformer.modeling_ode_resnet",
    "OdeResNetModel": "cont_transformer.modeling_ode_resnet",
    "OdeResNetPreTrainedModel": "cont_transformer.modeling_ode_resnet",
    "RateUnit": "cont_transformer.modeling_ode_resnet",
    "StitchBlock": "cont_transformer.modeling_ode_resnet",
}
_LAZY = {
    **_MODELS,
    "augment_cifar": "image_models.augmentation",
    "random_crop": "image_models.augmentation",
    "random_horizontal_flip": "image_models.augmentation",
    "load_image_dataset": "image_models.data",
    "to_tensors": "image_models.data",
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name in _MODELS:
        import_module("cont_transformer.runtime.auto")  # registers the models with the Auto classes
    value = getattr(import_module(_LAZY[name]), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "NORMALIZATION_STATS",
    "PRESETS",
    "OdeResNetConfig",
    "OdeResNetForImageClassification",
    "OdeResNetImageProcessor",
    "OdeResNetModel",
    "OdeResNetPreTrainedModel",
    "RateUnit",
    "StitchBlock",
    "augment_cifar",
    "load_image_dataset",
    "random_crop",
    "random_horizontal_flip",
    "to_tensors",
]
