"""The sample treebank: a small synthetic English-like treebank, so training runs with no data.

:func:`write_sample_treebank` writes valid CoNLL-U (with comments, multiword tokens, empty
nodes and words whose tag depends on context) from a tiny grammar;
``data.load_treebank("sample")`` generates and loads it. Every word has UPOS, XPOS and a
lemma (plurals and past tenses lemmatised); nouns and verbs have features (number; tense
and verb form), so a model trained on it predicts every column.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path

Word = tuple[str, str, str, str]  # form, lemma, UPOS, XPOS

# Synthetic sample treebank: word class -> (UPOS, XPOS, "form form/lemma ...").
# Several forms sit in more than one class ("watch", "saw", "can", "light",
# "that", "flies", ...), so their tag depends on context.
SAMPLE_LEXICON: dict[str, tuple[str, str, str]] = {
    "det": ("DET", "DT", "the a every that"),
    "det_plural": ("DET", "DT", "the these/this some"),
    "adj": ("ADJ", "JJ", "big old red light quiet fast"),
    "noun": ("NOUN", "NN", "dog bird house watch saw can light duck book play fish"),
    "noun_plural": (
        "NOUN",
        "NNS",
        "dogs/dog birds/bird watches/watch flies/fly ducks/duck books/book plays/play fish",
    ),
    "name": ("PROPN", "NNP", "Anna Tom Paris"),
    "pronoun": ("PRON", "PRP", "he she it"),
    "pronoun_plural": ("PRON", "PRP", "they we"),
    "pronoun_object": ("PRON", "PRP", "him/he her/she them/they"),
    "verb_3sg": (
        "VERB",
        "VBZ",
        "sees/see likes/like watches/watch books/book plays/play flies/fly",
    ),
    "verb_plural": ("VERB", "VBP", "see like watch book play fish"),
    "verb_past": (
        "VERB",
        "VBD",
        "saw/see liked/like watched/watch booked/book played/play found/find",
    ),
    "verb_base": ("VERB", "VB", "see like watch book play duck fish light"),
    "modal": ("AUX", "MD", "can will must"),
    "prep": ("ADP", "IN", "in near with under"),
    "adv": ("ADV", "RB", "often today again"),
}
# Negated auxiliaries, written as multiword tokens: subject kind -> surface -> auxiliary.
SAMPLE_NEGATIONS: dict[str, dict[str, Word]] = {
    "singular": {"doesn't": ("does", "do", "AUX", "VBZ")},
    "plural": {"don't": ("do", "do", "AUX", "VBP")},
    "past": {"didn't": ("did", "do", "AUX", "VBD")},
    "modal": {"can't": ("ca", "can", "AUX", "MD"), "won't": ("wo", "will", "AUX", "MD")},
}
_NOT: Word = ("n't", "not", "PART", "RB")
_SAID: Word = ("said", "say", "VERB", "VBD")
_THAT: Word = ("that", "that", "SCONJ", "IN")
_AND: Word = ("and", "and", "CCONJ", "CC")
# A small morphology, by XPOS: number on nouns, tense and verb form on verbs.
SAMPLE_FEATS: dict[str, str] = {
    "NN": "Number=Sing",
    "NNS": "Number=Plur",
    "NNP": "Number=Sing",
    "VBZ": "Number=Sing|Person=3|Tense=Pres|VerbForm=Fin",
    "VBP": "Tense=Pres|VerbForm=Fin",
    "VBD": "Tense=Past|VerbForm=Fin",
    "VB": "VerbForm=Inf",
}


@dataclass
class _Unit:
    """A surface token of a sample sentence, or an empty node."""

    words: list[Word]  # one word, or the words of a multiword token
    surface: str | None = None  # the multiword token's form
    empty: bool = False  # an elided word: an empty node, absent from the text


class _SampleGrammar:
    """A tiny English grammar: clauses of subject, verb group, object, optional PP."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def word(self, word_class: str) -> _Unit:
        upos, xpos, entries = SAMPLE_LEXICON[word_class]
        form, _, lemma = self.rng.choice(entries.split()).partition("/")
        return _Unit([(form, lemma or form, upos, xpos)])

    def noun_phrase(self, subject: bool) -> tuple[list[_Unit], bool]:
        """A noun phrase and whether it is plural."""
        draw = self.rng.random()
        if draw < 0.15:
            return [self.word("name")], False
        plural = self.rng.random() < 0.4
        if draw < 0.3:
            if not subject:
                return [self.word("pronoun_object")], False
            return [self.word("pronoun_plural" if plural else "pronoun")], plural
        units = [self.word("det_plural" if plural else "det")]
        if self.rng.random() < 0.35:
            units.append(self.word("adj"))
        units.append(self.word("noun_plural" if plural else "noun"))
        return units, plural

    def verb_phrase(self, plural: bool) -> list[_Unit]:
        draw = self.rng.random()
        if draw < 0.15:
            kind = self.rng.choice(["past", "modal", "plural" if plural else "singular"])
            surface, auxiliary = self.rng.choice(list(SAMPLE_NEGATIONS[kind].items()))
            units = [_Unit([auxiliary, _NOT], surface=surface), self.word("verb_base")]
        elif draw < 0.35:
            units = [self.word("modal"), self.word("verb_base")]
        elif draw < 0.65:
            units = [self.word("verb_past")]
        else:
            units = [self.word("verb_plural" if plural else "verb_3sg")]
        units += self.noun_phrase(subject=False)[0]
        if self.rng.random() < 0.3:
            units += [self.word("prep"), *self.noun_phrase(subject=False)[0]]
        if self.rng.random() < 0.15:
            units.append(self.word("adv"))
        return units

    def clause(self) -> list[_Unit]:
        subject, plural = self.noun_phrase(subject=True)
        return subject + self.verb_phrase(plural)

    def sentence(self) -> list[_Unit]:
        draw = self.rng.random()
        if draw < 0.15:
            units = self.noun_phrase(subject=True)[0] + [_Unit([_SAID]), _Unit([_THAT])]
            units += self.clause()
        elif draw < 0.2:
            # Gapping, "Anna saw a dog and Tom a bird": the elided verb is an empty node.
            verb = self.word("verb_past")
            units = self.noun_phrase(subject=True)[0] + [verb]
            units += self.noun_phrase(subject=False)[0] + [_Unit([_AND])]
            units += self.noun_phrase(subject=True)[0] + [_Unit(verb.words, empty=True)]
            units += self.noun_phrase(subject=False)[0]
        else:
            units = self.clause()
        mark = self.rng.choice(".!?.")
        return units + [_Unit([(mark, mark, "PUNCT", ".")])]


def _sample_conllu(units: list[_Unit], sent_id: str) -> str:
    """One sentence in CoNLL-U: every word attaches to the first verb, the root."""
    words = [word for unit in units if not unit.empty for word in unit.words]
    root = next(i for i, word in enumerate(words, start=1) if word[2] == "VERB")
    rows: list[str] = []
    text = ""
    word_id = 0
    for unit, following in zip(units, [*units[1:], None]):
        if unit.empty:
            form, lemma, upos, xpos = unit.words[0]
            rows.append(f"{word_id}.1\t{form}\t{lemma}\t{upos}\t{xpos}\t_\t_\t_\t{root}:conj\t_")
            continue
        no_space = following is not None and following.words[0][2] == "PUNCT"
        misc = "SpaceAfter=No" if no_space else "_"
        surface = unit.surface or unit.words[0][0]
        if unit.surface:
            last = word_id + len(unit.words)
            rows.append(f"{word_id + 1}-{last}\t{surface}\t_\t_\t_\t_\t_\t_\t_\t{misc}")
        for form, lemma, upos, xpos in unit.words:
            word_id += 1
            if word_id == 1:
                form, surface = form[0].upper() + form[1:], surface[0].upper() + surface[1:]
            head, deprel = (root, "punct" if upos == "PUNCT" else "dep")
            if word_id == root:
                head, deprel = 0, "root"
            word_misc = "_" if unit.surface else misc
            feats = SAMPLE_FEATS.get(xpos, "_")
            rows.append(f"{word_id}\t{form}\t{lemma}\t{upos}\t{xpos}\t{feats}\t{head}\t{deprel}\t_\t{word_misc}")
        text += surface + ("" if no_space else " ")
    return "\n".join([f"# sent_id = {sent_id}", f"# text = {text.strip()}", *rows]) + "\n\n"


def write_sample_treebank(
    directory: str | os.PathLike, *, seed: int = 0, num_train: int = 2000, num_dev: int = 400
) -> dict[str, Path]:
    """Write a synthetic English-like treebank as `sample-ud-{train,dev}.conllu`.

    The sentences come from a small grammar (determiners, adjectives, nouns,
    verbs, modals, prepositions, punctuation; PTB XPOS, UPOS, lemmas and number, tense
    and verb form in FEATS) with words
    whose tag depends on context, so a most-frequent-tag baseline stays well
    below 100% while a model that reads context can approach it. Returns
    split (`train`, `validation`) -> file.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    grammar = _SampleGrammar(random.Random(seed))
    files = {}
    for split, ud_split, count in (("train", "train", num_train), ("validation", "dev", num_dev)):
        path = directory / f"sample-ud-{ud_split}.conllu"
        body = "".join(_sample_conllu(grammar.sentence(), f"sample-{ud_split}-{index + 1}") for index in range(count))
        path.write_text(f"# newdoc id = sample-{ud_split}\n{body}", encoding="utf-8")
        files[split] = path
    return files
