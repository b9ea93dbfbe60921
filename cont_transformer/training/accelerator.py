"""The Accelerator a run trains under: its processes, mixed precision and trackers.

Batches are split over the processes (``split_batches``), and CPU processes use gloo
where there is no GPU (``accelerate launch --multi_gpu`` on CPUs). Mixed precision is
``--bf16`` / ``--fp16`` or, when neither is given, what ``accelerate launch
--mixed_precision`` set (its environment variable); either way the run records the
precision it trained in (``run.json``, the model card). bf16 autocasts on a CPU as on a
GPU; fp16 needs a GPU. Accelerate keeps one precision per process, so an Accelerator
asking for another one (a benchmark comparing both in one process, the tests) resets
that shared state first. `accelerate` is imported by the functions that train with it:
inference (:func:`inference_autocast`, tagging) never loads it.

Where there is no GPU, ``accelerate launch --num_processes N`` without ``--multi_gpu``
starts one process (Accelerate's simple launcher), which would train alone at N times the
time; :func:`make_accelerator` refuses that launch and names the flag.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from accelerate import Accelerator

_LAUNCHED_PRECISION = "ACCELERATE_MIXED_PRECISION"  # set by accelerate launch --mixed_precision
# What the launchers of several processes set in each (torchrun, MPI); Accelerate's simple
# launcher sets MASTER_ADDR for N > 1 processes but starts only one, and sets none of these.
_PROCESS_GROUP_SIZES = ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE")


def check_started_processes(environ: dict[str, str] | None = None) -> None:
    """Refuse (ValueError naming ``--multi_gpu``) a process that ``accelerate launch`` was
    asked to start with others but started alone: ``--num_processes N`` without
    ``--multi_gpu`` on a machine without a GPU."""
    environ = os.environ if environ is None else environ
    launched_for_several = _LAUNCHED_PRECISION in environ and "MASTER_ADDR" in environ
    if launched_for_several and not any(name in environ for name in _PROCESS_GROUP_SIZES):
        raise ValueError(
            "accelerate launch started this process alone, though MASTER_ADDR is set for others: without a "
            "GPU, --num_processes N starts N CPU processes (gloo) only with --multi_gpu "
            "(accelerate launch --multi_gpu --num_processes N ...)"
        )


def make_accelerator(mixed_precision: str | None = None, cpu: bool = False, **kwargs) -> Accelerator:
    """An Accelerator that splits each batch over the processes, in ``mixed_precision``
    (``"no"``, ``"bf16"``, ``"fp16"``; None: as launched); CPU processes (gloo) when there
    is no GPU or ``cpu`` (``--use-cpu``). Raises ValueError naming ``--fp16`` on a machine
    without a GPU, and for a process launched alone (:func:`check_started_processes`)."""
    check_started_processes()
    from accelerate import Accelerator, DataLoaderConfiguration
    from accelerate.state import AcceleratorState, PartialState

    wanted = mixed_precision or os.environ.get(_LAUNCHED_PRECISION, "no")
    cpu = cpu or not torch.cuda.is_available()
    if wanted == "fp16" and cpu:
        flag = "--fp16" if mixed_precision else "accelerate launch --mixed_precision fp16"
        chosen = " (--use-cpu trains on the CPU)" if torch.cuda.is_available() else ""
        raise ValueError(f"{flag}: float16 mixed precision needs a GPU{chosen}; on a CPU use --bf16")
    if AcceleratorState._shared_state.get("_mixed_precision", wanted) != wanted:
        AcceleratorState._reset_state()
    device = PartialState._shared_state.get("device")
    if cpu and device is not None and device.type != "cpu" and PartialState._shared_state.get("num_processes") == 1:
        AcceleratorState._reset_state(reset_partial_state=True)  # one process on a GPU so far: now the CPU
    return Accelerator(
        cpu=cpu,
        dataloader_config=DataLoaderConfiguration(split_batches=True),
        mixed_precision=wanted,
        **kwargs,
    )


def end_distributed(accelerator: Accelerator) -> None:
    """Wait for every process, then end training; this destroys the process group, so
    gloo does not abort at interpreter exit."""
    accelerator.wait_for_everyone()
    accelerator.end_training()


def inference_autocast(bf16: bool = False, fp16: bool = False, device: str | torch.device = "cpu"):
    """``torch.autocast`` for inference with ``--bf16`` / ``--fp16`` (a null context without
    them); ValueError naming ``--fp16`` on a CPU."""
    if not (bf16 or fp16):
        return contextlib.nullcontext()
    device_type = torch.device(device).type
    if fp16 and device_type != "cuda":
        raise ValueError("--fp16: float16 autocast needs a GPU; on a CPU use --bf16")
    return torch.autocast(device_type, dtype=torch.bfloat16 if bf16 else torch.float16)
