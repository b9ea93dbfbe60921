"""Text read as it arrives: the lines of a file, of stdin or of a pipe, decoded, with the
pauses of a slow writer marked.

``scripts/tag.py`` tags a pipe's sentences while the pipe is still open: where a pipe or
terminal has had nothing to read for :data:`PAUSE_SECONDS`, :func:`stream_lines` says so
(a None line) and the reader tags what has come. A regular file never pauses, so what is
made of it does not depend on timing.
"""

from __future__ import annotations

import io
import os
import re
import select
import stat
import sys
from collections.abc import Iterator
from typing import BinaryIO

_READ_BYTES = 1 << 16
PAUSE_SECONDS = 0.1  # a pipe with nothing to read for this long has paused: tag what has come
_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")


def stream_lines(stream: BinaryIO, name: str) -> Iterator[str | None]:
    """The lines of ``stream`` decoded (each with its ``\\n``; the last may lack one; a
    leading byte-order mark dropped), as they arrive; None where a pipe or terminal has
    had nothing more to read for :data:`PAUSE_SECONDS` (its writer is slow or waiting):
    the caller tags what it has.
    ``ValueError("name:line: not valid UTF-8")`` at the first bad line."""
    number = 0

    def decoded(line: bytes) -> str:
        nonlocal number
        number += 1
        if b"\0" in line:  # UTF-16 without a byte-order mark holds many; no text holds one
            raise ValueError(f"{name}:{number}: a NUL byte: not UTF-8 text (UTF-16? convert it to UTF-8)")
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{name}:{number}: not valid UTF-8") from None
        return text[1:] if number == 1 and text.startswith("\ufeff") else text

    try:
        fd = stream.fileno()
    except (AttributeError, OSError, io.UnsupportedOperation):  # an in-memory stream
        yield from map(decoded, stream)
        return
    waits = not stat.S_ISREG(os.fstat(fd).st_mode)  # a pipe, FIFO, terminal or socket
    partial: list[bytes] = []
    while True:
        if waits and not select.select([fd], [], [], PAUSE_SECONDS)[0]:
            yield None
        data = os.read(fd, _READ_BYTES)
        if not data:
            break
        pieces = data.split(b"\n")
        for piece in pieces[:-1]:
            partial.append(piece)
            yield decoded(b"".join(partial) + b"\n")
            partial = []
        if pieces[-1]:
            partial.append(pieces[-1])
    if partial:
        yield decoded(b"".join(partial))


def input_lines(input: str | os.PathLike | None, text: str | None, name: str) -> Iterator[str | None]:
    """The lines of ``text``, else of the file ``input`` (stdin when None or ``-``), as
    :func:`stream_lines` gives them."""
    if text is not None:
        yield from (match.group() for match in _LINE.finditer(text))
    elif input is None or str(input) == "-":
        yield from stream_lines(sys.stdin.buffer, name)
    else:
        with open(input, "rb") as stream:
            yield from stream_lines(stream, name)


__all__ = ["PAUSE_SECONDS", "input_lines", "stream_lines"]
