"""ODE-ResNets for MNIST and CIFAR on the cont_transformer core, as Hugging Face models.

Importing the package registers ``OdeResNetConfig`` with ``AutoConfig``, the models with
``AutoModel`` / ``AutoModelForImageClassification`` and the image processor with
``AutoImageProcessor``.
"""

from transformers import AutoConfig, AutoImageProcessor, AutoModel, AutoModelForImageClassification

from .augmentation import augment_cifar, random_crop, random_horizontal_flip
from .configuration_ode_resnet import PRESETS, OdeResNetConfig
from .data import load_image_dataset, to_tensors
from .image_processing_ode_resnet import NORMALIZATION_STATS, OdeResNetImageProcessor
from .modeling_ode_resnet import (
    OdeResNetForImageClassification,
    OdeResNetModel,
    OdeResNetPreTrainedModel,
    RateUnit,
    StitchBlock,
)

AutoConfig.register(OdeResNetConfig.model_type, OdeResNetConfig, exist_ok=True)
AutoModel.register(OdeResNetConfig, OdeResNetModel, exist_ok=True)
AutoModelForImageClassification.register(OdeResNetConfig, OdeResNetForImageClassification, exist_ok=True)
AutoImageProcessor.register(OdeResNetConfig, slow_image_processor_class=OdeResNetImageProcessor, exist_ok=True)

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
