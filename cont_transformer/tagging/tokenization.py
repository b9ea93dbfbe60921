"""A word-level tokenizer for tagging pre-split sentences.

Each whitespace-separated word is one token; words outside the training vocabulary
become ``[UNK]``. A root token is prepended to every sentence (as in the reference
code): a position every word can attend to. It is a special token, so its
``word_ids`` entry is None and it gets no tag.
"""

from __future__ import annotations

from collections.abc import Iterable

from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

PAD_TOKEN = "[PAD]"
UNK_TOKEN = "[UNK]"
ROOT_TOKEN = "[ROOT]"
SPECIAL_TOKENS = (PAD_TOKEN, UNK_TOKEN, ROOT_TOKEN)


def build_tokenizer(words: Iterable[str], model_max_length: int = 512) -> PreTrainedTokenizerFast:
    """A ``PreTrainedTokenizerFast`` over ``words`` (the training vocabulary).

    Ids: ``[PAD]`` = 0, ``[UNK]`` = 1, ``[ROOT]`` = 2, then the distinct words in first-seen
    order. ``model_max_length`` should match the model's ``max_position_embeddings``.
    Save it next to the model with ``tokenizer.save_pretrained(folder)``.

    Example::

        tokenizer = build_tokenizer(["The", "cat", "sat"])
        tokenizer(["The", "dog"], is_split_into_words=True)["input_ids"]  # [2, 3, 1]
    """
    vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS)}
    for word in words:
        if any(c.isspace() for c in word) or not word:
            raise ValueError(f"vocabulary words must be non-empty and without whitespace, got {word!r}")
        vocab.setdefault(word, len(vocab))
    backend = Tokenizer(models.WordLevel(vocab, unk_token=UNK_TOKEN))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.post_processor = processors.TemplateProcessing(
        single=f"{ROOT_TOKEN} $A", special_tokens=[(ROOT_TOKEN, vocab[ROOT_TOKEN])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token=PAD_TOKEN,
        unk_token=UNK_TOKEN,
        bos_token=ROOT_TOKEN,
        model_max_length=model_max_length,
        model_input_names=["input_ids", "attention_mask"],
    )
