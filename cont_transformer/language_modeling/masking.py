"""Which words a masked language model's batch hides, and what it must predict there.

A word of the vocabulary (one whole-word token, ``maskable``) is chosen with probability
``probability``; a chosen word becomes ``[MASK]`` nine times in ten and stays itself
otherwise (BERT's 80/10/10 without the random word: a random vocabulary id can be a
continuation piece, which would glue itself onto the word before it). Words outside the
vocabulary (several spelling pieces) are never chosen: the model could not predict them.

Masks are drawn on the batch's device from torch's global RNG inside the training step,
which the scaffold seeds per step, so a resumed run draws the masks the uninterrupted
one drew (``transformers.DataCollatorForLanguageModeling`` draws in the data loader,
outside that seeding, and replaces by any id). The held-out text is masked once, with a
generator of its own, so every evaluation scores the same words.
"""

from __future__ import annotations

import torch

IGNORE_INDEX = -100
KEEP_SHARE = 0.1  # of the chosen words, the share shown unchanged


def mask_words(
    input_ids: torch.Tensor,
    maskable: torch.Tensor,
    probability: float,
    mask_token_id: int,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``input_ids`` ``(batch, seq)`` with chosen words masked, and ``labels`` ``(batch, seq)``:
    the chosen words' ids, :data:`IGNORE_INDEX` elsewhere. ``maskable`` ``(batch, seq)`` bool."""

    def draw() -> torch.Tensor:
        return torch.rand(input_ids.shape, generator=generator, device=input_ids.device)

    chosen = (draw() < probability) & maskable
    labels = input_ids.masked_fill(~chosen, IGNORE_INDEX)
    hidden = chosen & (draw() >= KEEP_SHARE)
    return input_ids.masked_fill(hidden, mask_token_id), labels


def masked_rows(rows, probability: float, mask_token_id: int, seed: int) -> list[dict]:
    """Rows (``input_ids``, ``maskable`` lists) masked once, reproducibly from ``seed``:
    ``input_ids`` and ``labels`` lists for evaluation."""
    generator = torch.Generator().manual_seed(seed)
    masked = []
    for row in rows:
        ids, labels = mask_words(
            torch.tensor(row["input_ids"]),
            torch.tensor(row["maskable"], dtype=torch.bool),
            probability,
            mask_token_id,
            generator,
        )
        masked.append({"input_ids": ids.tolist(), "labels": labels.tolist()})
    return masked
