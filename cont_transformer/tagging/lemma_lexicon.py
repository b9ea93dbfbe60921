"""The lemma lexicon: the lemma a treebank gives each (form, tag) it shows.

A tagger of lemmas and XPOS (or UPOS) records it in ``config.lemma_lexicon`` as
``{column: {tag: {form: lemma}}}``; decoding (``column_decoding.decode_columns``, written once
for the package's ``Tagger``, dev scoring and the folder's pipeline) gives a word whose
form and predicted tag it holds that lemma instead of its predicted edit script's
(``lemmas.py``), as stanza's and UDPipe's lemmatizers look a seen (form, tag) up before
they guess: the lemma head, which reads the word's spelling and its context, misses some
rare forms it trained on (``occurring`` -> ``occurr``). The trainer builds it from the
treebank's train sentences alone, never from silver ones (self-training), whose lemmas
are a teacher's guesses.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from ..configuration_cont_transformer import LEXICON_COLUMNS
from .columns import column_values


def lemma_lexicon(triples: Iterable[tuple[str, str, str]], column: str) -> dict[str, dict[str, dict[str, str]]] | None:
    """``{column: {tag: {form: lemma}}}`` (``config.lemma_lexicon``) from a treebank's
    ``(form, tag, lemma)`` triples, ``tag`` of ``column``: per (form, tag), the lemma seen
    most often with it, of the tied the first seen (``_`` is no lemma); None when there are
    none. On GUM dev it gains 0.05-0.17 points of Lemmas for every English model it was
    tried on (docs/experiments.md, "The lemma lexicon")."""
    counts: dict[tuple[str, str], Counter] = {}
    for form, tag, lemma in triples:
        if lemma != "_":
            counts.setdefault((tag, form), Counter())[lemma] += 1
    lexicon: dict[str, dict[str, str]] = {}
    for (tag, form), lemmas in counts.items():
        lexicon.setdefault(tag, {})[form] = lemmas.most_common(1)[0][0]
    return {column: lexicon} if lexicon else None


def treebank_lemma_lexicon(train, num_treebank: int, labels: Mapping[str, Sequence[str]]) -> dict | None:
    """The lemma lexicon (:func:`lemma_lexicon`) of the first ``num_treebank`` sentences
    of ``train`` (the treebank's, not the silver ones after them), keyed by the first of
    ``LEXICON_COLUMNS`` the tagger predicts; None unless it predicts lemmas and one of them."""
    column = next((c for c in LEXICON_COLUMNS if c in labels), None)
    if "lemma" not in labels or column is None:
        return None
    treebank = train.select(range(num_treebank))
    sentences = zip(treebank["tokens"], column_values(treebank, column), column_values(treebank, "lemma"))
    return lemma_lexicon((triple for sentence in sentences for triple in zip(*sentence)), column)


__all__ = ["lemma_lexicon", "treebank_lemma_lexicon"]
