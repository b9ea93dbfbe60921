"""CoNLL-U input checked before it is read: its text decoded (:func:`decode_utf8`) and its
lines validated (:func:`check_conllu`), so that malformed input fails with ``file:line``.

The ``conllu`` parser is lenient (it accepts short lines and splits on runs of spaces);
:func:`~cont_transformer.tagging.data.read_conllu` and
:class:`~cont_transformer.tagging.conllu_document.ConlluDocument` run these checks first.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NoReturn

_WORD_ID = re.compile(r"[1-9][0-9]*")
_RANGE_ID = re.compile(r"([1-9][0-9]*)-([1-9][0-9]*)")
_EMPTY_ID = re.compile(r"(0|[1-9][0-9]*)\.([1-9][0-9]*)")


def check_conllu(path: Path, lines: list[str]) -> None:
    """Raise `ValueError("path:line: ...")` at the first malformed line."""

    def fail(line_number: int, problem: str) -> NoReturn:
        raise ValueError(f"{path}:{line_number}: {problem}")

    last_word = 0  # id of the last word line of the current sentence
    range_end, range_line = 0, 0  # furthest multiword-token end and where it was declared
    block_start = 0  # first line of the current sentence block, 0 between sentences
    num_sentences = 0
    for line_number, line in enumerate([*lines, ""], start=1):
        if not line.strip():
            if block_start:
                if last_word == 0:
                    fail(block_start, "sentence has no word lines")
                if range_end > last_word:
                    fail(range_line, f"multiword token ends at {range_end}, past the last word")
                num_sentences += 1
            last_word, range_end, block_start = 0, 0, 0
            continue
        block_start = block_start or line_number
        if line.startswith("#"):
            continue
        columns = line.split("\t")
        if len(columns) != 10:
            fail(line_number, f"expected 10 tab-separated columns, found {len(columns)}")
        if "" in columns:
            fail(line_number, f"column {columns.index('') + 1} is empty (use '_')")
        if "  " in line:
            fail(line_number, "two consecutive spaces, which the conllu parser reads as a tab")
        token_id = columns[0]
        if _WORD_ID.fullmatch(token_id):
            if int(token_id) != last_word + 1:
                fail(line_number, f"word id {token_id}, expected {last_word + 1}")
            last_word += 1
        elif match := _RANGE_ID.fullmatch(token_id):
            start, end = int(match[1]), int(match[2])
            if start != last_word + 1 or end <= start:
                fail(
                    line_number,
                    f"multiword token {token_id} is not a range {last_word + 1}-m, m > {last_word + 1}",
                )
            range_end, range_line = end, line_number
        elif match := _EMPTY_ID.fullmatch(token_id):
            if int(match[1]) != last_word:
                fail(line_number, f"empty node {token_id} must follow word {last_word}")
        else:
            fail(line_number, f"bad id {token_id!r}")
    if num_sentences == 0:
        fail(1, "no sentences (empty file)")


def decode_utf8(data: bytes, path: str | os.PathLike) -> str:
    """``data`` (the contents of ``path``) as text, without a leading byte-order mark (not
    part of the text); raises ``ValueError("path:line: not valid UTF-8")`` at the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line_number = data[: err.start].count(b"\n") + 1
        raise ValueError(f"{path}:{line_number}: not valid UTF-8") from err
