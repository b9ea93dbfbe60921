"""Compress a trained model without retraining: change of basis and/or fewer steps.

    python scripts/compress.py MODEL_DIR --num-basis 8 --num-steps 8 --output-dir OUT \\
        --eval-file en_gum-ud-dev.conllu
    python scripts/compress.py MODEL_DIR --sweep --eval-file en_gum-ud-dev.conllu \\
        --output-dir OUT [--max-accuracy-drop 1.0]

The logic lives in :mod:`cont_transformer.tools.compress_command` (``compression``, ``sweep``).
"""

from __future__ import annotations

import argparse

from cont_transformer.basis import BASES, CHANGE_OF_BASIS_METHODS
from cont_transformer.tools.cli import EXIT_USAGE, add_precision_flags, both_spellings, run_cli
from cont_transformer.tools.compress_command import compress_command
from cont_transformer.tools.sweep import SWEEP_BASES


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.error = lambda message: parser.exit(EXIT_USAGE, f"error: {message} (see --help)\n")
    parser.add_argument("model_dir", help="a save_pretrained folder of a cont_transformer or ode_resnet model")
    parser.add_argument("--output-dir", required=True, help="folder to write (atomically); never the source")
    parser.add_argument("--basis", choices=sorted(BASES), help="target basis (default: the source's)")
    parser.add_argument("--num-basis", type=int, help="target K (default: the source's)")
    parser.add_argument("--num-steps", type=int, help="target N_T (default: the source's)")
    parser.add_argument(
        "--state-num-basis",
        type=int,
        help="K of an image model's running statistics (default: kept when only K shrinks, else the target K)",
    )
    parser.add_argument("--method", default="projection", choices=sorted(CHANGE_OF_BASIS_METHODS))
    parser.add_argument("--eval-file", help="CoNLL-U file (taggers) or image / IDX folder (image models) to score on")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes per model (median)")
    parser.add_argument("--num-threads", type=int, help="torch CPU threads (default: torch's)")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty --output-dir")
    parser.add_argument(
        "--base-model",
        metavar="REPO_ID",
        help="the source's Hub id, recorded as the card's base_model (default: its path)",
    )
    parser.add_argument(
        "--torch-compile",
        action="store_true",
        help="time source and compressed model compiled with torch.compile (scores are the same)",
    )
    parser.add_argument(
        "--push-to-hub",
        metavar="REPO_ID",
        nargs="?",
        const="",
        help="upload the written folder to the Hub: a switch (to --hub-model-id, or the "
        "--output-dir's name) or a repository id",
    )
    parser.add_argument("--hub-model-id", metavar="REPO_ID", help="Hub repository of --push-to-hub")
    add_precision_flags(parser)
    sweep_group = parser.add_argument_group("sweep (paper Fig. 5)")
    sweep_group.add_argument("--sweep", action="store_true", help="measure a grid instead of one model")
    sweep_group.add_argument("--sweep-bases", nargs="+", default=list(SWEEP_BASES), choices=sorted(BASES))
    sweep_group.add_argument("--sweep-num-basis", nargs="+", type=int, help="K grid (default: 1, 2, 4, … K)")
    sweep_group.add_argument("--sweep-num-steps", nargs="+", type=int, help="N_T grid (default: 1, 2, 4, … N_T)")
    sweep_group.add_argument(
        "--max-accuracy-drop",
        type=float,
        metavar="POINTS",
        help="save the smallest swept model within POINTS accuracy points of the source (implies --sweep)",
    )
    return both_spellings(parser).parse_args(argv)  # compress_command checks how the flags combine


def main(argv: list[str] | None = None) -> None:
    """Bad arguments or folders: one line and exit status 2 (``--debug``: the traceback)."""
    run_cli(lambda argv: compress_command(**vars(parse_args(argv))), argv)


if __name__ == "__main__":
    main()
