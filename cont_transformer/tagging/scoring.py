"""Score a system CoNLL-U against gold the way the CoNLL 2018 UD shared task does.

The system may tokenize differently from gold, so units are compared by where they sit
in the text, not by index. Both files are reduced to the same stream of characters:
the FORMs of their surface tokens (a multiword token's FORM, not its words'), whitespace
removed; the two streams must be equal. Every token then has a character span, and
every word the span of its token.

* Tokens and sentences: F1 of spans that match exactly.
* Words: a word outside multiword tokens aligns with the word of the other side that
  has the same span. Where either side has a multiword token, the words of both sides
  whose tokens overlap it (transitively) form a region, and inside it words align along
  the longest common subsequence of their lower-cased forms. Precision = aligned /
  system words, recall = aligned / gold words.
* Tags (``upos``, ``xpos``): aligned words whose tags also agree, over system words
  (precision) and gold words (recall); ``aligned_accuracy`` is the same over aligned
  words only (what a tagger gets right of the words it was given correctly).
"""

from __future__ import annotations

from dataclasses import dataclass

from .conllu_document import COLUMNS, ConlluDocument

TAG_COLUMNS = ("upos", "xpos")


@dataclass(frozen=True)
class _Word:
    start: int  # span of the word's token in the whitespace-free character stream
    end: int
    form: str
    multiword: bool
    tags: tuple[str, str]  # upos, xpos


@dataclass
class _Units:
    characters: str
    tokens: set[tuple[int, int]]
    sentences: set[tuple[int, int]]
    words: list[_Word]


def _units(document: ConlluDocument) -> _Units:
    """Character stream, token and sentence spans and words of a document."""
    characters: list[str] = []
    offset = 0
    tokens, sentences, words = set(), set(), []
    upos, xpos = COLUMNS.index("upos"), COLUMNS.index("xpos")
    for block in document.blocks:
        sentence_start = offset
        multiword_end = 0  # id of the last word inside the current multiword token
        span = (0, 0)
        for index in block:
            fields = document.lines[index].rstrip("\r").split("\t")
            token_id = fields[0]
            if token_id.startswith("#") or "." in token_id:
                continue  # comments and empty nodes
            if "-" in token_id or int(token_id) > multiword_end:
                form = "".join(c for c in fields[1] if not c.isspace())
                characters.append(form)
                span = (offset, offset + len(form))
                offset += len(form)
                tokens.add(span)
            if "-" in token_id:
                multiword_end = int(token_id.split("-")[1])
                continue
            words.append(
                _Word(*span, fields[1], int(token_id) <= multiword_end, (fields[upos], fields[xpos]))
            )
        sentences.add((sentence_start, offset))
    return _Units("".join(characters), tokens, sentences, words)


def _lcs_pairs(gold: list[_Word], system: list[_Word]) -> list[tuple[_Word, _Word]]:
    """Pairs of words with equal lower-cased forms along a longest common subsequence."""
    g_forms = [w.form.lower() for w in gold]
    s_forms = [w.form.lower() for w in system]
    # length[i][j]: LCS length of g_forms[i:] and s_forms[j:]
    length = [[0] * (len(system) + 1) for _ in range(len(gold) + 1)]
    for i in range(len(gold) - 1, -1, -1):
        for j in range(len(system) - 1, -1, -1):
            length[i][j] = (
                length[i + 1][j + 1] + 1
                if g_forms[i] == s_forms[j]
                else max(length[i + 1][j], length[i][j + 1])
            )
    pairs, i, j = [], 0, 0
    while i < len(gold) and j < len(system):
        if g_forms[i] == s_forms[j]:
            pairs.append((gold[i], system[j]))
            i, j = i + 1, j + 1
        elif length[i + 1][j] >= length[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def align_words(gold: list[_Word], system: list[_Word]) -> list[tuple[_Word, _Word]]:
    """Aligned ``(gold word, system word)`` pairs (see the module docstring)."""
    pairs = []
    i = j = 0
    while i < len(gold) and j < len(system):
        g, s = gold[i], system[j]
        if not (g.multiword or s.multiword):
            if (g.start, g.end) == (s.start, s.end):
                pairs.append((g, s))
                i, j = i + 1, j + 1
            elif g.start <= s.start:
                i += 1
            else:
                j += 1
            continue
        # A plain word that starts before the other side's multiword token is left out.
        if g.multiword and not s.multiword and s.start < g.start:
            j += 1
            continue
        if s.multiword and not g.multiword and g.start < s.start:
            i += 1
            continue
        end = max(w.end for w in (g, s) if w.multiword)
        first_i, first_j = i, j
        while (i < len(gold) and gold[i].start < end) or (j < len(system) and system[j].start < end):
            if i < len(gold) and (j == len(system) or gold[i].start <= system[j].start):
                word, i = gold[i], i + 1
            else:
                word, j = system[j], j + 1
            if word.multiword:
                end = max(end, word.end)
        pairs.extend(_lcs_pairs(gold[first_i:i], system[first_j:j]))
    return pairs


def _f1(correct: int, gold: int, system: int) -> dict[str, float]:
    precision = correct / system if system else 0.0
    recall = correct / gold if gold else 0.0
    f1 = 2 * correct / (gold + system) if gold + system else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "gold": gold, "system": system}


def score(
    gold: ConlluDocument, system: ConlluDocument, columns: tuple[str, ...] = TAG_COLUMNS
) -> dict[str, dict[str, float]]:
    """Tokens, sentences, words and the tag ``columns`` of ``system`` against ``gold``.

    Returns ``{"tokens" | "sentences" | "words" | column: {"precision", "recall", "f1",
    "gold", "system"}}``, the tag entries with ``aligned_accuracy``.
    Raises ``ValueError`` naming both files when their texts differ.
    """
    g, s = _units(gold), _units(system)
    if g.characters != s.characters:
        at = next(
            (k for k, (a, b) in enumerate(zip(g.characters, s.characters)) if a != b),
            min(len(g.characters), len(s.characters)),
        )
        raise ValueError(
            f"{gold.name} and {system.name} have different texts (whitespace aside) from "
            f"character {at}: {g.characters[at:at + 20]!r} vs {s.characters[at:at + 20]!r}"
        )
    pairs = align_words(g.words, s.words)
    result = {
        "tokens": _f1(len(g.tokens & s.tokens), len(g.tokens), len(s.tokens)),
        "sentences": _f1(len(g.sentences & s.sentences), len(g.sentences), len(s.sentences)),
        "words": _f1(len(pairs), len(g.words), len(s.words)),
    }
    for column in columns:
        position = TAG_COLUMNS.index(column)
        correct = sum(gw.tags[position] == sw.tags[position] for gw, sw in pairs)
        result[column] = {
            **_f1(correct, len(g.words), len(s.words)),
            "aligned_accuracy": correct / len(pairs) if pairs else 0.0,
        }
    return result


def format_scores(result: dict[str, dict[str, float]]) -> str:
    """A small table of :func:`score`'s result (percentages)."""
    lines = [f"{'':10} {'precision':>9} {'recall':>7} {'F1':>7} {'aligned acc.':>12}"]
    for unit, values in result.items():
        aligned = values.get("aligned_accuracy")
        lines.append(
            f"{unit:10} {100 * values['precision']:9.2f} {100 * values['recall']:7.2f} "
            f"{100 * values['f1']:7.2f} {'' if aligned is None else f'{100 * aligned:12.2f}'}"
        )
    return "\n".join(lines)
