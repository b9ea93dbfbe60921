"""Lemma edit scripts: reading and applying them, and choosing among a word's likeliest.

A lemma is predicted as an edit script (a casing rule and a prefix/suffix rewrite) applied
to the word: :class:`EditScript`, :func:`parse_script`, :func:`apply_script`. A word takes
its likeliest script, or one of the next likeliest (:func:`lemma_candidates`) where that
makes a word of the tokenizer's vocabulary and the likeliest does not
(:func:`choose_lemma`, :func:`vocabulary_words`). How scripts are learnt from training
pairs is ``tagging/lemmas.py``'s.

Remote code (``trust_remote_code=True``) copies a saved folder's model and pipeline files
and every file they reach through one-level relative imports, flat; this module is one of
them, so it imports only the standard library, torch, ``tokenizers`` and the package root's
own carried modules (docs/design.md §10).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .word_encoding import continuation_prefix

CASINGS = ("lower", "keep", "title", "upper")
_SCRIPT_TEXT = re.compile(r"(lower|keep|title|upper)\|-(\d+)\+(.*?)\|-(\d+)\+(.*)", re.DOTALL)


@dataclass(frozen=True)
class EditScript:
    """Turns a form into a lemma (``tagging/lemmas.py`` says how); ``absolute`` set: the
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
