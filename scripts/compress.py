"""Compress a trained model without retraining: change of basis and/or fewer steps.

    python scripts/compress.py MODEL_DIR --num-basis 8 --num-steps 8 --output-dir OUT \\
        --eval-file en_gum-ud-dev.conllu
    python scripts/compress.py MODEL_DIR --sweep --eval-file en_gum-ud-dev.conllu \\
        --output-dir OUT [--max-accuracy-drop 1.0]

The logic lives in :mod:`cont_transformer.tools.compression` and :mod:`cont_transformer.tools.sweep`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from cont_transformer.basis import BASES, CHANGE_OF_BASIS_METHODS
from cont_transformer.model_folders import push_folder_to_hub
from cont_transformer.tools.cli import EXIT_USAGE, add_precision_flags, both_spellings, run_cli
from cont_transformer.tools.compression import compress
from cont_transformer.tools.sweep import SWEEP_BASES, markdown_table, sweep
from cont_transformer.training.accelerator import inference_autocast


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
    parser.add_argument(
        "--eval-file",
        help="CoNLL-U file (taggers) or image / IDX folder (image models) to score on",
    )
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
    args = both_spellings(parser).parse_args(argv)
    if args.push_to_hub == "":
        args.push_to_hub = args.hub_model_id or Path(args.output_dir).resolve().name
    args.sweep = args.sweep or args.max_accuracy_drop is not None
    if args.sweep:
        if args.eval_file is None:
            parser.error("--sweep and --max-accuracy-drop need --eval-file")
        if any(v is not None for v in (args.basis, args.num_basis, args.num_steps, args.state_num_basis)):
            parser.error(
                "--sweep takes --sweep-bases / --sweep-num-basis / --sweep-num-steps, "
                "not --basis / --num-basis / --num-steps / --state-num-basis"
            )
    if args.push_to_hub and args.sweep and args.max_accuracy_drop is None:
        parser.error("--push-to-hub needs a model: compress one, or --sweep with --max-accuracy-drop")
    return args


def main(argv: list[str] | None = None) -> None:
    """Bad arguments or folders: one line and exit status 2 (``--debug``: the traceback)."""
    run_cli(_main, argv)


def _main(argv: list[str]) -> None:
    args = parse_args(argv)
    if args.num_threads:
        torch.set_num_threads(args.num_threads)
    with inference_autocast(args.bf16, args.fp16, "cuda" if torch.cuda.is_available() else "cpu"):
        run(args)


def run(args: argparse.Namespace) -> None:
    if args.sweep:
        result = sweep(
            args.model_dir,
            args.eval_file,
            args.output_dir,
            method=args.method,
            bases=args.sweep_bases,
            num_basis_values=args.sweep_num_basis,
            num_steps_values=args.sweep_num_steps,
            max_accuracy_drop=args.max_accuracy_drop,
            repeats=args.repeats,
            overwrite=args.overwrite,
            torch_compile=args.torch_compile,
            progress=lambda r: print(
                f"{r.grid:>9} {r.basis:>20} K={r.num_basis:<3} N_T={r.num_steps:<3} "
                + ("" if r.state_num_basis in (None, r.num_basis) else f"(statistics K={r.state_num_basis}) ")
                + f"accuracy {100 * r.accuracy:6.2f}%  {r.inference_seconds:.3f} s "
                f"({r.speedup:.2f}x)",
                flush=True,
            ),
        )
        print(markdown_table(result.rows))
        if result.selected is not None:
            s = result.selected
            print(
                f"\nselected: {s.basis}, K = {s.num_basis}, N_T = {s.num_steps} "
                f"({s.accuracy_drop:+.2f} points, {s.compression_ratio:.2f}x fewer non-embedding parameters)"
            )
    else:
        result = compress(
            args.model_dir,
            args.output_dir,
            basis=args.basis,
            num_basis=args.num_basis,
            num_steps=args.num_steps,
            method=args.method,
            eval_file=args.eval_file,
            repeats=args.repeats,
            overwrite=args.overwrite,
            torch_compile=args.torch_compile,
            state_num_basis=args.state_num_basis,
            base_model=args.base_model,
        )
        for name, stats in (("source", result.source), ("compressed", result.compressed)):
            accuracy = "–" if stats.accuracy is None else f"{100 * stats.accuracy:.2f}%"
            columns = {k: v for k, v in (stats.scores or {}).items() if k != "accuracy"}
            if columns:  # a tagger of several columns: accuracy is their mean
                accuracy += " (" + ", ".join(f"{k} {100 * v:.2f}%" for k, v in columns.items()) + ")"
            states = (
                "" if stats.state_num_basis in (None, stats.num_basis) else f" (statistics K = {stats.state_num_basis})"
            )
            print(
                f"{name:>10}: {stats.basis}, K = {stats.num_basis}{states}, N_T = {stats.num_steps}, "
                f"{stats.non_embedding_parameters:,} non-embedding parameters, accuracy {accuracy}, "
                f"{stats.inference_seconds:.3f} s"
            )
        print(f"speed-up {result.speedup:.2f}x (median over interleaved passes)")
    print(f"wrote {result.output_dir}")
    if args.push_to_hub:
        print(f"pushed to {push_folder_to_hub(result.output_dir, args.push_to_hub)}")


if __name__ == "__main__":
    main()
