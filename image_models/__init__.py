"""The image application of the ODE-ResNets: data, augmentation, training, benchmarks, baselines.

The models themselves (``OdeResNetConfig``, ``OdeResNetModel``,
``OdeResNetForImageClassification``, ``OdeResNetImageProcessor``) live in the models
layer, ``cont_transformer.configuration_ode_resnet`` / ``modeling_ode_resnet`` /
``image_processing_ode_resnet``, so that a saved folder carries their code for
``trust_remote_code``; importing ``cont_transformer`` registers them with the Auto
classes. They are re-exported here for compatibility.
"""

from cont_transformer.configuration_ode_resnet import PRESETS, OdeResNetConfig
from cont_transformer.image_processing_ode_resnet import (
    NORMALIZATION_STATS,
    OdeResNetImageProcessor,
)
from cont_transformer.modeling_ode_resnet import (
    OdeResNetForImageClassification,
    OdeResNetModel,
    OdeResNetPreTrainedModel,
    RateUnit,
    StitchBlock,
)

from . import family  # noqa: F401  registers the family (card, tools), entry points or not
from .augmentation import augment_cifar, random_crop, random_horizontal_flip
from .data import load_image_dataset, to_tensors

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
