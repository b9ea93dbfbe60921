"""Tokenizers for tagging pre-split sentences: whole words, or whole words and their spelling.

:func:`build_tokenizer` makes a standard ``tokenizers`` tokenizer (saved as
``tokenizer.json``, loaded by ``AutoTokenizer``, no custom class) over the training words:

* ``spelling=False`` (the paper's word-only model): a word-level vocabulary of the training
  words; every word is one token, and a word outside the vocabulary is ``[UNK]``.
* ``spelling=True`` (the spelling representations, e.g. ``"word+chars"``): a WordPiece
  vocabulary that also holds every character seen in training, both as a word-initial
  piece (``"s"``) and as a continuation piece (``"##s"``). A training word is still one
  token; an unknown word splits into pieces whose characters concatenate to its spelling
  (``"zebras"`` -> ``"ze"``, ``"##b"``, ``"##r"``, ...; the first piece is the longest
  training word or character it starts with), so the model can read the spelling of any
  word from ``input_ids`` alone (:func:`spelling_tables` gives the model what it needs for
  that). Only a word with a character never seen in training is still ``[UNK]``.

Continuation prefix. ``##`` as in BERT, or a longer run of ``#`` when a training word
starts with ``##`` (:func:`new_continuation_prefix`), so that no training word is read as
a continuation piece (``##s`` stays one word); it is the WordPiece model's
``continuing_subword_prefix`` in ``tokenizer.json``, and every reader takes it from there
(:func:`continuation_prefix`). A tokenizer whose pieces carry the prefix ``" ##"``
(:data:`SPACED_CONTINUATION_PREFIX`, a space no word contains) loads and tokenizes the
same. A word outside the training vocabulary that starts with the prefix
is ``[UNK]`` to the tagger (:func:`encode_words`).

Long words. WordPiece's greedy longest-match costs more than the square of a word's
length, so the spelling tokenizer spells words of up to :data:`MAX_INPUT_CHARS_PER_WORD`
characters (or the longest training word) and makes a longer one ``[UNK]``;
:func:`word_shortener` gives the tagger a function that cuts a long word to the
characters the model reads anyway (its first and last ones, as the character CNN clips
them), so a word of any length is tagged in bounded time, exactly as if it were whole.

Raw text. A tagger is trained on UD words, so the saved tokenizer pre-tokenizes raw text
into UD-like words (:func:`ud_pre_tokenizer`, a ``tokenizers`` ``Split``): the English word rule
of the package's one segmenter (``text_segmentation.py``, which the ``Tagger``, ``tag.py``
and the saved pipeline split raw text with): punctuation apart, English clitics split off
as the English treebanks do (``didn't`` -> ``did n't``, ``Tom's`` -> ``Tom 's``),
abbreviations (``U.S.``, ``Mr.``, ``e.g.``), numbers (``3.5``, ``1,000``) whole. So
``pipeline("token-classification", model=folder)`` on raw text sees the words the model
was trained on. The training, the evaluation and the tagger encode their words whole
(:func:`encode_words` sets the pre-tokenizer aside: a given word is one word for the
model, whatever its punctuation). Called directly with ``is_split_into_words=True``, the
tokenizer pre-tokenizes each word too, which keeps nearly every treebank word whole (not
``1.`` or a URL). A saved tokenizer keeps the pre-tokenizer it was saved with.

A root token is prepended to every sentence (as in the reference code): a position every
word can attend to. It is a special token, so its ``word_ids`` entry is None and it gets
no tag. Ids: ``[PAD]`` = 0, ``[UNK]`` = 1, ``[ROOT]`` = 2, then the training words in
first-seen order, then (with ``spelling``) the characters that are not words themselves,
then the continuation pieces.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Collection, Iterable
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
from transformers import AutoTokenizer, PreTrainedTokenizerBase, PreTrainedTokenizerFast
from transformers.tokenization_utils_base import VERY_LARGE_INTEGER

from ..pretrained import check_no_custom_code
from ..text_segmentation import word_pre_tokenizer

# Written once, for a saved tagger's pipeline (remote code) too: the continuation prefix
# read from a tokenizer, words kept whole, long words cut.
from ..word_encoding import SPACE_IN_WORD, continuation_prefix
from ..word_representation import NUM_RESERVED_CHARS, clip_spelling

PAD_TOKEN = "[PAD]"
UNK_TOKEN = "[UNK]"
ROOT_TOKEN = "[ROOT]"
MASK_TOKEN = "[MASK]"  # a masked language model's tokenizers only (mask=True), id 3
SPECIAL_TOKENS = (PAD_TOKEN, UNK_TOKEN, ROOT_TOKEN)
# Longer words are [UNK] for the spelling tokenizer (unless a training word is longer):
# WordPiece's time grows faster than the square of a word's length. The tagger shortens
# long words first (word_shortener), so it spells words of any length.
MAX_INPUT_CHARS_PER_WORD = 256


def ud_pre_tokenizer() -> pre_tokenizers.PreTokenizer:
    """The English word rule of the package's one segmenter (written once, for the Tagger,
    tag.py and the pipeline a saved folder carries), then whitespace dropped: raw text into
    UD-like words (module docstring)."""
    return word_pre_tokenizer("en")


def new_continuation_prefix(words: Iterable[str]) -> str:
    """The continuation prefix of a new spelling tokenizer over ``words``: ``"##"``, or the
    shortest longer run of ``#`` that no word starts with (``"###"`` when ``"##s"`` is a
    word), so that no word can be taken for a continuation piece."""
    run = max((len(word) - len(word.lstrip("#")) for word in words), default=0)
    return "#" * max(2, run + 1)


def build_tokenizer(
    words: Iterable[str], model_max_length: int | None = None, spelling: bool = False, mask: bool = False
) -> PreTrainedTokenizerFast:
    """A ``PreTrainedTokenizerFast`` over ``words`` (the training vocabulary).

    ``spelling`` adds the characters of ``words`` as word-initial and continuation pieces,
    so unknown words split into pieces instead of becoming ``[UNK]`` (see the module
    docstring). Save it next to the model with ``tokenizer.save_pretrained(folder)``.
    ``mask`` adds :data:`MASK_TOKEN` after the other special tokens (a masked language
    model's tokenizer, and the taggers fine-tuned from one, which keep its ids).

    ``model_max_length`` None (the default) sets no limit, and that is what a tagger's
    tokenizer should have: the ``token-classification`` pipeline truncates every input
    to ``model_max_length`` without a word of warning. Sinusoidal positions take any
    length; a model with learned positions refuses a longer input itself, with an error,
    and ``tag()`` and evaluation cut long sentences into windows.

    Example::

        tokenizer = build_tokenizer(["The", "cat", "sat"])
        tokenizer(["The", "dog"], is_split_into_words=True)["input_ids"]  # [2, 3, 1]
        tokenizer = build_tokenizer(["The", "cat", "sat"], spelling=True)
        tokenizer.tokenize("The cats")  # ['The', 'cat', '##s']
    """
    vocab = {token: i for i, token in enumerate((*SPECIAL_TOKENS, *([MASK_TOKEN] if mask else [])))}
    words = list(words)
    if any(SPACE_IN_WORD in word for word in words):  # words written with spaces: encode_words joins them
        vocab.setdefault(SPACE_IN_WORD, len(vocab))
    for word in words:
        if any(c.isspace() for c in word) or not word:
            raise ValueError(f"vocabulary words must be non-empty and without whitespace, got {word!r}")
        vocab.setdefault(word, len(vocab))
    if spelling:
        prefix = new_continuation_prefix(words)
        characters = sorted({c for word in words for c in word})
        for piece in [*characters, *(prefix + c for c in characters)]:
            vocab.setdefault(piece, len(vocab))
        backend = Tokenizer(
            models.WordPiece(
                vocab,
                unk_token=UNK_TOKEN,
                continuing_subword_prefix=prefix,
                max_input_chars_per_word=max(MAX_INPUT_CHARS_PER_WORD, 2 + max(map(len, words), default=0)),
            )
        )
        backend.decoder = decoders.WordPiece(prefix=prefix, cleanup=False)
    else:
        backend = Tokenizer(models.WordLevel(vocab, unk_token=UNK_TOKEN))
    backend.pre_tokenizer = ud_pre_tokenizer()
    backend.post_processor = processors.TemplateProcessing(
        single=f"{ROOT_TOKEN} $A", special_tokens=[(ROOT_TOKEN, vocab[ROOT_TOKEN])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token=PAD_TOKEN,
        unk_token=UNK_TOKEN,
        bos_token=ROOT_TOKEN,
        **({"mask_token": MASK_TOKEN} if mask else {}),
        model_max_length=VERY_LARGE_INTEGER if model_max_length is None else model_max_length,
        model_input_names=["input_ids", "attention_mask"],
    )


TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"


def vocabulary_fingerprint(tokenizer: PreTrainedTokenizerBase) -> str:
    """SHA-256 of the tokenizer's vocabulary (every entry with its id), as a model's config
    records it (``vocab_fingerprint``): two tokenizers that map any word to different ids
    differ in it."""
    entries = sorted(tokenizer.get_vocab().items(), key=lambda entry: (entry[1], entry[0]))
    return hashlib.sha256(json.dumps(entries, ensure_ascii=False).encode("utf-8")).hexdigest()


# The spelling buffers of a model (``WordRepresentation``) that its tokenizer determines
# (:func:`spelling_tables`); ``whole_word`` records the training words, which the tokenizer
# alone does not tell.
TOKENIZER_BUFFERS = ("piece_characters", "piece_lengths", "continuation")


def check_tokenizer(tokenizer: PreTrainedTokenizerBase, config, folder: str | os.PathLike, model=None) -> None:
    """Refuse, in one line naming ``folder``'s tokenizer file, a tokenizer that is not the
    model's: its size differs from ``config``'s ``vocab_size`` (a config object or the dict
    of ``config.json``), or its vocabulary from the ``vocab_fingerprint`` the config records
    (configs saved without one: the size only). Given the ``model`` loaded from ``folder``,
    its spelling buffers (:data:`TOKENIZER_BUFFERS`) must be those the tokenizer gives
    (:func:`spelling_tables`), or the first that is not is named."""
    read = config.get if isinstance(config, dict) else lambda name: getattr(config, name, None)
    vocab_size, fingerprint = read("vocab_size"), read("vocab_fingerprint")
    path = Path(folder) / TOKENIZER_FILE
    if isinstance(vocab_size, int) and len(tokenizer) != vocab_size:
        raise ValueError(
            f"{path}: the tokenizer has {len(tokenizer)} entries but config.json's vocab_size is {vocab_size}; "
            "a model folder's tokenizer is the one its model was trained with"
        )
    if fingerprint is not None and vocabulary_fingerprint(tokenizer) != fingerprint:
        raise ValueError(
            f"{path}: the vocabulary is not the one the model was saved with (its fingerprint differs from "
            "config.json's vocab_fingerprint); a model folder's tokenizer is the one its model was trained with"
        )
    embeddings = getattr(getattr(model, "base_model", None), "embeddings", None)
    if model is None or not hasattr(embeddings, TOKENIZER_BUFFERS[0]):
        return
    tables, _ = spelling_tables(tokenizer, training_words(tokenizer, model), model.config.max_word_length)
    for name in TOKENIZER_BUFFERS:
        buffer = getattr(embeddings, name)
        if not torch.equal(buffer.cpu(), tables[name].to(buffer.dtype)):
            prefix = model.base_model_prefix if model.base_model is not model else ""
            tensor = ".".join(filter(None, (prefix, "embeddings", name)))
            raise ValueError(
                f"{Path(folder)}: buffer {tensor} of the weights is not the spelling of {path} (it is derived from "
                "the tokenizer); the weights and tokenizer of a model folder belong together"
            )


def load_tokenizer(folder: str | os.PathLike, model=None, **options) -> PreTrainedTokenizerFast:
    """The tokenizer saved in a tagger's folder (``AutoTokenizer`` with ``options``); an
    error naming the folder when it holds none, or one that does not load (instead of
    transformers' advice about converting slow tokenizers), and one naming the tokenizer
    file when it is not the model's (:func:`check_tokenizer` against ``config.json``, and
    the spelling buffers of ``model``, the model loaded from ``folder``, when given)."""
    folder = Path(folder)
    if not (folder / TOKENIZER_FILE).is_file():
        raise FileNotFoundError(
            f"{folder}: no {TOKENIZER_FILE} beside the model; a tagger's folder holds the "
            "tokenizer it was trained with (tokenizer.save_pretrained(folder))"
        )
    if not (folder / TOKENIZER_CONFIG_FILE).is_file():  # without it: no [PAD], [UNK] or [ROOT]
        raise FileNotFoundError(
            f"{folder}: no {TOKENIZER_CONFIG_FILE} beside the model (the tokenizer's special tokens); a "
            "tagger's folder holds the tokenizer it was trained with (tokenizer.save_pretrained(folder))"
        )
    check_no_custom_code(folder)
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, **{**options, "trust_remote_code": False})
    except Exception as err:  # noqa: BLE001 (tokenizers' own parse errors are plain Exceptions)
        raise OSError(f"{folder / TOKENIZER_FILE}: the tokenizer does not load ({err})") from None
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = None  # no model beside it (or one whose config fails to load on its own)
    if isinstance(config, dict):
        check_tokenizer(tokenizer, config, folder, model)
    return tokenizer


def character_ids(tokenizer: PreTrainedTokenizerBase) -> dict[str, int]:
    """The character alphabet of a spelling tokenizer's vocabulary: each character its id
    in the model's character embedding (sorted, after the reserved ids)."""
    special, prefix = set(tokenizer.all_special_tokens), continuation_prefix(tokenizer)
    texts = (token.removeprefix(prefix) for token in tokenizer.get_vocab() if token not in special)
    return {c: NUM_RESERVED_CHARS + i for i, c in enumerate(sorted(set("".join(texts))))}


def spelling_tables(
    tokenizer: PreTrainedTokenizerBase, words: Collection[str], max_word_length: int
) -> tuple[dict[str, torch.Tensor], int]:
    """What a spelling model must know of each id of ``tokenizer`` (from :func:`build_tokenizer`
    with ``spelling=True``), and the size of its character alphabet.

    Returns the keyword arguments of ``WordRepresentation.set_spelling``
    (``model.cont_transformer.embeddings.set_spelling(**tables)``): ``piece_characters``
    ``(vocab, max_word_length)`` (each id's characters, clipped), ``piece_lengths``,
    ``continuation`` and ``whole_word`` ``(vocab,)`` (training words in ``words`` and special
    tokens), and ``char_vocab_size`` for the config: the characters of the vocabulary in
    sorted order, after the model's reserved ids.
    """
    vocab = tokenizer.get_vocab()
    special, prefix = set(tokenizer.all_special_tokens), continuation_prefix(tokenizer)
    texts = {token: token.removeprefix(prefix) for token in vocab if token not in special}
    alphabet = {c: NUM_RESERVED_CHARS + i for i, c in enumerate(sorted(set("".join(texts.values()))))}
    size = len(tokenizer)
    # Filled as lists and made tensors once: a tagger's load recomputes them (check_tokenizer).
    characters, lengths = [[0] * max_word_length for _ in range(size)], [0] * size
    continuation, whole_word = [False] * size, [False] * size
    for token, index in vocab.items():
        if token in special:
            whole_word[index] = True
            continue
        spelt = clip_spelling([alphabet[c] for c in texts[token]], max_word_length)
        characters[index][: len(spelt)] = spelt
        lengths[index] = len(spelt)
        continuation[index] = token.startswith(prefix)
        whole_word[index] = token in words and not continuation[index]
    tables = {
        "piece_characters": torch.tensor(characters, dtype=torch.int32).reshape(size, max_word_length),
        "piece_lengths": torch.tensor(lengths, dtype=torch.int32),
        "continuation": torch.tensor(continuation, dtype=torch.bool),
        "whole_word": torch.tensor(whole_word, dtype=torch.bool),
    }
    return tables, NUM_RESERVED_CHARS + len(alphabet)


def training_words(tokenizer: PreTrainedTokenizerBase, model) -> set[str]:
    """The training words of a tagger built by the trainer, read from its tokenizer and model:
    every vocabulary entry but the special tokens for the word-level tokenizer, the entries
    the model marks as whole words (``whole_word``) for the spelling tokenizer."""
    special = set(tokenizer.all_special_tokens)
    whole_word = getattr(model.base_model.embeddings, "whole_word", None)
    whole_word = None if whole_word is None else whole_word.tolist()
    return {
        token
        for token, index in tokenizer.get_vocab().items()
        if token not in special and (whole_word is None or whole_word[index])
    }
