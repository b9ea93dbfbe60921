"""Shared tiny models of the tests, defined once (as transformers' model testers do).

Fixtures that return factories: a test asks for ``tiny_tagger`` and calls it with the
keyword overrides it changes from the tiny default, so the numbers that matter to it stay
visible where it asserts. The factories are pure, so the fixtures are session-scoped and
module-scoped fixtures may use them. Their words, tags and label maps are in ``tiny.py``.
"""

import pytest
import torch
from tiny import TAGS, WORDS, labels

from cont_transformer import (
    ContTransformerConfig,
    ContTransformerForTokenClassification,
    OdeResNetConfig,
)


def _tiny_tagger_config(**overrides) -> ContTransformerConfig:
    """A continuous tagger of width 16 over ``tiny.WORDS`` (and the three special tokens),
    tagging ``tiny.TAGS``, with K = 3; ``overrides`` replace any field."""
    options = {
        "vocab_size": len(WORDS) + 3,
        "hidden_size": 16,
        "num_attention_heads": 2,
        "intermediate_size": 24,
        "num_basis": 3,
        **labels(TAGS),
    }
    return ContTransformerConfig(**{**options, **overrides})


def _tiny_tagger(seed=0, **overrides) -> ContTransformerForTokenClassification:
    """A :func:`_tiny_tagger_config` model initialised from ``seed``, in eval mode."""
    torch.manual_seed(seed)
    return ContTransformerForTokenClassification(_tiny_tagger_config(**overrides)).eval()


def _tiny_ode_resnet_config(**overrides) -> OdeResNetConfig:
    """A one-channel ODE-ResNet of two stages (4 and 6 channels) over three classes, K = 3."""
    values = {
        "num_channels": 1,
        "stage_channels": [4, 6],
        "stage_strides": [1, 2],
        "num_labels": 3,
        "num_basis": 3,
    }
    return OdeResNetConfig(**{**values, **overrides})


@pytest.fixture(scope="session")
def tiny_tagger_config():
    """``tiny_tagger_config(**overrides)``: the config of the tiny continuous tagger."""
    return _tiny_tagger_config


@pytest.fixture(scope="session")
def tiny_tagger():
    """``tiny_tagger(seed=0, **overrides)``: the tiny continuous tagger, in eval mode."""
    return _tiny_tagger


@pytest.fixture(scope="session")
def tiny_ode_resnet_config():
    """``tiny_ode_resnet_config(**overrides)``: the config of the tiny one-channel ODE-ResNet."""
    return _tiny_ode_resnet_config
