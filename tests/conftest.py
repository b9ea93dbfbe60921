"""Shared tiny models of the tests, defined once (as transformers' model testers do).

Plain helpers, imported by the test files (``from conftest import tiny_tagger``): a test
states what it changes from the tiny default as keyword overrides, so the numbers that
matter to it stay visible where it asserts.
"""

import torch

from cont_transformer import (
    ContTransformerConfig,
    ContTransformerForTokenClassification,
    OdeResNetConfig,
)

TAGS = ["DT", "NN", "VB", "IN", "."]
WORDS = ["the", "cat", "dog", "sat", "ran", "on", "a", "mat", "."]


def labels(tags) -> dict:
    """``id2label`` and ``label2id`` of a config over ``tags``."""
    return {"id2label": dict(enumerate(tags)), "label2id": {tag: i for i, tag in enumerate(tags)}}


def tiny_tagger_config(**overrides) -> ContTransformerConfig:
    """A continuous tagger of width 16 over :data:`WORDS` (and the three special tokens),
    tagging :data:`TAGS`, with K = 3; ``overrides`` replace any field."""
    options = {
        "vocab_size": len(WORDS) + 3,
        "hidden_size": 16,
        "num_attention_heads": 2,
        "intermediate_size": 24,
        "num_basis": 3,
        **labels(TAGS),
    }
    return ContTransformerConfig(**{**options, **overrides})


def tiny_tagger(seed=0, **overrides) -> ContTransformerForTokenClassification:
    """A :func:`tiny_tagger_config` model initialised from ``seed``, in eval mode."""
    torch.manual_seed(seed)
    return ContTransformerForTokenClassification(tiny_tagger_config(**overrides)).eval()


def tiny_ode_resnet_config(**overrides) -> OdeResNetConfig:
    """A one-channel ODE-ResNet of two stages (4 and 6 channels) over three classes, K = 3."""
    values = {
        "num_channels": 1,
        "stage_channels": [4, 6],
        "stage_strides": [1, 2],
        "num_labels": 3,
        "num_basis": 3,
    }
    return OdeResNetConfig(**{**values, **overrides})
