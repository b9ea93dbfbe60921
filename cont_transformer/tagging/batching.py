"""From word-split sentences to padded batches for a token classifier.

Alignment. A sentence's words go through the word-level tokenizer
(``is_split_into_words=True``), which prepends the root token. Each word's tag goes on
the word's first token; the root token, further tokens of a word and padding get the
label ``IGNORE_INDEX`` (-100), which the loss and the accuracy metric skip. A tag id
of -1 (a dev/test tag unseen in train, see ``data.UNSEEN_TAG``) is kept: the metric
scores it as an error. Words the tokenizer drops (empty ones) raise an error rather
than silently going unscored.

Long sentences (the documented policy). ``max_length`` counts tokens, the root
included, and equals the model's ``max_position_embeddings``.

* Training (:func:`encode_for_training`) truncates a longer sentence to its first
  ``max_length`` tokens; the cut words are not trained on (their number is returned).
* Evaluation (:func:`encode_for_evaluation`) never drops a word: a sentence longer than
  the model covers is cut into overlapping windows of ``max_length - 1`` words (each
  with its own root token), and every word is scored in exactly one window, the one
  where it has the most context on both sides (:func:`evaluation_windows`). Each row
  carries ``sentence_start`` = 1 on a sentence's first window, so summing it counts
  sentences.

Batches. :class:`LengthGroupedBatchSampler` draws, per epoch, a shuffled order that is
a pure function of ``(seed, epoch)`` and groups sentences of similar length into the
same batch (less padding, faster on CPU). :class:`PaddingCollator` pads a batch to its
longest row. :func:`word_dropout` replaces words by ``[UNK]`` during training, rare
words most often (:func:`word_dropout_probabilities`), so that the model learns what to
do with words it has never seen.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import torch
from transformers import PreTrainedTokenizerBase

IGNORE_INDEX = -100


def _aligned(
    tokenizer: PreTrainedTokenizerBase, sentences: Sequence[Sequence[str]], tags
) -> Iterator:
    """``(input_ids, labels)`` of each sentence, in full (no truncation)."""
    encoding = tokenizer(list(map(list, sentences)), is_split_into_words=True)
    for index, (words, sentence_tags) in enumerate(zip(sentences, tags)):
        labels, previous = [], None
        for word in encoding.word_ids(index):
            labels.append(IGNORE_INDEX if word is None or word == previous else sentence_tags[word])
            previous = word if word is not None else previous
        if sum(label != IGNORE_INDEX for label in labels) != len(words):
            raise ValueError(
                f"sentence {index} has a word the tokenizer drops (an empty word?): {list(words)}"
            )
        yield encoding["input_ids"][index], labels


def encode_for_training(
    tokenizer: PreTrainedTokenizerBase,
    sentences: Sequence[Sequence[str]],
    tags: Sequence[Sequence[int]],
    max_length: int,
) -> tuple[list[dict[str, list[int]]], int]:
    """Rows ``{"input_ids", "labels"}``, each truncated to ``max_length`` tokens.

    Returns the rows and the number of words cut off by truncation.
    """
    rows, cut = [], 0
    for input_ids, labels in _aligned(tokenizer, sentences, tags):
        cut += sum(label != IGNORE_INDEX for label in labels[max_length:])
        rows.append({"input_ids": input_ids[:max_length], "labels": labels[:max_length]})
    return rows, cut


def evaluation_windows(length: int, capacity: int) -> list[tuple[int, int, int]]:
    """Cover positions ``0 .. length-1`` with windows of at most ``capacity`` positions.

    Returns ``(start, owned_start, owned_end)`` per window: the window spans
    ``[start, start + capacity)`` and scores positions ``[owned_start, owned_end)``.
    Windows overlap by about half; the owned ranges partition ``[0, length)``, each
    position owned by the window where it is farthest from an edge (ties: the earlier).
    """
    if capacity < 1:
        raise ValueError(f"capacity must be >= 1, got {capacity}")
    if length <= capacity:
        return [(0, 0, length)]
    stride = max(capacity // 2, 1)
    starts = list(range(0, length - capacity, stride)) + [length - capacity]
    owner = [
        max(
            range(len(starts)), key=lambda w: (min(j - starts[w], starts[w] + capacity - 1 - j), -w)
        )
        for j in range(length)
    ]
    windows = []
    for w, start in enumerate(starts):
        owned = [j for j in range(length) if owner[j] == w]
        if owned:
            windows.append((start, owned[0], owned[-1] + 1))
    return windows


def encode_for_evaluation(
    tokenizer: PreTrainedTokenizerBase,
    sentences: Sequence[Sequence[str]],
    tags: Sequence[Sequence[int]],
    max_length: int,
) -> list[dict[str, list[int] | int]]:
    """Rows ``{"input_ids", "labels", "sentence_start"}`` that score every word exactly once.

    A sentence of at most ``max_length`` tokens is one row; a longer one becomes
    overlapping windows (see the module docstring), each word labelled in one of them.
    """
    if max_length < 2:
        raise ValueError(
            f"max_length must leave room for the root token and a word, got {max_length}"
        )
    rows = []
    for input_ids, labels in _aligned(tokenizer, sentences, tags):
        root, body, body_labels = input_ids[:1], input_ids[1:], labels[1:]
        for number, (start, owned_start, owned_end) in enumerate(
            evaluation_windows(len(body), max_length - 1)
        ):
            end = start + max_length - 1
            window_labels = [
                label if owned_start <= start + i < owned_end else IGNORE_INDEX
                for i, label in enumerate(body_labels[start:end])
            ]
            rows.append(
                {
                    "input_ids": root + body[start:end],
                    "labels": [IGNORE_INDEX] + window_labels,
                    "sentence_start": int(number == 0),
                }
            )
    return rows


class PaddingCollator:
    """Pads rows to the longest in the batch: ``input_ids`` with ``pad_token_id``,
    ``attention_mask`` with 0, ``labels`` with ``IGNORE_INDEX``; scalar fields are stacked.

    ``lengths`` (sorted bucket lengths, see :func:`bucket_lengths`) pads a batch to the
    shortest bucket that holds it (shape-stable batches: a compiled model then sees a
    handful of lengths, one graph each); a longer batch keeps its own length.
    ``real_tokens`` / ``padded_tokens`` count what it has collated, padding included.
    Returns tensors ``input_ids``, ``attention_mask``, ``labels`` ``(batch, seq)``.
    """

    def __init__(self, pad_token_id: int, lengths: Sequence[int] = ()):
        self.pad_token_id = pad_token_id
        self.lengths = sorted(lengths)
        self.real_tokens = self.padded_tokens = 0

    def __call__(self, rows: Sequence[dict]) -> dict[str, torch.Tensor]:
        length = max(len(row["input_ids"]) for row in rows)
        length = next((bucket for bucket in self.lengths if bucket >= length), length)
        batch = {
            "input_ids": torch.full((len(rows), length), self.pad_token_id, dtype=torch.long),
            "attention_mask": torch.zeros((len(rows), length), dtype=torch.long),
            "labels": torch.full((len(rows), length), IGNORE_INDEX, dtype=torch.long),
        }
        for i, row in enumerate(rows):
            n = len(row["input_ids"])
            batch["input_ids"][i, :n] = torch.tensor(row["input_ids"])
            batch["attention_mask"][i, :n] = 1
            batch["labels"][i, :n] = torch.tensor(row["labels"])
        for key in rows[0].keys() - batch.keys():
            batch[key] = torch.tensor([row[key] for row in rows])
        self.real_tokens += sum(len(row["input_ids"]) for row in rows)
        self.padded_tokens += len(rows) * length
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
            options = [(best[(used - 1, i)][0] + cost(i + 1, j), best[(used - 1, i)][1] + [j])
                       for i in range(used - 1, j) if (used - 1, i) in best]  # fmt: skip
            if options:
                best[(used, j)] = min(options)
    _, chosen = min(best[(used, n - 1)] for used in range(min(num_buckets, n)) if (used, n - 1) in best)
    return [int(candidates[j]) for j in chosen]


def epoch_seed(seed: int, epoch: int) -> int:
    """A 63-bit seed for the data order of ``epoch``, decorrelated from nearby seeds."""
    return int(np.random.SeedSequence([seed, 0, epoch]).generate_state(1, np.uint64)[0] >> 1)


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
        order = torch.randperm(len(self.lengths), generator=generator)[
            : len(self) * self.batch_size
        ]
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
    """Per token id, the probability ``alpha / (alpha + count)`` of replacing it by ``[UNK]``.

    ``count`` is the word's frequency in the training data (``counts``), so rare words
    are dropped often and frequent ones almost never (Kiperwasser & Goldberg, 2016):
    ``[UNK]`` then stands in for rare words (nouns, names, adjectives, numbers), which is
    what unknown words at test time are, rather than for an average word (where
    determiners and prepositions dominate). Special tokens get 0. Returns ``(vocab,)``.
    """
    probabilities = torch.zeros(len(tokenizer))
    if alpha == 0:
        return probabilities
    special = set(tokenizer.all_special_ids)
    for word, index in tokenizer.get_vocab().items():
        if index not in special:
            probabilities[index] = alpha / (alpha + counts[word])
    return probabilities


def word_dropout(
    input_ids: torch.Tensor, probabilities: torch.Tensor, unk_token_id: int
) -> torch.Tensor:
    """Replace each token of ``input_ids`` ``(batch, seq)`` by ``unk_token_id`` with its
    probability in ``probabilities`` ``(vocab,)`` (on ``input_ids``' device), drawing from
    torch's global RNG.

    Returns a new tensor (``input_ids`` itself when no probability is positive).
    """
    if not bool((probabilities > 0).any()):
        return input_ids
    drop = torch.rand(input_ids.shape, device=input_ids.device) < probabilities[input_ids]
    return input_ids.masked_fill(drop, unk_token_id)
