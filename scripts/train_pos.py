"""Train a continuous-in-depth transformer POS tagger on a UD treebank, or evaluate one.

    accelerate launch scripts/train_pos.py --treebank sample
    UD_DIR=/path/to/ud accelerate launch scripts/train_pos.py --treebank en_gum --output-dir out
    accelerate launch --multi_gpu --num_processes 2 scripts/train_pos.py --treebank sample
    python scripts/train_pos.py --eval-only out --treebank en_gum --eval-split dev

Flags left out take the defaults of ``cont_transformer.tagging.trainer.TrainingArguments`` (the
paper's recipe), or of ``SAMPLE_DEFAULTS`` for ``--treebank sample``.
"""

import argparse
import json
import logging

from accelerate import PartialState

from cont_transformer.tagging.trainer import (
    SAMPLE_DEFAULTS,
    TrainingArguments,
    evaluate_saved_model,
    resolve_arguments,
    train,
)
from cont_transformer.training.schedules import parse_steps

DEFAULTS = TrainingArguments()
SUMMARY_KEYS = (
    "best",
    "baseline_accuracy",
    "step",
    "train_runtime_s",
    "total_runtime_s",
    "train_tokens_per_second",
)


def _default(name: str) -> str:
    value = getattr(DEFAULTS, name)
    if name in SAMPLE_DEFAULTS:
        return f"default: {value}; sample: {SAMPLE_DEFAULTS[name]}"
    return f"default: {value}"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )

    def flag(name: str, help: str, **kwargs):
        parser.add_argument(
            f"--{name.replace('_', '-')}",
            dest=name,
            default=None,
            help=f"{help} ({_default(name)})",
            **kwargs,
        )

    flag("treebank", "sample | en_gum | de_hdt | a UD release folder | a Hub dataset name")
    flag("data_dir", "folder of UD release folders; $UD_DIR if not given")
    flag("train_file", "CoNLL-U file(s) or glob(s) replacing the train split", nargs="+")
    flag("dev_file", "CoNLL-U file(s) or glob(s) replacing the dev split", nargs="+")
    flag("tag_column", "tags to predict", choices=["xpos", "upos"])
    flag("output_dir", "best model, metrics.json and checkpoints/")
    flag("max_steps", "optimiser steps", type=int)
    flag("batch_size", "sentences per step, over all processes", type=int)
    flag("learning_rate", "peak learning rate (end of warm-up)", type=float)
    flag("warmup_steps", "linear warm-up steps, then 1/sqrt(step) decay", type=int)
    flag("cooldown_steps", "linear decay of the learning rate to 0 over the last N steps", type=int)
    flag("weight_decay", "AdamW weight decay (not on biases and LayerNorms)", type=float)
    flag("basis", "basis of the ODE block's weights")
    flag("num_basis", "final K, the number of basis functions", type=int)
    flag("num_steps", "final N_T, integration steps (None: num_basis)", type=int)
    flag("scheme", "Runge-Kutta scheme")
    flag("time_horizon", "T, end of depth-time", type=float)
    flag(
        "refine_steps",
        "comma-separated steps after which K and N_T are refined ('none': never)",
        type=parse_steps,
    )
    flag("hidden_size", "embedding and ODE state width", type=int)
    flag("num_attention_heads", "attention heads", type=int)
    flag("intermediate_size", "MLP hidden width", type=int)
    flag("hidden_act", "MLP activation", choices=["gelu", "relu"])
    flag(
        "hidden_dropout_prob",
        "dropout on embeddings, rate outputs and before the classifier",
        type=float,
    )
    flag("attention_probs_dropout_prob", "dropout on attention probabilities", type=float)
    flag("position_encoding", "position encoding", choices=["sinusoidal", "learned"])
    flag(
        "word_representation",
        "word+chars: word embeddings plus a character CNN over the spelling; word: the "
        "paper's word-only model; chars: the character CNN alone",
        choices=["word+chars", "word", "chars"],
    )
    flag("char_embedding_size", "character embedding width", type=int)
    flag("char_hidden_size", "character CNN filters", type=int)
    flag("char_kernel_size", "character CNN width (odd)", type=int)
    flag("max_word_length", "characters of a word the CNN reads (first and last)", type=int)
    flag("context_kernel_size", "experiment: window of a convolution over the words", type=int)
    flag(
        "max_length",
        "longest training sentence in words, root included (longer: truncated; "
        "evaluation scores long sentences in full, in windows)",
        type=int,
    )
    flag(
        "word_dropout",
        "alpha: the word channel of a training word seen c times becomes [UNK] with "
        "probability alpha/(alpha+c), its spelling stays; 0: off",
        type=float,
    )
    flag("eval_steps", "evaluate on dev every N steps", type=int)
    flag("save_steps", "checkpoint every N steps", type=int)
    flag("save_total_limit", "checkpoints kept", type=int)
    flag("seed", "random seed", type=int)
    flag("resume_from_checkpoint", "checkpoint folder, or 'latest' in --output-dir")
    flag("push_to_hub", "Hub repository id to upload the best model to")
    parser.add_argument("--eval-only", metavar="MODEL_DIR", help="evaluate a saved model and exit")
    parser.add_argument(
        "--eval-split", default="validation", help="split for --eval-only (default: validation)"
    )
    parser.add_argument(
        "--eval-file", nargs="+", help="CoNLL-U file(s) for --eval-only instead of a split"
    )
    return parser.parse_args(argv)


def main(argv=None) -> None:
    logging.basicConfig(
        format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO
    )
    args = vars(parse_args(argv))
    eval_only, eval_split, eval_file = (
        args.pop("eval_only"),
        args.pop("eval_split"),
        args.pop("eval_file"),
    )
    if eval_only:
        result = evaluate_saved_model(
            eval_only,
            treebank=args["treebank"] or DEFAULTS.treebank,
            data_dir=args["data_dir"],
            split=eval_split,
            eval_file=eval_file or (),
            tag_column=args["tag_column"],
            batch_size=args["batch_size"] or DEFAULTS.batch_size,
        )
    else:
        metrics = train(resolve_arguments(args))
        result = {key: metrics[key] for key in SUMMARY_KEYS}
    if PartialState().is_main_process:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
