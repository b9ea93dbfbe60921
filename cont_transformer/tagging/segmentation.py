"""Raw text to UD-style sentences of words, with character offsets (English, German).

The tokenizer and sentence splitter are spaCy's rule-based ones (``spacy.blank(language)``
with its ``sentencizer``: language-specific tokenizer exceptions and affix rules, no
trained model to download). They were chosen by measurement on the UD English-GUM and
German-GSD dev texts against their gold tokens, beside SoMaJo and syntok (the table and
its commands: docs/experiments.md, "Tagging text"). Three steps around spaCy:

* Paragraphs. A blank line always ends a sentence: the text is cut into paragraphs at
  blank lines and each is split on its own.
* Openers. spaCy's splitter keeps every punctuation token after a sentence-final one in
  that sentence, so in ``He left. "Why?" (She asked.)`` the opening ``"`` and ``(`` would
  end the previous sentence; a trailing punctuation token written like an opener
  (space before it, none after) starts the next sentence instead.
* Multiword tokens. spaCy splits English clitics as UD words (``don't`` -> ``do n't``,
  ``city's`` -> ``city 's``, ``gonna`` -> ``gon na``, ``cannot`` -> ``can not``); UD
  writes such a run as one multiword token over those words. A run of two or more
  tokens with no space between them, each made only of letters and apostrophes, is
  one multiword token. German fused forms (``zum`` = ``zu dem``) stay one word, as
  the German-HDT treebank tags them (``APPRART``); German-GSD splits them.

Every word is a span ``(start, end)`` of the input, and no word contains whitespace,
so the words and the whitespace between them rebuild the input exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from itertools import pairwise

LANGUAGES = ("en", "de")

_PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n\s*")  # a blank line (and what follows it)
_NON_SPACE = re.compile(r"\S+")
_CLITIC_PIECE = re.compile(r"[^\W\d_'’]*['’]?[^\W\d_'’]*")  # letters, at most one apostrophe


@dataclass
class Sentence:
    """One sentence of a text.

    Attributes:
        spans: ``(start, end)`` of each word in the text (``text[start:end]`` is its form).
        multiword: ``first -> end`` word indices of each multiword token, words
            ``first .. end - 1`` (usually empty).
        paragraph_start: the sentence begins a paragraph.
    """

    spans: list[tuple[int, int]]
    multiword: dict[int, int] = field(default_factory=dict)
    paragraph_start: bool = False

    def words(self, text: str) -> list[str]:
        return [text[start:end] for start, end in self.spans]


def check_language(language: str) -> str:
    if language not in LANGUAGES:
        raise ValueError(f"language: {language!r} is not supported; choose one of {LANGUAGES}")
    return language


@cache
def spacy_pipeline(language: str):
    """spaCy's blank pipeline for ``language`` with the rule-based sentence splitter."""
    import spacy  # imported here: loading spaCy takes a second, and only raw text needs it

    nlp = spacy.blank(check_language(language))
    nlp.add_pipe("sentencizer")
    nlp.max_length = 10**9  # the limit guards parsers' memory; tokenizing needs little
    return nlp


def _paragraphs(text: str) -> Iterator[tuple[int, str]]:
    """``(offset, paragraph)`` of each paragraph of ``text`` that is not blank."""
    start = 0
    for match in _PARAGRAPH_BREAK.finditer(text):
        if text[start : match.start()].strip():
            yield start, text[start : match.start()]
        start = match.end()
    if text[start:].strip():
        yield start, text[start:]


def _sentences(doc, offset: int, split: bool = True) -> Iterator[Sentence]:
    """The sentences of a spaCy doc (one unless ``split``), openers moved to the sentence
    they open, clitic runs grouped, whitespace tokens dropped; spans shifted by ``offset``.

    Reads the doc's arrays rather than its ``Token`` objects, which cost more than the
    tokenizing itself.
    """
    from spacy.attrs import IDX, IS_PUNCT, IS_SPACE, LENGTH, SENT_START

    if not len(doc):
        return
    columns = doc.to_array([IDX, LENGTH, IS_SPACE, IS_PUNCT, SENT_START]).astype("int64")
    starts, lengths, space, punct, sent_start = columns.T.tolist()
    text = doc.text
    ends = [start + length for start, length in zip(starts, lengths)]

    def opener(i: int) -> bool:
        """Punctuation written like an opening quote or bracket: whitespace before it, a
        visible character right after it."""
        return bool(
            punct[i]
            and starts[i] > 0
            and text[starts[i] - 1].isspace()
            and ends[i] < len(text)
            and not text[ends[i]].isspace()
        )

    bounds = [0, *(i for i in range(1, len(starts)) if split and sent_start[i] == 1), len(starts)]
    for k in range(1, len(bounds) - 1):
        while bounds[k] - 1 > bounds[k - 1] and (space[bounds[k] - 1] or opener(bounds[k] - 1)):
            bounds[k] -= 1
    for begin, end in pairwise(bounds):
        spans, multiword, run_start, clitic = [], {}, None, False
        for i in range(begin, end):
            if space[i]:
                continue
            joins = clitic and spans[-1][1] == offset + starts[i]
            clitic = _CLITIC_PIECE.fullmatch(text, starts[i], ends[i]) is not None
            spans.append((offset + starts[i], offset + ends[i]))
            if joins and clitic:
                run_start = len(spans) - 2 if run_start is None else run_start
                multiword[run_start] = len(spans)
            else:
                run_start = None
        if spans:
            yield Sentence(spans, multiword)


def split_text(text: str, language: str = "en") -> Iterator[Sentence]:
    """The sentences of raw ``text`` (paragraphs at blank lines, then spaCy), lazily.

    Example::

        [s.words(text) for s in split_text(text := "I don't know. He left.")]
        # [['I', 'do', "n't", 'know', '.'], ['He', 'left', '.']]
    """
    nlp = spacy_pipeline(language)
    paragraphs = list(_paragraphs(text))
    docs = nlp.pipe(paragraph for _, paragraph in paragraphs)
    for (offset, _), doc in zip(paragraphs, docs):
        for number, sentence in enumerate(_sentences(doc, offset)):
            sentence.paragraph_start = number == 0
            yield sentence


def tokenize_sentences(
    sentences: Iterable[str], language: str = "en", offsets: Iterable[int] | None = None
) -> Iterator[Sentence]:
    """Each string as one sentence (no sentence splitting), tokenized, lazily.

    ``offsets`` gives where each string starts in a larger text (default 0), for spans
    into that text.
    """
    nlp = spacy_pipeline(language)
    sentences = list(sentences)
    offsets = [0] * len(sentences) if offsets is None else list(offsets)
    for offset, doc in zip(offsets, nlp.tokenizer.pipe(sentences)):
        yield next(_sentences(doc, offset, split=False), Sentence([]))


def whitespace_sentences(lines: Iterable[str], offsets: Iterable[int] | None = None) -> Iterator[Sentence]:
    """Each string as one sentence of whitespace-separated words (already tokenized)."""
    lines = list(lines)
    offsets = [0] * len(lines) if offsets is None else list(offsets)
    for offset, line in zip(offsets, lines):
        yield Sentence([(offset + m.start(), offset + m.end()) for m in _NON_SPACE.finditer(line)])
