"""Peer: UDPipe 1 (ufal.udpipe) trained on a CoNLL-U train file, tagging gold tokens of dev.

Training: ``Trainer.train("morphodita_parsito", train, no heldout, tokenizer="none",
tagger=<default>, parser="none")`` -- the tagger and lemmatizer with UDPipe's default
options (the empty option string), no tokenizer, no parser, no heldout data (dev is not
seen). Tagging: ``Pipeline(model, "conllu", tagger=<default>, parser="none", "conllu")`` on
the dev file with LEMMA/UPOS/XPOS/FEATS blanked to ``_``, so the gold words are tagged.

With ``--tokenizer``, UDPipe 1's tokenizer instead (its own multiword-token splitter
included): ``Trainer.train("morphodita_parsito", train, dev as heldout,
tokenizer=--tokenizer-options (default: UDPipe's defaults), tagger="none", parser="none")``,
the heldout data choosing its epoch as the dev split chooses ours; it then tokenizes the raw
dev text (``common.raw_text``: the ``# text`` lines, a blank line at each paragraph) with
``Pipeline(model, "tokenize", "none", "none", "conllu")``, writing
``udpipe1.tokenizer.model``, ``udpipe1.raw.conllu`` and ``udpipe1.tokenizer.json``.

Writes, under --output-dir: ``udpipe1.model``, ``udpipe1.dev.conllu`` (predictions, see
common.py) and ``udpipe1.json`` (training and tagging time, wall clock and CPU time of
the process, and words/s; the machine is shared, so the CPU time is the steadier number).

    OMP_NUM_THREADS=1 python benchmarks/peers/udpipe1.py \\
        --train-file .../en_gum-ud-train.conllu --dev-file .../en_gum-ud-dev.conllu \\
        --output-dir runs/peers/udpipe1 [--tokenizer [--tokenizer-options "epochs=20"]]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from common import Conllu, existing_file, raw_text

try:
    from ufal import udpipe
except ImportError:  # pragma: no cover - peers are an optional extra
    sys.exit("udpipe1.py: error: needs ufal.udpipe (pip install 'cont-transformer[peers]')")


def read_sentences(text: str) -> udpipe.Sentences:
    reader = udpipe.InputFormat.newConlluInputFormat()
    reader.setText(text)
    sentences = udpipe.Sentences()
    sentence = udpipe.Sentence()
    error = udpipe.ProcessingError()
    while reader.nextSentence(sentence, error):
        sentences.push_back(sentence)
        sentence = udpipe.Sentence()
    if error.occurred():
        raise ValueError(f"cannot read CoNLL-U: {error.message}")
    return sentences


def record_head(peer: str, train_file: Path, dev_file: Path) -> dict:
    """The first fields of a run's JSON record: the peer, its version, the files."""
    version = "{0.major}.{0.minor}.{0.patch}".format(udpipe.Version.current())
    return {"peer": peer, "udpipe_version": version, "train_file": str(train_file), "dev_file": str(dev_file)}


def trained_model(
    train: udpipe.Sentences, heldout: udpipe.Sentences, options: tuple[str, str, str], model_path: Path
) -> tuple[udpipe.Model, float, float]:
    """A model trained with (tokenizer, tagger, parser) ``options``, written to ``model_path``
    and loaded back, with the training's wall-clock and CPU seconds."""
    error = udpipe.ProcessingError()
    start, start_cpu = time.perf_counter(), time.process_time()
    model_data = udpipe.Trainer.train("morphodita_parsito", train, heldout, *options, error)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - start_cpu
    if error.occurred():
        sys.exit(f"udpipe1.py: error: training failed: {error.message}")
    model_path.write_bytes(
        model_data if isinstance(model_data, bytes) else model_data.encode("utf-8", "surrogateescape")
    )
    model = udpipe.Model.load(str(model_path))
    if model is None:
        sys.exit(f"udpipe1.py: error: cannot load {model_path}")
    return model, seconds, cpu_seconds


def tokenize(train_file: Path, dev_file: Path, out: Path, tokenizer_options: str) -> None:
    """Train UDPipe 1's tokenizer and tokenize the raw dev text (module docstring)."""
    train = read_sentences(train_file.read_text(encoding="utf-8-sig"))
    dev_text = dev_file.read_text(encoding="utf-8-sig")
    heldout, options = read_sentences(dev_text), (tokenizer_options, "none", "none")
    model, _, train_cpu_seconds = trained_model(train, heldout, options, out / "udpipe1.tokenizer.model")
    error = udpipe.ProcessingError()
    pipeline = udpipe.Pipeline(model, "tokenize", "none", "none", "conllu")
    start_cpu = time.process_time()
    output = pipeline.process(raw_text(dev_text), error)
    tokenize_cpu_seconds = time.process_time() - start_cpu
    if error.occurred():
        sys.exit(f"udpipe1.py: error: tokenizing failed: {error.message}")
    (out / "udpipe1.raw.conllu").write_text(output, encoding="utf-8")
    record = {
        **record_head("UDPipe 1 tokenizer", train_file, dev_file),
        "tokenizer_options": tokenizer_options,
        "train_cpu_seconds": round(train_cpu_seconds, 1),
        "tokenize_cpu_seconds": round(tokenize_cpu_seconds, 3),
        "predictions": str(out / "udpipe1.raw.conllu"),
    }
    (out / "udpipe1.tokenizer.json").write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record, indent=2))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train-file", required=True)
    parser.add_argument("--dev-file", required=True)
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--tokenizer", action="store_true", help="train and run the tokenizer on raw dev text")
    parser.add_argument("--tokenizer-options", default="", help="UDPipe's tokenizer options (default: its own)")
    args = parser.parse_args(argv)
    train_file = existing_file(parser, args.train_file, "--train-file")
    dev_file = existing_file(parser, args.dev_file, "--dev-file")
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    if args.tokenizer:
        return tokenize(train_file, dev_file, out, args.tokenizer_options)

    train = read_sentences(train_file.read_text(encoding="utf-8-sig"))
    options = {"tokenizer": "none", "tagger": udpipe.Trainer.DEFAULT, "parser": "none"}
    print(f"training UDPipe 1 on {len(train)} sentences, options {options}", file=sys.stderr)
    error = udpipe.ProcessingError()
    model_path = out / "udpipe1.model"
    model, train_seconds, train_cpu_seconds = trained_model(
        train, udpipe.Sentences(), (options["tokenizer"], options["tagger"], options["parser"]), model_path
    )
    gold = Conllu.read(dev_file)
    pipeline = udpipe.Pipeline(model, "conllu", udpipe.Pipeline.DEFAULT, udpipe.Pipeline.NONE, "conllu")
    blanked = gold.blanked()
    start, start_cpu = time.perf_counter(), time.process_time()
    output = pipeline.process(blanked, error)
    tag_seconds = time.perf_counter() - start
    tag_cpu_seconds = time.process_time() - start_cpu
    if error.occurred():
        sys.exit(f"udpipe1.py: error: tagging failed: {error.message}")
    tagged = Conllu(output, "udpipe output")
    tags = [[(w[2], w[3], w[4], w[5]) for w in sentence] for sentence in tagged.words()]
    predictions = out / "udpipe1.dev.conllu"
    predictions.write_text(gold.with_tags(tags), encoding="utf-8")

    record = {
        **record_head("UDPipe 1", train_file, dev_file),
        "options": options,
        "train_sentences": len(train),
        "train_seconds": round(train_seconds, 1),
        "train_cpu_seconds": round(train_cpu_seconds, 1),
        "dev_words": gold.num_words(),
        "tag_seconds": round(tag_seconds, 3),
        "tag_cpu_seconds": round(tag_cpu_seconds, 3),
        "words_per_second": round(gold.num_words() / tag_seconds),
        "words_per_cpu_second": round(gold.num_words() / tag_cpu_seconds),
        "tag_seconds_note": "Pipeline.process on the whole dev text, CoNLL-U parsing and writing included, one thread",
        "predictions": str(predictions),
        "model": str(model_path),
    }
    (out / "udpipe1.json").write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
