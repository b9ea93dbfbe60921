"""How much of a word's tag its static vector alone tells, for words the treebank never shows.

    python benchmarks/word_vector_probe.py runs/en-vectors runs/en-vectors-w2v \\
        --train ../shared/data/ud/UD_English-GUM/en_gum-ud-train.conllu \\
        --dev ../shared/data/ud/UD_English-GUM/en_gum-ud-dev.conllu

A linear classifier (softmax regression, full-batch Adam, 300 steps) learns XPOS from the
vectors of the training words (one example per word and tag it has in train), and is
scored on the dev tokens whose word is absent from train but has a vector. A probe, not a
tagger: it picks the vectors that carry the most tag information where the treebank
cannot help (docs/experiments.md, "Static word vectors").
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict

import conllu
import torch

from cont_transformer.text.word_vectors import load_word_vectors


def words_and_tags(path: str) -> list[tuple[str, str]]:
    with open(path, encoding="utf-8") as stream:
        return [(t["form"], t["xpos"]) for s in conllu.parse_incr(stream) for t in s if isinstance(t["id"], int)]


def probe(folder: str, train: list, dev: list) -> dict:
    words, vectors = load_word_vectors(folder)
    row = {w: i for i, w in enumerate(words)}
    tags = sorted({tag for _, tag in train})
    tag_id = {t: i for i, t in enumerate(tags)}
    seen: dict[str, Counter] = defaultdict(Counter)
    for word, tag in train:
        seen[word][tag] += 1
    pairs = [(row[w], tag_id[t]) for w, counts in seen.items() if w in row for t in counts]
    x, y = vectors[[p[0] for p in pairs]], torch.tensor([p[1] for p in pairs])
    torch.manual_seed(0)
    classifier = torch.nn.Linear(vectors.shape[1], len(tags))
    optimizer = torch.optim.Adam(classifier.parameters(), lr=1e-2)
    for _ in range(300):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(classifier(x), y).backward()
        optimizer.step()
    unseen = [(w, t) for w, t in dev if w not in seen]
    covered = [(w, t) for w, t in unseen if w in row]
    with torch.no_grad():
        predicted = classifier(vectors[[row[w] for w, _ in covered]]).argmax(1).tolist()
    right = sum(tags[p] == t for p, (_, t) in zip(predicted, covered))
    return {
        "vectors": folder,
        "unseen dev tokens": len(unseen),
        "with a vector": len(covered),
        "XPOS accuracy on those": round(100 * right / max(len(covered), 1), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folders", nargs="+", help="vector folders (scripts/train_word_vectors.py)")
    parser.add_argument("--train", required=True, help="training CoNLL-U file")
    parser.add_argument("--dev", required=True, help="dev CoNLL-U file")
    args = parser.parse_args()
    train, dev = words_and_tags(args.train), words_and_tags(args.dev)
    for folder in args.folders:
        print(probe(folder, train, dev))


if __name__ == "__main__":
    main()
