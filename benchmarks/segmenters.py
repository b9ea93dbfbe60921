"""Raw text to words and sentences, measured: each segmenter against the gold tokens of
UD dev files, and how far the tagger's paths disagree with one another.

For each gold CoNLL-U file, its ``# text`` lines are joined into running text (a blank
line at each ``# newpar``/``# newdoc``, as ``tag.py --evaluate`` does) and, with
``--one-line``, also all on one line (no paragraph breaks to help the sentence
splitter). Each segmenter splits that text; its sentences, words and multiword tokens are
scored with the package's CoNLL 2018 scorer (``cont_transformer.tagging.scoring``, F1 of
tokens, words and sentences). The segmenters:

* ``tagger``: what ``Tagger`` and ``tag.py`` split raw text with
  (``cont_transformer.text_segmentation.split_text``);
* ``pipeline``: what the pipeline a saved folder carries splits it with
  (``pipeline_cont_transformer.split_sentences``: words and sentences, no multiword tokens,
  so its token F1 is lower where the text has contractions);
* ``spacy``: spaCy's rule-based tokenizer and sentencizer (``spacy.blank(language)``), with
  paragraphs, openers and clitic multiword tokens handled as the package did before it
  had its own segmenter (needs spaCy: ``pip install -e '.[peers]'``).

"disagreement" compares ``pipeline`` with ``tagger``: the share of word spans (and of
sentence spans, first word's start to last word's end) that only one of them gives,
``|A △ B| / |A ∪ B|``; the target is 0.

    OMP_NUM_THREADS=1 python benchmarks/segmenters.py \\
        en=../shared/data/ud/UD_English-GUM/en_gum-ud-dev.conllu \\
        de=../shared/data/ud/UD_German-GSD/de_gsd-ud-dev.conllu --one-line [--segmenters tagger pipeline spacy]
"""

from __future__ import annotations

import argparse
import re
import time
from itertools import pairwise
from pathlib import Path

from cont_transformer.tagging.conllu_document import ConlluDocument, format_sentence
from cont_transformer.tagging.scoring import score
from cont_transformer.text_segmentation import paragraphs

Segmented = list[tuple[list[tuple[int, int]], dict[int, int]]]  # per sentence: word spans, multiword tokens


def tagger_segmenter(text: str, language: str) -> Segmented:
    from cont_transformer.text_segmentation import split_text

    return [(s.spans, s.multiword) for s in split_text(text, language)]


def pipeline_segmenter(text: str, language: str) -> Segmented:
    from cont_transformer.pipeline_cont_transformer import split_sentences

    return [(spans, {}) for spans in split_sentences(text, language)]  # words only: the pipeline has no tokens


# spaCy, as the package used it --------------------------------------------------------------

_CLITIC_PIECE = re.compile(r"[^\W\d_'’]*['’]?[^\W\d_'’]*")


def spacy_segmenter(text: str, language: str) -> Segmented:
    """spaCy's blank pipeline and sentencizer per paragraph; an opener (punctuation with
    a space before and none after) at the end of a sentence moves to the next; a run of
    letter-and-apostrophe tokens with no space between them is one multiword token."""
    import spacy
    from spacy.attrs import IDX, IS_PUNCT, IS_SPACE, LENGTH, SENT_START

    nlp = spacy.blank(language)
    nlp.add_pipe("sentencizer")
    nlp.max_length = 10**9
    result: Segmented = []
    for offset, paragraph in paragraphs(text):
        doc = nlp(paragraph)
        starts, lengths, space, punct, sent_start = (
            doc.to_array([IDX, LENGTH, IS_SPACE, IS_PUNCT, SENT_START]).astype("int64").T.tolist()
        )
        ends = [s + n for s, n in zip(starts, lengths)]

        opener = [  # punctuation with whitespace before it and a visible character right after it
            bool(
                punct[i] and s > 0 and paragraph[s - 1].isspace() and e < len(paragraph) and not paragraph[e].isspace()
            )
            for i, (s, e) in enumerate(zip(starts, ends))
        ]
        bounds = [0, *(i for i in range(1, len(starts)) if sent_start[i] == 1), len(starts)]
        for k in range(1, len(bounds) - 1):
            while bounds[k] - 1 > bounds[k - 1] and (space[bounds[k] - 1] or opener[bounds[k] - 1]):
                bounds[k] -= 1
        for begin, end in pairwise(bounds):
            spans, multiword, run_start, clitic = [], {}, None, False
            for i in range(begin, end):
                if space[i]:
                    continue
                joins = clitic and spans[-1][1] == offset + starts[i]
                clitic = _CLITIC_PIECE.fullmatch(paragraph, starts[i], ends[i]) is not None
                spans.append((offset + starts[i], offset + ends[i]))
                if joins and clitic:
                    run_start = len(spans) - 2 if run_start is None else run_start
                    multiword[run_start] = len(spans)
                else:
                    run_start = None
            if spans:
                result.append((spans, multiword))
    return result


SEGMENTERS = {
    "tagger": tagger_segmenter,
    "pipeline": pipeline_segmenter,
    "spacy": spacy_segmenter,
}


# Scoring ----------------------------------------------------------------------------------


def as_conllu(text: str, segmented: Segmented) -> ConlluDocument:
    blocks = []
    for number, (spans, multiword) in enumerate(segmented, start=1):
        words = [text[start:end] for start, end in spans]
        blocks.append(format_sentence(str(number), words, ["_"] * len(words), "xpos", multiword=multiword))
    return ConlluDocument("".join(blocks), "system")


def disagreement(a: Segmented, b: Segmented) -> tuple[float, float]:
    """The share of word spans and of sentence spans that only one of ``a`` and ``b`` gives."""

    def rate(x: set, y: set) -> float:
        return len(x ^ y) / max(1, len(x | y))

    words = [{span for spans, _ in s for span in spans} for s in (a, b)]
    sentences = [{(spans[0][0], spans[-1][1]) for spans, _ in s if spans} for s in (a, b)]
    return rate(*words), rate(*sentences)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", metavar="LANGUAGE=FILE", help="gold CoNLL-U files (en=..., de=...)")
    parser.add_argument("--segmenters", nargs="+", default=list(SEGMENTERS), choices=list(SEGMENTERS))
    parser.add_argument("--one-line", action="store_true", help="also score the text all on one line")
    args = parser.parse_args(argv)
    print("| file | text | segmenter | tokens F1 | words F1 | sentences F1 | tokens/s |")
    print("|---|---|---|---:|---:|---:|---:|")
    disagreements = []
    for spec in args.files:
        language, _, path = spec.partition("=")
        gold = ConlluDocument.read(path)
        texts = {"paragraphs": gold.text()}
        if args.one_line:
            texts["one line"] = gold.text().replace("\n\n", " ").replace("\n", " ") + "\n"
        for kind, text in texts.items():
            outputs = {}
            for name in args.segmenters:
                SEGMENTERS[name](text[:200], language)  # load what it needs
                begin = time.perf_counter()
                outputs[name] = SEGMENTERS[name](text, language)
                seconds = time.perf_counter() - begin
                result = score(gold, as_conllu(text, outputs[name]))
                words = sum(len(spans) for spans, _ in outputs[name])
                f1 = [100 * result[unit]["f1"] for unit in ("tokens", "words", "sentences")]
                print(
                    f"| {Path(path).name} | {kind} | {name} | {f1[0]:.2f} | {f1[1]:.2f} | {f1[2]:.2f} "
                    f"| {words / seconds:,.0f} |"
                )
            if {"tagger", "pipeline"} <= set(outputs):
                rates = disagreement(outputs["tagger"], outputs["pipeline"])
                disagreements.append(f"| {Path(path).name} | {kind} | {100 * rates[0]:.2f} | {100 * rates[1]:.2f} |")
    if disagreements:
        print("\n| file | text | words disagreeing, % | sentences disagreeing, % |\n|---|---|---:|---:|")
        print("\n".join(disagreements))


if __name__ == "__main__":
    main()
