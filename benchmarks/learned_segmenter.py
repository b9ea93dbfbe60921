"""The learned segmenter against UDPipe 1's tokenizer (and the rules), on raw dev text.

For each treebank (a ``UD_*`` folder under --data-dir, or its code: ``el_gdt``), ours is
trained on the train split and chosen on dev (``train_segmenter``), UDPipe 1's tokenizer is
trained on the same train split with dev as its heldout data (``peers/udpipe1.py
--tokenizer``, run as its own process), and both segment the raw dev text (``# text``
lines, a blank line at each paragraph); the CoNLL 2018 scorer gives Tokens, Words and
Sentences F1. ``--rules`` adds today's rules (``text_segmentation.split_text``) with the
treebank's language. Prints a markdown table and writes a JSON record per treebank; a UDPipe model already
trained into --output-dir with the same options is reused.

    OMP_NUM_THREADS=1 python benchmarks/learned_segmenter.py th_tud vi_vtb tr_imst el_gdt \\
        --data-dir ../shared/data/ud --output-dir runs/segmenters [--udpipe-options epochs=20] [--rules]
    OMP_NUM_THREADS=1 python benchmarks/learned_segmenter.py en_gum \\
        de=$UD/UD_German-LIT/de_lit-ud-test.conllu,$UD/UD_German-GSD/de_gsd-ud-dev.conllu --rules ...
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

from cont_transformer.tagging.conllu_document import ConlluDocument
from cont_transformer.tagging.scoring import score
from cont_transformer.tagging.segmenter_training import score_segmenter, train_segmenter
from cont_transformer.text_segmentation import split_text

PEER = Path(__file__).resolve().parent / "peers" / "udpipe1.py"


def find_split(data_dir: Path, treebank: str, split: str) -> Path:
    matches = sorted(data_dir.glob(f"UD_*/{treebank}-ud-{split}.conllu")) or sorted(
        data_dir.glob(f"{treebank}/*-ud-{split}.conllu")
    )
    if not matches:
        sys.exit(f"learned_segmenter.py: error: {treebank}: no {split} file under {data_dir}")
    return matches[0]


def udpipe_scores(train: Path, dev: Path, out: Path, options: str) -> dict[str, float]:
    """UDPipe 1's tokenizer trained and scored; one trained before with the same options into
    ``out`` is scored again instead."""
    record = out / "udpipe1.tokenizer.json"
    if not (record.is_file() and json.loads(record.read_text())["tokenizer_options"] == options):
        command = [sys.executable, str(PEER), "--tokenizer", "--train-file", str(train), "--dev-file", str(dev)]
        command += ["--output-dir", str(out), "--tokenizer-options", options]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    gold = ConlluDocument.read(dev)
    result = score(gold, ConlluDocument.read(out / "udpipe1.raw.conllu"), columns=())
    record = json.loads(record.read_text())
    scores = {unit: 100 * result[unit]["f1"] for unit in ("tokens", "words", "sentences")}
    return {**scores, "cpu_seconds": record["train_cpu_seconds"]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("treebanks", nargs="+", help="treebank codes (el_gdt), or CODE=TRAIN_FILE,DEV_FILE")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--udpipe-options", default="", help="UDPipe's tokenizer options (default: its own)")
    parser.add_argument("--rules", action="store_true", help="also score the rules")
    parser.add_argument("--no-udpipe", action="store_true")
    parser.add_argument("--max-epochs", type=int, default=25, help="our segmenter's passes at most")
    args = parser.parse_args(argv)
    data_dir, out = Path(args.data_dir), Path(args.output_dir)
    print("| treebank | segmenter | Tokens | Words | Sentences | train CPU s |\n|---|---|---:|---:|---:|---:|")
    for treebank in args.treebanks:
        if "=" in treebank:  # CODE=TRAIN,DEV: files of two treebanks (German: LIT to train, GSD dev)
            code, _, files = treebank.partition("=")
            train, dev = (Path(path) for path in files.split(","))
        else:
            train, dev = find_split(data_dir, treebank, "train"), find_split(data_dir, treebank, "dev")
            code = dev.name.split("-ud-")[0]
        folder = out / code
        folder.mkdir(parents=True, exist_ok=True)
        rows = {}
        language = code.split("_")[0]
        start = time.process_time()
        with (folder / "segmenter.log").open("w") as log:
            segmenter, ours = train_segmenter(
                train, dev, language=language, max_epochs=args.max_epochs, log=partial(print, file=log, flush=True)
            )
        rows["ours"] = {**ours, "cpu_seconds": time.process_time() - start}
        segmenter.save(folder / "segmenter")
        if args.rules:
            gold = ConlluDocument.read(dev)
            rows["rules"] = score_segmenter(partial(split_text, language=language), gold)
        if not args.no_udpipe:
            rows["udpipe1"] = udpipe_scores(train, dev, folder / "udpipe1", args.udpipe_options)
        (folder / "segmenters.json").write_text(json.dumps(rows, indent=2) + "\n")
        for name, row in rows.items():
            seconds = f"{row['cpu_seconds']:.0f}" if "cpu_seconds" in row else ""
            print(
                f"| {code} | {name} | {row['tokens']:.2f} | {row['words']:.2f} | {row['sentences']:.2f} | {seconds} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
