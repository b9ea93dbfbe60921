"""Tag a file: raw text, lines, tokens or CoNLL-U in; CoNLL-U, TSV or JSON Lines out.

Inputs (``input_format``):

* ``text``: raw text, split into paragraphs (blank lines), sentences and UD words
  (:mod:`~cont_transformer.tagging.segmentation`);
* ``lines``: one sentence per line, tokenized (blank lines skipped);
* ``tokens``: one sentence per line, words separated by whitespace (kept as they are);
* ``conllu``: a CoNLL-U file, its words tagged as they are.

Outputs (``output_format``):

* ``conllu``: from a CoNLL-U input, that file with only the predicted columns changed
  (:meth:`ConlluDocument.retagged`); from the other inputs, one block per sentence
  (:func:`~.conllu_document.format_text_sentence`: ``# newdoc`` / ``# newpar`` for raw
  text, ``# sent_id``, ``# text``, the predicted columns, whitespace in MISC so the input
  can be rebuilt; :meth:`.Document.to_conllu` writes the same);
* ``tsv``: ``word<TAB>value...`` lines, a value per predicted column in CoNLL-U order
  (LEMMA, UPOS, XPOS, FEATS; ``word<TAB>tag`` for a model of one column), a blank line
  after each sentence;
* ``json``: JSON Lines, one object per sentence: ``sent_id``, ``text`` (raw inputs),
  ``words``, each predicted column's values under its name (``lemma``, ``upos``,
  ``xpos``, ``feats``), and ``spans`` (character offsets of the words in the input, raw
  inputs only).

Sentences are tagged in chunks (each sorted by length inside :meth:`Tagger.predict`),
so long inputs stream. The output is written to a staging file beside ``output`` and
renamed into place at the end: after an error, ``output`` is as it was. The staging file
is locked while written, so the next run into the same output deletes one a killed run
left (:func:`~cont_transformer.runtime.safe_files.remove_stale`). An output that is the
input file is refused unless ``in_place``.
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import BinaryIO

from tqdm.auto import tqdm

from ..runtime.safe_files import hold_lock, remove_stale
from .conllu_document import ConlluDocument, format_sentence, format_text_sentence
from .data import decode_utf8
from .segmentation import (
    Sentence,
    load_segmenter,
    split_text,
    tokenize_sentences,
    whitespace_sentences,
)
from .tag import Tagger

INPUT_FORMATS = ("text", "lines", "tokens", "conllu")
OUTPUT_FORMATS = ("conllu", "tsv", "json")
CHUNK_SENTENCES = 4096  # sentences sorted and tagged together
_STAGING_SUFFIX = re.compile(r"\.[0-9a-f]{32}\.tmp")


STAGES = ("setup", "tokenizer", "model", "output")


@dataclass
class TaggingStats:
    """What :func:`tag_file` did and where the time went.

    ``wall`` and ``cpu`` map each stage (``setup``: reading the input and loading the
    text tokenizer; ``tokenizer``; ``model``; ``output``: formatting and writing) to
    seconds of wall-clock and of this process's CPU time (on a busy machine the CPU
    time says what the work costs).
    """

    sentences: int = 0
    words: int = 0
    wall: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    cpu: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))

    @contextmanager
    def timing(self, stage: str) -> Iterator[None]:
        """Add the time spent inside the ``with`` block to ``stage``."""
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.wall[stage] += time.perf_counter() - wall
            self.cpu[stage] += time.process_time() - cpu

    def words_per_second(self, clock: str = "wall") -> float:
        """Words over the time spent on sentences (all stages but setup)."""
        seconds = sum(v for k, v in getattr(self, clock).items() if k != "setup")
        return self.words / seconds if seconds else 0.0

    def summary(self) -> str:
        split = ", ".join(f"{stage} {self.wall[stage]:.2f} s" for stage in STAGES[1:])
        return (
            f"tagged {self.words:,} words in {self.sentences:,} sentences: "
            f"{self.words_per_second():,.0f} words/s ({split}; setup {self.wall['setup']:.2f} s; "
            f"{self.words_per_second('cpu'):,.0f} words per CPU second)"
        )


def _lines(text: str) -> tuple[list[str], list[int]]:
    """The lines of ``text`` and where each starts."""
    lines = text.split("\n")
    offsets, offset = [], 0
    for line in lines:
        offsets.append(offset)
        offset += len(line) + 1
    return lines, offsets


def _raw_sentences(text: str, input_format: str, language: str) -> Iterator[Sentence]:
    if input_format == "text":
        return split_text(text, language)
    lines, offsets = _lines(text)
    if input_format == "lines":
        return tokenize_sentences(lines, language, offsets)
    return whitespace_sentences(lines, offsets)


class _Formatter:
    """Formats tagged sentences for one output format."""

    def __init__(self, output_format: str, text: str | None, raw_format: str | None):
        self.format, self.text, self.raw_format = output_format, text, raw_format
        self.count = 0

    def __call__(self, words: list[str], columns: dict[str, list[str]], sentence: Sentence | None) -> str:
        self.count += 1
        sent_id = str(self.count)
        if self.format == "conllu":
            if sentence is None:
                return format_sentence(sent_id, words, columns)
            paragraph_start = sentence.paragraph_start if self.raw_format == "text" else None
            first = self.count == 1
            return format_text_sentence(
                sent_id, self.text, sentence.spans, columns, sentence.multiword, first, paragraph_start
            )
        if self.format == "tsv":
            lines = zip(words, *columns.values())
            return "".join("\t".join(values) + "\n" for values in lines) + "\n"
        record = {"sent_id": sent_id}
        if sentence is not None:
            record["text"] = self.text[sentence.spans[0][0] : sentence.spans[-1][1]]
        record.update({"words": words, **columns})
        if sentence is not None:
            record["spans"] = sentence.spans
        return json.dumps(record, ensure_ascii=False) + "\n"


@contextmanager
def _output_stream(output: str | os.PathLike | None) -> Iterator[BinaryIO]:
    """A binary stream to ``output`` (stdout when None or ``-``), staged beside it and
    renamed into place on success; removed on error."""
    if output is None or str(output) == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    output = Path(output)
    if output.is_dir():
        raise ValueError(f"output: {output} is a folder")
    if not output.parent.is_dir():
        raise FileNotFoundError(f"output: folder {output.parent} does not exist")
    prefix = f".{output.name}"
    remove_stale(
        path
        for path in output.parent.glob(f"{glob.escape(prefix)}.*.tmp")
        if _STAGING_SUFFIX.fullmatch(path.name[len(prefix) :])
    )
    staging = output.with_name(f"{prefix}.{uuid.uuid4().hex}.tmp")
    lock = hold_lock(staging)  # creates it; marks it as being written
    try:
        with staging.open("wb") as stream:
            yield stream
        os.replace(staging, output)
    finally:
        staging.unlink(missing_ok=True)
        if lock is not None:
            os.close(lock)


def _check_in_place(input: str | os.PathLike | None, output: str | os.PathLike | None, in_place: bool) -> None:
    """Refuse an output file that is the input file (after links), unless ``in_place``."""
    if in_place or None in (input, output) or "-" in (str(input), str(output)):
        return
    if Path(output).exists() and Path(input).exists() and os.path.samefile(input, output):
        raise ValueError(
            f"output: {output} is the input file {input}; tagging would replace it (pass --in-place to do that)"
        )


def _read(input: str | os.PathLike | None) -> tuple[str, str]:
    """``(text, name)`` of the input file (stdin when None or ``-``)."""
    if input is None or str(input) == "-":
        return decode_utf8(sys.stdin.buffer.read(), "<stdin>"), "<stdin>"
    path = Path(input)
    if path.is_dir():
        raise IsADirectoryError(f"input: {path} is a directory, not a file")
    if not path.is_file():
        raise FileNotFoundError(f"input: {path}: no such file")
    return decode_utf8(path.read_bytes(), path), str(path)


def _check_forms(document: ConlluDocument) -> None:
    """A word line's FORM must have a visible character for the tokenizer to see it."""
    for sentence in document.sentences:
        for index in sentence:
            if not document.lines[index].split("\t", 2)[1].strip():
                raise ValueError(f"{document.name}:{index + 1}: blank word (FORM is whitespace)")


def tag_file(
    tagger: Tagger,
    input: str | os.PathLike | None = None,
    output: str | os.PathLike | None = None,
    *,
    input_format: str = "text",
    output_format: str = "conllu",
    progress: bool | None = None,
    text: str | None = None,
    in_place: bool = False,
) -> TaggingStats:
    """Tag ``input`` (a file, or stdin) into ``output`` (a file, or stdout).

    Args:
        tagger: the model, tokenizer, columns and language (:class:`Tagger`).
        input_format: ``text``, ``lines``, ``tokens`` or ``conllu`` (module docstring).
        output_format: ``conllu``, ``tsv`` or ``json``.
        progress: show a progress bar on stderr; None shows one when stderr is a
            terminal and the run takes more than a second.
        text: the input itself (then ``input`` only names it in messages).
        in_place: allow ``output`` to be the input file (it is read whole first).

    Returns the counts and timings. Raises ``ValueError`` naming the file (and line)
    for input that is not UTF-8 or not valid CoNLL-U, ``FileNotFoundError`` for a
    missing input file or output folder; ``output`` is then left as it was.
    """
    if input_format not in INPUT_FORMATS:
        raise ValueError(f"input_format: {input_format!r}; choose one of {INPUT_FORMATS}")
    if output_format not in OUTPUT_FORMATS:
        raise ValueError(f"output_format: {output_format!r}; choose one of {OUTPUT_FORMATS}")
    _check_in_place(input, output, in_place)
    stats = TaggingStats()
    with stats.timing("setup"):
        if text is None:
            text, name = _read(input)
        else:
            name = "<text>" if input is None else str(input)
        document = None
        if input_format == "conllu":
            document = ConlluDocument(text, name)
            _check_forms(document)
            units: Iterator = ((words, None) for words in document.words())
            total = sum(map(len, document.sentences))
            formatter = _Formatter(output_format, None, None)
        else:
            if input_format != "tokens" and text.strip():
                load_segmenter(tagger.language)  # build the word splitter now, outside the tokenizer's time
            units = ((s.words(text), s) for s in _raw_sentences(text, input_format, tagger.language) if s.spans)
            total = None
            formatter = _Formatter(output_format, text, input_format)
    retag = document is not None and output_format == "conllu"
    all_tags: dict[str, list[list[str]]] = {column: [] for column in tagger.columns}
    # tqdm: disable=None hides the bar when stderr is not a terminal.
    disable = None if progress is None else not progress
    bar = tqdm(total=total, unit=" words", file=sys.stderr, delay=1.0, disable=disable)
    with _output_stream(output) as stream, bar:
        while True:
            with stats.timing("tokenizer"):
                chunk = list(islice(units, CHUNK_SENTENCES))
            if not chunk:
                break
            with stats.timing("model"):
                predicted = tagger.predict_columns([words for words, _ in chunk], bar.update)
            with stats.timing("output"):
                if retag:
                    for columns in predicted:
                        for column, values in columns.items():
                            all_tags[column].append(values)
                else:
                    blocks = (formatter(w, c, s) for (w, s), c in zip(chunk, predicted))
                    stream.write("".join(blocks).encode("utf-8"))
            stats.sentences += len(chunk)
            stats.words += sum(len(words) for words, _ in chunk)
        if retag:
            with stats.timing("output"):
                stream.write(document.retagged(all_tags).encode("utf-8"))
    return stats
