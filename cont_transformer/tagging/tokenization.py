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
from transformers.tokenization_utils_base import VERY_LARGE_INTEGER

PAD_TOKEN = "[PAD]"
UNK_TOKEN = "[UNK]"
ROOT_TOKEN = "[ROOT]"
SPECIAL_TOKENS = (PAD_TOKEN, UNK_TOKEN, ROOT_TOKEN)


def build_tokenizer(
    words: Iterable[str], model_max_length: int | None = None
) -> PreTrainedTokenizerFast:
    """A ``PreTrainedTokenizerFast`` over ``words`` (the training vocabulary).

    Ids: ``[PAD]`` = 0, ``[UNK]`` = 1, ``[ROOT]`` = 2, then the distinct words in first-seen
    order. Save it next to the model with ``tokenizer.save_pretrained(folder)``.

    ``model_max_length`` None (the default) sets no limit, and that is what a tagger's
    tokenizer should have: the ``token-classification`` pipeline truncates every input
    to ``model_max_length`` without a word of warning. Sinusoidal positions take any
    length; a model with learned positions refuses a longer input itself, with an error,
    and ``tag()`` and evaluation cut long sentences into windows.

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
        model_max_length=VERY_LARGE_INTEGER if model_max_length is None else model_max_length,
        model_input_names=["input_ids", "attention_mask"],
    )
