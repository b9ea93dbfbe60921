"""Measure 9 of the benchmark, whole-training throughput: the recommended recipe's first
steps compiled against eager [<= 1.00], and bfloat16 autocast (``--bf16``) against float32
[<= 0.77] (``scripts/benchmark.py --training-steps N``).

A training step measured alone (measures 1 and 2) misses what a compiled run pays for in
practice: the first batch of every shape compiles, every refinement recompiles, and the
data pipeline runs beside the model. This measure trains the recommended English-GUM
recipe (``recipes/en_gum.json``, the README's command) for its first ``steps`` optimiser steps,
refinements included, once eager and once with ``--torch-compile``, in the same process,
and compares the two wall times (steps per second = steps / time); likewise once with
``--bf16`` against float32 (on a CPU with bfloat16 instructions the matrix products run
in bfloat16). Without the UD data it trains on the generated sample treebank.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..runtime.measuring import Case, Settings, Workload
from ..tagging.arguments import TrainingArguments
from ..tagging.trainer import train
from ..training.recipes import RECIPES, read_recipe

ONE_RUN = Settings(warmup=0, repeats=1)  # a training run is long enough to time once

# The recommended CPU recipe for English-GUM (the README's command), less what it does
# after training.
GUM_RECIPE_FILE = RECIPES / "en_gum.json"
AFTER_TRAINING = ("output_dir", "compression_report", "do_predict")


def gum_recipe() -> dict[str, object]:
    """The arguments of ``recipes/en_gum.json`` that determine training."""
    recipe = read_recipe(GUM_RECIPE_FILE, TrainingArguments)
    return {key: value for key, value in recipe.items() if key not in AFTER_TRAINING}


def recipe_run(steps: int, data_dir: str | None, **options) -> Workload:
    """A workload that trains the first ``steps`` steps of :func:`gum_recipe` (the sample
    treebank when ``data_dir`` is None) in a fresh folder each time, without evaluating."""
    values = gum_recipe() if data_dir else {"treebank": "sample", "final_num_basis": 8, "refine_steps": "5,10,15"}
    # The recipe's first steps come before its cool-down (which must fit in max_steps).
    values.update(max_steps=steps, cooldown_steps=0, eval_steps=10**9, save_steps=10**9, data_dir=data_dir, **options)
    name = "compiled" if options.get("torch_compile") else "bf16" if options.get("bf16") else "eager"

    def run() -> None:
        with tempfile.TemporaryDirectory(prefix="training-benchmark-") as folder:
            train(TrainingArguments(**values, output_dir=str(Path(folder) / "run")))

    return Workload(f"{name} training, first {steps} steps ({values['treebank']})", run)


def training_throughput_cases(steps: int, data_dir: str | None, compile_mode: str) -> list[Case]:
    """Measure 9: the recipe's first ``steps`` steps compiled against eager (unless
    ``compile_mode`` is ``"none"``), and with bfloat16 autocast against float32 (time
    ratios; the steps/s ratio is the inverse)."""
    if data_dir is None:
        data_dir = os.environ.get("UD_DIR")
    candidate = {"torch_compile": True, "torch_compile_mode": compile_mode}
    sizes = {"steps": steps, "data": data_dir or "sample"}
    compiled = Case(
        "training_throughput_compiled",
        9,
        f"whole training, the GUM recipe's first {steps} steps (refinements included): "
        f"compiled ({compile_mode}) vs eager",
        lambda: (recipe_run(steps, data_dir, **candidate), recipe_run(steps, data_dir)),
        1.0,
        "ratio <= 1.00 (compiled not slower)",
        sizes=sizes,
        settings=ONE_RUN,
    )
    bf16 = Case(
        "training_throughput_bf16",
        9,
        f"whole training, the GUM recipe's first {steps} steps (refinements included): --bf16 autocast vs float32",
        lambda: (recipe_run(steps, data_dir, bf16=True), recipe_run(steps, data_dir)),
        1 / 1.3,
        "ratio <= 0.77 (bf16 >= 1.3x the steps/s of float32)",
        sizes=sizes,
        settings=ONE_RUN,
    )
    return [bf16] if compile_mode == "none" else [compiled, bf16]
