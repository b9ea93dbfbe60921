"""cont-transformer: continuous-in-depth networks (Stateful ODE-Nets) on PyTorch.

Importing the package (or any of its modules) registers the models with the transformers
Auto classes (:func:`~cont_transformer.runtime.auto.register_auto_classes`): the continuous
transformer (``model_type="cont_transformer"``) with ``AutoConfig``, ``AutoModel``,
``AutoModelForTokenClassification`` and ``AutoModelForMaskedLM``, the ODE-ResNet
(``model_type="ode_resnet"``) with ``AutoConfig``, ``AutoModel``,
``AutoModelForImageClassification`` and ``AutoImageProcessor``, both marked for remote
code (a ``save_pretrained`` folder gets the model files and an ``auto_map``, so it loads
with ``trust_remote_code=True`` where this package is not installed; see
:mod:`cont_transformer.pretrained`). So after ``import cont_transformer``,
``AutoModelForTokenClassification.from_pretrained(folder)`` loads a saved tagger with no
remote code and no question.

The registration happens when transformers is imported, or at once if it already is
(:func:`~cont_transformer.runtime.auto.register_with_transformers`), and every public name loads on
first use (a module ``__getattr__``): so ``import cont_transformer.basis`` (or
``integrators``, ``ode_block``, ``transform``, ``runtime.compressed_copies``) loads neither transformers
nor any application, while ``from cont_transformer import ContTransformerConfig`` works as
it always did (docs/design.md §1).
"""

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from .runtime.auto import register_with_transformers

if TYPE_CHECKING:  # what type checkers see; at run time the names load in __getattr__
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
    from .modeling_ode_resnet import OdeResNetForImageClassification, OdeResNetModel, OdeResNetPreTrainedModel
    from .ode_block import OdeBlock
    from .runtime.auto import register_auto_classes
    from .transform import change_basis, refine, set_num_steps

register_with_transformers()

try:
    __version__ = version("cont-transformer")
except PackageNotFoundError:  # run from a source tree that is not installed
    __version__ = "0.1.0"

# Every public name -> the module that defines it, imported when the name is first asked for.
_LAZY = {
    "BASES": ".basis",
    "fit_points": ".basis",
    "get_basis": ".basis",
    "interpolation_matrix": ".basis",
    "projection_matrix": ".basis",
    "SCHEMES": ".integrators",
    "ButcherTableau": ".integrators",
    "get_scheme": ".integrators",
    "odeint": ".integrators",
    "OdeBlock": ".ode_block",
    "change_basis": ".transform",
    "refine": ".transform",
    "set_num_steps": ".transform",
    "ContTransformerConfig": ".configuration_cont_transformer",
    "PRESETS": ".configuration_ode_resnet",
    "OdeResNetConfig": ".configuration_ode_resnet",
    "NORMALIZATION_STATS": ".image_processing_ode_resnet",
    "OdeResNetImageProcessor": ".image_processing_ode_resnet",
    "write_model_card": ".model_card",
    "ContTransformerForMaskedLM": ".modeling_cont_transformer",
    "ContTransformerForTokenClassification": ".modeling_cont_transformer",
    "ContTransformerModel": ".modeling_cont_transformer",
    "ContTransformerPreTrainedModel": ".modeling_cont_transformer",
    "OdeResNetForImageClassification": ".modeling_ode_resnet",
    "OdeResNetModel": ".modeling_ode_resnet",
    "OdeResNetPreTrainedModel": ".modeling_ode_resnet",
    "register_auto_classes": ".runtime.auto",
    # The tagging application's entry points.
    "Document": ".tagging.document",
    "Tagger": ".tagging.tag",
    "build_tokenizer": ".text.tokenization",
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
    "Document",
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
    "register_auto_classes",
    "set_num_steps",
    "tag",
    "write_model_card",
]
