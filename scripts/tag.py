"""Tag raw text or CoNLL-U with a trained tagger; CoNLL-U (or TSV, JSON Lines) out.

    python scripts/tag.py MODEL_DIR --input story.txt --output story.conllu
    python scripts/tag.py MODEL_DIR --input-format conllu --input dev.conllu --output dev.tagged.conllu
    echo "I don't know. He left." | python scripts/tag.py MODEL_DIR --format tsv
    python scripts/tag.py MODEL_DIR --input "chapters/*.txt" --output-dir tagged/ --format tsv
    python scripts/tag.py MODEL_DIR --input corpus.txt --output corpus.conllu --processes 0  # every core
    python scripts/tag.py MODEL_DIR --input dev.txt --evaluate dev-gold.conllu --output dev.conllu

Output streams: each batch of sentences is written (and flushed) as soon as it is
tagged, so a pipe's sentences come out while it is still open. Bad input (not UTF-8, a
malformed CoNLL-U line, a blank word) stops with one line naming the file and line and
exit status 2, leaving a file --output as it was (a FIFO or device is written directly);
an --output inside a model or run folder is refused (--debug: the traceback). The logic
lives in :mod:`cont_transformer.tagging.tag_command` and
:mod:`cont_transformer.tagging.tag_files`.
"""

from __future__ import annotations

import argparse

from cont_transformer.tagging.tag_command import DTYPES, LOG_LEVELS, language_argument, tag_command
from cont_transformer.tagging.tag_files import INPUT_FORMATS, OUTPUT_FORMATS
from cont_transformer.tools.cli import add_precision_flags, both_spellings, run_cli


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model_dir", help="a save_pretrained folder of a tagger, or a training run's folder")
    parser.add_argument(
        "--input",
        nargs="+",
        metavar="FILE",
        help="files or glob patterns to tag (default: stdin); several need --output-dir",
    )
    parser.add_argument(
        "--input-format",
        choices=INPUT_FORMATS,
        default="text",
        help="text: raw text; lines: a sentence per line; tokens: a sentence "
        "per line, words split by spaces; conllu: re-tag a CoNLL-U file",
    )
    parser.add_argument("--output", help="file to write (default: stdout); a FIFO or device is written directly")
    parser.add_argument(
        "--output-dir",
        metavar="DIR",
        help="write one output per input here: the input's stem and the format's extension "
        "(.conllu, .tsv, .jsonl); created if missing",
    )
    parser.add_argument(
        "--in-place", action="store_true", help="allow --output to be the --input file (replaced by the tagged output)"
    )
    parser.add_argument(
        "--format",
        choices=OUTPUT_FORMATS,
        default="conllu",
        help="output: conllu, tsv (a header line, then the word and each predicted column) or json (JSON Lines)",
    )
    parser.add_argument(
        "--language",
        type=language_argument,
        help="language of raw text, an ISO 639 code (default: the model's, else en); "
        "en and de have tuned rules, any other code the generic Unicode ones",
    )
    parser.add_argument(
        "--tokens-per-batch",
        "--batch-size",  # its older name, the same count
        type=int,
        default=2048,
        help="tokens per forward pass, padding included",
    )
    parser.add_argument("--device", help="torch device (default: cuda when available)")
    parser.add_argument(
        "--dtype",
        choices=DTYPES,
        help="model precision (default: bfloat16 on a CPU with bfloat16 instructions, else as saved)",
    )
    add_precision_flags(parser)
    parser.add_argument("--num-threads", type=int, help="torch CPU threads (default: torch's)")
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        metavar="N",
        help="tag in N worker processes of one thread each, sharing the model (0: one per core); "
        "the output is the same for any N",
    )
    parser.add_argument("--torch-compile", action="store_true", help="compile the model (torch.compile)")
    parser.add_argument("--torch-compile-mode", help="torch.compile mode (default: reduce-overhead on a GPU)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--quiet", action="store_true", help="no summary line (words/s) on stderr")
    parser.add_argument(
        "--log-level",
        default="WARNING",
        metavar="LEVEL",
        help=f"Python logging level for the package and transformers: {', '.join(LOG_LEVELS)} (default: WARNING)",
    )
    parser.add_argument(
        "--evaluate",
        metavar="GOLD",
        help="score the output against this CoNLL-U file (needs --format conllu; scores "
        "on stderr); without --input, tag GOLD's own text (its "
        "'# text' lines as --input-format says: text, lines, or conllu)",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    args = both_spellings(parser).parse_args(argv)
    if args.evaluate and args.format != "conllu":
        parser.error("--evaluate needs --format conllu")
    if args.evaluate and args.input is None and args.input_format == "tokens":
        parser.error("--evaluate without --input takes --input-format text, lines or conllu")
    del args.debug  # run_cli acts on --debug
    return args


def main(argv: list[str] | None = None) -> None:
    run_cli(lambda argv: tag_command(**vars(parse_args(argv))), argv)


if __name__ == "__main__":
    main()
