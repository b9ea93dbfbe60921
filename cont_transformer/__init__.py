"""cont-transformer: continuous-in-depth networks (Stateful ODE-Nets) on PyTorch.

Importing the package registers its models with the transformers Auto classes: the
continuous transformer (``model_type="cont_transformer"``) with ``AutoConfig``,
``AutoModel``, ``AutoModelForTokenClassification`` and ``AutoModelForMaskedLM``, the ODE-ResNet
(``model_type="ode_resnet"``) with ``AutoConfig``, ``AutoModel``,
``AutoModelForImageClassification`` and ``AutoImageProcessor``. It also marks them for
remote code: a ``save_pretrained`` folder gets the model files and, in ``config.json``,
an ``auto_map`` for the config, ``AutoModel``, the task class and (ODE-ResNet) the image
processor, so it loads with ``trust_remote_code=True`` where this package is not
installed (see :mod:`cont_transformer.pretrained`).

The package itself holds the core and the models only; the tagging application's entry
points (``tag``, ``Tagger``, ``build_tokenizer``) load on first use, so that importing
the core (``cont_transformer.basis``) loads no application (docs/design.md §1).
"""

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version

from transformers import (
    AutoConfig,
    AutoImageProcessor,
    AutoModel,
    AutoModelForImageClassification,
    AutoModelForMaskedLM,
    AutoModelForTokenClassification,
)

from .basis import BASES, fit_points, get_basis, interpolation_matrix, projection_matrix
from .configuration_cont_transformer import ContTransformerConfig
from .configuration_ode_resnet import PRESETS, OdeResNetConfig
from .image_processing_ode_resnet import NORMALIZATION_STATS, OdeResNetImageProcessor
from .integrators import SCHEMES, ButcherTableau, get_scheme, odeint
from .model_card import write_model_card
from .modeling_cont_transformer import (
    ContTransformerForMaskedLM,
    ContTransformerForTokenClassification,
    ContTransformerModel,
    ContTransformerPreTrainedModel,
)
from .modeling_ode_resnet import (
    OdeResNetForImageClassification,
    OdeResNetModel,
    OdeResNetPreTrainedModel,
)
from .ode_block import OdeBlock
from .transform import change_basis, refine, set_num_steps

AutoConfig.register(ContTransformerConfig.model_type, ContTransformerConfig, exist_ok=True)
AutoModel.register(ContTransformerConfig, ContTransformerModel, exist_ok=True)
AutoModelForTokenClassification.register(ContTransformerConfig, ContTransformerForTokenClassification, exist_ok=True)
AutoModelForMaskedLM.register(ContTransformerConfig, ContTransformerForMaskedLM, exist_ok=True)
ContTransformerConfig.register_for_auto_class()
ContTransformerForMaskedLM.register_for_auto_class("AutoModelForMaskedLM")
ContTransformerModel.register_for_auto_class("AutoModel")
ContTransformerForTokenClassification.register_for_auto_class("AutoModelForTokenClassification")

AutoConfig.register(OdeResNetConfig.model_type, OdeResNetConfig, exist_ok=True)
AutoModel.register(OdeResNetConfig, OdeResNetModel, exist_ok=True)
AutoModelForImageClassification.register(OdeResNetConfig, OdeResNetForImageClassification, exist_ok=True)
AutoImageProcessor.register(OdeResNetConfig, slow_image_processor_class=OdeResNetImageProcessor, exist_ok=True)
OdeResNetConfig.register_for_auto_class()
OdeResNetModel.register_for_auto_class("AutoModel")
OdeResNetForImageClassification.register_for_auto_class("AutoModelForImageClassification")

try:
    __version__ = version("cont-transformer")
except PackageNotFoundError:  # run from a source tree that is not installed
    __version__ = "0.1.0"

# Names that load the tagging application when first asked for: name -> its module.
_LAZY = {
    "Tagger": ".tagging.tag",
    "build_tokenizer": ".tagging.tokenization",
    "tag": ".tagging.tag",
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_LAZY[name], __name__), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "BASES",
    "NORMALIZATION_STATS",
    "PRESETS",
    "SCHEMES",
    "ButcherTableau",
    "ContTransformerConfig",
    "ContTransformerForMaskedLM",
    "ContTransformerForTokenClassification",
    "ContTransformerModel",
    "ContTransformerPreTrainedModel",
    "OdeBlock",
    "OdeResNetConfig",
    "OdeResNetForImageClassification",
    "OdeResNetImageProcessor",
    "OdeResNetModel",
    "OdeResNetPreTrainedModel",
    "Tagger",
    "build_tokenizer",
    "change_basis",
    "fit_points",
    "get_basis",
    "get_scheme",
    "interpolation_matrix",
    "odeint",
    "projection_matrix",
    "refine",
    "set_num_steps",
    "tag",
    "write_model_card",
]
