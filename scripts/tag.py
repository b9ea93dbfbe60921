"""Tag raw text or CoNLL-U with a trained tagger; CoNLL-U (or TSV, JSON Lines) out.

    python scripts/tag.py MODEL_DIR --input story.txt --output story.conllu
    python scripts/tag.py MODEL_DIR --input-format conllu --input dev.conllu --output dev.tagged.conllu
    echo "I don't know. He left." | python scripts/tag.py MODEL_DIR --format tsv
    python scripts/tag.py MODEL_DIR --input dev.txt --output dev.conllu --evaluate dev-gold.conllu

Bad input (not UTF-8, a malformed CoNLL-U line, a blank word) stops with one line naming
the file and line and exit status 2, leaving --output as it was; an --output inside a
model or run folder is refused. The logic lives in
:mod:`cont_transformer.tagging.tag_files`.
"""

from __future__ import annotations

import argparse
import sys

import torch
from transformers.utils import logging as transformers_logging

from cont_transformer.compiling import check_compile_mode
from cont_transformer.model_folders import check_outside_model_folders
from cont_transformer.tagging.conllu_document import ConlluDocument
from cont_transformer.tagging.scoring import format_scores, score, scored_columns
from cont_transformer.tagging.segmentation import LANGUAGES
from cont_transformer.tagging.tag import Tagger
from cont_transformer.tagging.tag_files import INPUT_FORMATS, OUTPUT_FORMATS, tag_file
from cont_transformer.tools.cli import add_precision_flags, both_spellings
from cont_transformer.training.accelerator import inference_autocast

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model_dir", help="a save_pretrained folder of a tagger, or a training run's folder")
    parser.add_argument("--input", help="file to tag (default: stdin)")
    parser.add_argument(
        "--input-format",
        choices=INPUT_FORMATS,
        default="text",
        help="text: raw text; lines: a sentence per line; tokens: a sentence "
        "per line, words split by spaces; conllu: re-tag a CoNLL-U file",
    )
    parser.add_argument("--output", help="file to write (default: stdout)")
    parser.add_argument(
        "--in-place", action="store_true", help="allow --output to be the --input file (replaced by the tagged output)"
    )
    parser.add_argument(
        "--format",
        choices=OUTPUT_FORMATS,
        default="conllu",
        help="output: conllu, tsv (word, then each predicted column) or json (JSON Lines)",
    )
    parser.add_argument("--language", choices=LANGUAGES, help="language of raw text (default: the model's, else en)")
    parser.add_argument("--batch-size", type=int, default=2048, help="tokens per forward pass, padding included")
    parser.add_argument("--device", help="torch device (default: cuda when available)")
    parser.add_argument("--dtype", choices=DTYPES, help="model precision (default: as saved)")
    add_precision_flags(parser)
    parser.add_argument("--num-threads", type=int, help="torch CPU threads (default: torch's)")
    parser.add_argument("--torch-compile", action="store_true", help="compile the model (torch.compile)")
    parser.add_argument("--torch-compile-mode", help="torch.compile mode (default: reduce-overhead on a GPU)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--evaluate",
        metavar="GOLD",
        help="score the output against this CoNLL-U file (needs --output, "
        "--format conllu); without --input, tag GOLD's own text (its "
        "'# text' lines as --input-format says: text, lines, or conllu)",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    args = both_spellings(parser).parse_args(argv)
    if args.evaluate and (args.output is None or args.format != "conllu"):
        parser.error("--evaluate needs --output FILE and --format conllu")
    if args.evaluate and args.input is None and args.input_format == "tokens":
        parser.error("--evaluate without --input takes --input-format text, lines or conllu")
    return args


def run(args: argparse.Namespace) -> None:
    transformers_logging.disable_progress_bar()  # stderr is for errors, progress and speed
    check_outside_model_folders(args.output, "output")  # never over a model's own files
    if args.num_threads is not None:
        if args.num_threads < 1:
            raise ValueError(f"--num-threads: give a positive number of CPU threads, got {args.num_threads}")
        torch.set_num_threads(args.num_threads)
    check_compile_mode(args.torch_compile_mode)
    tagger = Tagger.from_pretrained(
        args.model_dir,
        device=args.device,
        dtype=DTYPES.get(args.dtype),
        language=args.language,
        batch_size=args.batch_size,
        torch_compile=args.torch_compile,
        torch_compile_mode=args.torch_compile_mode,
    )
    gold = ConlluDocument.read(args.evaluate) if args.evaluate else None
    text, name = None, args.input
    if gold is not None and args.input is None:
        name = args.evaluate
        text = (
            "\n".join(gold.lines)
            if args.input_format == "conllu"
            else gold.text(one_sentence_per_line=args.input_format == "lines")
        )
    with inference_autocast(args.bf16, args.fp16, next(tagger.model.parameters()).device):
        stats = tag_file(
            tagger,
            name,
            args.output,
            input_format=args.input_format,
            output_format=args.format,
            progress=False if args.no_progress else None,
            text=text,
            in_place=args.in_place,
        )
    print(stats.summary(), file=sys.stderr)
    if gold is not None:
        result = score(gold, ConlluDocument.read(args.output), scored_columns(tagger.columns))
        print(format_scores(result), file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    try:
        run(args)
    except (ValueError, OSError) as err:
        if args.debug:
            raise
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
