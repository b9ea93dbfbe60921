"""CoNLL-U line for line: check a file, read its words, replace the predicted columns, write tagged raw text.

Checking. :func:`check_conllu` validates a file's lines and :func:`decode_utf8` its text,
so that malformed input fails with ``file:line`` (the ``conllu`` parser is lenient: it
accepts short lines and splits on runs of spaces); :func:`~.data.read_conllu` and
:class:`ConlluDocument` run them first.

Re-tagging. :class:`ConlluDocument` keeps a file's lines as they are (line ends
included) after validating them with :func:`check_conllu` (so a malformed line fails
with ``file:line``). :meth:`ConlluDocument.retagged` replaces the
predicted columns of the word lines (integer ids) and nothing else: comments, multiword-token
lines, empty nodes and every other column come back byte for byte.

Writing. :func:`format_sentence` writes one tagged sentence of raw text as a CoNLL-U
block: ``# sent_id``, ``# text``, ID, FORM, the predicted columns filled, the others ``_``.
MISC records the whitespace that followed each token, so the input can be rebuilt
character for character: ``SpaceAfter=No`` where none did, nothing for one space,
``SpacesAfter=`` for anything else (and ``SpacesBefore=`` on a document's first token),
escaped as UDPipe does (``\\s`` space, ``\\t``, ``\\r``, ``\\n``, ``\\p`` for ``|``,
``\\\\`` for ``\\``; other whitespace as ``\\uXXXX``). ``# text`` follows UD: the forms
joined by one space except where ``SpaceAfter=No``. :func:`format_text_sentence` writes a
sentence of raw text from its words' offsets (what ``scripts/tag.py`` and
:meth:`~cont_transformer.tagging.document.Document.to_conllu` write).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NoReturn, TypeVar

COLUMNS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")
T = TypeVar("T")


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


def by_column(tags: Sequence[T] | Mapping[str, Sequence[T]], column: str | None) -> dict[str, Sequence[T]]:
    """``{column: tags}`` from one column's ``tags`` and its name, or ``tags`` itself when it
    already maps columns to their values (``lemma`` to ``misc``: every column but ID and
    FORM); ``ValueError`` naming an unknown column."""
    columns = dict(tags) if isinstance(tags, Mapping) else {column: tags}
    for name in columns:
        if name not in COLUMNS[2:]:
            raise ValueError(f"column: {name!r} is not one of {COLUMNS[2:]}")
    return columns


_SPACES = re.compile(r"\s*")
_ESCAPES = {" ": "\\s", "\t": "\\t", "\r": "\\r", "\n": "\\n", "|": "\\p", "\\": "\\\\"}


class ConlluDocument:
    """A validated CoNLL-U text kept as its lines.

    Attributes:
        lines: the text split at ``\\n`` (a ``\\r`` before it stays on its line), so
            ``"\\n".join(lines)`` is the text.
        blocks: per sentence, the range of indices in ``lines`` of its block (comments,
            word lines, multiword-token lines, empty nodes).
        sentences: per sentence, the indices in ``lines`` of its word lines (integer ids).
        name: the file name used in error messages.

    An empty (or all-whitespace) text is a document with no sentences.
    """

    def __init__(self, text: str, name: str | os.PathLike = "<input>"):
        self.name = str(name)
        self.lines = text.split("\n")
        self.blocks: list[range] = []
        if text.strip():
            check_conllu(Path(self.name), [line.rstrip("\r") for line in self.lines])
        start = None
        for index, line in enumerate([*self.lines, ""]):
            if line.strip() and start is None:
                start = index
            elif not line.strip() and start is not None:
                self.blocks.append(range(start, index))
                start = None
        self.sentences = [[i for i in block if self.lines[i].partition("\t")[0].isdigit()] for block in self.blocks]

    @classmethod
    def read(cls, path: str | os.PathLike) -> ConlluDocument:
        """Read and validate ``path``; ``ValueError("path:line: ...")`` for bad UTF-8 or
        a malformed line, ``FileNotFoundError`` for a missing file."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such CoNLL-U file")
        return cls(decode_utf8(path.read_bytes(), path), path)

    def words(self) -> list[list[str]]:
        """The FORM of every word line, per sentence (multiword tokens and empty nodes
        are not words)."""
        return [[self.lines[i].split("\t", 2)[1] for i in sentence] for sentence in self.sentences]

    def retagged(
        self, column: str | Mapping[str, Sequence[Sequence[str]]], tags: Sequence[Sequence[str]] | None = None
    ) -> str:
        """The text with ``column`` (e.g. ``"xpos"``) of each word line replaced by
        ``tags[sentence][word]``, or with each column of a mapping ``{column: tags}``
        (``"lemma"`` ... ``"misc"``) replaced by its tags; every other byte (comments,
        multiword-token lines, empty nodes) is unchanged."""
        columns = by_column(column, None) if tags is None else by_column(tags, column)
        for values in columns.values():
            if len(values) != len(self.sentences):
                raise ValueError(f"{len(values)} tagged sentences for {len(self.sentences)} in {self.name}")
        positions = [COLUMNS.index(name) for name in columns]
        lines = list(self.lines)
        for number, sentence in enumerate(self.sentences):
            sentence_tags = [values[number] for values in columns.values()]
            for tags_of_column in sentence_tags:
                if len(tags_of_column) != len(sentence):
                    raise ValueError(f"{len(tags_of_column)} tags for a sentence of {len(sentence)} words")
            for word, index in enumerate(sentence):  # each line split and joined once
                fields = lines[index].split("\t")
                for position, tags_of_column in zip(positions, sentence_tags):
                    fields[position] = tags_of_column[word]
                lines[index] = "\t".join(fields)
        return "\n".join(lines)

    def text(self, one_sentence_per_line: bool = False) -> str:
        """The raw text of the document from its ``# text`` comments: sentences joined by
        a space, a blank line before each ``# newdoc`` / ``# newpar`` (or one sentence per
        line). Raises ``ValueError`` naming the line of a sentence without ``# text``."""
        pieces = []
        for block in self.blocks:
            comments = [self.lines[i].rstrip("\r") for i in block if self.lines[i].startswith("#")]
            text = next((c[len("# text = ") :] for c in comments if c.startswith("# text = ")), None)
            if text is None:
                raise ValueError(f"{self.name}:{block.start + 1}: sentence has no '# text = ' comment")
            if pieces:
                new_paragraph = any(c.startswith(("# newdoc", "# newpar")) for c in comments)
                pieces.append("\n" if one_sentence_per_line else "\n\n" if new_paragraph else " ")
            pieces.append(text)
        return "".join(pieces) + "\n" if pieces else ""


def escape_spaces(spaces: str) -> str:
    """Whitespace as a MISC value: ``"\\n  "`` -> ``"\\\\n\\\\s\\\\s"`` (see the module docstring)."""
    return "".join(_ESCAPES.get(c, f"\\u{ord(c):04x}" if c.isspace() else c) for c in spaces)


_UNESCAPES = {escaped: c for c, escaped in _ESCAPES.items()}
_ESCAPED = re.compile(r"\\u[0-9a-fA-F]{4}|\\.")


def unescape_spaces(value: str) -> str:
    """The whitespace a MISC value of :func:`escape_spaces` stands for."""
    return _ESCAPED.sub(lambda m: _UNESCAPES.get(m[0]) or m[0].encode().decode("unicode_escape"), value)


def spaces_misc(spaces_after: str, spaces_before: str = "") -> str:
    """The MISC that records the whitespace around a token: ``_`` for one space after it,
    ``SpaceAfter=No`` for none, ``SpacesAfter=`` for any other, ``SpacesBefore=`` first
    for whitespace before a document's first token."""
    if spaces_after == " ":
        misc = "_"
    elif not spaces_after:
        misc = "SpaceAfter=No"
    else:
        misc = f"SpacesAfter={escape_spaces(spaces_after)}"
    if not spaces_before:
        return misc
    before = f"SpacesBefore={escape_spaces(spaces_before)}"
    return before if misc == "_" else f"{before}|{misc}"


def spaces_after(text: str, spans: Sequence[tuple[int, int]]) -> list[str]:
    """The whitespace after each word of a sentence of ``text`` (its words' ``spans``), up to
    the next visible character."""
    ends = [start for start, _ in spans[1:]] + [_SPACES.match(text, spans[-1][1]).end()]
    return [text[end:next_start] for (_, end), next_start in zip(spans, ends)]


def sentence_text(
    words: Sequence[str],
    spaces_after: Sequence[str],
    multiword: Mapping[int, int] | None = None,
    token_forms: Mapping[int, str] | None = None,
) -> str:
    """UD's ``# text``: the tokens' forms joined by one space except where none followed; a
    multiword token's form is its words' concatenation, or its ``token_forms`` entry where
    its words are not its pieces."""
    multiword, token_forms = multiword or {}, token_forms or {}
    pieces, index = [], 0
    while index < len(words):
        end = multiword.get(index, index + 1)
        form = token_forms.get(index) or "".join(words[index:end])
        pieces.append(form + (" " if spaces_after[end - 1] and end < len(words) else ""))
        index = end
    return "".join(pieces)


def multiword_forms(
    text: str, spans: Sequence[tuple[int, int]], multiword: Mapping[int, int] | None, forms: Mapping[int, str]
) -> dict[int, str]:
    """``first -> FORM`` of the multiword tokens of a sentence of ``text`` whose words are not
    their pieces (a learned segmenter's ``forms``): the token's own text."""
    return {
        first: text[spans[first][0] : spans[end - 1][1]]
        for first, end in (multiword or {}).items()
        if any(i in forms for i in range(first, end))
    }


def format_sentence(
    sent_id: str,
    words: Sequence[str],
    tags: Sequence[str] | Mapping[str, Sequence[str]],
    column: str | None = None,
    spaces_after: Sequence[str] | None = None,
    spaces_before: str = "",
    comments: Sequence[str] = (),
    multiword: Mapping[int, int] | None = None,
    token_misc: Mapping[int, str] | None = None,
    complete: bool = True,
    token_forms: Mapping[int, str] | None = None,
) -> str:
    """One sentence as a CoNLL-U block, ending with its blank line.

    Args:
        sent_id: the ``# sent_id``.
        words, tags: the FORMs and the tags for ``column`` (``"upos"`` or ``"xpos"``), or
            ``tags`` a mapping of columns (``"lemma"``, ``"upos"``, ``"xpos"``,
            ``"feats"``, and also ``"head"``, ``"deprel"``, ``"deps"``, ``"misc"``) to
            their values, ``column`` None; a ``misc`` given replaces the whitespace's.
        spaces_after: the whitespace after each word in the input text, or None for
            pre-split words (then each is taken as followed by one space).
        spaces_before: whitespace before the first word (a document's start).
        comments: lines written before ``# sent_id`` (e.g. ``"# newpar"``); when they
            hold a ``# sent_id`` or a ``# text`` line, that one is not written again.
        multiword: ``first -> end`` word indices (0-based, end exclusive) of multiword
            tokens; their FORM is their words' concatenation, and their line carries
            the MISC of the token (the words' MISC is ``_``).
        token_misc: ``first -> MISC`` of multiword-token lines, replacing the whitespace's.
        complete: add the ``# sent_id`` and ``# text`` lines ``comments`` lack (False: the
            comments as given, the lines a sentence was read with).
        token_forms: ``first -> FORM`` of multiword-token lines whose words are not its
            pieces (``στο`` over ``σε`` ``το``), instead of the words' concatenation.
    """
    if spaces_after is None:
        spaces_after = [" "] * len(words)
    multiword, token_forms = multiword or {}, token_forms or {}
    columns = {COLUMNS.index(name): values for name, values in by_column(tags, column).items()}
    rows = list(comments)
    if complete and not any(c.startswith("# sent_id") for c in comments):
        rows.append(f"# sent_id = {sent_id}")
    if complete and not any(c.startswith("# text =") for c in comments):
        rows.append(f"# text = {sentence_text(words, spaces_after, multiword, token_forms)}")
    token_end = 0  # end of the multiword token being written, 0 outside one
    for index, (word, spaces) in enumerate(zip(words, spaces_after)):
        before = "" if index else spaces_before
        if index in multiword:
            token_end = multiword[index]
            form = token_forms.get(index) or "".join(words[index:token_end])
            line_misc = (token_misc or {}).get(index, spaces_misc(spaces_after[token_end - 1], before))
            rows.append(f"{index + 1}-{token_end}\t{form}\t_\t_\t_\t_\t_\t_\t_\t{line_misc}")
        misc = "_" if index < token_end else spaces_misc(spaces, before)
        fields = [str(index + 1), word, "_", "_", "_", "_", "_", "_", "_", misc]
        for position, values in columns.items():
            fields[position] = values[index]
        rows.append("\t".join(fields))
    return "\n".join(rows) + "\n\n"


def format_text_sentence(
    sent_id: str,
    text: str,
    spans: Sequence[tuple[int, int]],
    tags: Mapping[str, Sequence[str]],
    multiword: Mapping[int, int] | None = None,
    first: bool = False,
    paragraph_start: bool | None = None,
    comments: Sequence[str] = (),
    forms: Mapping[int, str] | None = None,
) -> str:
    """One sentence of raw ``text`` as a CoNLL-U block (:func:`format_sentence`).

    Args:
        sent_id: the ``# sent_id``.
        text: the whole input text.
        spans: ``(start, end)`` of each word in ``text`` (at least one); MISC records the
            whitespace after each word, up to the next visible character of ``text``.
        tags: ``{column: one value per word}``.
        multiword: ``first -> end`` word indices of multiword tokens.
        first: the document's first sentence (whitespace before it in ``SpacesBefore=``).
        paragraph_start: for text cut into paragraphs, whether the sentence begins one
            (``# newpar``; ``# newdoc`` too on the first sentence); None for text that is
            not (no such comments).
        comments: the sentence's comment lines, written instead of those (a sentence of a
            :class:`~.document.Document` keeps the lines it was made with).
        forms: word index -> FORM of a word that is not a piece of ``text`` (its span is
            its multiword token's: ``text_segmentation.Sentence.forms``).
    """
    forms = forms or {}
    words = [forms.get(i, text[start:end]) for i, (start, end) in enumerate(spans)]
    spaces_before = text[: spans[0][0]] if first else ""
    if not comments:
        comments = paragraph_comments(first, paragraph_start)
    return format_sentence(
        sent_id,
        words,
        tags,
        None,
        spaces_after(text, spans),
        spaces_before,
        comments,
        multiword,
        token_forms=multiword_forms(text, spans, multiword, forms),
    )


def paragraph_comments(first: bool, paragraph_start: bool | None) -> list[str]:
    """``# newdoc`` (a document's first sentence) and ``# newpar`` (a paragraph's) for text cut
    into paragraphs; none where ``paragraph_start`` is None (text that is not)."""
    if paragraph_start is None:
        return []
    return (["# newdoc"] if first else []) + (["# newpar"] if paragraph_start else [])
