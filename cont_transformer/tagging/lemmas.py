"""Lemmas as edit scripts: what turns a word form into its lemma, learned from a treebank.

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

Where. :class:`EditScript`, :func:`parse_script` and :func:`apply_script` live in
``cont_transformer/lemma_scripts.py``: a saved tagger's pipeline applies scripts where this
package is not installed (remote code), with the same code. Learning scripts is here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from ..lemma_scripts import CASINGS, EditScript, cased, finish


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


__all__ = ["edit_script", "script_labels"]
