"""Windows over a sentence longer than a model's positions, each word scored in one.

:func:`evaluation_windows` covers a long sentence with overlapping windows of the model's
``max_position_embeddings``, with :func:`seam_context` words of context on either side at
the seams, in linear time; training's evaluation, ``Tagger`` and the saved pipeline use it.

Remote code (``trust_remote_code=True``) copies a saved folder's model and pipeline files
and every file they reach through one-level relative imports, flat; this module is one of
them, so it imports only the standard library, torch, ``tokenizers`` and the package root's
own carried modules (docs/design.md §10).
"""

from __future__ import annotations

from itertools import pairwise


def seam_context(capacity: int) -> int:
    """The words of context :func:`evaluation_windows` keeps on either side of a seam for
    windows of ``capacity`` positions: an eighth of a window, rounded up (16 words for the
    127 words of a model trained on 128 positions), at most what leaves a window one
    position of its own.

    Why an eighth: on UD English-GUM dev run together into one sentence, 16 words of context
    tag 0.1 point fewer words right than a half-window overlap, for 1.34 times
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
