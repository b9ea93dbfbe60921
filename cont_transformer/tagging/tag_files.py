"""Tag a file: raw text, lines, tokens or CoNLL-U in; CoNLL-U, TSV or JSON Lines out.

Inputs (``input_format``):

* ``text``: raw text, split into paragraphs (blank lines), sentences and UD words
  (:meth:`Tagger.split_text`: the folder's learned segmenter, else the rules);
* ``lines``: one sentence per line, tokenized (blank lines skipped);
* ``tokens``: one sentence per line, words separated by whitespace (kept as they are);
* ``conllu``: a CoNLL-U file, its words tagged as they are.

Outputs (``output_format``):

* ``conllu``: from a CoNLL-U input, that file with only the predicted columns changed
  (:meth:`ConlluDocument.retagged`); from the other inputs, one block per sentence
  (:func:`~.conllu_document.format_text_sentence`: ``# newdoc`` / ``# newpar`` for raw
  text, ``# sent_id``, ``# text``, the predicted columns, whitespace in MISC so the input
  can be rebuilt; :meth:`.Document.to_conllu` writes the same);
* ``tsv``: a header line naming the columns (``word``, then each predicted column in
  CoNLL-U order: ``lemma``, ``upos``, ``xpos``, ``feats``; ``word<TAB>xpos`` for a model
  of one column), then ``word<TAB>value...`` lines, a blank line after each sentence, the
  empty value ``_`` as in CoNLL-U. A plain header, not a ``#`` comment: ``csv.DictReader``
  and ``pandas.read_csv(path, sep="\t", quoting=csv.QUOTE_NONE, keep_default_na=False)``
  read it as the column names (both skip the blank lines; a word ``"`` needs
  ``QUOTE_NONE``; a ``#`` comment would need ``comment="#"``, which would also cut the
  word ``#``), and ``cut -f2`` still picks a column;
* ``json``: JSON Lines, one object per sentence: ``sent_id``, ``text`` (raw inputs),
  ``words``, ``tokens`` (what the text shows: ``{"id": [2, 3], "text": "didn't"}`` for a
  multiword token over words 2 and 3, ``{"id": [1], "text": "I"}`` for a word of its own,
  numbered as CoNLL-U does), each predicted column's values under its name (``lemma``,
  ``upos``, ``xpos``, ``feats``; an empty value is ``null``, as None in a
  :class:`~.document.Document`), and ``spans`` (character offsets of the words in the
  input, raw inputs only).

Streaming. The input is read as it arrives, cut into pieces that are segmented on their
own (a paragraph of raw text, a line of ``lines`` / ``tokens``, a sentence block of
CoNLL-U), and tagged in batches of at most :data:`CHUNK_SENTENCES` sentences (each sorted
by length inside :meth:`Tagger.predict`); each batch is written and flushed as soon as it
is tagged. Where a pipe or terminal pauses (nothing to read for
:data:`~cont_transformer.text.streams.PAUSE_SECONDS`,
so ``cat file |`` does not pause), what has arrived is tagged and written at once: raw text is then cut at that line end as at a paragraph
end (the next sentence is not marked as a new paragraph, and whitespace arriving after
the pause is not recorded in MISC); files never pause, so their output does not depend
on timing. A paragraph longer than :data:`PIECE_CHARACTERS` is cut at a line end too.
Memory stays flat however long the input.

Output (:func:`~cont_transformer.runtime.output_files.staged_output`). A regular file is
written to a staging file beside ``output`` and renamed into place at the end: after an
error (a full disk named), ``output`` is as it was; a killed run's staging file is deleted by
the next run into the same output. An output that is not a regular file (stdout, ``-``, a
FIFO, a device, a socket, or a link to one: :func:`~cont_transformer.runtime.output_files.is_stream`) is written
directly, never staged or replaced. An output that is the input file is refused unless ``in_place``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from ..runtime.collection import paused_cycle_collection
from ..runtime.output_files import staged_output
from ..text.streams import input_lines
from ..text_segmentation import Sentence, rules, whitespace_sentences, word_splitter
from .conllu_document import ConlluDocument, format_text_sentence
from .words import empty_as_none

if TYPE_CHECKING:
    from .tag import Tagger

INPUT_FORMATS = ("text", "lines", "tokens", "conllu")
OUTPUT_FORMATS = ("conllu", "tsv", "json")
EXTENSIONS = {"conllu": ".conllu", "tsv": ".tsv", "json": ".jsonl"}  # --output-dir: an input's stem + this
CHUNK_SENTENCES = (
    512  # at most this many sentences tagged together (sorted by length): a few batches keep several workers busy
)
PIECE_CHARACTERS = 1 << 20  # raw text: a paragraph longer than this is cut at a line end


STAGES = ("setup", "tokenizer", "model", "output")


def _count(number: int, noun: str) -> str:
    """``1 sentence``, ``2 sentences``, ``0 sentences``."""
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


@dataclass
class TaggingStats:
    """What :func:`tag_file` did and where the time went.

    ``wall`` and ``cpu`` map each stage (``setup``: loading the text tokenizer;
    ``tokenizer``: reading the input and splitting it into sentences and words; ``model``;
    ``output``: formatting and writing) to
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

    def model_since(self, started: tuple[float, float]) -> None:
        """The model's time: what the other stages leave of the time since ``started`` (the
        :func:`_clocks` of the start), worker processes that have ended counted."""
        for clock, now, then in zip(("wall", "cpu"), _clocks(), started):
            times = getattr(self, clock)
            times["model"] = now - then - sum(times.values())

    def words_per_second(self, clock: str = "wall") -> float:
        """Words over the time spent on sentences (all stages but setup)."""
        seconds = sum(v for k, v in getattr(self, clock).items() if k != "setup")
        return self.words / seconds if seconds else 0.0

    def summary(self) -> str:
        split = ", ".join(f"{stage} {self.wall[stage]:.2f} s" for stage in STAGES[1:])
        return (
            f"tagged {_count(self.words, 'word')} in {_count(self.sentences, 'sentence')}: "
            f"{self.words_per_second():,.0f} words/s ({split}; setup {self.wall['setup']:.2f} s; "
            f"{self.words_per_second('cpu'):,.0f} words per CPU second)"
        )


@dataclass
class _Piece:
    """A stretch of raw input tagged on its own: ``text`` from its first visible character
    (the input's start for the first piece) through the whitespace before the next
    piece's; ``offset``: where it starts in the input, ``line`` on which line; ``continues``:
    it continues the paragraph of the piece before (cut at a pause or at :data:`PIECE_CHARACTERS`)."""

    text: str
    offset: int
    line: int
    continues: bool


def _pieces(lines: Iterable[str | None], input_format: str) -> Iterator[_Piece | None]:
    """The input cut into pieces (None passed on at a pause): each paragraph of raw text
    (blank lines part it) or each line of ``lines`` / ``tokens``; raw text is also cut at
    a line end where the input pauses or a paragraph passes :data:`PIECE_CHARACTERS`."""
    pending: list[str] = []
    size = offset = newlines = 0
    visible = False  # pending holds a visible character
    after_blank = True  # a blank line (or the input's start) since the last visible line
    continues = False

    def cut() -> _Piece:
        nonlocal pending, size, offset, newlines, visible
        piece = _Piece("".join(pending), offset, newlines + 1, continues)
        offset += size
        newlines += piece.text.count("\n")
        pending, size, visible = [], 0, False
        return piece

    for line in lines:
        if line is None:
            if visible:
                yield cut()
            yield None
            continue
        if not line.strip():
            pending.append(line)
            size += len(line)
            after_blank = True
            continue
        joins = input_format == "text" and visible and not after_blank and size < PIECE_CHARACTERS
        if visible and not joins:
            lead = line[: len(line) - len(line.lstrip())]  # the whitespace up to the next visible character
            pending.append(lead)
            size += len(lead)
            yield cut()
            line = line[len(lead) :]
        if not visible:
            continues = input_format == "text" and offset > 0 and not after_blank
        pending.append(line)
        size += len(line)
        visible, after_blank = True, False
    if visible:
        yield cut()


@dataclass
class _Unit:
    """What is tagged and written together: a sentence of raw input (``sentence`` and its
    ``piece``), or a CoNLL-U block (``conllu``: a sentence with the lines around it);
    ``line``: the input line where it starts."""

    words: list[list[str]]
    line: int
    sentence: Sentence | None = None
    piece: _Piece | None = None
    conllu: ConlluDocument | None = None


def _raw_units(pieces: Iterable[_Piece | None], input_format: str, tagger: Tagger) -> Iterator[_Unit | None]:
    for piece in pieces:
        if piece is None:
            yield None
            continue
        if input_format == "text":
            sentences = list(tagger.split_text(piece.text))
            if sentences and piece.continues:
                sentences[0].paragraph_start = False
        elif input_format == "lines":
            sentences = list(tagger.tokenize_sentences([piece.text]))
        else:
            sentences = list(whitespace_sentences([piece.text]))
        for sentence in sentences:
            if sentence.spans:
                line = piece.line + piece.text.count("\n", 0, sentence.spans[0][0])
                yield _Unit([sentence.words(piece.text)], line, sentence, piece)


def _conllu_blocks(lines: Iterable[str | None]) -> Iterator[tuple[str, int] | None]:
    """``(text, first line number - 1)`` of each sentence block with the blank lines
    before it, as read (the last one may be blank lines alone); None at a pause."""
    pending: list[str] = []
    start = 0
    in_block = False
    for line in lines:
        if line is None:
            yield None
            continue
        pending.append(line)
        if line.strip():
            in_block = True
        elif in_block:
            yield "".join(pending), start
            start += len(pending)
            pending, in_block = [], False
    if pending:
        yield "".join(pending), start


def _conllu_units(lines: Iterable[str | None], name: str) -> Iterator[_Unit | None]:
    """A validated :class:`ConlluDocument` per block; errors name the line in the file."""
    for block in _conllu_blocks(lines):
        if block is None:
            yield None
            continue
        text, before = block
        try:
            document = ConlluDocument(text, name)
        except ValueError as err:
            prefix = f"{Path(name)}:"
            message = str(err)
            number, colon, rest = message[len(prefix) :].partition(":")
            if not (message.startswith(prefix) and colon and number.isdigit()):
                raise
            raise ValueError(f"{prefix}{int(number) + before}:{rest}") from None
        for sentence in document.sentences:
            for index in sentence:
                if not document.lines[index].split("\t", 2)[1].strip():
                    raise ValueError(f"{name}:{index + 1 + before}: blank word (FORM is whitespace)")
        yield _Unit(document.words(), before + 1 + text.count("\n", 0, len(text) - len(text.lstrip())), conllu=document)


def _tokens(unit: _Unit) -> list[dict]:
    """The surface tokens of a unit's sentence: ``{"id": [first] or [first, last], "text"}``
    (word numbers as CoNLL-U's, from 1; a multiword token's text is what the input shows)."""
    if unit.conllu is not None:
        tokens, last = [], 0
        for index in unit.conllu.blocks[0] if unit.conllu.blocks else ():
            fields = unit.conllu.lines[index].rstrip("\r").split("\t")
            first, dash, end = fields[0].partition("-")
            if dash and first.isdigit() and end.isdigit():  # a range, not a comment holding a dash
                tokens.append({"id": [int(first), int(end)], "text": fields[1]})
                last = int(end)
            elif first.isdigit() and int(first) > last:
                tokens.append({"id": [int(first)], "text": fields[1]})
        return tokens
    spans, tokens, index = unit.sentence.spans, [], 0
    while index < len(spans):
        end = unit.sentence.multiword.get(index, index + 1)
        ids = [index + 1] if end == index + 1 else [index + 1, end]
        tokens.append({"id": ids, "text": unit.piece.text[spans[index][0] : spans[end - 1][1]]})
        index = end
    return tokens


class _Formatter:
    """Formats tagged units for one output format."""

    def __init__(self, output_format: str, raw_format: str | None, columns: tuple[str, ...]):
        self.format, self.raw_format = output_format, raw_format
        self.count = 0
        self.header = "\t".join(("word", *columns)) + "\n" if output_format == "tsv" else ""

    def __call__(self, unit: _Unit, columns: list[dict[str, list[str]]]) -> str:
        if unit.conllu is not None and self.format == "conllu":
            names = columns[0] if columns else {}
            return unit.conllu.retagged({name: [c[name] for c in columns] for name in names})
        return "".join(self._sentence(unit, words, values) for words, values in zip(unit.words, columns))

    def _sentence(self, unit: _Unit, words: list[str], columns: dict[str, list[str]]) -> str:
        self.count += 1
        sent_id = str(self.count)
        sentence, piece = unit.sentence, unit.piece
        if self.format == "conllu":
            paragraph_start = sentence.paragraph_start if self.raw_format == "text" else None
            first = self.count == 1
            return format_text_sentence(
                sent_id,
                piece.text,
                sentence.spans,
                columns,
                sentence.multiword,
                first,
                paragraph_start,
                forms=sentence.forms,
            )
        if self.format == "tsv":
            lines = zip(words, *columns.values())
            return "".join("\t".join(values) + "\n" for values in lines) + "\n"
        record: dict = {"sent_id": sent_id}
        if sentence is not None:
            record["text"] = piece.text[sentence.spans[0][0] : sentence.spans[-1][1]]
        record["words"] = words
        record["tokens"] = _tokens(unit)
        for column, values in columns.items():
            record[column] = [empty_as_none(value, word) for value, word in zip(values, words)]
        if sentence is not None:
            record["spans"] = [[piece.offset + start, piece.offset + end] for start, end in sentence.spans]
        return json.dumps(record, ensure_ascii=False) + "\n"


def _check_in_place(input: str | os.PathLike | None, output: str | os.PathLike | None, in_place: bool) -> None:
    """Refuse an output file that is the input file (after links), unless ``in_place``."""
    if in_place or None in (input, output) or "-" in (str(input), str(output)):
        return
    if Path(output).exists() and Path(input).exists() and os.path.samefile(input, output):
        raise ValueError(
            f"output: {output} is the input file {input}; tagging would replace it (pass --in-place to do that)"
        )


def check_input(input: str | os.PathLike | None) -> None:
    """Refuse, in one line, an input file that is a directory or does not exist (stdin passes)."""
    if input is None or str(input) == "-":
        return
    path = Path(input)
    if path.is_dir():
        raise IsADirectoryError(f"input: {path} is a directory, not a file")
    if not path.exists():
        raise FileNotFoundError(f"input: {path}: no such file")


def _batches(units: Iterator[_Unit | None], stats: TaggingStats) -> Iterator[list[_Unit]]:
    """``units`` in batches closed once they hold :data:`CHUNK_SENTENCES` sentences, where
    the input pauses (a None unit) and at its end; reading them is the tokenizer's time."""
    batch: list[_Unit] = []
    sentences = 0  # in the batch
    while True:
        with stats.timing("tokenizer"):
            unit = next(units, StopIteration)
        if unit is not None and unit is not StopIteration:
            batch.append(unit)
            sentences += len(unit.words)
            if sentences < CHUNK_SENTENCES:
                continue
        if batch:
            yield batch
            batch, sentences = [], 0
        if unit is StopIteration:
            break


@paused_cycle_collection()  # it makes no cycles: nothing waits for the collector
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
    also: Callable[[str], object] | None = None,
    processes: int = 1,
) -> TaggingStats:
    """Tag ``input`` (a file, or stdin) into ``output`` (a file, or stdout), streaming.

    The input is read as it arrives and written a batch at a time (at most
    :data:`CHUNK_SENTENCES` sentences, fewer where a pipe pauses), each batch flushed:
    memory stays flat however long the input, and a pipe's sentences come out while
    it is still open.

    Args:
        tagger: the model, tokenizer, columns and language (:class:`Tagger`).
        input_format: ``text``, ``lines``, ``tokens`` or ``conllu`` (module docstring).
        output_format: ``conllu``, ``tsv`` or ``json``.
        progress: show a progress bar on stderr; None shows one when stderr is a
            terminal and the run takes more than a second.
        text: the input itself (then ``input`` only names it in messages).
        in_place: allow ``output`` to be the input file (read through to the end before
            the tagged file replaces it).
        also: called with each piece of output text as it is written (what
            ``--evaluate`` scores).
        processes: worker processes of one thread (0: one per core) that tag, sharing the
            weights (:meth:`Tagger.predict_batches`); the output is the same for any number.

    Returns the counts and timings (the model's: what the other stages leave; its CPU
    time counts the workers'). Raises ``ValueError`` naming the file (and line) for input
    that is not UTF-8 or not valid CoNLL-U, or for the sentence the model fails on;
    ``FileNotFoundError`` for a missing input file or output folder; a staged ``output``
    is then left as it was.
    """
    if input_format not in INPUT_FORMATS:
        raise ValueError(f"input_format: {input_format!r}; choose one of {INPUT_FORMATS}")
    if output_format not in OUTPUT_FORMATS:
        raise ValueError(f"output_format: {output_format!r}; choose one of {OUTPUT_FORMATS}")
    _check_in_place(input, output, in_place)
    if text is None:
        check_input(input)
        name = "<stdin>" if input is None or str(input) == "-" else str(input)
    else:
        name = "<text>" if input is None else str(input)
    started, stats = _clocks(), TaggingStats()
    with stats.timing("setup"):
        if input_format in ("text", "lines"):
            word_splitter(rules(tagger.language))  # built now (cached), outside the tokenizer's time
    units = _units(input_lines(input, text, name), input_format, name, tagger)
    formatter = _Formatter(output_format, None if input_format == "conllu" else input_format, tagger.columns)
    from tqdm.auto import tqdm  # here, not above: tag.py checks its flags without it

    # disable=None hides the bar when stderr is not a terminal.
    disable = None if progress is None else not progress
    bar = tqdm(unit=" words", file=sys.stderr, delay=1.0, disable=disable)

    def write(stream: BinaryIO, text: str) -> None:
        stream.write(text.encode("utf-8"))
        if also is not None:
            also(text)

    with staged_output(output) as stream, bar:
        if formatter.header:
            write(stream, formatter.header)
        for batch, predicted in _tagged_batches(tagger, _batches(units, stats), processes, name):
            with stats.timing("output"):
                write(stream, "".join(formatter(u, [next(predicted) for _ in u.words]) for u in batch))
                stream.flush()
            words = sum(len(sentence) for unit in batch for sentence in unit.words)
            stats.sentences += sum(len(unit.words) for unit in batch)
            stats.words += words
            bar.update(words)
    stats.model_since(started)
    return stats


def _units(lines: Iterable[str | None], input_format: str, name: str, tagger: Tagger) -> Iterator[_Unit | None]:
    """The units of the input ``name`` (None at a pause), raw text split by ``tagger``'s
    segmenter."""
    if input_format == "conllu":
        return _conllu_units(lines, name)
    return _raw_units(_pieces(lines, input_format), input_format, tagger)


def _tagged_batches(
    tagger: Tagger, batches: Iterator[list[_Unit]], processes: int, name: str
) -> Iterator[tuple[list[_Unit], Iterator[dict[str, list[str]]]]]:
    """Each batch with its sentences' predicted columns, in order, tagged in ``processes``
    workers (:meth:`Tagger.predict_batches`); a sentence the model fails on is a
    ``ValueError`` naming its line in the input ``name``."""
    from .tag import SentenceError  # the tagger has loaded it (and torch)

    read: deque[list[_Unit]] = deque()  # batches read and not yet given back, in order

    def sentences() -> Iterator[list[list[str]]]:
        for batch in batches:
            read.append(batch)
            yield [words for unit in batch for words in unit.words]

    try:
        for predicted in tagger.predict_batches(sentences(), processes):
            yield read.popleft(), iter(predicted)
    except SentenceError as err:
        unit = next(islice((unit for unit in read[0] for _ in unit.words), err.sentence, None))
        raise ValueError(f"{name}:{unit.line}: {err}") from err


def _clocks() -> tuple[float, float]:
    """Wall time, and the CPU time of this process and of its workers that have ended."""
    times = os.times()
    return time.perf_counter(), time.process_time() + times.children_user + times.children_system
