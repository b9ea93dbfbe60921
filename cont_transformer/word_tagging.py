"""What turns a tagger's outputs into the CoNLL-U columns of words, written once for the
package's ``Tagger`` and for the pipeline a saved folder carries (docs/design.md §6, §10).

Remote code (``trust_remote_code=True``) copies the model's files and the files they reach
through one-level relative imports, flat, into the user's module cache; this module is
one of them (``pipeline_cont_transformer.py`` imports it), so it imports only torch,
``tokenizers`` (a dependency of transformers) and the configuration module. The tagging
application (``tagging/tag.py``, ``lemmas.py``, ``columns.py``, ``batching.py``,
``tokenization.py``) imports every name below from here.

* Words to tokens: :func:`encode_words` keeps each given word whole (the saved
  tokenizer's raw-text pre-tokenizer set aside); :func:`word_shortener` cuts a word too
  long to spell quickly without changing what the model computes for it;
  :func:`continuation_prefix` reads the prefix of a tokenizer's continuation pieces.
* Long sentences: :func:`evaluation_windows` covers a sentence longer than the model's
  ``max_position_embeddings`` with overlapping windows, each word scored in one, with
  :func:`seam_context` words of context on either side at the seams (linear time).
* Batches: :func:`token_batches` groups rows by a token budget, longest first.
* Decoding: :func:`model_column_labels` / :func:`parsed_labels` read a config's columns
  and labels; :func:`combination_index` and :func:`predicted_label_ids` decode UPOS, XPOS
  and FEATS jointly over the triples seen in training (``config.tag_combinations``), or
  each head alone; :func:`decode_column` turns label ids into values: a lemma by applying
  the predicted edit script to the word (:func:`apply_script`, :class:`EditScript`; how
  scripts are learnt is ``tagging/lemmas.py``), or by one of its next likeliest scripts
  (:func:`lemma_candidates`) where that makes a word of the tokenizer's vocabulary and
  the likeliest does not (:func:`choose_lemma`, :func:`vocabulary_words`), factored
  features assembled into one canonical FEATS string (:func:`canonical_feats`);
  :func:`decode_columns` decodes a sentence's every column, a word of the lemma lexicon
  (``config.lemma_lexicon``) taking its lemma from there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise

import torch
from tokenizers import models, pre_tokenizers

from .configuration_cont_transformer import ABSENT_FEATURE, JOINT_COLUMNS, feature_groups

# --- words to tokens ------------------------------------------------------------------------

# The continuation prefix of spelling tokenizers saved before the prefix was a run of "#"
# (``text/tokenization.py``): a space, which no word contains, so that no word could be
# read as a continuation piece. :func:`continuation_prefix` still reads it for them.
LEGACY_CONTINUATION_PREFIX = " ##"


def continuation_prefix(tokenizer) -> str:
    """The prefix that marks ``tokenizer``'s continuation pieces: its WordPiece model's
    ``continuing_subword_prefix`` (``"##"`` for a spelling tokenizer built now, a longer run
    of ``#`` when a training word starts with ``##``), else :data:`LEGACY_CONTINUATION_PREFIX`,
    which no entry of any other tokenizer starts with (a word-level vocabulary, a slow
    tokenizer, an empty prefix), so stripping it changes nothing there, as before."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    model = getattr(backend, "model", None)
    prefix = model.continuing_subword_prefix if isinstance(model, models.WordPiece) else None
    return prefix or LEGACY_CONTINUATION_PREFIX


def encode_words(tokenizer, sentences: Sequence[Sequence[str]], **options):
    """``tokenizer(sentences, is_split_into_words=True, **options)`` with each given word kept whole: the
    raw-text pre-tokenizer (``text/tokenization.py``, ``UD_WORDS``) is replaced by a whitespace split
    meanwhile.

    A given word that starts with the continuation prefix (``##x`` for a tokenizer whose prefix is
    ``##``; no training word does) is encoded as ``[UNK]``: WordPiece would match a continuation piece
    at its start, and the model, which finds words by their continuation pieces, would read it as the
    end of the word before. The raw-text pre-tokenizer never makes such a word (it splits ``#`` off)."""
    prefix, unknown = continuation_prefix(tokenizer), getattr(tokenizer, "unk_token", None)
    sentences = [list(words) for words in sentences]
    if unknown is not None and not prefix[:1].isspace():
        sentences = [[unknown if word.startswith(prefix) else word for word in words] for words in sentences]
    backend = getattr(tokenizer, "backend_tokenizer", None)
    saved = backend.pre_tokenizer if backend is not None else None
    if backend is not None:
        backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    try:
        return tokenizer(sentences, is_split_into_words=True, **options)
    finally:
        if backend is not None:
            backend.pre_tokenizer = saved


def word_shortener(tokenizer, max_word_length: int) -> Callable[[str], str] | None:
    """A function that cuts a word too long to tokenize quickly, without changing what a
    spelling model computes for it; None for a tokenizer that is not WordPiece (a
    word-level vocabulary looks a word up in constant time) or whose continuation pieces
    are not single characters (not a spelling tokenizer: its own ``max_input_chars_per_word``
    bounds the time, and a cut word would split into other pieces).

    A word longer than ``limit`` (one more than the longest vocabulary entry, and at
    least ``max_word_length``, the characters the model reads) keeps its first ``limit -
    limit // 2`` and last ``limit // 2`` characters: the model reads the same clipped
    spelling (``word_representation.clip_spelling``) and the word is still no training
    word. A character the vocabulary lacks, from the cut middle, is kept so that such a
    word stays ``[UNK]``.
    """
    backend = tokenizer.backend_tokenizer.model if tokenizer.is_fast else None
    if not isinstance(backend, models.WordPiece):
        return None
    special, prefix = set(tokenizer.all_special_tokens), continuation_prefix(tokenizer)
    vocab = [t for t in tokenizer.get_vocab() if t not in special]
    if any(len(t) - len(prefix) > 1 for t in vocab if t.startswith(prefix)):
        return None  # not a spelling tokenizer (pieces of several characters): cutting would change its pieces
    texts = [t.removeprefix(prefix) for t in vocab]
    alphabet = set("".join(texts))
    limit = max(1 + max(map(len, texts), default=0), max_word_length)
    limit = min(limit, backend.max_input_chars_per_word - 1)
    head, tail = limit - limit // 2, limit // 2

    def shorten(word: str) -> str:
        if len(word) <= limit:
            return word
        middle = word[head : len(word) - tail]
        unknown = next((c for c in middle if c not in alphabet), "")
        return word[:head] + unknown + word[len(word) - tail :]

    return shorten


# --- long sentences and batches ---------------------------------------------------------------


def seam_context(capacity: int) -> int:
    """The words of context :func:`evaluation_windows` keeps on either side of a seam for
    windows of ``capacity`` positions: an eighth of a window, rounded up (16 words for the
    127 words of a model trained on 128 positions), at most what leaves a window one
    position of its own.

    Why an eighth: on UD English-GUM dev run together into one sentence, 16 words of context
    tag 0.1 point fewer words right than the half-window overlap used before, for 1.34 times
    the work of the words alone instead of 2 (docs/experiments.md, "One long sentence")."""
    return min(-(-capacity // 8), (capacity - 1) // 2)


def evaluation_windows(length: int, capacity: int, context: int | None = None) -> list[tuple[int, int, int]]:
    """Cover positions ``0 .. length-1`` with windows of at most ``capacity`` positions.

    Returns ``(start, owned_start, owned_end)`` per window: the window spans
    ``[start, start + capacity)`` and scores positions ``[owned_start, owned_end)``; the
    owned ranges partition ``[0, length)``, in order. A sequence of at most ``capacity``
    positions is one window.

    Seams. A longer one gets ``1 + ceil((length - capacity) / (capacity - 2 * context))``
    windows of exactly ``capacity`` positions, spread evenly from the first position to the
    last, so that neighbours overlap by at least ``2 * context``; each position is owned by
    the window where it is farthest from an edge (ties: the earlier), which cuts each
    overlap in its middle. So every position is scored with at least ``context`` positions
    of its window on either side, or as many as the sequence has there, and each window
    scores about ``capacity - 2 * context`` positions: the work is linear in ``length``,
    ``capacity / (capacity - 2 * context)`` times that of scoring each position once
    (1.34 for the default :func:`seam_context` of 127 positions, 16).
    ``context`` defaults to :func:`seam_context`; it must leave each window one position
    of its own (``0 <= 2 * context < capacity``).
    """
    if capacity < 1:
        raise ValueError(f"capacity must be >= 1, got {capacity}")
    context = seam_context(capacity) if context is None else context
    if not 0 <= 2 * context < capacity:
        raise ValueError(
            f"context must be >= 0 and leave a window of {capacity} positions one of its own, got {context}"
        )
    if length <= capacity:
        return [(0, 0, length)]
    gaps = -(-(length - capacity) // (capacity - 2 * context))  # windows - 1
    starts = [(number * (length - capacity)) // gaps for number in range(gaps + 1)]
    # Between windows starting at a < b, position j is farther from an edge of the earlier
    # one while a + capacity - 1 - j >= j - b: the seam is the middle of their overlap.
    seams = [(a + b + capacity - 1) // 2 + 1 for a, b in pairwise(starts)]
    return list(zip(starts, [0, *seams], [*seams, length]))


def token_batches(lengths: Sequence[int], batch_size: int) -> Iterator[list[int]]:
    """Indices of rows of ``lengths`` tokens in batches of at most ``batch_size`` tokens,
    padding included: longest rows first, each batch as many rows as fit (a row longer
    than ``batch_size`` alone)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batch: list[int] = []
    for i in order:
        if batch and (len(batch) + 1) * lengths[batch[0]] > batch_size:
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


# --- lemma scripts: applying them -------------------------------------------------------------

CASINGS = ("lower", "keep", "title", "upper")
_SCRIPT_TEXT = re.compile(r"(lower|keep|title|upper)\|-(\d+)\+(.*?)\|-(\d+)\+(.*)", re.DOTALL)


@dataclass(frozen=True)
class EditScript:
    """Turns a form into a lemma (``tagging/lemmas.py`` says how); ``absolute`` set: the
    lemma is that string whatever the form."""

    casing: str = "keep"
    prefix_strip: int = 0
    prefix_add: str = ""
    suffix_strip: int = 0
    suffix_add: str = ""
    absolute: str | None = None

    def __str__(self) -> str:
        if self.absolute is not None:
            return f"={self.absolute}"
        return f"{self.casing}|-{self.prefix_strip}+{self.prefix_add}|-{self.suffix_strip}+{self.suffix_add}"

    @property
    def cost(self) -> int:
        """Characters stripped and added (how specific the script is to its form)."""
        if self.absolute is not None:
            return 2 * len(self.absolute) + 1  # worse than any rewrite that adds the same
        return self.prefix_strip + len(self.prefix_add) + self.suffix_strip + len(self.suffix_add)


def parse_script(text: str) -> EditScript:
    """The script written as ``text`` (``ValueError`` naming it if malformed)."""
    if text.startswith("="):
        return EditScript(absolute=text[1:])
    match = _SCRIPT_TEXT.fullmatch(text)
    if match is None:
        raise ValueError(f"lemma script: cannot read {text!r} (expected 'casing|-P+text|-S+text' or '=lemma')")
    casing, prefix_strip, prefix_add, suffix_strip, suffix_add = match.groups()
    return EditScript(casing, int(prefix_strip), prefix_add, int(suffix_strip), suffix_add)


def cased(form: str, casing: str) -> str:
    """The form a script's rewrite starts from."""
    return form if casing == "keep" else form.lower()


def finish(text: str, casing: str) -> str:
    """A rewrite's result under the script's casing."""
    if casing == "title":
        return text[:1].upper() + text[1:]
    if casing == "upper":
        return text.upper()
    return text


def apply_script(script: EditScript | str, form: str) -> str:
    """The lemma ``script`` gives ``form``; the form under the script's casing alone where
    the script would strip all of it (a learned rewrite always keeps the characters its
    form and lemma share, at least one)."""
    if isinstance(script, str):
        script = parse_script(script)
    if script.absolute is not None:
        return script.absolute
    source = cased(form, script.casing)
    if script.prefix_strip + script.suffix_strip >= len(source):
        return finish(source, script.casing)
    stem = source[script.prefix_strip : len(source) - script.suffix_strip]
    return finish(script.prefix_add + stem + script.suffix_add, script.casing)


# --- lemma scripts: choosing one ---------------------------------------------------------------

# A word the lemma lexicon lacks takes the script its lemma head finds likeliest, unless that
# script makes a word the tokenizer's vocabulary lacks (``endorsed -> endors``) and one of the
# next likeliest, at most ``exp(LEMMA_MARGIN)`` times less likely, makes a word it holds
# (``endorse``): a vocabulary built from text (docs/experiments.md, "Lemmas the vocabulary
# knows") knows the words a lemma can be. LEMMA_CANDIDATES scripts are kept per word.
LEMMA_CANDIDATES = 3
LEMMA_MARGIN = 3.0
NO_CANDIDATE = -1  # a kept place whose script is more than the margin less likely


def lemma_candidates(logits: torch.Tensor) -> torch.Tensor:
    """``(batch, seq, LEMMA_CANDIDATES)`` script ids from a lemma head's ``(batch, seq,
    scripts)`` logits, likeliest first; :data:`NO_CANDIDATE` past the margin."""
    scores = torch.log_softmax(logits.float(), -1)
    top = scores.topk(min(LEMMA_CANDIDATES, scores.shape[-1]), -1)
    within = top.values >= top.values[..., :1] - LEMMA_MARGIN
    return torch.where(within, top.indices, NO_CANDIDATE)


def vocabulary_words(tokenizer) -> frozenset[str]:
    """The whole words of ``tokenizer``'s vocabulary: its entries that are neither special
    tokens nor continuation pieces (for a tagger fine-tuned from a language model, the
    text's most frequent words and the treebank's)."""
    prefix, special = continuation_prefix(tokenizer), set(tokenizer.all_special_tokens)
    return frozenset(word for word in tokenizer.get_vocab() if not word.startswith(prefix) and word not in special)


def _known(text: str, vocabulary) -> bool:
    return text in vocabulary or text.lower() in vocabulary


def choose_lemma(word: str, candidates: int | Sequence[int], scripts: Sequence, vocabulary=frozenset()) -> str:
    """The lemma of ``word`` from its script ``candidates`` (ids into ``scripts``, likeliest
    first; one id: that script): the likeliest's, unless it makes neither a word of
    ``vocabulary`` (as written or lower-cased) nor the word itself, and a later
    candidate's rewrite (not an absolute lemma) makes one of the vocabulary."""
    if isinstance(candidates, int):
        return apply_script(scripts[candidates], word)
    lemma = apply_script(scripts[candidates[0]], word)
    if not vocabulary or _known(lemma, vocabulary) or lemma.lower() == word.lower():
        return lemma
    for i in candidates[1:]:
        if i == NO_CANDIDATE:
            break
        script = parse_script(scripts[i]) if isinstance(scripts[i], str) else scripts[i]
        if script.absolute is None and _known(alternative := apply_script(script, word), vocabulary):
            return alternative
    return lemma


# --- decoding ---------------------------------------------------------------------------------


def canonical_feats(feats: str) -> str:
    """``"Number=Sing|Case=Nom"`` -> ``"Case=Nom|Number=Sing"`` (UD's order: by feature
    name, case-insensitively); ``_`` stays ``_``."""
    if feats == "_" or not feats:
        return "_"
    return "|".join(sorted(feats.split("|"), key=lambda pair: pair.partition("=")[0].lower()))


def model_column_labels(config, column: str = "xpos") -> dict[str, list[str]]:
    """Every column a tagger's ``config`` predicts -> its labels (lemma scripts as text),
    the primary column first (``config.primary_column``, else ``column``: models saved
    before there were several heads)."""
    primary = getattr(config, "primary_column", None) or column
    primary_labels = [config.id2label[i] for i in range(config.num_labels)]
    return {primary: primary_labels, **(getattr(config, "column_labels", None) or {})}


def parsed_labels(labels: dict[str, list]) -> dict[str, list]:
    """``labels`` with the lemma scripts parsed (decoding applies them word by word)."""
    if "lemma" not in labels:
        return dict(labels)
    return {**labels, "lemma": [parse_script(text) for text in labels["lemma"]]}


def combination_index(config, labels: dict[str, list], device=None) -> torch.Tensor | None:
    """``(n, 3)`` label ids of the config's ``tag_combinations`` (UPOS, XPOS, FEATS) whose
    labels are all in ``labels``, on ``device``; None when the config records none
    (each column is then decoded on its own)."""
    combinations = getattr(config, "tag_combinations", None)
    if not combinations or getattr(config, "feats_mode", "whole") != "whole":
        return None
    if any(column not in labels for column in JOINT_COLUMNS):
        return None
    ids = [{label: i for i, label in enumerate(labels[column])} for column in JOINT_COLUMNS]
    index = [
        [i[label] for i, label in zip(ids, triple)]
        for triple in combinations
        if all(label in i for i, label in zip(ids, triple))
    ]
    return torch.tensor(index, dtype=torch.long, device=device) if index else None


def predicted_label_ids(
    output,
    columns: Sequence[str],
    primary: str,
    labels: dict[str, list],
    feats_mode: str,
    combinations: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """Each of ``columns`` -> its ``(batch, seq)`` label ids from a tagger's ``output``
    (``logits`` for the ``primary`` column; factored features ``(batch, seq, features)``).
    Each column's argmax, except with ``combinations`` (from :func:`combination_index`):
    UPOS, XPOS and FEATS then come from the combination with the highest summed
    log-probability. Lemmas: ``(batch, seq, LEMMA_CANDIDATES)`` script ids
    (:func:`lemma_candidates`), for :func:`choose_lemma`."""

    def logits(column: str) -> torch.Tensor:
        return output.logits if column == primary else output[f"{column}_logits"]

    ids: dict[str, torch.Tensor] = {}
    if combinations is not None:
        combinations = combinations.to(output.logits.device)
        total = sum(
            torch.log_softmax(logits(column).float(), -1)[..., combinations[:, i]]
            for i, column in enumerate(JOINT_COLUMNS)
        )  # (batch, seq, combinations)
        best = combinations[total.argmax(-1)]  # (batch, seq, 3)
        ids = {column: best[..., i] for i, column in enumerate(JOINT_COLUMNS)}
    for column in columns:
        if column in ids:
            continue
        if column == "lemma":
            ids[column] = lemma_candidates(logits(column))
        elif column != "feats" or feats_mode != "factored":
            ids[column] = logits(column).argmax(-1)
        else:
            groups = logits(column).split([len(v) for _, v in feature_groups(labels["feats"])], dim=-1)
            ids[column] = torch.stack([group.argmax(-1) for group in groups], dim=-1)
    return {column: ids[column] for column in columns}


def decode_column(
    column: str,
    words: Sequence[str],
    ids: Sequence[int] | Sequence[Sequence[int]],
    labels: Sequence,
    feats_mode: str = "whole",
    vocabulary=frozenset(),
) -> list[str]:
    """The column's values for one sentence's ``words`` from predicted label ``ids``
    (factored features: per word one value id per feature; lemma labels: scripts, as
    text or parsed, and per word one id or its candidates, chosen among with
    ``vocabulary`` by :func:`choose_lemma`)."""
    if column == "feats" and feats_mode == "factored":
        groups = feature_groups(list(labels))
        result = []
        for word_ids in ids:
            pairs = [
                f"{name}={values[i]}" for (name, values), i in zip(groups, word_ids) if values[i] != ABSENT_FEATURE
            ]
            result.append(canonical_feats("|".join(pairs)))
        return result
    if column == "lemma":
        return [choose_lemma(word, i, labels, vocabulary) for word, i in zip(words, ids)]
    return [labels[i] for i in ids]


def decode_columns(
    words: Sequence[str],
    ids: dict[str, Sequence],
    labels: dict[str, Sequence],
    feats_mode: str = "whole",
    lemma_lexicon: dict[str, dict[str, dict[str, str]]] | None = None,
    vocabulary=frozenset(),
) -> dict[str, list[str]]:
    """Every column of ``ids`` decoded for one sentence's ``words`` (:func:`decode_column`,
    lemmas with the tokenizer's ``vocabulary``, :func:`vocabulary_words`); with a
    ``lemma_lexicon`` (``config.lemma_lexicon``), a word whose form and predicted tag it
    holds takes the lemma it gives."""
    columns = {
        column: decode_column(column, words, ids[column], labels[column], feats_mode, vocabulary) for column in ids
    }
    if lemma_lexicon and "lemma" in columns:
        ((tag_column, lexicon),) = lemma_lexicon.items()
        if tag_column in columns:
            columns["lemma"] = [
                lexicon.get(tag, {}).get(word, lemma)
                for word, tag, lemma in zip(words, columns[tag_column], columns["lemma"])
            ]
    return columns


__all__ = [
    "CASINGS",
    "LEGACY_CONTINUATION_PREFIX",
    "LEMMA_CANDIDATES",
    "LEMMA_MARGIN",
    "NO_CANDIDATE",
    "EditScript",
    "apply_script",
    "canonical_feats",
    "cased",
    "choose_lemma",
    "combination_index",
    "continuation_prefix",
    "decode_column",
    "decode_columns",
    "encode_words",
    "evaluation_windows",
    "finish",
    "lemma_candidates",
    "model_column_labels",
    "parse_script",
    "parsed_labels",
    "predicted_label_ids",
    "seam_context",
    "token_batches",
    "vocabulary_words",
    "word_shortener",
]
