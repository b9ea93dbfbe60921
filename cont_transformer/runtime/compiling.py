"""``torch.compile`` for training and inference: one graph per input shape, K and N_T.

A continuous model's forward depends on its K and N_T through Python constants (the
stage terms), so torch.compile specialises on them: a graph per (input shape, K, N_T,
train/eval). Batches padded to a few lengths (``pad_to_multiple_of``) keep the shapes few;
after a refinement the old graphs are useless and are dropped (:func:`after_refinement`),
so the model compiles once per bucket at each K, not once per batch. Where compiling
cannot work (Inductor on a CPU without a C++ compiler) or does not pay (training with
Inductor on a CPU) the model runs eager, with a warning.

Training on a CPU: an Inductor-compiled training step of the tagger was slower than the
eager one (compiling only the rate function, too), and every shape and K compiles anew,
so a compiled run would be slower from start to end; inference does gain. The
measurements: docs/experiments.md, "Compiled models on a CPU".
"""

from __future__ import annotations

import logging
import os
import shutil

import torch
from torch import nn

logger = logging.getLogger(__name__)

# Graphs one compiled forward may hold before Dynamo falls back to eager: shape buckets x
# train/eval at one K and N_T, with room to spare (Dynamo's default is 8).
RECOMPILE_LIMIT = 64


def compile_problem(device: torch.device, backend: str, training: bool = False) -> str | None:
    """Why ``backend`` cannot (or, for ``training``, should not) compile for ``device``
    here, or None if it can."""
    if backend == "inductor" and device.type == "cpu" and training:
        return (
            "torch.compile (Inductor) makes training slower on a CPU (a slower step, plus "
            "minutes of compiling; docs/experiments.md); compile on a GPU"
        )
    if backend == "inductor" and device.type == "cpu":
        compiler = os.environ.get("CXX", "g++")
        if shutil.which(compiler) is None and shutil.which("c++") is None:
            return f"Inductor on the CPU needs a C++ compiler ({compiler} not found)"
    return None


def check_compile_mode(mode: str | None, flag: str = "--torch-compile-mode") -> None:
    """ValueError in one line naming ``flag`` when ``mode`` (None: the default) is not one of
    torch.compile's modes (Inductor's list, read only when a mode is given)."""
    if mode is None:
        return
    import torch._inductor  # ~1 s: only for a given mode

    modes = list(torch._inductor.list_mode_options())
    if mode not in modes:
        raise ValueError(f"{flag}: choose one of {', '.join(modes)}, got {mode!r}")


def default_mode(device: torch.device) -> str:
    """CUDA graphs on a GPU (these small models are launch-bound); plain Inductor on a CPU."""
    return "reduce-overhead" if device.type == "cuda" else "default"


def compile_model(model: nn.Module, device: torch.device, backend: str = "inductor", mode: str | None = None) -> bool:
    """Compile ``model``'s forward in place for training (its parameters, state dict and
    wrappers stay the same objects); returns False, with a warning, where compiling cannot
    work or would slow training down."""
    problem = compile_problem(device, backend, training=True)
    if problem is not None:
        logger.warning("%s: running eager", problem)
        return False
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, RECOMPILE_LIMIT)
    options = {"mode": mode or default_mode(device)} if backend == "inductor" else {}
    model.compile(backend=backend, dynamic=False, **options)
    return True


def compiled(
    model: nn.Module,
    device: torch.device,
    backend: str = "inductor",
    mode: str | None = None,
    dynamic: bool | None = None,
) -> nn.Module:
    """A compiled wrapper of ``model`` for inference (``model`` itself is untouched), or
    ``model`` with a warning where compiling cannot work. ``dynamic=True`` suits inputs
    whose shapes vary from call to call (batches of whole sentences)."""
    problem = compile_problem(device, backend)
    if problem is not None:
        logger.warning("%s: running eager", problem)
        return model
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, RECOMPILE_LIMIT)
    options = {"mode": mode or default_mode(device)} if backend == "inductor" else {}
    return torch.compile(model, backend=backend, dynamic=dynamic, **options)


def after_refinement() -> None:
    """Drop the graphs of the old K and N_T (the next batch of each shape compiles anew)."""
    torch._dynamo.reset()


def compiled_graphs() -> int:
    """Graphs Dynamo has compiled in this process so far (a run counts its own as a
    difference: other models compiled in the process count too)."""
    return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])
