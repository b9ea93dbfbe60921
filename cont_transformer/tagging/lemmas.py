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
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

CASINGS = ("lower", "keep", "title", "upper")
_TEXT = re.compile(r"(lower|keep|title|upper)\|-(\d+)\+(.*?)\|-(\d+)\+(.*)", re.DOTALL)


@dataclass(frozen=True)
class EditScript:
    """Turns a form into a lemma (see the module docstring); ``absolute`` set: the lemma
    is that string whatever the form."""

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
    match = _TEXT.fullmatch(text)
    if match is None:
        raise ValueError(f"lemma script: cannot read {text!r} (expected 'casing|-P+text|-S+text' or '=lemma')")
    casing, prefix_strip, prefix_add, suffix_strip, suffix_add = match.groups()
    return EditScript(casing, int(prefix_strip), prefix_add, int(suffix_strip), suffix_add)


def _cased(form: str, casing: str) -> str:
    """The form the rewrite starts from."""
    return form if casing == "keep" else form.lower()


def _finish(text: str, casing: str) -> str:
    if casing == "title":
        return text[:1].upper() + text[1:]
    if casing == "upper":
        return text.upper()
    return text


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
    if lemma != lemma.lower() and lemma == _finish(lemma.lower(), "title"):
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
        candidates.append(_rewrite(_cased(form, casing), target, casing))
    return min(candidates, key=lambda script: script.cost)  # min keeps the first of ties


def apply_script(script: EditScript | str, form: str) -> str:
    """The lemma ``script`` gives ``form``; the form under the script's casing alone where
    the script would strip all of it (a learned rewrite always keeps the characters its
    form and lemma share, at least one)."""
    if isinstance(script, str):
        script = parse_script(script)
    if script.absolute is not None:
        return script.absolute
    source = _cased(form, script.casing)
    if script.prefix_strip + script.suffix_strip >= len(source):
        return _finish(source, script.casing)
    stem = source[script.prefix_strip : len(source) - script.suffix_strip]
    return _finish(script.prefix_add + stem + script.suffix_add, script.casing)


def script_labels(pairs: Iterable[tuple[str, str]], min_count: int = 1) -> list[str]:
    """The scripts (as text) of ``(form, lemma)`` pairs seen at least ``min_count`` times,
    most frequent first, ties alphabetically: the lemma head's labels. A word whose script
    is rarer has no label in training (it is masked like an unseen tag)."""
    if min_count < 1:
        raise ValueError(f"lemma_min_count: must be >= 1, got {min_count}")
    counts = Counter(str(edit_script(form, lemma)) for form, lemma in pairs)
    return sorted((s for s, n in counts.items() if n >= min_count), key=lambda s: (-counts[s], s))
