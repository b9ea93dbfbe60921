"""One output file written so that a kill at any moment loses nothing: :func:`staged_output`
writes a regular file through a locked staging file beside it, renamed into place when
complete, and a FIFO, device or socket (:func:`is_stream`) or stdout directly. A full disk
is named with the file's path; a killed writer's staging file goes with the next writer
(:func:`~.safe_files.remove_stale`)."""

from __future__ import annotations

import glob
import os
import re
import stat
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from .safe_files import hold_lock, naming_full_disk, remove_stale

# A file staged by :func:`staged_output`: the output's name, a dot, 32 hex digits, .tmp.
_STAGED_FILE_SUFFIX = re.compile(r"\.[0-9a-f]{32}\.tmp")


def is_stream(path: str | os.PathLike | None) -> bool:
    """Whether ``path`` is written as a stream, never staged or replaced: stdout (None or
    ``-``), or an existing file that is not a regular file or a folder (a FIFO, a
    character or block device, a socket, or a link to one)."""
    if path is None or str(path) == "-":
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


@contextmanager
def staged_output(output: str | os.PathLike | None) -> Iterator[BinaryIO]:
    """A binary stream to ``output``: stdout when None or ``-``; a FIFO, device or socket
    written directly (:func:`is_stream`); a file staged beside it and renamed into place on
    success (removed on error). A link to a regular file writes the file it points to (the
    link stays a link)."""
    if output is None or str(output) == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    output = Path(output)
    if is_stream(output):
        with output.open("wb", buffering=0) as stream:
            yield stream
        return
    if output.is_symlink():
        output = output.resolve()  # the link's file is replaced, not the link
    if output.is_dir():
        raise ValueError(f"output: {output} is a folder")
    if not output.parent.is_dir():
        raise FileNotFoundError(f"output: folder {output.parent} does not exist")
    prefix = f".{output.name}"
    remove_stale(
        path
        for path in output.parent.glob(f"{glob.escape(prefix)}.*.tmp")
        if _STAGED_FILE_SUFFIX.fullmatch(path.name[len(prefix) :])
    )
    staging = output.with_name(f"{prefix}.{uuid.uuid4().hex}.tmp")
    lock = hold_lock(staging)  # creates it; marks it as being written
    try:
        with naming_full_disk(output), staging.open("wb") as stream:
            yield stream
        os.replace(staging, output)
    finally:
        staging.unlink(missing_ok=True)
        if lock is not None:
            os.close(lock)
