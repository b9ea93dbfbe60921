"""Peer: most frequent value per form, for UPOS, XPOS, FEATS and LEMMA, on gold tokens.

Trained on the words (integer ids) of --train-file, keyed by the exact FORM (case kept).
A form seen in training gets, per column, its most frequent training value (ties: the
value seen first). An unseen form gets, for UPOS, XPOS and FEATS, the most frequent value
over all training words, and for LEMMA the form itself, unchanged (``--unseen-lemma lower``
lowercases it instead). Predicts the words of --dev-file; writes under --output-dir
``baseline.dev.conllu`` (see common.py) and ``baseline.json``.

    python benchmarks/peers/baseline.py --train-file .../en_gum-ud-train.conllu \\
        --dev-file .../en_gum-ud-dev.conllu --output-dir runs/peers/baseline
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter, defaultdict
from pathlib import Path

from common import FEATS, LEMMA, UPOS, XPOS, Conllu, existing_file

COLUMNS = {"LEMMA": LEMMA, "UPOS": UPOS, "XPOS": XPOS, "FEATS": FEATS}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train-file", required=True)
    parser.add_argument("--dev-file", required=True)
    parser.add_argument("--output-dir", required=True)
    parser.add_argument(
        "--unseen-lemma",
        choices=("form", "lower"),
        default="form",
        help="lemma of a form not seen in training (default: the form)",
    )
    parser.add_argument("--name", default="baseline", help="file name stem (default baseline)")
    args = parser.parse_args(argv)
    train_file = existing_file(parser, args.train_file, "--train-file")
    dev_file = existing_file(parser, args.dev_file, "--dev-file")
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)

    start = time.perf_counter()
    per_form: dict[str, dict[str, Counter]] = defaultdict(lambda: {c: Counter() for c in COLUMNS})
    overall = {c: Counter() for c in COLUMNS}
    for sentence in Conllu.read(train_file).words():
        for word in sentence:
            for name, column in COLUMNS.items():
                per_form[word[1]][name][word[column]] += 1
                overall[name][word[column]] += 1
    best = {form: {c: counts[c].most_common(1)[0][0] for c in COLUMNS} for form, counts in per_form.items()}
    fallback = {c: overall[c].most_common(1)[0][0] for c in COLUMNS}
    train_seconds = time.perf_counter() - start

    gold = Conllu.read(dev_file)
    start = time.perf_counter()
    unseen = 0
    tags = []
    for sentence in gold.words():
        sentence_tags = []
        for word in sentence:
            form = word[1]
            if form in best:
                value = best[form]
            else:
                unseen += 1
                value = dict(fallback, LEMMA=form.lower() if args.unseen_lemma == "lower" else form)
            sentence_tags.append((value["LEMMA"], value["UPOS"], value["XPOS"], value["FEATS"]))
        tags.append(sentence_tags)
    tag_seconds = time.perf_counter() - start
    predictions = out / f"{args.name}.dev.conllu"
    predictions.write_text(gold.with_tags(tags), encoding="utf-8")
    record = {
        "peer": "most frequent value per form",
        "train_file": str(train_file),
        "dev_file": str(dev_file),
        "unseen_lemma": args.unseen_lemma,
        "train_forms": len(best),
        "fallback_for_unseen": {c: v for c, v in fallback.items() if c != "LEMMA"},
        "dev_words": gold.num_words(),
        "dev_words_unseen": unseen,
        "train_seconds": round(train_seconds, 2),
        "train_seconds_note": "reading the train file included",
        "tag_seconds": round(tag_seconds, 3),
        "words_per_second": round(gold.num_words() / tag_seconds),
        "predictions": str(predictions),
    }
    (out / f"{args.name}.json").write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
