"""Benchmark continuous models against their discrete baselines, in one process.

    python scripts/benchmark.py [--quick] [--output-dir DIR] [--num-threads N] [--only NAME ...]
                                [--compile-mode MODE] [--training-steps N --ud-dir DIR]

Measures (each a ratio to a baseline run in the same process; targets in brackets):
1. training step, Euler, piecewise constant, K = N_T = L, against a plain pre-LayerNorm
   encoder of L layers, L = 8 and 64 [<= 1.10];
2. the same with piecewise linear [<= 1.10], and RK4 against Euler [<= 4.4];
3. training step at N_T = 16 with K = 64 against K = 16 [<= 1.10];
4. inference after set_num_steps(32, 16, 8) against N_T = 64 [speed-up >= 0.9 x ideal];
5. change_basis of a K = 64 model to K = 16 by projection [<= 0.25 s];
6. stateful ODE-ResNet (cifar10-small, Euler, K = N_T = 8) training step against a
   discrete pre-activation ResNet [<= 1.15];
7. peak memory of the training steps of 1, 3 and 6, and of the inference of 4 [<= 1.10];
8. activation checkpointing at K = N_T = 64: training step time [<= 1.4] and peak memory
   [<= 0.5] against the same step without;
9. with --training-steps N: whole training, the GUM recipe's first N steps (refinements
   included), compiled against eager [<= 1.00], and --bf16 autocast against float32 [<= 0.77];
10. the word+chars input representation against the word-only model, training step and
   inference, K = N_T = 16, on sentences like English-GUM's [<= 1.5];
11. raw text to CoNLL-U with every column (UPOS, XPOS, FEATS, LEMMA) against the same
   weights with the XPOS head alone, the tagging recipe's model [words/s >= 0.9 x].
Measures 1 (L = 8), 2 (L = 8), 4 and 6 also run with candidate and baseline both compiled
(torch.compile, --compile-mode; "none" skips them). Compiling takes minutes per model
on a CPU.

Writes benchmark.json and benchmark.md into --output-dir and prints the table. The
logic lives in cont_transformer.measuring (the harness), cont_transformer.tools.transformer_benchmarks,
cont_transformer.tools.column_tagging_benchmark and image_models.benchmarking (the cases).
"""

from __future__ import annotations

import argparse
import time

import torch

from cont_transformer.compiling import default_mode
from cont_transformer.measuring import (
    FULL,
    QUICK,
    failed_case,
    machine_info,
    machine_line,
    markdown_table,
    run_case,
    write_report,
)
from cont_transformer.tools.column_tagging_benchmark import column_tagging_cases
from cont_transformer.tools.training_benchmark import training_throughput_cases
from cont_transformer.tools.transformer_benchmarks import (
    checkpointing_cases,
    compiled_transformer_cases,
    transformer_cases,
)
from image_models.benchmarking import compiled_resnet_cases, resnet_cases


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
        help="measure 9: train the GUM recipe's first N steps eager and compiled, float32 and "
        "--bf16 (UD data from "
        "--ud-dir or $UD_DIR, else the sample treebank); 0 skips it",
    )
    parser.add_argument("--ud-dir", help="folder of UD release folders for measure 9")
    parser.add_argument(
        "--compile-mode",
        help="torch.compile mode of the compiled cases, or none to skip them "
        "(default: reduce-overhead on CUDA, default on CPU)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.num_threads:
        torch.set_num_threads(args.num_threads)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    mode = "quick" if args.quick else "full"
    settings = QUICK if args.quick else FULL
    compile_mode = args.compile_mode or default_mode(device)
    cases = transformer_cases(mode, device) + resnet_cases(mode, device) + checkpointing_cases(mode, device)
    cases += column_tagging_cases(mode, device)
    if compile_mode != "none":
        cases += compiled_transformer_cases(mode, device, compile_mode)
        cases += compiled_resnet_cases(mode, device, compile_mode)
    if args.training_steps:
        cases += training_throughput_cases(args.training_steps, args.ud_dir, compile_mode)
    if args.only:
        cases = [case for case in cases if any(name in case.name for name in args.only)]
        if not cases:
            raise SystemExit(f"benchmark.py: --only {' '.join(args.only)}: no case's name contains any of these")
    machine = machine_info(device)
    print(machine_line(machine), flush=True)
    start = time.perf_counter()
    results = []
    report = {
        "mode": mode,
        "compile_mode": compile_mode,
        "settings": {"warmup": settings.warmup, "repeats": settings.repeats},
        "machine": machine,
    }
    for case in cases:
        try:
            results.append(run_case(case, settings, device))
        except Exception as error:  # noqa: BLE001  one broken case (a compiler failing on a GPU) must not lose the rest
            results.append(failed_case(case, error))
        r = results[-1]
        verdict = (
            f"ERROR {r['error']}"
            if "error" in r
            else f"ratio {r['ratio']:.3f} ({r['target']}: {'pass' if r['pass'] else 'FAIL'})"
        )
        print(f"{case.name}: {verdict}", flush=True)
        # Written after every case, so a run stopped by a time limit keeps what it measured.
        report.update(
            seconds=time.perf_counter() - start,
            complete=len(results) == len(cases),
            results=results,
            passed=sum(r["pass"] for r in results),
            failed=sum(not r["pass"] for r in results),
            errors=sum("error" in r for r in results),
        )
        json_path, md_path = write_report(args.output_dir, report)
    print(f"\n{markdown_table(results)}\n\nwrote {json_path} and {md_path}")
    if report["errors"]:
        raise SystemExit(f"benchmark.py: {report['errors']} case(s) failed with an error (see {json_path})")


if __name__ == "__main__":
    main()
