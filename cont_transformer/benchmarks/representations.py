"""The input representations' case of the benchmark: measure 10.

The ``"word+chars"`` representation (word embeddings plus a character CNN over each word's
spelling) against the word-only model, a training step and inference at K = N_T = 16 on
sentences like English-GUM's [ratio <= 1.5]. The workloads are :mod:`.transformer`'s.
"""

from __future__ import annotations

import random
import string

import torch

from ..configuration_cont_transformer import ContTransformerConfig
from ..modeling_cont_transformer import ContTransformerForTokenClassification
from ..runtime.measuring import Case, Workload
from ..tagging.arguments import TrainingArguments
from ..text.batching import PaddingCollator, encode_for_training
from ..text.tokenization import build_tokenizer, spelling_tables
from .transformer import inference, recipe_optimizer
from .workloads import training_step

# Measure 10: the input representations on sentences like English-GUM's (about 17 words,
# 7% of them unseen in train) at the tagging recipe's K = N_T = 16 and character CNN width.
REPRESENTATION_SIZES = {
    "quick": {
        "batch_size": 2,
        "min_words": 3,
        "max_words": 8,
        "hidden_size": 16,
        "vocab_size": 100,
        "num_labels": 8,
        "num_basis": 2,
        "unseen_rate": 0.1,
        "char_hidden_size": 16,
    },
    "full": {
        "batch_size": 64,
        "min_words": 5,
        "max_words": 30,
        "hidden_size": 128,
        "vocab_size": 5000,
        "num_labels": 46,
        "num_basis": 16,
        "unseen_rate": 0.07,
        "char_hidden_size": TrainingArguments.char_hidden_size,
    },
}


def _random_word(rng: random.Random) -> str:
    return "".join(rng.choices(string.ascii_letters, k=rng.randint(1, 12)))


def representation_batch(
    word_representation: str, sizes: dict, device: torch.device
) -> tuple[ContTransformerForTokenClassification, dict[str, torch.Tensor]]:
    """A tagger with ``word_representation`` and its tokenizer's batch of random sentences:
    words drawn from a random training vocabulary with Zipf's frequencies, ``unseen_rate``
    of them new (the same sentences for every representation), tags on each word's first
    token."""
    rng = random.Random(0)
    vocabulary = sorted({_random_word(rng) for _ in range(sizes["vocab_size"])})
    rng.shuffle(vocabulary)
    zipf = [1 / rank for rank in range(1, len(vocabulary) + 1)]  # word frequencies as in text
    sentences = [
        [
            _random_word(rng) if rng.random() < sizes["unseen_rate"] else rng.choices(vocabulary, zipf)[0]
            for _ in range(rng.randint(sizes["min_words"], sizes["max_words"]))
        ]
        for _ in range(sizes["batch_size"])
    ]
    tags = [[rng.randrange(sizes["num_labels"]) for _ in sentence] for sentence in sentences]
    tokenizer = build_tokenizer(vocabulary, spelling=word_representation != "word")
    rows, _ = encode_for_training(tokenizer, sentences, tags, max_length=sizes["max_words"] + 1)
    batch = PaddingCollator(tokenizer.pad_token_id)(rows)  # tags on each word's first token
    spelling, char_vocab_size = None, ContTransformerConfig.char_vocab_size
    if word_representation != "word":
        spelling, char_vocab_size = spelling_tables(tokenizer, set(vocabulary), ContTransformerConfig.max_word_length)
    config = ContTransformerConfig(
        vocab_size=len(tokenizer),
        hidden_size=sizes["hidden_size"],
        intermediate_size=sizes["hidden_size"],
        num_basis=sizes["num_basis"],
        unk_token_id=tokenizer.unk_token_id,
        word_representation=word_representation,
        char_vocab_size=char_vocab_size,
        char_hidden_size=sizes["char_hidden_size"],
        id2label={i: f"TAG{i}" for i in range(sizes["num_labels"])},
    )
    torch.manual_seed(0)
    model = ContTransformerForTokenClassification(config)
    if spelling is not None:
        model.cont_transformer.embeddings.set_spelling(**spelling)
    return model.to(device), {key: value.to(device) for key, value in batch.items()}


def representation_training(word_representation: str, sizes: dict, device: torch.device) -> Workload:
    """A training step of the tagger with ``word_representation`` (see :func:`representation_batch`)."""
    model, batch = representation_batch(word_representation, sizes, device)
    name = f"{word_representation} K=N_T={sizes['num_basis']}"
    return training_step(name, model, lambda: model(**batch).loss, recipe_optimizer(model), batch)


def representation_inference(word_representation: str, sizes: dict, device: torch.device) -> Workload:
    """Inference of the tagger with ``word_representation`` (see :func:`representation_batch`)."""
    model, batch = representation_batch(word_representation, sizes, device)
    workload = inference(model, batch)
    workload.name = f"inference {word_representation} K=N_T={sizes['num_basis']}"
    return workload


def representation_cases(mode: str, device: torch.device) -> list[Case]:
    """Measure 10: the training step and the inference of the ``"word+chars"`` representation
    against the word-only model, on the same sentences."""
    sizes = REPRESENTATION_SIZES[mode]
    grid = f"K=N_T={sizes['num_basis']}"
    return [
        Case(
            f"{name}_word_chars_vs_word",
            10,
            f"{what}, word+chars vs word representation, {grid}",
            lambda workload=workload: (workload("word+chars", sizes, device), workload("word", sizes, device)),
            1.5,
            "ratio <= 1.5",
            sizes=sizes,
        )
        for name, what, workload in (
            ("train", "training step", representation_training),
            ("inference", "inference", representation_inference),
        )
    ]


__all__ = ["representation_cases"]
