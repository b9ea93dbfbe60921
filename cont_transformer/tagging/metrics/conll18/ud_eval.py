"""The CoNLL 2018 UD shared task's evaluation of tokens, words and tags, in plain Python.

It imports nothing but the standard library, so scoring (``scripts/tag.py --evaluate``,
:mod:`cont_transformer.tagging.scoring`) loads neither `evaluate` nor `datasets`; the local
`evaluate` metric module beside it (``conll18.py``) wraps it, and `evaluate` copies this
file with that one into its module cache, so it imports nothing from the package.

:func:`evaluate_documents` scores each system document against its gold one, as
``conll18_ud_eval.py`` (version 1.2) does, and adds the counts over the documents.
The rows: ``Tokens``, ``Sentences``, ``Words``, ``UPOS``, ``XPOS``, ``UFeats``,
``AllTags`` and ``Lemmas``, each ``{"precision", "recall", "f1", "aligned_accuracy",
"correct", "gold", "system", "aligned"}`` (``aligned_accuracy``: correct over aligned
words; None for Tokens, Sentences and Words).

The algorithm (as the official script):

* Both texts are reduced to one stream of characters: the FORMs of their surface tokens
  (a multiword token's FORM, not its words'), space characters (Unicode ``Zs``)
  removed; the streams must be equal. Every token has a character span, a word the
  span of its token; a sentence spans its tokens.
* Tokens, sentences: spans that match exactly.
* Words: outside multiword tokens, words align when their spans are equal. Where either
  side has a multiword token, the words of both sides from there to the end of the
  (transitively overlapping) multiword tokens form a region (a plain word that sticks
  out of it is left outside); in it, words align along the longest common subsequence
  of their lower-cased forms.
* Tags: an aligned word is correct when the column agrees. ``UFeats`` compares the
  universal features only (``UNIVERSAL_FEATURES``), order-insensitive; ``AllTags``
  needs UPOS, XPOS and UFeats right; ``Lemmas`` counts a word right when its lemma
  equals gold's, or gold's lemma is ``_``.
* precision = correct / system words, recall = correct / gold words,
  F1 = 2 correct / (gold + system).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

UNIVERSAL_FEATURES = {
    "PronType",
    "NumType",
    "Poss",
    "Reflex",
    "Foreign",
    "Abbr",
    "Gender",
    "Animacy",
    "Number",
    "Case",
    "Definite",
    "Degree",
    "VerbForm",
    "Mood",
    "Tense",
    "Aspect",
    "Voice",
    "Evident",
    "Polarity",
    "Person",
    "Polite",
}
ROWS = ("Tokens", "Sentences", "Words", "UPOS", "XPOS", "UFeats", "AllTags", "Lemmas")


@dataclass(eq=False)  # words are compared by identity
class Word:
    """A syntactic word: its token's span, whether the token is a multiword one, and the
    columns scored (FEATS already reduced to the universal features, sorted)."""

    start: int
    end: int
    is_multiword: bool
    form: str
    lemma: str
    upos: str
    xpos: str
    feats: str

    @classmethod
    def of(cls, form: str, lemma: str, upos: str, xpos: str, feats: str) -> Word:
        """A word scored on its own (no span): its FEATS reduced as the scorer does."""
        return cls(0, 0, False, form, lemma, upos, xpos, universal_feats(feats))


@dataclass
class Document:
    characters: list[str] = field(default_factory=list)
    tokens: list[tuple[int, int]] = field(default_factory=list)
    sentences: list[tuple[int, int]] = field(default_factory=list)
    words: list[Word] = field(default_factory=list)


def universal_feats(feats: str) -> str:
    """The universal features of a FEATS value, sorted (``""`` for none)."""
    return "|".join(sorted(f for f in feats.split("|") if f.split("=", 1)[0] in UNIVERSAL_FEATURES))


def _strip_spaces(form: str) -> str:
    return "".join(c for c in form if unicodedata.category(c) != "Zs")


def read_document(text: str, name: str = "<conllu>") -> Document:
    """Tokens, sentences and words of a CoNLL-U text; ``ValueError`` naming ``name`` and
    the line for a line that is not 10 tab-separated columns, or an empty FORM."""
    document = Document()
    offset, sentence_start, multiword_end, token_span = 0, None, 0, (0, 0)
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            if sentence_start is not None:
                document.sentences.append((sentence_start, offset))
                sentence_start, multiword_end = None, 0
            continue
        if line.startswith("#"):
            continue
        columns = line.split("\t")
        if len(columns) != 10:
            raise ValueError(f"{name}:{number}: expected 10 tab-separated columns, found {len(columns)}")
        token_id = columns[0]
        if "." in token_id:
            continue  # empty node
        if sentence_start is None:
            sentence_start = offset
        is_range = "-" in token_id
        form = columns[1]
        if is_range or int(token_id) > multiword_end:  # a token: a multiword one, or a plain word
            form = _strip_spaces(form)
            if not form:
                raise ValueError(f"{name}:{number}: empty FORM")
            document.characters.extend(form)
            token_span = (offset, offset + len(form))
            document.tokens.append(token_span)
            offset += len(form)
        if is_range:
            multiword_end = int(token_id.split("-")[1])
            continue
        document.words.append(
            Word(
                *token_span,
                int(token_id) <= multiword_end,
                form,
                columns[2],
                columns[3],
                columns[4],
                universal_feats(columns[5]),
            )
        )
    if sentence_start is not None:
        document.sentences.append((sentence_start, offset))
    return document


def _matching_spans(gold: list[tuple[int, int]], system: list[tuple[int, int]]) -> int:
    """Spans that match exactly (both lists sorted, as a document's are)."""
    correct, gi, si = 0, 0, 0
    while gi < len(gold) and si < len(system):
        if system[si][0] < gold[gi][0]:
            si += 1
        elif gold[gi][0] < system[si][0]:
            gi += 1
        else:
            correct += gold[gi][1] == system[si][1]
            gi, si = gi + 1, si + 1
    return correct


def _multiword_span(gold: list[Word], system: list[Word], gi: int, si: int) -> tuple[int, int, int, int]:
    """``(gold start, system start, gold end, system end)`` of the region of words around
    the multiword token at ``gold[gi]`` or ``system[si]``."""
    if gold[gi].is_multiword:
        end = gold[gi].end
        if not system[si].is_multiword and system[si].start < gold[gi].start:
            si += 1
    else:
        end = system[si].end
        if not gold[gi].is_multiword and gold[gi].start < system[si].start:
            gi += 1
    gs, ss = gi, si
    while not _beyond(gold, gi, end) or not _beyond(system, si, end):
        if gi < len(gold) and (si >= len(system) or gold[gi].start <= system[si].start):
            end = max(end, gold[gi].end) if gold[gi].is_multiword else end
            gi += 1
        else:
            end = max(end, system[si].end) if system[si].is_multiword else end
            si += 1
    return gs, ss, gi, si


def _beyond(words: list[Word], i: int, end: int) -> bool:
    """Whether ``words[i]`` lies past a region ending at ``end``: a multiword token's word
    when it starts there or later, a plain word when it ends after it."""
    if i >= len(words):
        return True
    return words[i].start >= end if words[i].is_multiword else words[i].end > end


def _lcs_pairs(gold: list[Word], system: list[Word]) -> list[tuple[Word, Word]]:
    """Words with equal lower-cased forms along a longest common subsequence, taken as
    the official script walks its table."""
    g_forms, s_forms = [w.form.lower() for w in gold], [w.form.lower() for w in system]
    lcs = [[0] * (len(system) + 1) for _ in range(len(gold) + 1)]
    for g in reversed(range(len(gold))):
        for s in reversed(range(len(system))):
            lcs[g][s] = max(lcs[g + 1][s + 1] + 1 if g_forms[g] == s_forms[s] else 0, lcs[g + 1][s], lcs[g][s + 1])
    pairs, g, s = [], 0, 0
    while g < len(gold) and s < len(system):
        if g_forms[g] == s_forms[s]:
            pairs.append((gold[g], system[s]))
            g, s = g + 1, s + 1
        elif lcs[g][s] == lcs[g + 1][s]:
            g += 1
        else:
            s += 1
    return pairs


def align_words(gold: list[Word], system: list[Word]) -> list[tuple[Word, Word]]:
    """Aligned ``(gold word, system word)`` pairs (see the module docstring)."""
    pairs, gi, si = [], 0, 0
    while gi < len(gold) and si < len(system):
        if gold[gi].is_multiword or system[si].is_multiword:
            gs, ss, gi, si = _multiword_span(gold, system, gi, si)
            pairs.extend(_lcs_pairs(gold[gs:gi], system[ss:si]))
        elif (gold[gi].start, gold[gi].end) == (system[si].start, system[si].end):
            pairs.append((gold[gi], system[si]))
            gi, si = gi + 1, si + 1
        elif gold[gi].start <= system[si].start:
            gi += 1
        else:
            si += 1
    return pairs


_KEYS = {
    "UPOS": lambda g, s: g.upos == s.upos,
    "XPOS": lambda g, s: g.xpos == s.xpos,
    "UFeats": lambda g, s: g.feats == s.feats,
    "AllTags": lambda g, s: (g.upos, g.xpos, g.feats) == (s.upos, s.xpos, s.feats),
    "Lemmas": lambda g, s: g.lemma == "_" or g.lemma == s.lemma,
}


def tag_counts(pairs: list[tuple[Word, Word]]) -> dict[str, int]:
    """Per tag row (UPOS, XPOS, UFeats, AllTags, Lemmas), the aligned ``(gold, system)``
    word pairs whose column agrees."""
    return {row: sum(agrees(g, s) for g, s in pairs) for row, agrees in _KEYS.items()}


def counts(gold_text: str, system_text: str) -> dict[str, dict[str, int]]:
    """Per row, ``{"correct", "gold", "system", "aligned"}`` of one document pair;
    ``ValueError`` when the texts differ (whitespace aside), naming where."""
    gold, system = read_document(gold_text, "gold"), read_document(system_text, "system")
    if gold.characters != system.characters:
        at = next(
            (i for i, (a, b) in enumerate(zip(gold.characters, system.characters)) if a != b),
            min(len(gold.characters), len(system.characters)),
        )
        raise ValueError(
            f"gold and system have different texts (whitespace aside) from character {at}: "
            f"{''.join(gold.characters[at : at + 20])!r} vs {''.join(system.characters[at : at + 20])!r}"
        )
    pairs = align_words(gold.words, system.words)
    result = {
        "Tokens": (_matching_spans(gold.tokens, system.tokens), len(gold.tokens), len(system.tokens), None),
        "Sentences": (
            _matching_spans(gold.sentences, system.sentences),
            len(gold.sentences),
            len(system.sentences),
            None,
        ),
        "Words": (len(pairs), len(gold.words), len(system.words), None),
    }
    for row, correct in tag_counts(pairs).items():
        result[row] = (correct, len(gold.words), len(system.words), len(pairs))
    return {row: dict(zip(("correct", "gold", "system", "aligned"), values)) for row, values in result.items()}


def scores(row_counts: dict[str, int | None]) -> dict[str, float | int | None]:
    """Precision, recall, F1 and aligned accuracy of a row's counts (added to them)."""
    correct, gold, system, aligned = (row_counts[k] for k in ("correct", "gold", "system", "aligned"))
    return {
        "precision": correct / system if system else 0.0,
        "recall": correct / gold if gold else 0.0,
        "f1": 2 * correct / (gold + system) if gold + system else 0.0,
        "aligned_accuracy": None if aligned is None else correct / aligned if aligned else 0.0,
        **row_counts,
    }


def evaluate_documents(gold_texts: list[str], system_texts: list[str]) -> dict[str, dict]:
    """The scores of every row over document pairs (counts added, then scored)."""
    if len(gold_texts) != len(system_texts):
        raise ValueError(f"{len(system_texts)} system documents for {len(gold_texts)} gold ones")
    total = {row: {"correct": 0, "gold": 0, "system": 0, "aligned": None} for row in ROWS}
    for gold_text, system_text in zip(gold_texts, system_texts):
        for row, values in counts(gold_text, system_text).items():
            for key, value in values.items():
                if value is not None:
                    total[row][key] = (total[row][key] or 0) + value
    return {row: scores(values) for row, values in total.items()}
