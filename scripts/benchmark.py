"""Benchmark continuous models against their discrete baselines, in one process.

    python scripts/benchmark.py [--quick] [--output-dir DIR] [--num-threads N] [--only NAME ...]
                                [--compile-mode MODE] [--training-steps N --ud-dir DIR]

Every measure is a ratio to a baseline run in the same process. The measures and their
targets are listed where their cases live, in cont_transformer/benchmarks/: 1 to 5, 7 and 8 in
transformer.py, 6 and 7 in images.py, 9 (--training-steps) in training.py, 10 in representations.py,
11 and 12 in text_tagging.py. Measures 1 (L = 8), 2 (L = 8), 4
and 6 also run with both models compiled (--compile-mode; "none" skips them; minutes per model on
a CPU). Writes benchmark.json and benchmark.md into --output-dir, prints the table (measuring.run_benchmark).
"""

from __future__ import annotations

import argparse
from functools import partial

import torch

from cont_transformer.benchmarks.images import compiled_resnet_cases, resnet_cases
from cont_transformer.benchmarks.representations import representation_cases
from cont_transformer.benchmarks.text_tagging import column_tagging_cases
from cont_transformer.benchmarks.training import training_throughput_cases
from cont_transformer.benchmarks.transformer import checkpointing_cases, compiled_transformer_cases, transformer_cases
from cont_transformer.runtime.measuring import Case, run_benchmark


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes and few repeats (CI, seconds)")
    parser.add_argument("--output-dir", default=".", help="folder for benchmark.json and benchmark.md")
    parser.add_argument("--device", help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--num-threads", type=int, help="torch CPU threads (default: torch's)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only cases whose name contains one of these")
    parser.add_argument(
        "--training-steps",
        type=int,
        default=0,
        help="measure 9: train the GUM recipe's first N steps eager and compiled, float32 and --bf16 "
        "(UD data from --ud-dir or $UD_DIR, else the sample treebank); 0 skips it",
    )
    parser.add_argument("--ud-dir", help="folder of UD release folders for measure 9")
    parser.add_argument(
        "--compile-mode",
        help="torch.compile mode of the compiled cases, or none to skip them "
        "(default: reduce-overhead on CUDA, default on CPU)",
    )
    return parser.parse_args(argv)


def every_case(
    mode: str, device: torch.device, compile_mode: str, training_steps: int, ud_dir: str | None
) -> list[Case]:
    """The cases of both applications, in the report's order."""
    cases = transformer_cases(mode, device) + representation_cases(mode, device)
    cases += resnet_cases(mode, device) + checkpointing_cases(mode, device)
    cases += column_tagging_cases(mode, device)
    if compile_mode != "none":
        cases += compiled_transformer_cases(mode, device, compile_mode)
        cases += compiled_resnet_cases(mode, device, compile_mode)
    if training_steps:
        cases += training_throughput_cases(training_steps, ud_dir, compile_mode)
    return cases


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    run_benchmark(
        partial(every_case, training_steps=args.training_steps, ud_dir=args.ud_dir),
        quick=args.quick,
        output_dir=args.output_dir,
        device=args.device,
        num_threads=args.num_threads,
        only=args.only,
        compile_mode=args.compile_mode,
    )


if __name__ == "__main__":
    main()
