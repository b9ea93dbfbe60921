"""The words and tokens of a :class:`~.document.Document`, in stanza's shape and names.

A :class:`Word` is one syntactic word (a CoNLL-U word line: its id, form and every other
column, None for an empty value, and ``start`` / ``end``, its characters in the input
text, also read as stanza's ``start_char`` / ``end_char``). A :class:`Token` is what the
text shows: one word, or a multiword token over several (``didn't`` = ``did`` ``n't``;
``token.id`` ``(2, 3)``, as CoNLL-U writes ``2-3``). Both convert to and from stanza's
dicts (:meth:`Word.to_dict`, :meth:`Word.from_dict`, :meth:`Token.to_dict`) and, like
stanza's, compare and hash by identity.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .conllu_document import COLUMNS, unescape_spaces

WORD_COLUMNS = COLUMNS[2:]  # every column a word carries besides its id and form
_DICT_KEYS = ("id", "text", *WORD_COLUMNS, "start_char", "end_char")  # stanza's, in its order


def empty_as_none(value: str | None, text: str = "") -> str | None:
    """A column's value as stanza keeps it: None for CoNLL-U's empty ``_`` (a lemma ``_`` of
    the word ``_`` stays)."""
    return None if value is None or (value == "_" and text != "_") else value


class _CharacterSpan:
    """stanza's names of a word's or token's character offsets (``start``, ``end``)."""

    start: int | None
    end: int | None

    @property
    def start_char(self) -> int | None:
        return self.start

    @property
    def end_char(self) -> int | None:
        return self.end


@dataclass(eq=False)
class Word(_CharacterSpan):
    """One syntactic word (a CoNLL-U word line)."""

    id: int
    text: str
    lemma: str | None = None
    upos: str | None = None
    xpos: str | None = None
    feats: str | None = None
    start: int | None = None
    end: int | None = None
    head: int | None = None
    deprel: str | None = None
    deps: str | None = None
    misc: str | None = None
    parent: Token | None = field(default=None, repr=False)  # the token it belongs to
    sent: Any = field(default=None, repr=False)  # stanza's: the document.Sentence it belongs to

    @property
    def pos(self) -> str | None:
        """stanza's other name of ``upos``."""
        return self.upos

    def to_dict(self) -> dict[str, Any]:
        """stanza's: ``id``, ``text``, ``lemma``, ``upos``, ``xpos``, ``feats``, ``head``,
        ``deprel``, ``deps``, ``misc``, ``start_char``, ``end_char``, those that are not None."""
        values = {key: getattr(self, key) for key in _DICT_KEYS[:-2]} | {"start_char": self.start, "end_char": self.end}
        return {key: value for key, value in values.items() if value is not None}

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any]) -> Word:
        """A word of :meth:`to_dict`'s entry (``id`` an int or a 1-tuple); ``ValueError``
        naming an unknown key."""
        unknown = [key for key in entry if key not in _DICT_KEYS]
        if unknown:
            raise ValueError(f"word entry: {unknown[0]!r} is not one of {_DICT_KEYS}")
        values = {key: empty_as_none(entry.get(key), entry.get("text", "")) for key in WORD_COLUMNS if key != "head"}
        head = entry.get("head")
        word_id = entry["id"][0] if isinstance(entry["id"], tuple) else entry["id"]
        return cls(
            int(word_id),
            entry["text"],
            **values,
            head=None if head is None else int(head),
            start=entry.get("start_char"),
            end=entry.get("end_char"),
        )


@dataclass(eq=False)
class Token(_CharacterSpan):
    """What the text shows: one word, or a multiword token (``id`` ``(first, last)``)
    whose ``text`` is written as one and whose ``words`` are several."""

    id: tuple[int, ...]
    text: str
    words: list[Word]
    start: int | None = None
    end: int | None = None
    misc: str | None = None  # a multiword token's own MISC (its CoNLL-U line's)
    sent: Any = field(default=None, repr=False)  # stanza's: the document.Sentence it belongs to

    def __post_init__(self):
        for word in self.words:
            word.parent = self

    def is_mwt(self) -> bool:
        return len(self.words) > 1

    @property
    def spaces_after(self) -> str:
        """stanza's: the whitespace after the token, as its MISC records it (the multiword
        token's own, or its word's): ``""`` for ``SpaceAfter=No``, ``SpacesAfter=``'s,
        else one space."""
        misc = self.misc if self.is_mwt() or not self.words else self.words[0].misc
        for item in (misc or "").split("|"):
            if item == "SpaceAfter=No":
                return ""
            if item.startswith("SpacesAfter="):
                return unescape_spaces(item.removeprefix("SpacesAfter="))
        return " "

    def to_dict(self) -> list[dict[str, Any]]:
        """stanza's: the token's own entry first if it is a multiword token (``id`` a
        tuple), then one per word."""
        words = [word.to_dict() for word in self.words]
        if not self.is_mwt():
            return words
        values = {"id": self.id, "text": self.text, "misc": self.misc, "start_char": self.start, "end_char": self.end}
        return [{key: value for key, value in values.items() if value is not None}, *words]
