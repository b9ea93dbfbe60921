"""cont-transformer: continuous-in-depth networks (Stateful ODE-Nets) on PyTorch.

Importing the package registers the continuous transformer with the transformers
Auto classes (``AutoConfig``, ``AutoModel``, ``AutoModelForTokenClassification``) and
marks it for remote code, so ``save_pretrained`` folders also load with
``trust_remote_code=True`` where this package is not installed.
"""

from transformers import AutoConfig, AutoModel, AutoModelForTokenClassification

from .basis import BASES, fit_points, get_basis, interpolation_matrix, projection_matrix
from .configuration_cont_transformer import ContTransformerConfig
from .integrators import SCHEMES, ButcherTableau, get_scheme, odeint
from .model_card import write_model_card
from .modeling_cont_transformer import (
    ContTransformerForTokenClassification,
    ContTransformerModel,
    ContTransformerPreTrainedModel,
)
from .ode_block import OdeBlock
from .tagging.tag import tag
from .tagging.tokenization import build_tokenizer
from .transform import change_basis, refine, set_num_steps

AutoConfig.register(ContTransformerConfig.model_type, ContTransformerConfig, exist_ok=True)
AutoModel.register(ContTransformerConfig, ContTransformerModel, exist_ok=True)
AutoModelForTokenClassification.register(
    ContTransformerConfig, ContTransformerForTokenClassification, exist_ok=True
)
ContTransformerConfig.register_for_auto_class()
ContTransformerModel.register_for_auto_class("AutoModel")
ContTransformerForTokenClassification.register_for_auto_class("AutoModelForTokenClassification")

__all__ = [
    "BASES",
    "SCHEMES",
    "ButcherTableau",
    "ContTransformerConfig",
    "ContTransformerForTokenClassification",
    "ContTransformerModel",
    "ContTransformerPreTrainedModel",
    "OdeBlock",
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
