"""Pretrain the continuous transformer encoder as a masked language model on unlabelled text.

    accelerate launch scripts/pretrain.py recipes/en_text_lm.json
    python scripts/pretrain.py --text-files corpus/*.txt.gz --output-dir runs/my-lm --max-steps 5000
    python scripts/pretrain.py --dataset-name wikitext --dataset-config wikitext-103-raw-v1

Every field of ``cont_transformer.language_modeling.arguments.PretrainingArguments`` is a
flag, in both spellings. Then fine-tune a tagger from it:
``train_pos.py --model-name-or-path runs/en-lm``. Bad arguments or files: one line, exit 2
(``--debug`` shows the traceback).
"""

import json
import logging

from accelerate import PartialState

from cont_transformer.language_modeling.arguments import PretrainingArguments
from cont_transformer.language_modeling.trainer import train
from cont_transformer.tools.cli import run_cli
from cont_transformer.training.recipes import parse_arguments

SUMMARY_KEYS = ("best", "step", "train_runtime_s", "total_runtime_s", "train_tokens_per_second", "compression")


def main(argv: list[str]) -> None:
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    args, _ = parse_arguments(PretrainingArguments, argv, description=__doc__.split("\n")[0])
    metrics = train(args)
    if PartialState().is_main_process:
        print(json.dumps({key: metrics[key] for key in SUMMARY_KEYS if key in metrics}))


if __name__ == "__main__":
    run_cli(main)
