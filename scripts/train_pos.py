"""Train a continuous-in-depth transformer POS tagger on a UD treebank, or evaluate one.

    accelerate launch scripts/train_pos.py --treebank sample
    UD_DIR=/path/to/ud accelerate launch scripts/train_pos.py --treebank en_gum --output-dir out
    accelerate launch --multi_gpu --num_processes 2 scripts/train_pos.py --treebank sample
    python scripts/train_pos.py --eval-only out --treebank en_gum --eval-split dev

Every field of ``cont_transformer.tagging.arguments.TrainingArguments`` is a flag, in both
spellings (``--learning-rate`` / ``--learning_rate``); defaults are the paper's recipe, or
``SAMPLE_DEFAULTS`` for ``--treebank sample``. Bad arguments or files: one line, exit 2
(``--debug`` shows the traceback).
"""

import json
import logging

from accelerate import PartialState

from cont_transformer.tagging.arguments import TrainingArguments, preset_defaults
from cont_transformer.tagging.evaluation import evaluate_saved_model
from cont_transformer.tagging.trainer import train
from cont_transformer.tools.cli import run_cli
from cont_transformer.training.recipes import parse_arguments

SUMMARY_KEYS = (
    "best",
    "baseline_accuracy",
    "step",
    "train_runtime_s",
    "total_runtime_s",
    "train_tokens_per_second",
    "compression",
)


def _evaluation_flags(parser) -> None:
    parser.add_argument("--eval-only", metavar="MODEL_DIR", help="evaluate a saved model and exit")
    parser.add_argument("--eval-split", default="validation", help="split for --eval-only (default: validation)")
    parser.add_argument("--eval-file", nargs="+", help="CoNLL-U file(s) for --eval-only instead of a split")


def main(argv: list[str]) -> None:
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    args, extra = parse_arguments(
        TrainingArguments,
        argv,
        description=__doc__.split("\n")[0],
        preset_defaults=preset_defaults,
        extra=_evaluation_flags,
    )
    # --do-eval without --do-train (transformers' flags): evaluate the saved model only.
    eval_only = extra["eval_only"] or (
        (args.model_name_or_path or args.output_dir) if args.do_eval and not args.do_train else None
    )
    if eval_only:
        result = evaluate_saved_model(
            eval_only,
            treebank=args.treebank,
            data_dir=args.data_dir,
            split=extra["eval_split"],
            eval_file=extra["eval_file"] or args.dev_file,
            tag_column=args.tag_column if "tag_column" in extra["given_fields"] else None,
            batch_size=args.batch_size
            if args.per_device_eval_batch_size is None
            else args.per_device_eval_batch_size * PartialState().num_processes,
        )
    else:
        metrics = train(args)
        result = {key: metrics[key] for key in SUMMARY_KEYS if key in metrics}
    if PartialState().is_main_process:
        print(json.dumps(result))


if __name__ == "__main__":
    run_cli(main)
