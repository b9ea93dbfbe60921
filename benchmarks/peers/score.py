"""Stop-gap per-column scorer: predictions CoNLL-U against gold on the same (gold) words.

Columns as the CoNLL 2018 shared task's evaluation (conll18_ud_eval.py) defines them on
words (integer ids; multiword-token lines and empty nodes are not words):

* UPOS, XPOS: the column equal.
* UFeats: FEATS restricted to the 21 universal features of that script (so GUM's NumForm,
  ExtPos, Typo, Style are ignored), compared as a set; ``_`` is the empty set.
* AllTags: UPOS, XPOS and the restricted FEATS all equal (the script's definition).
* Lemmas: LEMMA equal. A gold ``_`` lemma counts as correct only if the prediction is ``_``
  too (stricter than conll18_ud_eval.py, which counts every word with gold ``_`` correct;
  the JSON also gives that variant, "Lemmas_conll18").

The files must have the same sentences and words (FORM checked); otherwise a one-line error.
The package's official scorer will re-score the prediction files; this one is a stop-gap.

    python benchmarks/peers/score.py GOLD.conllu NAME=PRED.conllu [NAME=PRED.conllu ...] \\
        [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from common import FEATS, LEMMA, UPOS, XPOS, Conllu

UNIVERSAL_FEATURES = {
    "PronType", "NumType", "Poss", "Reflex", "Foreign", "Abbr", "Gender", "Animacy", "Number",
    "Case", "Definite", "Degree", "VerbForm", "Mood", "Tense", "Aspect", "Voice", "Evident",
    "Polarity", "Person", "Polite",
}
METRICS = ("UPOS", "XPOS", "UFeats", "AllTags", "Lemmas")


def ufeats(feats: str) -> frozenset[str]:
    return frozenset(f for f in feats.split("|") if f.split("=", 1)[0] in UNIVERSAL_FEATURES)


def score(gold: Conllu, pred: Conllu) -> dict[str, float]:
    gold_words, pred_words = gold.words(), pred.words()
    if len(gold_words) != len(pred_words):
        raise ValueError(f"{pred.name}: {len(pred_words)} sentences, gold has {len(gold_words)}")
    correct = dict.fromkeys((*METRICS, "Lemmas_conll18"), 0)
    total = 0
    for number, (g_sentence, p_sentence) in enumerate(zip(gold_words, pred_words), 1):
        if [w[1] for w in g_sentence] != [w[1] for w in p_sentence]:
            raise ValueError(f"{pred.name}: sentence {number}: words differ from gold")
        for g, p in zip(g_sentence, p_sentence):
            total += 1
            upos, xpos = g[UPOS] == p[UPOS], g[XPOS] == p[XPOS]
            feats = ufeats(g[FEATS]) == ufeats(p[FEATS])
            correct["UPOS"] += upos
            correct["XPOS"] += xpos
            correct["UFeats"] += feats
            correct["AllTags"] += upos and xpos and feats
            correct["Lemmas"] += g[LEMMA] == p[LEMMA]
            correct["Lemmas_conll18"] += g[LEMMA] == "_" or g[LEMMA] == p[LEMMA]
    result = {name: 100 * count / total for name, count in correct.items()}
    result["words"] = total
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("gold")
    parser.add_argument("predictions", nargs="+", metavar="NAME=PRED.conllu")
    parser.add_argument("--json", help="also write the scores here")
    args = parser.parse_args(argv)
    if not Path(args.gold).is_file():
        parser.error(f"{args.gold}: no such file")
    gold = Conllu.read(args.gold)
    results = {}
    for item in args.predictions:
        name, sep, path = item.partition("=")
        if not sep:
            name, path = Path(item).stem, item
        if not Path(path).is_file():
            parser.error(f"{path}: no such file")
        try:
            results[name] = score(gold, Conllu.read(path))
        except ValueError as err:
            sys.exit(f"score.py: error: {err}")
    print("| peer | " + " | ".join(METRICS) + " |")
    print("|---|" + "---:|" * len(METRICS))
    for name, result in results.items():
        print(f"| {name} | " + " | ".join(f"{result[m]:.2f}" for m in METRICS) + " |")
    print(f"\n{next(iter(results.values()))['words']} gold words in {args.gold}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
