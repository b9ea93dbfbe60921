"""Score predicted CoNLL-U files against gold with the package's CoNLL 2018 scorer.

The same scorer as ``scripts/tag.py --evaluate`` and the trainer's dev figures
(``cont_transformer/tagging/metrics/conll18``): UPOS, XPOS, UFeats, AllTags and Lemmas
over words aligned as the shared task aligns them.

    python benchmarks/peers/score.py GOLD.conllu NAME=PRED.conllu [NAME=PRED.conllu ...] \\
        [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from cont_transformer.tagging.conllu_document import ConlluDocument
from cont_transformer.tagging.scoring import score

ROWS = {"upos": "UPOS", "xpos": "XPOS", "feats": "UFeats", "alltags": "AllTags", "lemma": "Lemmas"}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("gold", help="gold CoNLL-U file")
    parser.add_argument("predictions", nargs="+", metavar="NAME=FILE", help="predicted CoNLL-U files")
    parser.add_argument("--json", help="also write the scores to this JSON file")
    args = parser.parse_args(argv)
    gold = ConlluDocument.read(args.gold)
    scores = {}
    for spec in args.predictions:
        name, _, path = spec.rpartition("=")
        if not Path(path).is_file():
            parser.error(f"{path}: no such file")
        result = score(gold, ConlluDocument.read(path), tuple(ROWS))
        scores[name or path] = {title: 100 * result[row]["f1"] for row, title in ROWS.items()}
    print("| peer | " + " | ".join(ROWS.values()) + " |")
    print("|---|" + "---:|" * len(ROWS))
    for name, values in scores.items():
        print(f"| {name} | " + " | ".join(f"{v:.2f}" for v in values.values()) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(scores, indent=2) + "\n")


if __name__ == "__main__":
    main()
