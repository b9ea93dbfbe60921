"""Train static word vectors (fastText, by gensim) on unlabelled text for the taggers.

    python scripts/train_word_vectors.py --text-files "../shared/data/text/en/*.txt.gz" \\
        --output-dir runs/en-vectors
    python scripts/train_word_vectors.py --text-files de/*.txt.gz --output-dir runs/de-vectors

Then train a tagger that reads them: ``train_pos.py recipes/en_gum_vectors.json``, or any
recipe with ``--word-vectors`` (German: ``train_pos.py recipes/de_lit.json --word-vectors
runs/de-vectors``). Every word of the text gets a vector by default (``--min-count 1``): a
rare word's vector is built mostly from its character n-grams, and those are the words a
treebank lacks (docs/experiments.md, "Static word vectors"). Needs gensim: ``pip install "cont-transformer[vectors]"``.
The logic lives in :mod:`cont_transformer.language_modeling.word_vectors`. Bad arguments
or files: one line, exit 2.
"""

from __future__ import annotations

import argparse
import json

from cont_transformer.language_modeling.word_vectors import METHODS, train_word_vectors
from cont_transformer.text.reading import text_files
from cont_transformer.tools.cli import EXIT_USAGE, both_spellings, run_cli


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.error = lambda message: parser.exit(EXIT_USAGE, f"error: {message} (see --help)\n")
    parser.add_argument("--text-files", nargs="+", required=True, help="plain or .gz text files (globs allowed)")
    parser.add_argument("--output-dir", required=True, help="the vector folder to write")
    parser.add_argument("--vector-size", type=int, default=100, help="width of a vector")
    parser.add_argument("--epochs", type=int, default=5, help="passes over the text")
    parser.add_argument("--min-count", type=int, default=1, help="words seen fewer times get no vector")
    parser.add_argument("--max-words", type=int, default=0, help="keep the N most frequent words (0: every word)")
    parser.add_argument("--window", type=int, default=5, help="context words on either side")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--method", default="fasttext", choices=sorted(METHODS), help="with subwords, or words only")
    parser.add_argument("--workers", type=int, default=1, help="gensim's training threads")
    parser.add_argument("--overwrite", action="store_true", help="replace the vectors in a non-empty --output-dir")
    args = both_spellings(parser).parse_args(argv)
    for name in ("vector_size", "epochs", "min_count", "window", "workers"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.max_words < 0:
        parser.error(f"--max-words must be >= 0, got {args.max_words}")
    return args


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    settings = train_word_vectors(
        text_files(args.text_files),
        args.output_dir,
        vector_size=args.vector_size,
        epochs=args.epochs,
        min_count=args.min_count,
        max_words=args.max_words or None,
        window=args.window,
        seed=args.seed,
        workers=args.workers,
        overwrite=args.overwrite,
        method=args.method,
    )
    print(json.dumps(settings))


if __name__ == "__main__":
    run_cli(main)
