"""Lemmas: edit scripts learned from a treebank, read, applied and chosen among, and the
lexicon of the lemmas a treebank shows.

A lemmatizer that classifies over edit scripts (UDPipe 2, stanza's edit classifier,
spaCy's edit trees) gives an unseen form a lemma by applying the script predicted for
it: ``walked -> walk`` is "strip ``ed``", so a made-up ``blorped`` becomes ``blorp``.

A script has two parts.

* Casing, one of :data:`CASINGS`, applied to the form around the rewrite:
  ``lower`` rewrites the lower-cased form (``The -> the``, ``Walked -> walk``);
  ``keep`` rewrites the form as it is, case-sensitively (``Paris -> Paris``,
  ``NASA -> NASA``, ``Häuser -> Haus``); ``title`` rewrites the lower-cased form and
  upper-cases the first character of the result (``i -> I``); ``upper`` rewrites the
  lower-cased form and upper-cases the result.
* A rewrite: strip ``prefix_strip`` characters from the start and prepend
  ``prefix_add``, strip ``suffix_strip`` from the end and append ``suffix_add``, around
  the longest substring the (cased) form and the lemma share; or, when they share no
  character, an absolute lemma that ignores the form (``went -> go`` is ``=go``).

Learning (:func:`edit_script`). Of the casings the lemma allows (``lower`` only for an
all-lower-case lemma, ``title`` only for ``Xxx``, ``upper`` only for ``XXX``, ``keep``
always), the one whose rewrite strips and adds the fewest characters wins, ties in
the order of :data:`CASINGS`: a lemma that equals its form (a proper noun) is
``keep``, a lower-case lemma of a capitalised sentence-initial word is ``lower``.

Applying (:func:`apply_script`). Where a script does not fit a form (it strips as many
characters as the form has, or more), the lemma falls back to the form under the script's
casing alone (``keep``: the form itself; ``lower``: the form lower-cased).

Text. A script is a label, so it is written as a string (:meth:`EditScript.__str__`):
``casing|-P+prefix|-S+suffix`` (``lower|-0+|-2+`` strips two final characters of the
lower-cased form) or ``=lemma`` for an absolute one; :func:`parse_script` reads it back.
The lemma head's labels (``config.column_labels["lemma"]``) are these strings, the
scripts of the training treebank seen at least ``min_count`` times
(:func:`script_labels`).

Choosing. A word takes its likeliest script, or one of the next likeliest
(:func:`lemma_candidates`) where that makes a word of the tokenizer's vocabulary and the
likeliest does not (:func:`choose_lemma`, :func:`vocabulary_words`).

The lexicon (:func:`lemma_lexicon`): per (form, tag) of the training treebank, the lemma
seen most often with it, ``{column: {tag: {form: lemma}}}``. Decoding
(``column_decoding.decode_columns``) gives a word whose form and predicted tag it holds that
lemma instead of its predicted script's, as stanza's and UDPipe's lemmatizers look a seen
(form, tag) up before they guess: the lemma head, which reads the word's spelling and its
context, misses some rare forms it trained on (``occurring`` -> ``occurr``). The trainer
builds it from the treebank's train sentences alone, never from silver ones
(self-training), whose lemmas are a teacher's guesses (``tagging/columns.py``).

Remote code (``trust_remote_code=True``) copies a saved folder's model and pipeline files
and every file they reach through one-level relative imports, flat; this module is one of
them, so it imports only the standard library, torch, ``tokenizers`` and the package root's
own carried modules (docs/design.md §10).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch

from .word_encoding import continuation_prefix

CASINGS = ("lower", "keep", "title", "upper")
_SCRIPT_TEXT = re.compile(r"(lower|keep|title|upper)\|-(\d+)\+(.*?)\|-(\d+)\+(.*)", re.DOTALL)


@dataclass(frozen=True)
class EditScript:
    """Turns a form into a lemma (the module docstring says how); ``absolute`` set: the
    lemma is that string whatever the form."""

    casing: str = "keep"
    prefix_strip: int = 0
    prefix_add: str = ""
    suffix_strip: int = 0
    suffix_add: str = ""
    absolute: str | None = None

    def __str__(self) -> str:
        if self.absolute is not None:
            return f"={self.absolute}"
        return f"{self.casing}|-{self.prefix_strip}+{self.prefix_add}|-{self.suffix_strip}+{self.suffix_add}"

    @property
    def cost(self) -> int:
        """Characters stripped and added (how specific the script is to its form)."""
        if self.absolute is not None:
            return 2 * len(self.absolute) + 1  # worse than any rewrite that adds the same
        return self.prefix_strip + len(self.prefix_add) + self.suffix_strip + len(self.suffix_add)


def parse_script(text: str) -> EditScript:
    """The script written as ``text`` (``ValueError`` naming it if malformed)."""
    if text.startswith("="):
        return EditScript(absolute=text[1:])
    match = _SCRIPT_TEXT.fullmatch(text)
    if match is None:
        raise ValueError(f"lemma script: cannot read {text!r} (expected 'casing|-P+text|-S+text' or '=lemma')")
    casing, prefix_strip, prefix_add, suffix_strip, suffix_add = match.groups()
    return EditScript(casing, int(prefix_strip), prefix_add, int(suffix_strip), suffix_add)


def cased(form: str, casing: str) -> str:
    """The form a script's rewrite starts from."""
    return form if casing == "keep" else form.lower()


def finish(text: str, casing: str) -> str:
    """A rewrite's result under the script's casing."""
    if casing == "title":
        return text[:1].upper() + text[1:]
    if casing == "upper":
        return text.upper()
    return text


def apply_script(script: EditScript | str, form: str) -> str:
    """The lemma ``script`` gives ``form``; the form under the script's casing alone where
    the script would strip all of it (a learned rewrite always keeps the characters its
    form and lemma share, at least one)."""
    if isinstance(script, str):
        script = parse_script(script)
    if script.absolute is not None:
        return script.absolute
    source = cased(form, script.casing)
    if script.prefix_strip + script.suffix_strip >= len(source):
        return finish(source, script.casing)
    stem = source[script.prefix_strip : len(source) - script.suffix_strip]
    return finish(script.prefix_add + stem + script.suffix_add, script.casing)


# A word the lemma lexicon lacks takes the script its lemma head finds likeliest, unless that
# script makes a word the tokenizer's vocabulary lacks (``endorsed -> endors``) and one of the
# next likeliest, at most ``exp(LEMMA_MARGIN)`` times less likely, makes a word it holds
# (``endorse``): a vocabulary built from text (docs/experiments.md, "Lemmas the vocabulary
# knows") knows the words a lemma can be. LEMMA_CANDIDATES scripts are kept per word.
LEMMA_CANDIDATES = 3
LEMMA_MARGIN = 3.0
NO_CANDIDATE = -1  # a kept place whose script is more than the margin less likely


def lemma_candidates(logits: torch.Tensor) -> torch.Tensor:
    """``(batch, seq, LEMMA_CANDIDATES)`` script ids from a lemma head's ``(batch, seq,
    scripts)`` logits, likeliest first; :data:`NO_CANDIDATE` past the margin."""
    scores = torch.log_softmax(logits.float(), -1)
    top = scores.topk(min(LEMMA_CANDIDATES, scores.shape[-1]), -1)
    within = top.values >= top.values[..., :1] - LEMMA_MARGIN
    return torch.where(within, top.indices, NO_CANDIDATE)


def vocabulary_words(tokenizer) -> frozenset[str]:
    """The whole words of ``tokenizer``'s vocabulary: its entries that are neither special
    tokens nor continuation pieces (for a tagger fine-tuned from a language model, the
    text's most frequent words and the treebank's)."""
    prefix, special = continuation_prefix(tokenizer), set(tokenizer.all_special_tokens)
    return frozenset(word for word in tokenizer.get_vocab() if not word.startswith(prefix) and word not in special)


def _known(text: str, vocabulary) -> bool:
    return text in vocabulary or text.lower() in vocabulary


def choose_lemma(word: str, candidates: int | Sequence[int], scripts: Sequence, vocabulary=frozenset()) -> str:
    """The lemma of ``word`` from its script ``candidates`` (ids into ``scripts``, likeliest
    first; one id: that script): the likeliest's, unless it makes neither a word of
    ``vocabulary`` (as written or lower-cased) nor the word itself, and a later
    candidate's rewrite (not an absolute lemma) makes one of the vocabulary."""
    if isinstance(candidates, int):
        return apply_script(scripts[candidates], word)
    lemma = apply_script(scripts[candidates[0]], word)
    if not vocabulary or _known(lemma, vocabulary) or lemma.lower() == word.lower():
        return lemma
    for i in candidates[1:]:
        if i == NO_CANDIDATE:
            break
        script = parse_script(scripts[i]) if isinstance(scripts[i], str) else scripts[i]
        if script.absolute is None and _known(alternative := apply_script(script, word), vocabulary):
            return alternative
    return lemma


def _longest_common_substring(a: str, b: str) -> tuple[int, int, int]:
    """``(start in a, start in b, length)`` of the longest common substring (the first)."""
    best = (0, 0, 0)
    previous = [0] * (len(b) + 1)
    for i in range(1, len(a) + 1):
        current = [0] * (len(b) + 1)
        for j in range(1, len(b) + 1):
            if a[i - 1] == b[j - 1]:
                current[j] = previous[j - 1] + 1
                if current[j] > best[2]:
                    best = (i - current[j], j - current[j], current[j])
        previous = current
    return best


def _rewrite(source: str, target: str, casing: str) -> EditScript:
    i, j, length = _longest_common_substring(source, target)
    if length == 0:
        return EditScript(absolute=target)
    return EditScript(casing, i, target[:j], len(source) - i - length, target[j + length :])


def _allowed(lemma: str) -> list[str]:
    casings = ["keep"]
    if lemma == lemma.lower():
        casings.append("lower")
    if lemma != lemma.lower() and lemma == finish(lemma.lower(), "title"):
        casings.append("title")
    if lemma != lemma.lower() and lemma == lemma.upper():
        casings.append("upper")
    return sorted(casings, key=CASINGS.index)


def edit_script(form: str, lemma: str) -> EditScript:
    """The script that turns ``form`` into ``lemma`` (the cheapest, see the module docstring)."""
    candidates = []
    for casing in _allowed(lemma):
        # title and upper rewrite towards the lower-cased lemma, then re-case it.
        target = lemma if casing in ("keep", "lower") else lemma.lower()
        candidates.append(_rewrite(cased(form, casing), target, casing))
    return min(candidates, key=lambda script: script.cost)  # min keeps the first of ties


def script_labels(pairs: Iterable[tuple[str, str]], min_count: int = 1) -> list[str]:
    """The scripts (as text) of ``(form, lemma)`` pairs seen at least ``min_count`` times,
    most frequent first, ties alphabetically: the lemma head's labels. A word whose script
    is rarer has no label in training (it is masked like an unseen tag)."""
    if min_count < 1:
        raise ValueError(f"lemma_min_count: must be >= 1, got {min_count}")
    counts = Counter(str(edit_script(form, lemma)) for form, lemma in pairs)
    return sorted((s for s, n in counts.items() if n >= min_count), key=lambda s: (-counts[s], s))


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
