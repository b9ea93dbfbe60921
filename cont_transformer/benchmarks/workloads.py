"""The workloads the benchmark's cases are built of: a model's training step and the
tensors it keeps between runs, and a model compiled with ``torch.compile`` (named as such,
and warmed up so that compiling happens before any measurement). The harness that measures
them is :mod:`cont_transformer.runtime.measuring`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import nn

from ..runtime.measuring import Workload


def resident_tensors(model: nn.Module, optimizer: torch.optim.Optimizer | None, batch: dict) -> Iterable[torch.Tensor]:
    """The tensors a model's workload keeps between runs: parameters, buffers, gradients,
    optimiser state and the batch."""
    yield from model.parameters()
    yield from model.buffers()
    yield from (p.grad for p in model.parameters() if p.grad is not None)
    if optimizer is not None:
        for state in optimizer.state.values():
            yield from (v for v in state.values() if torch.is_tensor(v))
    yield from batch.values()


def training_step(
    name: str, model: nn.Module, loss: Callable[[], torch.Tensor], optimizer: torch.optim.Optimizer, batch: dict
) -> Workload:
    """Forward, backward and optimiser step; ``zero_grad`` (to None) runs unmeasured."""
    model.train()

    def run() -> None:
        loss().backward()
        optimizer.step()

    return Workload(
        name,
        run,
        prepare=lambda: optimizer.zero_grad(set_to_none=True),
        resident=lambda: resident_tensors(model, optimizer, batch),
    )


def compiled(model: nn.Module, compile_mode: str | None) -> nn.Module:
    """``model`` through ``torch.compile(mode=compile_mode)``, or itself for None."""
    return model if compile_mode is None else torch.compile(model, mode=compile_mode)


def compiled_name(name: str, compile_mode: str | None) -> str:
    return name if compile_mode is None else f"{name}, compiled ({compile_mode})"


def warmed(workloads: tuple[Workload, ...], runs: int = 3) -> tuple[Workload, ...]:
    """Run each workload ``runs`` times, so that compiling (and recording CUDA graphs)
    happens before any measurement."""
    for workload in workloads:
        for _ in range(runs):
            workload.prepare()
            workload.run()
    return workloads


__all__ = ["compiled", "compiled_name", "resident_tensors", "training_step", "warmed"]
