"""What tagging returns: a :class:`Document` of sentences, tokens and words, in stanza's shape and names.

``doc.sentences[i].words[j]`` is a :class:`~.words.Word` (``id`` 1-based in its sentence,
``text``, ``lemma``, ``upos``, ``xpos``, ``feats``, ``head`` (an int), ``deprel``,
``deps``, ``misc``, and ``start`` / ``end``: its characters in the input text,
``doc.text[word.start:word.end] == word.text``; also read as stanza's ``start_char`` /
``end_char``). ``sentence.tokens[k]`` is a :class:`~.words.Token`: what the raw text shows, one
word, or a multiword token over several (``didn't`` = ``did`` ``n't``; ``token.id`` is
``(2, 3)``, as CoNLL-U writes ``2-3``). A column the model does not predict is None, and
so is an empty value: None in Python, ``_`` only in CoNLL-U, as in stanza. Offsets are
None where there is no text to point into (pre-tokenized words, CoNLL-U). A sentence keeps
its ``comments`` (the ``#`` lines: as read from CoNLL-U, or as made from raw text,
``# newdoc`` / ``# newpar``, ``# sent_id``, ``# text``) and its ``sent_id`` is the one the
CoNLL-U written gives it; a word of raw text keeps in ``misc`` the whitespace around it, as
CoNLL-U writes it (``SpaceAfter=No``, ``SpacesAfter=``), read back as stanza's
``token.spaces_after``. As in stanza, ``sentence.doc`` / ``sentence.index`` (``id``),
``word.sent`` / ``token.sent`` point back, and ``doc.lang`` is the tagger's language.

Documents come from :class:`~cont_transformer.tagging.tag.Tagger` (raw text, sentence
strings, word lists), from CoNLL-U (:meth:`Document.from_conllu`,
:meth:`Document.read_conllu`: its multiword tokens, ids and every column kept), and, as
stanza's, from :meth:`Document.to_dict`'s lists (``Document(doc.to_dict())`` writes the
CoNLL-U ``doc`` writes, empty nodes aside: each sentence's first entry carries its comments);
a tagger given a document tags its words as they are and fills the predicted columns in
place. :meth:`Document.to_conllu` (also ``"{:C}".format(doc)``, stanza's format spec) writes
what ``scripts/tag.py`` writes for the same input, by the same functions
(:mod:`.conllu_document`); :meth:`Document.to_dict` is stanza's.

Like stanza's, the objects compare and hash by identity (a word can key a dict).

Besides stanza's shape, lists: a document iterates, indexes and counts its sentences; a
sentence iterates ``(word, tag)`` pairs of the primary column, and ``tags``, ``spans``,
``columns`` and the per-column lists ``upos``, ``xpos``, ``feats``, ``lemma`` (None when not predicted, ``_``
for an empty value) read its words.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import InitVar, dataclass, field
from typing import Any

from ..runtime.collection import paused_cycle_collection
from .conllu_document import (
    COLUMNS,
    ConlluDocument,
    format_sentence,
    format_text_sentence,
    multiword_forms,
    paragraph_comments,
    sentence_text,
    spaces_after,
    spaces_misc,
)
from .data import PathLike
from .words import WORD_COLUMNS, Token, Word, empty_as_none

# What a tagger writes, in CoNLL-U order (the processor's WRITTEN_COLUMNS; this module loads no torch).
WRITTEN_COLUMNS = COLUMNS[2:6]


def _written(value: str | int | None) -> str:
    return "_" if value is None else str(value)


def _comment_value(comments: Sequence[str], key: str) -> str | None:
    """The value of the comment ``# key = value`` (None without one)."""
    for comment in comments:
        name, equals, value = comment.lstrip("#").partition("=")
        if equals and name.strip() == key:
            return value.strip()
    return None


@dataclass(eq=False)
class Sentence:
    """One sentence: its ``tokens`` and ``words`` (a multiword token's words in its place).

    Attributes:
        tokens: what the text shows, in order.
        text: the sentence's text (raw text: ``doc.text`` from its first word to its last;
            CoNLL-U: its ``# text``; words: the words joined by a space).
        words: every word of every token, in order (``words[j].id == j + 1``).
        predicted: the columns the tagger filled, in CoNLL-U order (empty before tagging).
        column: the tagger's primary column (``tags``, iteration); None before tagging.
        paragraph_start: raw text cut into paragraphs: the sentence begins one (CoNLL-U
            ``# newpar``); None for text not cut into paragraphs.
        sent_id: the ``# sent_id`` CoNLL-U gives it: the one it was read or made with
            (``comments``), else its number among the document's sentences with words
            (1, 2, ...); None for a sentence read from CoNLL-U without one.
        comments: the comment lines before it in CoNLL-U (``# sent_id = ...``, ``# text
            = ...``, any other): as read, or as made from raw text (``# newdoc`` /
            ``# newpar``, ``# sent_id``, ``# text``); written back by
            :meth:`Document.to_conllu`, and carried by :meth:`to_dict`.
        doc, index: stanza's: the document it belongs to and its position there (0-based;
            also read as ``id``); None outside a document.
    """

    tokens: list[Token]
    text: str | None = None
    predicted: tuple[str, ...] = ()
    column: str | None = None
    paragraph_start: bool | None = field(default=None, repr=False)
    sent_id: str | None = None
    comments: list[str] = field(default_factory=list, repr=False)
    words: list[Word] = field(init=False, repr=False)
    doc: Document | None = field(default=None, init=False, repr=False)
    index: int | None = field(default=None, init=False, repr=False)

    def __post_init__(self):
        self.words = [word for token in self.tokens for word in token.words]
        for token in self.tokens:
            token.sent = self
            for word in token.words:
                word.sent = self
        if self.sent_id is None:
            self.sent_id = _comment_value(self.comments, "sent_id")

    @property
    def id(self) -> int | None:
        """stanza's: the sentence's position in its document (0-based), as ``index``."""
        return self.index

    @classmethod
    def from_dict(cls, entries: Sequence[Mapping[str, Any]], text: str | None = None) -> Sentence:
        """A sentence of :meth:`to_dict`'s entries (stanza's: a multiword token's own
        entry, ``id`` ``(first, last)``, before its words; the first entry may carry the
        sentence's ``comments``); ``text``: the document's raw text, which the words'
        offsets point into. The columns present are its ``predicted`` ones."""
        tokens: list[Token] = []
        last = 0  # the last word of the open multiword token
        comments = list(entries[0].get("comments") or ()) if entries else []
        entries = [{k: v for k, v in entry.items() if k != "comments"} for entry in entries]
        for entry in entries:
            ids = entry.get("id")
            if isinstance(ids, tuple) and len(ids) == 2:
                start, end = entry.get("start_char"), entry.get("end_char")
                tokens.append(Token(ids, entry["text"], [], start, end, empty_as_none(entry.get("misc"))))
                last = ids[1]
                continue
            if ids is None or not isinstance(ids, int | tuple):
                raise ValueError(f"sentence entry: {entry!r} has no word id (an int) or token id (first, last)")
            word = Word.from_dict(entry)
            if word.id <= last:
                word.parent = tokens[-1]
                tokens[-1].words.append(word)
            else:
                tokens.append(Token((word.id,), word.text, [word], word.start, word.end))
        words = [word for token in tokens for word in token.words]
        if words and text is not None and words[0].start is not None and words[-1].end is not None:
            own_text = text[words[0].start : words[-1].end]
        else:  # the tokens and the whitespace their MISC records
            own_text = "".join(token.text + token.spaces_after for token in tokens[:-1]) + (
                tokens[-1].text if tokens else ""
            )
        predicted = tuple(c for c in WRITTEN_COLUMNS if any(getattr(w, c) is not None for w in words))
        return cls(tokens, own_text, predicted, comments=comments)

    def fill(self, columns: Mapping[str, Sequence[str]], column: str | None = None) -> Sentence:
        """Set the words' ``columns`` (``{column: one value per word}``, ``_`` read as None)
        and the primary ``column``; returns the sentence."""
        for name, values in columns.items():
            if name not in WRITTEN_COLUMNS:
                raise ValueError(f"column: {name!r} is not one of {WRITTEN_COLUMNS}")
            if len(values) != len(self.words):
                raise ValueError(f"{len(values)} values of {name} for a sentence of {len(self.words)} words")
            for word, value in zip(self.words, values):
                setattr(word, name, empty_as_none(value, word.text))
        self.predicted = tuple(c for c in WRITTEN_COLUMNS if c in columns or c in self.predicted)
        self.column = column
        return self

    def to_dict(self) -> list[dict[str, Any]]:
        """stanza's entries of its tokens and words; the first also carries the sentence's
        ``comments`` (stanza keeps them apart: :meth:`Document.sentence_comments`), so that
        ``Document(doc.to_dict())`` writes the CoNLL-U ``doc`` writes."""
        entries = [entry for token in self.tokens for entry in token.to_dict()]
        if entries and self.comments:
            entries[0]["comments"] = list(self.comments)
        return entries

    def values(self, column: str) -> list[str]:
        """``column`` of each word as CoNLL-U writes it (``_`` for None)."""
        return [_written(getattr(word, column)) for word in self.words]

    def to_conllu(self, number: int = 1) -> str:
        """The sentence as a CoNLL-U block of its words (no offsets into a text): its
        ``comments`` as they are (or ``# sent_id``, its ``sent_id`` or ``number``, and
        ``# text``), multiword-token lines, every column (``_`` for None);
        :func:`format_sentence`."""
        comments = self.comments or [f"# sent_id = {self.sent_id or number}", f"# text = {self.text or ''}"]
        multiword, token_misc, position = {}, {}, 0
        for token in self.tokens:
            if token.is_mwt():
                multiword[position] = position + len(token.words)
                token_misc[position] = _written(token.misc)
            position += len(token.words)
        columns = {column: self.values(column) for column in WORD_COLUMNS}
        words = [word.text for word in self.words]
        return format_sentence(
            str(number), words, columns, comments=comments, multiword=multiword, token_misc=token_misc, complete=False
        )

    def __format__(self, spec: str) -> str:
        """stanza's: ``"{:C}"`` the CoNLL-U block with its comments, ``"{:c}"`` without
        (no blank line after either); any other spec, ``str``."""
        if spec not in ("c", "C"):
            return format(str(self), spec)
        lines = self.to_conllu().rstrip("\n").split("\n")
        return "\n".join(line for line in lines if spec == "C" or not line.startswith("#"))

    # Parallel lists of the words' values.

    @property
    def tags(self) -> list[str] | None:
        """The primary column's value of each word."""
        return None if self.column is None else self.values(self.column)

    @property
    def columns(self) -> dict[str, list[str]]:
        """Every predicted column -> its value for each word."""
        return {column: self.values(column) for column in self.predicted}

    def _predicted(self, column: str) -> list[str] | None:
        return self.values(column) if column in self.predicted else None

    @property
    def spans(self) -> list[tuple[int, int]] | None:
        """``(start, end)`` of each word in the text, or None where the words have no offsets."""
        spans = [(word.start, word.end) for word in self.words]
        return None if any(start is None or end is None for start, end in spans) else spans

    @property
    def upos(self) -> list[str] | None:
        return self._predicted("upos")

    @property
    def xpos(self) -> list[str] | None:
        return self._predicted("xpos")

    @property
    def feats(self) -> list[str] | None:
        return self._predicted("feats")

    @property
    def lemma(self) -> list[str] | None:
        return self._predicted("lemma")

    def __iter__(self) -> Iterator[tuple[str, str]]:
        """``(word, tag)`` pairs of the primary column."""
        return zip([word.text for word in self.words], self.tags or [])

    def __len__(self) -> int:
        return len(self.words)


@dataclass(eq=False)
class Document:
    """Tagged sentences (stanza's ``Document``): ``doc.sentences``, ``doc.text``.

    Iterate, index or count a document for its sentences (``doc[0] is doc.sentences[0]``).
    """

    sentences: list[Sentence]
    text: str | None = None
    comments: InitVar[Sequence[Sequence[str]] | None] = None
    conllu: ConlluDocument | None = field(default=None, repr=False, kw_only=True)  # the CoNLL-U it was read from
    lang: str | None = field(default=None, kw_only=True)  # stanza's: the language code, set by the tagger

    def __post_init__(self, comments: Sequence[Sequence[str]] | None):
        """stanza's ``Document(sentences, text, comments)``: a sentence may be given as
        :meth:`to_dict`'s list of entries; ``comments``, per sentence, its comment lines."""
        self.sentences = [s if isinstance(s, Sentence) else Sentence.from_dict(s, self.text) for s in self.sentences]
        if comments is not None:
            if len(comments) != len(self.sentences):
                raise ValueError(f"comments: {len(comments)} lists for {len(self.sentences)} sentences")
            for sentence, lines in zip(self.sentences, comments):
                sentence.comments = list(lines)
                sentence.sent_id = _comment_value(sentence.comments, "sent_id")
        number = 0  # CoNLL-U numbers the sentences with words that have no sent_id of their own
        for index, sentence in enumerate(self.sentences):
            sentence.doc, sentence.index = self, index
            number += bool(sentence.words)
            if sentence.sent_id is None and not sentence.comments and self.conllu is None:
                sentence.sent_id = str(number)

    # Building. -------------------------------------------------------------------------

    @classmethod
    def from_text(
        cls,
        text: str,
        segments: Sequence,
        columns: Sequence[Mapping[str, Sequence[str]]] = (),
        column: str | None = None,
        paragraphs: bool = True,
    ) -> Document:
        """A document of raw ``text`` split into ``segments``
        (:class:`~cont_transformer.text_segmentation.Sentence`: spans, multiword tokens,
        paragraph starts, which count only if ``paragraphs``: text cut into paragraphs, not
        lines), with ``columns`` (per sentence, ``{column: values}``) and the primary
        ``column`` filled."""
        sentences, number = [], 0  # number: of the sentences with words, as CoNLL-U gives them
        for position, segment in enumerate(segments):
            spans, tokens, index = segment.spans, [], 0
            paragraph_start = segment.paragraph_start if paragraphs else None
            number += bool(spans)
            # The whitespace around each token in MISC, and the comments, as CoNLL-U writes them.
            spaces = spaces_after(text, spans) if spans else []
            while index < len(spans):
                end = segment.multiword.get(index, index + 1)
                forms = segment.forms
                words = [
                    Word(i + 1, forms.get(i, text[a:b]), start=a, end=b)
                    for i, (a, b) in enumerate(spans[index:end], index)
                ]
                start, stop = spans[index][0], spans[end - 1][1]
                misc = spaces_misc(spaces[end - 1], text[:start] if number == 1 and index == 0 else "")
                misc = None if misc == "_" else misc
                if end == index + 1:
                    words[0].misc = misc
                    tokens.append(Token((index + 1,), text[start:stop], words, start, stop))
                else:
                    tokens.append(Token((index + 1, end), text[start:stop], words, start, stop, misc))
                index = end
            comments = []
            if spans:
                pieces = [text[a:b] for a, b in spans]
                tokens_text = multiword_forms(text, spans, segment.multiword, segment.forms)
                words_text = sentence_text(pieces, spaces, segment.multiword, tokens_text)
                comments = paragraph_comments(number == 1, paragraph_start)
                comments += [f"# sent_id = {number}", f"# text = {words_text}"]
            own_text = text[spans[0][0] : spans[-1][1]] if spans else ""
            sentence = Sentence(tokens, own_text, paragraph_start=paragraph_start, comments=comments)
            sentences.append(sentence.fill(columns[position], column) if columns else sentence)
        return cls(sentences, text)

    @classmethod
    def from_words(
        cls,
        words: Sequence[Sequence[str]],
        columns: Sequence[Mapping[str, Sequence[str]]] = (),
        column: str | None = None,
    ) -> Document:
        """A document of pre-tokenized sentences (one token per word, no offsets, no text)."""
        sentences = []
        for number, sentence_words in enumerate(words):
            tokens = [Token((i,), w, [Word(i, w)]) for i, w in enumerate(sentence_words, 1)]
            sentence = Sentence(tokens, " ".join(sentence_words))
            sentences.append(sentence.fill(columns[number], column) if columns else sentence)
        return cls(sentences)

    @classmethod
    def from_conllu(cls, text: str, name: PathLike = "<input>") -> Document:
        """A document of CoNLL-U ``text`` (validated; ``ValueError("name:line: ...")``):
        its words with their ids and columns (``_`` as None), multiword tokens over their
        words, ``# text`` as each sentence's text; empty nodes are not words.
        :meth:`to_conllu` gives ``text`` back, with any predicted columns replaced."""
        return cls._read(ConlluDocument(text, name))

    @classmethod
    def read_conllu(cls, path: PathLike) -> Document:
        """:meth:`from_conllu` of a file (``FileNotFoundError``, ``ValueError("path:line: ...")``)."""
        return cls._read(ConlluDocument.read(path))

    @classmethod
    @paused_cycle_collection()
    def _read(cls, conllu: ConlluDocument) -> Document:
        sentences = []
        for block in conllu.blocks:
            tokens, comments, last = [], [], 0  # last: the last word of the open multiword token
            for index in block:
                line = conllu.lines[index].rstrip("\r")
                if line.startswith("#"):
                    comments.append(line)
                    continue
                fields = line.split("\t")
                first, dash, end = fields[0].partition("-")
                if dash:
                    tokens.append(Token((int(first), int(end)), fields[1], [], misc=empty_as_none(fields[9])))
                    last = int(end)
                elif first.isdigit():
                    values = dict(zip(WORD_COLUMNS, (empty_as_none(v, fields[1]) for v in fields[2:])))
                    head = values.pop("head")
                    if head is not None and not head.isdigit():
                        raise ValueError(f"{conllu.name}:{index + 1}: HEAD {head!r} is not a word id (or 0, or _)")
                    word = Word(int(first), fields[1], **values, head=None if head is None else int(head))
                    if word.id <= last:
                        word.parent = tokens[-1]
                        tokens[-1].words.append(word)
                    else:
                        tokens.append(Token((word.id,), word.text, [word], misc=None))
            sentence_text = _comment_value([c for c in comments if c.startswith("# text =")], "text")
            if sentence_text is None:
                sentence_text = " ".join(token.text for token in tokens)
            sentences.append(Sentence(tokens, sentence_text, comments=comments))
        return cls(sentences, None, conllu=conllu)

    def fill(self, columns: Sequence[Mapping[str, Sequence[str]]], column: str | None = None) -> Document:
        """Set each sentence's words' ``columns`` (per sentence, ``{column: one value per
        word}``, ``_`` read as None) and the primary ``column``; returns the document."""
        if len(columns) != len(self.sentences):
            raise ValueError(f"{len(columns)} tagged sentences for a document of {len(self.sentences)}")
        for sentence, values in zip(self.sentences, columns):
            sentence.fill(values, column)
        return self

    # Reading. --------------------------------------------------------------------------

    def iter_words(self) -> Iterator[Word]:
        for sentence in self.sentences:
            yield from sentence.words

    def iter_tokens(self) -> Iterator[Token]:
        for sentence in self.sentences:
            yield from sentence.tokens

    @property
    def num_words(self) -> int:
        return sum(len(sentence.words) for sentence in self.sentences)

    @property
    def num_tokens(self) -> int:
        return sum(len(sentence.tokens) for sentence in self.sentences)

    def __iter__(self) -> Iterator[Sentence]:
        return iter(self.sentences)

    def __len__(self) -> int:
        return len(self.sentences)

    def __getitem__(self, index):
        return self.sentences[index]

    # Writing. --------------------------------------------------------------------------

    def to_dict(self) -> list[list[dict[str, Any]]]:
        """stanza's: per sentence, one dict per word (``id``, ``text``, ``lemma``,
        ``upos``, ``xpos``, ``feats``, ``head``, ``deprel``, ``deps``, ``misc``,
        ``start_char``, ``end_char``; those not None), a multiword token's own dict
        (``id`` ``(first, last)``, ``text``, ``misc``, offsets) before its words, and on
        the sentence's first dict its ``comments`` (:meth:`Sentence.to_dict`)."""
        return [sentence.to_dict() for sentence in self.sentences]

    @paused_cycle_collection()
    def to_conllu(self) -> str:
        """The document as CoNLL-U, as ``scripts/tag.py`` writes it for the same input:
        read from CoNLL-U, that text with its words' columns in place
        (:meth:`ConlluDocument.retagged`: comments, multiword-token lines and empty nodes
        as read); from raw text, one block per sentence (``# newdoc`` / ``# newpar``,
        ``# sent_id``, ``# text``, multiword-token lines, the whitespace in MISC;
        :func:`format_text_sentence`); from words (or :meth:`to_dict`'s entries without
        the text), :meth:`Sentence.to_conllu`. Sentences without words are left out; an
        empty value is ``_``."""
        if self.conllu is not None:
            return self.conllu.retagged({c: [s.values(c) for s in self.sentences] for c in WORD_COLUMNS})
        blocks, number = [], 0
        for sentence in self.sentences:
            if not sentence.words:
                continue
            number += 1
            spans = sentence.spans
            if self.text is None or spans is None:
                blocks.append(sentence.to_conllu(number))
                continue
            multiword, position = {}, 0
            for token in sentence.tokens:
                if token.is_mwt():
                    multiword[position] = position + len(token.words)
                position += len(token.words)
            columns = {column: sentence.values(column) for column in WRITTEN_COLUMNS}
            forms = {  # words that are not pieces of the text (a learned segmenter's)
                i: word.text
                for i, (word, (a, b)) in enumerate(zip(sentence.words, spans))
                if word.text != self.text[a:b]
            }
            blocks.append(
                format_text_sentence(
                    str(number),
                    self.text,
                    spans,
                    columns,
                    multiword,
                    number == 1,
                    sentence.paragraph_start,
                    sentence.comments,
                    forms=forms,
                )
            )
        return "".join(blocks)

    def sentence_comments(self) -> list[list[str]]:
        """stanza's: each sentence's comment lines."""
        return [list(sentence.comments) for sentence in self.sentences]

    def __format__(self, spec: str) -> str:
        """stanza's format spec: ``"{:C}".format(doc)`` is :meth:`to_conllu`, ``"{:c}"``
        the same without comment lines; any other spec, ``str``."""
        if spec not in ("c", "C"):
            return format(str(self), spec)
        text = self.to_conllu()
        if spec == "c":
            text = "\n".join(line for line in text.split("\n") if not line.startswith("#"))
        return text
