"""Peer: a spaCy 3 pipeline (tagger, morphologizer, trainable_lemmatizer) on gold tokens.

Steps, all under --output-dir:

1. convert: train and dev CoNLL-U -> ``train.spacy`` / ``dev.spacy`` (DocBin, one Doc per
   sentence, gold words with their spaces from ``SpaceAfter=No``; multiword-token lines
   and empty nodes are not words). XPOS -> ``token.tag_``, UPOS -> ``token.pos_``, FEATS ->
   ``token.morph``, LEMMA -> ``token.lemma_``.
2. train: ``python -m spacy train benchmarks/peers/spacy_ud.cfg --output model`` on CPU
   from a blank "en" pipeline (the quickstart's efficiency tok2vec; corpora read with
   ``gold_preproc = true``, so training and spaCy's own model selection on dev use the gold
   words). Wall clock and CPU time of the training process are recorded.
3. predict: ``model/model-best`` run on Docs built from the gold dev words and spaces;
   writes ``spacy.dev.conllu`` (see common.py; FEATS sorted by feature name as CoNLL-U
   wants) and ``spacy.json`` (times, words/s).

    OMP_NUM_THREADS=1 python benchmarks/peers/spacy_ud.py \\
        --train-file .../en_gum-ud-train.conllu --dev-file .../en_gum-ud-dev.conllu \\
        --output-dir runs/peers/spacy
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from common import Conllu, existing_file

CONFIG = Path(__file__).with_name("spacy_ud.cfg")


def sentences_with_spaces(doc: Conllu) -> list[tuple[list[list[str]], list[bool]]]:
    """Per sentence, the fields of its words and whether a space follows each word
    (a multiword token's ``SpaceAfter=No`` applies after its last word, none inside it)."""
    result = []
    block_words: list[list[str]] = []
    spaces: list[bool] = []
    mwt_end, mwt_space = 0, True
    for line in [*doc.lines, ""]:
        if not line.strip():
            if block_words:
                result.append((block_words, spaces))
            block_words, spaces, mwt_end = [], [], 0
            continue
        if line.startswith("#"):
            continue
        fields = line.split("\t")
        no_space = "SpaceAfter=No" in fields[9].split("|")
        if "-" in fields[0]:
            mwt_end = int(fields[0].split("-")[1])
            mwt_space = not no_space
        elif fields[0].isdigit():
            number = int(fields[0])
            block_words.append(fields)
            if number < mwt_end:
                spaces.append(False)
            elif number == mwt_end:
                spaces.append(mwt_space)
            else:
                spaces.append(not no_space)
    return result


def make_docs(vocab, doc: Conllu, annotated: bool) -> list:
    from spacy.tokens import Doc

    docs = []
    for words, spaces in sentences_with_spaces(doc):
        forms = [w[1] for w in words]
        starts = [True] + [False] * (len(words) - 1)
        if not annotated:
            docs.append(Doc(vocab, words=forms, spaces=spaces, sent_starts=starts))
            continue
        docs.append(
            Doc(
                vocab,
                words=forms,
                spaces=spaces,
                sent_starts=starts,
                lemmas=[w[2] for w in words],
                pos=[w[3] for w in words],
                tags=[w[4] for w in words],
                morphs=[w[5] if w[5] != "_" else "" for w in words],
            )
        )
    return docs


def conllu_feats(morph: str) -> str:
    if not morph:
        return "_"
    return "|".join(sorted(morph.split("|"), key=lambda f: f.split("=", 1)[0].lower()))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train-file", required=True)
    parser.add_argument("--dev-file", required=True)
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--config", default=str(CONFIG), help="spaCy config (default: %(default)s)")
    parser.add_argument(
        "--skip-train", action="store_true", help="reuse OUTPUT_DIR/model/model-best (times of that run are kept)"
    )
    parser.add_argument("overrides", nargs="*", help="spaCy config overrides, e.g. --training.max_steps=100 (after --)")
    args = parser.parse_args(argv)
    train_file = existing_file(parser, args.train_file, "--train-file")
    dev_file = existing_file(parser, args.dev_file, "--dev-file")
    config = existing_file(parser, args.config, "--config")
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)

    import spacy
    from spacy.tokens import DocBin

    gold = Conllu.read(dev_file)
    record_path = out / "spacy.json"
    record = json.loads(record_path.read_text()) if args.skip_train and record_path.is_file() else {}
    if not args.skip_train:
        vocab = spacy.blank("en").vocab
        for name, conllu in (("train", Conllu.read(train_file)), ("dev", gold)):
            docs = make_docs(vocab, conllu, annotated=True)
            DocBin(docs=docs, store_user_data=False).to_disk(out / f"{name}.spacy")
            print(f"{name}: {len(docs)} sentences, {sum(map(len, docs))} words", file=sys.stderr)
        command = [
            sys.executable,
            "-m",
            "spacy",
            "train",
            str(config),
            "--output",
            str(out / "model"),
            "--paths.train",
            str(out / "train.spacy"),
            "--paths.dev",
            str(out / "dev.spacy"),
            *args.overrides,
        ]
        print(" ".join(command), file=sys.stderr, flush=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, check=True, env=os.environ)
        train_seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        record.update(
            {
                "peer": "spaCy " + spacy.__version__,
                "train_file": str(train_file),
                "dev_file": str(dev_file),
                "config": str(config),
                "overrides": args.overrides,
                "train_command": " ".join(command),
                "train_seconds": round(train_seconds, 1),
                "train_cpu_seconds": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1),
            }
        )

    model_dir = out / "model" / "model-best"
    nlp = spacy.load(model_dir)
    docs = make_docs(nlp.vocab, gold, annotated=False)
    start, start_cpu = time.perf_counter(), time.process_time()
    docs = list(nlp.pipe(docs, batch_size=256))
    tag_seconds = time.perf_counter() - start
    tag_cpu_seconds = time.process_time() - start_cpu
    tags = [[(t.lemma_, t.pos_, t.tag_, conllu_feats(str(t.morph))) for t in doc] for doc in docs]
    predictions = out / "spacy.dev.conllu"
    predictions.write_text(gold.with_tags(tags), encoding="utf-8")
    meta = json.loads((model_dir / "meta.json").read_text())
    words = gold.num_words()
    record.update(
        {
            "model": str(model_dir),
            "pipeline": nlp.pipe_names,
            "spacy_dev_scores_of_model_best": {
                k: meta["performance"].get(k) for k in ("tag_acc", "pos_acc", "morph_acc", "lemma_acc")
            },
            "dev_words": words,
            "tag_seconds": round(tag_seconds, 3),
            "tag_cpu_seconds": round(tag_cpu_seconds, 3),
            "words_per_second": round(words / tag_seconds),
            "words_per_cpu_second": round(words / tag_cpu_seconds),
            "tag_seconds_note": "nlp.pipe over Docs of the gold words (batch_size 256), one "
            "thread; building Docs and writing CoNLL-U not included",
            "predictions": str(predictions),
        }
    )
    record_path.write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
