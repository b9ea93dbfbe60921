"""The registration of the package's models with the transformers Auto classes.

:func:`register_auto_classes` registers the continuous transformer
(``model_type="cont_transformer"``) with ``AutoConfig``, ``AutoModel``,
``AutoModelForTokenClassification`` and ``AutoModelForMaskedLM``, and the ODE-ResNet
(``model_type="ode_resnet"``) with ``AutoConfig``, ``AutoModel``,
``AutoModelForImageClassification`` and ``AutoImageProcessor``. It also marks them for
remote code: a ``save_pretrained`` folder gets the model files and, in ``config.json``, an
``auto_map`` for the config, ``AutoModel``, the task class and (ODE-ResNet) the image
processor, so it loads with ``trust_remote_code=True`` where this package is not installed
(see :mod:`cont_transformer.pretrained`). The tagger's pipeline
(:mod:`cont_transformer.pipeline_cont_transformer`, task ``"pos-tagging"``) is registered with
transformers' ``PIPELINE_REGISTRY`` and saved with every tagger (``custom_pipelines`` in
``config.json``, and its code), so ``pipeline(model=folder, trust_remote_code=True)`` tags
every column where this package is not installed.

Importing this module registers (once; the function is idempotent). The first use of any
public name of ``cont_transformer`` imports it, and so does every module of the
applications and tools that loads or saves a model through the Auto classes
(``from .. import auto``); importing only the core (``cont_transformer.basis``, ...) or a
modeling file directly does not (docs/design.md §1). The modeling and configuration files
never import this module: remote code copies them flat, with the siblings they import.
"""

from __future__ import annotations

_registered = False


def register_auto_classes() -> None:
    """Register both model kinds with the Auto classes and for remote code (idempotent)."""
    global _registered
    if _registered:
        return
    from transformers import (
        AutoConfig,
        AutoImageProcessor,
        AutoModel,
        AutoModelForImageClassification,
        AutoModelForMaskedLM,
        AutoModelForTokenClassification,
    )
    from transformers.pipelines import PIPELINE_REGISTRY
    from transformers.utils import is_vision_available

    from .configuration_cont_transformer import ContTransformerConfig
    from .configuration_ode_resnet import OdeResNetConfig
    from .image_processing_ode_resnet import OdeResNetImageProcessor
    from .modeling_cont_transformer import (
        ContTransformerForMaskedLM,
        ContTransformerForTokenClassification,
        ContTransformerModel,
    )
    from .modeling_ode_resnet import OdeResNetForImageClassification, OdeResNetModel
    from .pipeline_cont_transformer import TASK as PIPELINE_TASK
    from .pipeline_cont_transformer import ContTransformerTaggingPipeline

    AutoConfig.register(ContTransformerConfig.model_type, ContTransformerConfig, exist_ok=True)
    AutoModel.register(ContTransformerConfig, ContTransformerModel, exist_ok=True)
    AutoModelForTokenClassification.register(
        ContTransformerConfig, ContTransformerForTokenClassification, exist_ok=True
    )
    AutoModelForMaskedLM.register(ContTransformerConfig, ContTransformerForMaskedLM, exist_ok=True)
    ContTransformerConfig.register_for_auto_class()
    ContTransformerForMaskedLM.register_for_auto_class("AutoModelForMaskedLM")
    ContTransformerModel.register_for_auto_class("AutoModel")
    ContTransformerForTokenClassification.register_for_auto_class("AutoModelForTokenClassification")
    # The whole tagger as a pipeline (every column, one entry per word): a saved tagger's
    # config.json names it (custom_pipelines) and its folder carries the code (pretrained.py).
    PIPELINE_REGISTRY.register_pipeline(
        PIPELINE_TASK,
        pipeline_class=ContTransformerTaggingPipeline,
        pt_model=AutoModelForTokenClassification,
        type="text",
    )
    ContTransformerForTokenClassification.custom_pipeline = (PIPELINE_TASK, ContTransformerTaggingPipeline)

    AutoConfig.register(OdeResNetConfig.model_type, OdeResNetConfig, exist_ok=True)
    AutoModel.register(OdeResNetConfig, OdeResNetModel, exist_ok=True)
    AutoModelForImageClassification.register(OdeResNetConfig, OdeResNetForImageClassification, exist_ok=True)
    if is_vision_available():  # transformers' image processors need pillow (the [images] extra)
        AutoImageProcessor.register(OdeResNetConfig, slow_image_processor_class=OdeResNetImageProcessor, exist_ok=True)
    OdeResNetConfig.register_for_auto_class()
    OdeResNetModel.register_for_auto_class("AutoModel")
    OdeResNetForImageClassification.register_for_auto_class("AutoModelForImageClassification")
    _registered = True


register_auto_classes()
