"""Python's cycle collector paused around work that makes many small objects.

Tagging builds and drops hundreds of thousands of small objects (words, their columns,
CoNLL-U lines). Each allocation counts toward the cycle collector's thresholds, and each of
its full collections walks every live container, the loaded model's tables included: on
GUM dev a third of the tagging time went there. :func:`paused_cycle_collection` turns it off
for the duration of such work and back on after (reference counting frees what holds no
cycle at once; the rest waits for the next collection). ``tag_file`` makes no cycles, so it
pauses the collector for a whole stream; a :class:`Document` holds cycles (a word's
``parent``), so ``Tagger.pipe`` pauses it per batch, never while the caller's code runs.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_cycle_collection() -> Iterator[None]:
    """No automatic cycle collection inside; the collector's state as it was after (nested
    uses leave it to the outermost)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


__all__ = ["paused_cycle_collection"]
