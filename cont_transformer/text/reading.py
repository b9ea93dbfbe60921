"""Unlabelled text for pretraining: checked files, read by ``datasets``, split into words.

Files. :func:`text_files` expands ``--text-files`` (globs allowed) and checks each file
before anything is trained, reading it once as a stream (gzip by its ``.gz`` suffix): a
missing or empty file, one that is not UTF-8 text (a NUL byte, an undecodable byte), or
a line over :data:`MAX_LINE_CHARS` characters (a file without line breaks) is refused in
one line naming the file (and the line).

Reading. :func:`load_text` reads the files with ``datasets``' ``text`` builder (one
example a line, cached as Arrow on disk and memory-mapped: the text is never held in
memory whole), or a data set by name (``--dataset-name``, online, or a local folder
``datasets`` can load) and its ``--text-column``. The last ``heldout_lines`` lines of a
fixed shuffle are held out for evaluation.

Words. A line is split into UD-like words by the same pre-tokenizer that splits raw
text for the taggers (``text.tokenization.ud_pre_tokenizer``), so the language model
reads words as the taggers will, and a line longer than a row (``max_length - 1`` words)
becomes several rows.
"""

from __future__ import annotations

import glob
import gzip
import io
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from .tokenization import ud_pre_tokenizer

MAX_LINE_CHARS = 1_000_000  # a longer line: a file without line breaks, or not text
_CHUNK_CHARS = 1 << 20


class TextFileError(ValueError):
    """A text file that cannot be pretrained on, named in the message."""


def open_text(path: Path) -> io.TextIOBase:
    raw = gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")  # noqa: SIM115 (closed by the wrapper)
    return io.TextIOWrapper(raw, encoding="utf-8", errors="strict", newline=None)


def check_text_file(path: Path) -> int:
    """The number of non-blank lines of ``path``; :class:`TextFileError` naming the file
    (and the line) when it is not UTF-8 text with lines of at most :data:`MAX_LINE_CHARS`."""
    lines = line_number = 0
    try:
        with open_text(path) as stream:
            while True:
                line = stream.readline(MAX_LINE_CHARS + 1)
                if not line:
                    break
                line_number += 1
                if "\0" in line:
                    raise TextFileError(f"{path}:{line_number}: a NUL byte: not a text file")
                if len(line.rstrip("\n")) > MAX_LINE_CHARS:
                    raise TextFileError(
                        f"{path}:{line_number}: a line of over {MAX_LINE_CHARS:,} characters; "
                        "pretraining reads one sentence or paragraph a line"
                    )
                lines += bool(line.strip())
    except UnicodeDecodeError as err:
        raise TextFileError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start} of a block)") from None
    except (OSError, EOFError) as err:
        raise TextFileError(f"{path}: cannot be read ({err})") from None
    if lines == 0:
        raise TextFileError(f"{path}: holds no text")
    return lines


def text_files(patterns: Sequence[str]) -> list[Path]:
    """The files ``patterns`` name (paths or globs, in order, each once), each checked by
    :func:`check_text_file`."""
    paths: list[Path] = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not matches:
            raise TextFileError(f"text_files: {pattern} matches no file")
        for match in map(Path, matches):
            if not match.is_file():
                raise TextFileError(f"text_files: {match} is not a file")
            if match not in paths:
                paths.append(match)
    for path in paths:
        check_text_file(path)
    return paths


def load_text(
    files: Sequence[Path] = (),
    dataset_name: str | None = None,
    dataset_config: str | None = None,
    text_column: str = "text",
    heldout_lines: int = 2000,
    seed: int = 42,
):
    """A ``DatasetDict`` with ``train`` and ``heldout`` splits of one column ``text``."""
    import datasets

    if files:
        data = datasets.load_dataset("text", data_files={"train": [str(p) for p in files]}, split="train")
    else:
        try:
            data = datasets.load_dataset(dataset_name, dataset_config, split="train")
        except Exception as err:  # noqa: BLE001 (offline, unknown name, bad folder: one line)
            raise ValueError(f"dataset_name: {dataset_name} does not load ({' '.join(str(err).split())})") from None
        if text_column not in data.column_names:
            raise ValueError(f"text_column: {dataset_name} has no column {text_column!r} (it has {data.column_names})")
        data = data.select_columns([text_column]).rename_column(text_column, "text")
    data = data.filter(lambda rows: [bool(t and t.strip()) for t in rows["text"]], batched=True)
    if len(data) <= heldout_lines:
        raise ValueError(f"heldout_lines: the text has {len(data)} lines, too few to hold out {heldout_lines}")
    split = data.train_test_split(test_size=heldout_lines, shuffle=True, seed=seed)
    return datasets.DatasetDict({"train": split["train"], "heldout": split["test"]})


def split_words(lines: Iterable[str], max_words: int) -> list[list[str]]:
    """Each line's words (:func:`ud_pre_tokenizer`), cut into rows of at most ``max_words``."""
    splitter = ud_pre_tokenizer()
    rows = []
    for line in lines:
        words = [word for word, _ in splitter.pre_tokenize_str(line)]
        rows += [words[i : i + max_words] for i in range(0, len(words), max_words)]
    return rows


def word_counts(dataset, batch_size: int = 10000) -> Counter:
    """How often each word occurs in a data set of ``words`` rows, read in batches."""
    counts: Counter = Counter()
    for batch in dataset.iter(batch_size=batch_size):
        for words in batch["words"]:
            counts.update(words)
    return counts


def vocabulary(counts: Counter, size: int, min_count: int) -> list[str]:
    """The ``size`` most frequent words seen at least ``min_count`` times (ties: first seen)."""
    return [word for word, count in counts.most_common(size) if count >= min_count]
