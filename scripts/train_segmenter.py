"""Train a segmenter (tokens, words, sentences) on a UD treebank, chosen on its dev split.

    python scripts/train_segmenter.py --treebank el_gdt --data-dir ../shared/data/ud --output-dir runs/el
    python scripts/train_segmenter.py --train-file T.conllu --dev-file D.conllu --output-dir runs/el

--output-dir is a tagger's folder (a model folder or a training run's, whose ``best/``
model gets it): ``tag.py``, ``Tagger`` and the folder's pipeline then split raw text with
it; or any other folder, for a segmenter of its own. The logic lives in
:mod:`cont_transformer.tagging.segmenter_training`. Bad arguments or files: one line, exit 2.
"""

from __future__ import annotations

import argparse

from cont_transformer.tagging.segmenter_training import train_into_folder, treebank_split
from cont_transformer.tools.cli import EXIT_USAGE, both_spellings, run_cli


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.error = lambda message: parser.exit(EXIT_USAGE, f"error: {message} (see --help)\n")
    parser.add_argument("--treebank", help="a treebank code (el_gdt) under --data-dir, or a UD release folder")
    parser.add_argument("--data-dir", help="the folder of UD_* treebanks (default: $UD_DIR)")
    parser.add_argument("--train-file", help="a CoNLL-U train file (with --dev-file, instead of --treebank)")
    parser.add_argument("--dev-file", help="the CoNLL-U dev file that chooses the epoch")
    parser.add_argument("--output-dir", required=True, help="a tagger's folder, or a folder of its own")
    parser.add_argument("--language", help="the language code (default: from the file name)")
    parser.add_argument("--max-epochs", type=int, default=25)
    parser.add_argument("--seed", type=int, default=0)
    args = both_spellings(parser).parse_args(argv)
    if (args.treebank is None) == (args.train_file is None and args.dev_file is None):
        parser.error("give --treebank, or --train-file and --dev-file")
    if args.treebank is None and (args.train_file is None or args.dev_file is None):
        parser.error("--train-file and --dev-file go together")
    if args.max_epochs < 1:
        parser.error(f"--max-epochs must be >= 1, got {args.max_epochs}")
    return args


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    train, dev = args.train_file, args.dev_file
    if args.treebank is not None:
        train, dev = (treebank_split(args.treebank, split, args.data_dir) for split in ("train", "dev"))
    train_into_folder(train, dev, args.output_dir, args.language, max_epochs=args.max_epochs, seed=args.seed)


if __name__ == "__main__":
    run_cli(main)
