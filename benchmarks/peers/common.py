"""Shared helpers of the peer scripts: CoNLL-U read/write on gold tokens (stdlib only).

A predictions file is the gold dev file line for line: comments, multiword-token lines,
empty nodes, HEAD, DEPREL, DEPS and MISC are copied from gold unchanged (they are not
predictions), and the LEMMA, UPOS, XPOS and FEATS columns of the word lines (integer ids)
are replaced by the peer's output. The scorer only reads those four columns of word lines.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

LEMMA, UPOS, XPOS, FEATS = 2, 3, 4, 5
TAG_COLUMNS = (LEMMA, UPOS, XPOS, FEATS)


class Conllu:
    """A CoNLL-U file kept as its lines, with the indices of its word lines per sentence."""

    def __init__(self, text: str, name: str = "<input>"):
        self.name = name
        self.lines = text.split("\n")
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
        self.sentences: list[list[int]] = []
        current: list[int] = []
        for index, line in enumerate(self.lines):
            if not line.strip():
                if current:
                    self.sentences.append(current)
                current = []
                continue
            if line.startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) != 10:
                raise ValueError(f"{name}:{index + 1}: {len(fields)} columns, not 10")
            if fields[0].isdigit():
                current.append(index)
        if current:
            self.sentences.append(current)

    @classmethod
    def read(cls, path: str | os.PathLike) -> Conllu:
        path = Path(path)
        return cls(path.read_text(encoding="utf-8-sig"), str(path))

    def words(self) -> list[list[list[str]]]:
        """The 10 fields of every word line, per sentence."""
        return [[self.lines[i].split("\t") for i in sentence] for sentence in self.sentences]

    def num_words(self) -> int:
        return sum(len(sentence) for sentence in self.sentences)

    def with_tags(self, tags: list[list[tuple[str, str, str, str]]]) -> str:
        """The text with (LEMMA, UPOS, XPOS, FEATS) of each word line replaced."""
        if len(tags) != len(self.sentences):
            raise ValueError(f"{len(tags)} tagged sentences for {len(self.sentences)} in {self.name}")
        lines = list(self.lines)
        for sentence, sentence_tags in zip(self.sentences, tags):
            if len(sentence_tags) != len(sentence):
                raise ValueError(f"{len(sentence_tags)} tag tuples for a sentence of {len(sentence)} words")
            for index, values in zip(sentence, sentence_tags):
                fields = lines[index].split("\t")
                for column, value in zip(TAG_COLUMNS, values):
                    fields[column] = value if value else "_"
                lines[index] = "\t".join(fields)
        return "\n".join(lines) + "\n"

    def blanked(self) -> str:
        """The text with LEMMA, UPOS, XPOS and FEATS of every word line set to ``_``."""
        return self.with_tags([[("_",) * 4 for _ in sentence] for sentence in self.sentences])


def raw_text(conllu: str) -> str:
    """The raw text of a CoNLL-U text from its ``# text`` lines, as the package rebuilds it
    (``ConlluDocument.text``): sentences joined by a space, a blank line before each
    ``# newdoc``/``# newpar``."""
    pieces: list[str] = []
    new_paragraph, text = False, None
    for line in [*conllu.split("\n"), ""]:
        line = line.rstrip("\r")
        if line.startswith(("# newdoc", "# newpar")):
            new_paragraph = True
        elif line.startswith("# text = "):
            text = line[len("# text = ") :]
        elif not line.strip() and text is not None:
            if pieces:
                pieces.append("\n\n" if new_paragraph else " ")
            pieces.append(text)
            new_paragraph, text = False, None
    return "".join(pieces) + "\n" if pieces else ""


def existing_file(parser: argparse.ArgumentParser, path: str, option: str) -> Path:
    """``path`` as a Path, or a one-line argparse error if it is not a file."""
    if not Path(path).is_file():
        parser.error(f"{option} {path}: no such file")
    return Path(path)
