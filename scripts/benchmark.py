"""Benchmark continuous models against their discrete baselines, in one process.

    python scripts/benchmark.py [--quick] [--output-dir DIR] [--num-threads N] [--only NAME ...]

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
8. the word+chars input representation against the word-only model, training step and
   inference, K = N_T = 16, on sentences like English-GUM's [<= 1.5].

Writes benchmark.json and benchmark.md into --output-dir and prints the table. The
logic lives in cont_transformer.tools.benchmarking and image_models.benchmarking.
"""

from __future__ import annotations

import argparse
import time

import torch

from cont_transformer.tools.benchmarking import (
    FULL,
    QUICK,
    machine_info,
    machine_line,
    markdown_table,
    run_case,
    transformer_cases,
    write_report,
)
from image_models.benchmarking import resnet_cases


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes and few repeats (CI, seconds)")
    parser.add_argument("--output-dir", default=".", help="folder for benchmark.json and benchmark.md")
    parser.add_argument("--device", help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--num-threads", type=int, help="torch CPU threads (default: torch's)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only cases whose name contains one of these")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.num_threads:
        torch.set_num_threads(args.num_threads)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    mode = "quick" if args.quick else "full"
    settings = QUICK if args.quick else FULL
    cases = transformer_cases(mode, device) + resnet_cases(mode, device)
    if args.only:
        cases = [case for case in cases if any(name in case.name for name in args.only)]
    machine = machine_info(device)
    print(machine_line(machine), flush=True)
    start = time.perf_counter()
    results = []
    for case in cases:
        results.append(run_case(case, settings, device))
        r = results[-1]
        print(f"{case.name}: ratio {r['ratio']:.3f} ({r['target']}: {'pass' if r['pass'] else 'FAIL'})", flush=True)
    report = {
        "mode": mode,
        "settings": {"warmup": settings.warmup, "repeats": settings.repeats},
        "machine": machine,
        "seconds": time.perf_counter() - start,
        "results": results,
        "passed": sum(r["pass"] for r in results),
        "failed": sum(not r["pass"] for r in results),
    }
    json_path, md_path = write_report(args.output_dir, report)
    print(f"\n{markdown_table(results)}\n\nwrote {json_path} and {md_path}")


if __name__ == "__main__":
    main()
