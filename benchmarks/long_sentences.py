"""One long sentence against the same words in short sentences, in every input format of
``scripts/tag.py``; and what the context kept at the windows' seams costs in accuracy.

    python benchmarks/long_sentences.py MODEL --conllu ../shared/data/ud/UD_English-GUM/en_gum-ud-dev.conllu \\
        --words 100000 [--formats text lines tokens conllu] [--seams]

Time. The words of ``--conllu`` (repeated up to ``--words``; words with ``. ! ? … ; :``
left out, so that raw text has no sentence end) are written once as one sentence and once
as sentences of ``--short`` words (raw text: one paragraph each, as a blank line always
ends a sentence), in each format, and tagged into CoNLL-U by
:func:`~cont_transformer.tagging.tag_files.tag_file` with the model loaded once. Printed
per format: the CPU seconds of each (this process's CPU time: on a shared machine it says
what the work costs) and their ratio, the wall-clock seconds beside them.

Seams (``--seams``). The words of ``--conllu`` run together into one sentence are tagged
with windows keeping each context in ``--contexts`` at the seams
(:func:`~cont_transformer.sentence_windows.evaluation_windows`), and with windows that
overlap by half a window (the alternative measured against them); printed: UPOS and XPOS accuracy against the file's gold
columns, and the tokens through the model relative to the words.
"""

from __future__ import annotations

import argparse
import functools
import re
import tempfile
import time
from itertools import pairwise
from pathlib import Path

from cont_transformer import processing_cont_transformer as processing
from cont_transformer.sentence_windows import evaluation_windows
from cont_transformer.tagging.conllu_document import ConlluDocument
from cont_transformer.tagging.tag import Tagger
from cont_transformer.tagging.tag_files import INPUT_FORMATS, tag_file

SENTENCE_END = re.compile(r"[.!?…;:]")


def inputs(words: list[str], input_format: str, size: int | None) -> str:
    """``words`` in ``input_format``: one sentence (``size`` None) or sentences of ``size``."""
    sentences = [words] if size is None else [words[i : i + size] for i in range(0, len(words), size)]
    if input_format == "conllu":
        return "".join(
            "".join(f"{i}\t{w}\t_\t_\t_\t_\t_\t_\t_\t_\n" for i, w in enumerate(s, 1)) + "\n" for s in sentences
        )
    separator = "\n\n" if input_format == "text" else "\n"
    return separator.join(" ".join(s) for s in sentences) + "\n"


def time_formats(tagger: Tagger, words: list[str], formats: list[str], short: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        for input_format in formats:
            row = []
            for size in (short, None):
                text = inputs(words, input_format, size)
                cpu, wall = time.process_time(), time.perf_counter()
                stats = tag_file(
                    tagger, None, Path(folder) / "out.conllu", input_format=input_format, progress=False, text=text
                )
                row.append((time.process_time() - cpu, time.perf_counter() - wall, stats))
            (s_cpu, s_wall, s), (l_cpu, l_wall, l) = row
            print(
                f"{input_format:7s} {l.words:,} words: {s.sentences:,} sentences {s_cpu:.2f} CPU s, "
                f"one sentence ({l.sentences}) {l_cpu:.2f} CPU s: ratio {l_cpu / s_cpu:.2f} "
                f"(wall {s_wall:.1f} s, {l_wall:.1f} s)",
                flush=True,
            )


def half_overlap_windows(length: int, capacity: int) -> list[tuple[int, int, int]]:
    """Windows at a stride of half a window, each position owned by
    the window where it is farthest from an edge (here in linear time)."""
    if length <= capacity:
        return [(0, 0, length)]
    stride = max(capacity // 2, 1)
    starts = list(range(0, length - capacity, stride)) + [length - capacity]
    seams = [(a + b + capacity - 1) // 2 + 1 for a, b in pairwise(starts)]
    return list(zip(starts, [0, *seams], [*seams, length]))


def seams(tagger: Tagger, conllu: Path, contexts: list[int]) -> None:
    document = ConlluDocument.read(conllu)
    words = [w for sentence in document.words() for w in sentence]
    gold = [document.lines[i].split("\t")[3:5] for sentence in document.sentences for i in sentence]
    capacity = tagger.processor.max_length - 1
    choices = [("half-window overlap (before)", half_overlap_windows)]
    choices += [(f"context {c}", functools.partial(evaluation_windows, context=c)) for c in contexts]
    for name, windows in choices:
        processing.evaluation_windows = windows  # the windows the processor encodes with
        windowed = len(windows(len(words), capacity)) * capacity  # words through the model
        [columns] = tagger.predict_columns([words])
        upos = sum(p == g[0] for p, g in zip(columns["upos"], gold)) / len(gold)
        xpos = sum(p == g[1] for p, g in zip(columns["xpos"], gold)) / len(gold)
        print(f"{name:30s} UPOS {100 * upos:.2f} XPOS {100 * xpos:.2f}  words in windows {windowed / len(words):.2f}x")
    processing.evaluation_windows = evaluation_windows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--conllu", type=Path, required=True)
    parser.add_argument("--words", type=int, default=100_000)
    parser.add_argument("--short", type=int, default=50)
    parser.add_argument("--formats", nargs="+", default=list(INPUT_FORMATS), choices=INPUT_FORMATS)
    parser.add_argument("--seams", action="store_true", help="also the accuracy by context at the seams")
    parser.add_argument("--contexts", type=int, nargs="+", default=[0, 4, 8, 16, 24, 32])
    args = parser.parse_args()
    tagger = Tagger.from_pretrained(args.model, device="cpu")
    words = [w for s in ConlluDocument.read(args.conllu).words() for w in s if not SENTENCE_END.search(w)]
    words = (words * (args.words // len(words) + 1))[: args.words]
    time_formats(tagger, words, args.formats, args.short)
    if args.seams:
        seams(tagger, args.conllu, args.contexts)


if __name__ == "__main__":
    main()
