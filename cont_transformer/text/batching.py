"""From word-split sentences to padded batches for a token classifier.

Alignment. A sentence's words go through the tokenizer (``is_split_into_words=True``),
which prepends the root token; a word is one token, or several pieces with the spelling
tokenizer. Each word's tag goes on the word's first token; the root token, further
tokens of a word and padding get the label ``IGNORE_INDEX`` (-100), which the loss and
the accuracy metric skip. A tag id of -1 (a dev/test tag unseen in train, see
``data.UNSEEN_TAG``) is kept: the metric scores it as an error. Words the tokenizer
drops (empty ones) raise an error rather than silently going unscored. The other
predicted columns (``columns``: e.g. ``{"upos_targets": ..., "lemma_targets": ...}``, see
``columns.py``) are aligned the same way into fields of their own; a word's label may be
a list (factored features: one value id per feature), then its further tokens get a
list of ``IGNORE_INDEX``.

Long sentences (the documented policy). ``max_length`` counts words, the root
included, and equals the model's ``max_position_embeddings`` (the model encodes one
vector per word, however many pieces a word has). Rows are cut between words, never
inside one.

* Training (:func:`encode_for_training`) truncates a longer sentence to its first
  ``max_length - 1`` words; the cut words are not trained on (their number is returned).
* Evaluation (:func:`encode_for_evaluation`) never drops a word: a sentence longer than
  the model covers is cut into overlapping windows of ``max_length - 1`` words (each
  with its own root token), and every word is scored in exactly one window, the one
  where it has the most context on both sides (:func:`evaluation_windows`). Each row
  carries ``sentence_start`` = 1 on a sentence's first window, so summing it counts
  sentences.

Batches. :class:`LengthGroupedBatchSampler` draws, per epoch, a shuffled order that is
a pure function of ``(seed, epoch)`` and groups sentences of similar length into the
same batch (less padding, faster on CPU). :class:`PaddingCollator` pads a batch to its
longest row. :func:`word_dropout_probabilities` gives the model's word dropout its
per-id probabilities, rare words the highest, so that the model learns what to do with
words it has never seen (the model applies it in training mode, see
``word_representation.py``).
"""

from __future__ import annotations

from collections.abc import Container, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch.utils.data import DataLoader
from transformers import PreTrainedTokenizerBase

from ..sentence_windows import evaluation_windows  # written once, for a saved tagger's pipeline too
from ..word_encoding import encode_words

IGNORE_INDEX = -100
# A row field: each word's index in the data, on its first token (IGNORE_INDEX elsewhere),
# so that predictions gathered in any order land on their words.
WORD_INDEX = "word_index"


Label = int | list[int]  # a word's label id; factored features: one per feature
Columns = Mapping[str, Sequence[Sequence[Label]]]  # field name -> per sentence, per word


def _ignored(label: Label) -> Label:
    return [IGNORE_INDEX] * len(label) if isinstance(label, list) else IGNORE_INDEX


@dataclass
class _Encoded:
    """One sentence through the tokenizer: the root token's id, then per word its token
    ids, and per label field (``labels``, other columns) the word's labels."""

    root: int
    word_ids: list[list[int]]
    word_labels: dict[str, list[Label]]

    def row(self, start: int, end: int, owned: range | None = None) -> dict[str, list]:
        """``{"input_ids", "labels", ...}`` of the root and words ``[start, end)``: a word's
        label on its first token, ``IGNORE_INDEX`` on the others and the root; only words
        in ``owned`` (default: all) keep their labels."""
        row = {"input_ids": [self.root]}
        for word in range(start, end):
            row["input_ids"] += self.word_ids[word]
        for name, labels in self.word_labels.items():
            values = [_ignored(labels[0]) if labels else IGNORE_INDEX]
            for word in range(start, end):
                label = labels[word] if owned is None or word in owned else _ignored(labels[word])
                values += [label] + [_ignored(label)] * (len(self.word_ids[word]) - 1)
            row[name] = values
        return row


def _encoded(
    tokenizer: PreTrainedTokenizerBase,
    sentences: Sequence[Sequence[str]],
    tags,
    columns: Columns | None = None,
) -> Iterator[_Encoded]:
    """Each sentence's tokens grouped by word, in full (no truncation)."""
    encoding = encode_words(tokenizer, sentences)
    fields = {"labels": tags, **(columns or {})}
    for index, words in enumerate(sentences):
        input_ids, word_of = encoding["input_ids"][index], encoding.word_ids(index)
        if word_of[0] is not None or any(w is None for w in word_of[1:]):
            raise ValueError("the tokenizer must prepend exactly one special (root) token")
        word_ids: list[list[int]] = [[] for _ in words]
        for token, word in zip(input_ids[1:], word_of[1:]):
            word_ids[word].append(token)
        if not all(word_ids):
            raise ValueError(f"sentence {index} has a word the tokenizer drops (an empty word?): {list(words)}")
        labels = {name: list(values[index]) for name, values in fields.items()}
        yield _Encoded(input_ids[0], word_ids, labels)


def encode_for_training(
    tokenizer: PreTrainedTokenizerBase,
    sentences: Sequence[Sequence[str]],
    tags: Sequence[Sequence[int]],
    max_length: int,
    columns: Columns | None = None,
) -> tuple[list[dict[str, list[int]]], int]:
    """Rows ``{"input_ids", "labels"}`` (and a field per entry of ``columns``, the other
    predicted columns' label ids), each truncated to ``max_length`` words (root included).

    Returns the rows and the number of words cut off by truncation.
    """
    rows, cut = [], 0
    for sentence in _encoded(tokenizer, sentences, tags, columns):
        kept = min(len(sentence.word_ids), max_length - 1)
        cut += len(sentence.word_ids) - kept
        rows.append(sentence.row(0, kept))
    return rows, cut


def encode_for_evaluation(
    tokenizer: PreTrainedTokenizerBase,
    sentences: Sequence[Sequence[str]],
    tags: Sequence[Sequence[int]],
    max_length: int,
    known_words: Container[str] | None = None,
    columns: Columns | None = None,
) -> list[dict[str, list[int] | int]]:
    """Rows ``{"input_ids", "labels", "sentence_start"}`` (and a field per entry of
    ``columns``, as in :func:`encode_for_training`) that score every word exactly once.

    A sentence of at most ``max_length`` words (root included) is one row; a longer one
    becomes overlapping windows of words (see the module docstring), each word labelled
    in one of them. With ``known_words`` (the training words), rows also carry
    ``"unseen"``: 1 at the tokens of words not in it, 0 elsewhere.
    """
    if max_length < 2:
        raise ValueError(f"max_length must leave room for the root token and a word, got {max_length}")
    rows = []
    for words, sentence in zip(sentences, _encoded(tokenizer, sentences, tags, columns)):
        windows = evaluation_windows(len(sentence.word_ids), max_length - 1)
        for number, (start, owned_start, owned_end) in enumerate(windows):
            end = min(start + max_length - 1, len(sentence.word_ids))
            row = sentence.row(start, end, range(owned_start, owned_end))
            row["sentence_start"] = int(number == 0)
            if known_words is not None:
                row["unseen"] = [0] + [
                    int(words[w] not in known_words) for w in range(start, end) for _ in sentence.word_ids[w]
                ]
            rows.append(row)
    return rows


class PaddingCollator:
    """Pads rows to the longest in the batch: ``input_ids`` with ``pad_token_id``,
    ``attention_mask`` with 0, ``labels``, every other column's label field (``*_targets``) and
    ``WORD_INDEX`` with ``IGNORE_INDEX``, other per-token fields (``unseen``) with 0; scalar fields are
    stacked. A field whose tokens hold lists (factored features) becomes
    ``(batch, seq, features)``.

    ``lengths`` (sorted bucket lengths, see :func:`bucket_lengths`) pads a batch to the
    shortest bucket that holds it (shape-stable batches: a compiled model then sees a
    handful of lengths, one graph each); a longer batch keeps its own length.
    Returns tensors ``input_ids``, ``attention_mask``, ``labels`` ``(batch, seq)``.
    """

    def __init__(self, pad_token_id: int, lengths: Sequence[int] = ()):
        self.pad_token_id = pad_token_id
        self.lengths = sorted(lengths)

    def _fill(self, key: str) -> int:
        if key == "input_ids":
            return self.pad_token_id
        return IGNORE_INDEX if key in ("labels", WORD_INDEX) or key.endswith("_targets") else 0

    def __call__(self, rows: Sequence[dict]) -> dict[str, torch.Tensor]:
        length = max(len(row["input_ids"]) for row in rows)
        length = next((bucket for bucket in self.lengths if bucket >= length), length)
        batch = {"attention_mask": torch.zeros((len(rows), length), dtype=torch.long)}
        for i, row in enumerate(rows):
            batch["attention_mask"][i, : len(row["input_ids"])] = 1
        for key, first in rows[0].items():
            if not isinstance(first, list):
                batch[key] = torch.tensor([row[key] for row in rows])
                continue
            inner = (len(first[0]),) if first and isinstance(first[0], list) else ()
            batch[key] = torch.full((len(rows), length, *inner), self._fill(key), dtype=torch.long)
            for i, row in enumerate(rows):
                batch[key][i, : len(row[key])] = torch.tensor(row[key], dtype=torch.long)
        return batch


def bucket_lengths(lengths: Sequence[int], num_buckets: int, multiple: int = 8) -> list[int]:
    """At most ``num_buckets`` padded lengths (multiples of ``multiple``, the last holding
    the longest row) that minimise the tokens of ``lengths`` padded each to the shortest
    bucket that holds it (dynamic programming over the candidate lengths)."""
    if num_buckets < 1 or not lengths:
        return []
    rounded = np.array([-(-length // multiple) * multiple for length in lengths])
    candidates, counts = np.unique(rounded, return_counts=True)
    n = len(candidates)
    # cost[i][j]: rows of candidates i..j, all padded to candidates[j].
    prefix = np.concatenate([[0], np.cumsum(counts)])

    def cost(i: int, j: int) -> int:
        return int(candidates[j] * (prefix[j + 1] - prefix[i]))

    best = {(0, j): (cost(0, j), [j]) for j in range(n)}  # (buckets used, last index)
    for used in range(1, min(num_buckets, n)):
        for j in range(used, n):
            options = [
                (best[(used - 1, i)][0] + cost(i + 1, j), best[(used - 1, i)][1] + [j])
                for i in range(used - 1, j)
                if (used - 1, i) in best
            ]
            if options:
                best[(used, j)] = min(options)
    _, chosen = min(best[(used, n - 1)] for used in range(min(num_buckets, n)) if (used, n - 1) in best)
    return [int(candidates[j]) for j in chosen]


def epoch_seed(seed: int, epoch: int) -> int:
    """A 63-bit seed for the data order of ``epoch``, decorrelated from nearby seeds."""
    return int(np.random.SeedSequence([seed, 0, epoch]).generate_state(1, np.uint64)[0] >> 1)


class LengthGroupedEpochs:
    """A trainer's epochs from a prepared ``train_loader`` over a
    :class:`LengthGroupedBatchSampler` ``sampler`` (the scaffold's ``steps_per_epoch`` and
    ``epoch_batches`` hooks, for the tagger and the language model alike)."""

    @property
    def steps_per_epoch(self) -> int:
        return len(self.train_loader)

    def epoch_batches(self, epoch: int, skip: int):
        loader = self.accelerator.skip_first_batches(self.train_loader, skip) if skip else self.train_loader
        # Accelerate's loader re-sets the sampler's epoch to its own pass counter at every
        # pass, which a resumed run starts at 0: set both to the true epoch.
        loader.set_epoch(epoch)
        self.sampler.set_epoch(epoch)
        return loader


class LengthGroupedBatchSampler:
    """Full batches of row indices, shuffled per epoch, rows of similar length together.

    Each epoch: a random permutation of the rows (the last ``len(lengths) % batch_size``
    of it left out, a different set every epoch), cut into groups of
    ``group_batches * batch_size`` rows, each group sorted by length and cut into
    batches, and the batches shuffled. The order depends only on ``(seed, epoch)``:
    call :meth:`set_epoch` before iterating, and a resumed run replays it exactly.
    """

    def __init__(self, lengths: Sequence[int], batch_size: int, seed: int, group_batches: int = 50):
        if len(lengths) < batch_size:
            raise ValueError(f"{len(lengths)} training rows do not fill one batch of {batch_size}")
        self.lengths = torch.as_tensor(list(lengths))
        self.batch_size = batch_size
        self.drop_last = True  # read by accelerate when it shards the batches
        self.seed = seed
        self.group_batches = group_batches
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.lengths) // self.batch_size

    def __iter__(self) -> Iterator[list[int]]:
        generator = torch.Generator().manual_seed(epoch_seed(self.seed, self.epoch))
        order = torch.randperm(len(self.lengths), generator=generator)[: len(self) * self.batch_size]
        batches = []
        group = self.group_batches * self.batch_size
        for begin in range(0, len(order), group):
            chunk = order[begin : begin + group]
            chunk = chunk[torch.argsort(self.lengths[chunk], descending=True, stable=True)]
            batches.extend(chunk.split(self.batch_size))
        for index in torch.randperm(len(batches), generator=generator).tolist():
            yield batches[index].tolist()


def word_dropout_probabilities(
    tokenizer: PreTrainedTokenizerBase, counts: Mapping[str, int], alpha: float
) -> torch.Tensor:
    """Per token id, the probability ``alpha / (alpha + count)`` of replacing a word by ``[UNK]``.

    ``count`` is the word's frequency in the training data (``counts``), so rare words
    are dropped often and frequent ones almost never (Kiperwasser & Goldberg, 2016):
    ``[UNK]`` then stands in for rare words (nouns, names, adjectives, numbers), which is
    what unknown words at test time are, rather than for an average word (where
    determiners and prepositions dominate). Special tokens and pieces that are no
    training word (``count`` 0) get 0. Returns ``(vocab,)``, for the model's
    ``set_word_dropout``.
    """
    probabilities = torch.zeros(len(tokenizer))
    if alpha == 0:
        return probabilities
    special = set(tokenizer.all_special_ids)
    for word, index in tokenizer.get_vocab().items():
        count = counts.get(word, 0)
        if index not in special and count > 0:
            probabilities[index] = alpha / (alpha + count)
    return probabilities


def eval_loader(rows: list[dict], batch_size: int, pad_token_id: int, lengths: Sequence[int] = ()) -> DataLoader:
    """Evaluation batches, longest first: similar lengths share a batch, and the largest
    batch comes first."""
    rows = sorted(rows, key=lambda row: -len(row["input_ids"]))
    collate = PaddingCollator(pad_token_id, lengths)
    return DataLoader(rows, batch_size=batch_size, shuffle=False, collate_fn=collate)
