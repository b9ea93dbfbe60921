"""Worker processes that share one loaded model: a function mapped over a stream of items.

:func:`mapped` runs ``function(item)`` for each item in processes forked from this one
after the model is loaded, one torch thread each, and yields the results in input order.
A fork shares the parent's memory copy-on-write: a model's weights are read and never
written while it runs, so the workers share one copy. The parent's Python objects are
moved out of the cycle collector's reach first (``gc.freeze``): a collection in a worker
would otherwise write to, and so copy, every page that holds one.

Streaming: at most ``2 * processes`` items are in flight (sent, or done and not yet
yielded), so memory stays flat on an endless stream; the items are read lazily as results
are taken. An exception in a worker is raised again in the parent (the worker's traceback
as its ``__cause__``) and stops the others: pending items are cancelled and the running ones
finish before :func:`mapped` returns, so no worker outlives it. Workers ignore Ctrl-C (the
parent's ``KeyboardInterrupt`` stops them the same way) and, on Linux, end with their
parent should it be killed. A worker killed while running raises
``concurrent.futures.process.BrokenProcessPool``.

Forking needs a POSIX system (Linux, macOS); elsewhere ``processes`` above 1 is refused.
spaCy's ``nlp.pipe(n_process=...)`` forks its workers in the same way.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

# What each worker runs, set in it when it starts (inherited through the fork, never pickled).
_function: Callable | None = None


def worker_count(processes: int) -> int:
    """``--processes``: ``processes`` itself, or for 0 every core this process may run on.
    ValueError in one line naming the flag for a negative number."""
    if processes < 0:
        raise ValueError(f"--processes: give a number of worker processes, or 0 for every core; got {processes}")
    if processes:
        return processes
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _start(function: Callable) -> None:
    global _function
    _function = function
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops the workers
    if sys.platform == "linux":  # end with the parent, even if it is killed (PR_SET_PDEATHSIG)
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
    import torch

    torch.set_num_threads(1)


def _run(item):
    return _function(item)


def mapped(function: Callable[[Item], Result], items: Iterable[Item], processes: int = 1) -> Iterator[Result]:
    """``function(item)`` for each of ``items``, in their order: in this process for
    ``processes=1``, else in that many forked workers (module docstring)."""
    if processes == 1:
        yield from map(function, items)
        return
    if "fork" not in multiprocessing.get_all_start_methods():
        raise ValueError(f"--processes: worker processes need fork, which {sys.platform} lacks; give 1")
    gc.freeze()
    executor = ProcessPoolExecutor(
        processes, mp_context=multiprocessing.get_context("fork"), initializer=_start, initargs=(function,)
    )
    try:
        pending = deque()
        for item in items:
            pending.append(executor.submit(_run, item))
            if len(pending) == 1:
                gc.unfreeze()  # the first submission forked every worker
            if len(pending) >= 2 * processes:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        gc.unfreeze()
        executor.shutdown(wait=True, cancel_futures=True)


__all__ = ["mapped", "worker_count"]
