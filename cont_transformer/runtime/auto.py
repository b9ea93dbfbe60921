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
transformers' ``PIPELINE_REGISTRY``, so ``pipeline("pos-tagging", model=folder)`` runs the
package's code.

When it runs: :func:`register_with_transformers`, which the package's ``__init__`` calls, so
every import of the package or of any of its modules. Registering needs transformers and
the modeling files (seconds of imports), while the core (``cont_transformer.basis``, ...)
must stay as light as torch; so it registers at once when transformers is already
imported, and otherwise as soon as transformers is: a finder on ``sys.meta_path`` watches
the imports of ``transformers`` and of the package's modules, and registers when one of them
completes with transformers loaded and no module of the package half-imported (the
registration imports those modules, so it waits for the outermost one to finish), then
leaves ``sys.meta_path``. Importing only the core never imports transformers, so it
registers nothing and costs nothing; ``import cont_transformer.configuration_cont_transformer``
(which imports transformers) registers everything before the import statement returns. The
modeling and configuration files never import this module: remote code copies them flat,
and their copies register nothing.
"""

from __future__ import annotations

import sys
from importlib.abc import Loader, MetaPathFinder

_PACKAGE = __name__.partition(".")[0]  # the whole package, not only runtime/
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
        AutoProcessor,
    )
    from transformers.pipelines import PIPELINE_REGISTRY
    from transformers.utils import is_vision_available

    from ..configuration_cont_transformer import ContTransformerConfig
    from ..configuration_ode_resnet import OdeResNetConfig
    from ..image_processing_ode_resnet import OdeResNetImageProcessor
    from ..modeling_cont_transformer import (
        ContTransformerForMaskedLM,
        ContTransformerForTokenClassification,
        ContTransformerModel,
    )
    from ..modeling_ode_resnet import OdeResNetForImageClassification, OdeResNetModel
    from ..pipeline_cont_transformer import TASK as PIPELINE_TASK
    from ..pipeline_cont_transformer import ContTransformerTaggingPipeline
    from ..pretrained import register_own_class
    from ..processing_cont_transformer import ContTransformerTaggerProcessor

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
    # Text to tensors and back: a tagger's processor (a language model's folder has none).
    AutoProcessor.register(ContTransformerConfig, ContTransformerTaggerProcessor, exist_ok=True)
    ContTransformerTaggerProcessor.register_for_auto_class()
    # The whole tagger as a pipeline (every column, one entry per word), by its task name.
    PIPELINE_REGISTRY.register_pipeline(
        PIPELINE_TASK,
        pipeline_class=ContTransformerTaggingPipeline,
        pt_model=AutoModelForTokenClassification,
        type="text",
    )

    AutoConfig.register(OdeResNetConfig.model_type, OdeResNetConfig, exist_ok=True)
    AutoModel.register(OdeResNetConfig, OdeResNetModel, exist_ok=True)
    AutoModelForImageClassification.register(OdeResNetConfig, OdeResNetForImageClassification, exist_ok=True)
    if is_vision_available():  # transformers' image processors need pillow (the [images] extra)
        AutoImageProcessor.register(OdeResNetConfig, slow_image_processor_class=OdeResNetImageProcessor, exist_ok=True)
    OdeResNetConfig.register_for_auto_class()
    OdeResNetModel.register_for_auto_class("AutoModel")
    OdeResNetForImageClassification.register_for_auto_class("AutoModelForImageClassification")
    # What a saved folder's auto_map and custom_pipelines may name: the package's own classes.
    for cls in (
        ContTransformerConfig,
        ContTransformerModel,
        ContTransformerForTokenClassification,
        ContTransformerForMaskedLM,
        ContTransformerTaggingPipeline,
        ContTransformerTaggerProcessor,
        OdeResNetConfig,
        OdeResNetModel,
        OdeResNetForImageClassification,
        OdeResNetImageProcessor,
    ):
        register_own_class(cls)
    _registered = True


def _watched(name: str) -> bool:
    return name == "transformers" or name.startswith(f"{_PACKAGE}.")


def _half_imported(finished: str) -> bool:
    """Whether a module of the package other than ``finished`` (whose code has just run) is
    being imported."""
    return any(
        getattr(getattr(module, "__spec__", None), "_initializing", False)
        for name, module in list(sys.modules.items())
        if (name == _PACKAGE or name.startswith(f"{_PACKAGE}.")) and name != finished
    )


class _RegisteringLoader(Loader):
    """A watched module's own loader, which registers once the module's code has run."""

    def __init__(self, loader: Loader, finder: _RegisterWhenTransformersLoads):
        self.loader, self.finder = loader, finder

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        spec = module.__spec__
        try:
            self.loader.exec_module(module)
        finally:  # the module, and the one transformers puts in its place, keep their own loader
            for loaded in (module, sys.modules.get(spec.name)):
                loaded_spec = getattr(loaded, "__spec__", None)
                if loaded_spec is not None and loaded_spec.loader is self:
                    loaded_spec.loader = self.loader
                if getattr(loaded, "__loader__", None) is self:
                    loaded.__loader__ = self.loader
        self.finder.completed(spec.name)

    def __getattr__(self, name: str):  # get_data, get_filename, ... of the module's own loader
        return getattr(self.loader, name)


class _RegisterWhenTransformersLoads(MetaPathFinder):
    """Registers the models when an import completes with transformers loaded and no
    module of the package half-imported (module docstring)."""

    def find_spec(self, name, path, target=None):
        if not _watched(name):
            return None
        for finder in sys.meta_path[sys.meta_path.index(self) + 1 :]:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _RegisteringLoader(spec.loader, self)
                return spec
        return None

    def completed(self, name: str) -> None:
        """The code of module ``name`` has run."""
        if "transformers" in sys.modules and not _half_imported(name):
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            register_auto_classes()


def register_with_transformers() -> None:
    """Register the models now if transformers is imported, else as soon as it is (module
    docstring); the package's ``__init__`` calls it."""
    if _registered or any(isinstance(finder, _RegisterWhenTransformersLoads) for finder in sys.meta_path):
        return
    if "transformers" in sys.modules:
        register_auto_classes()
    else:
        sys.meta_path.insert(0, _RegisterWhenTransformersLoads())


__all__ = ["register_auto_classes", "register_with_transformers"]
