"""Rows of tokens in batches by a token budget, longest first, for tagging.

Remote code (``trust_remote_code=True``) copies a saved folder's model and pipeline files
and every file they reach through one-level relative imports, flat; this module is one of
them, so it imports only the standard library, torch, ``tokenizers`` and the package root's
own carried modules (docs/design.md §10).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence


def token_batches(lengths: Sequence[int], tokens_per_batch: int) -> Iterator[list[int]]:
    """Indices of rows of ``lengths`` tokens in batches of at most ``tokens_per_batch`` tokens,
    padding included: longest rows first, each batch as many rows as fit (a row longer
    than ``tokens_per_batch`` alone)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batch: list[int] = []
    for i in order:
        if batch and (len(batch) + 1) * lengths[batch[0]] > tokens_per_batch:
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch
