"""The image measures of the benchmark (measured by :mod:`cont_transformer.runtime.measuring`).

Measure 6: a training step of the stateful ODE-ResNet (``cifar10-small`` shape, Euler,
piecewise constant, K = N_T = 8) against :class:`DiscreteResNet` of the same depth, eager
and with both compiled [<= 1.15]; measure 7: the peak memory of that step [<= 1.10]. The
other measures are the continuous transformer's (:mod:`.transformer`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..configuration_ode_resnet import OdeResNetConfig
from ..modeling_ode_resnet import OdeResNetForImageClassification
from ..runtime.measuring import Case, Workload
from .discrete_resnet import DiscreteResNet
from .workloads import compiled, compiled_name, training_step, warmed

# The CIFAR recipe's batch (docs/design.md §7) in full mode; quick mode shrinks batch and images.
RESNET_SIZES = {
    "quick": {"batch_size": 4, "image_size": 8},
    "full": {"batch_size": 128, "image_size": 32},
}
NUM_LAYERS = 8


def _batch(config: OdeResNetConfig, sizes: dict, device: torch.device) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    side = sizes["image_size"]
    pixels = torch.randn(sizes["batch_size"], config.num_channels, side, side, generator=generator)
    labels = torch.randint(0, config.num_labels, (sizes["batch_size"],), generator=generator)
    return {"pixel_values": pixels.to(device), "labels": labels.to(device)}


def _optimizer(model: torch.nn.Module) -> torch.optim.Optimizer:
    """The CIFAR recipe's SGD (docs/design.md §7)."""
    return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)


def resnet_training(
    config: OdeResNetConfig, sizes: dict, device: torch.device, compile_mode: str | None = None
) -> tuple[Workload, Workload]:
    """Training steps of the ODE-ResNet and of the discrete ResNet with N_T layers per stage,
    both compiled with ``torch.compile(mode=compile_mode)`` unless it is None."""
    batch = _batch(config, sizes, device)
    torch.manual_seed(0)
    model = OdeResNetForImageClassification(config).to(device)
    forward = compiled(model, compile_mode)
    candidate = training_step(
        compiled_name(f"ODE-ResNet {config.scheme}/{config.basis} K=N_T={config.num_basis}", compile_mode),
        model,
        lambda: forward(**batch).loss,
        _optimizer(model),
        batch,
    )
    torch.manual_seed(0)
    discrete = DiscreteResNet(config, config.num_steps).to(device)
    discrete_forward = compiled(discrete, compile_mode)
    baseline = training_step(
        compiled_name(f"discrete pre-activation ResNet, {config.num_steps} layers/stage", compile_mode),
        discrete,
        lambda: F.cross_entropy(discrete_forward(batch["pixel_values"]), batch["labels"]),
        _optimizer(discrete),
        batch,
    )
    return candidate, baseline


def _config() -> OdeResNetConfig:
    # T = K makes Euler + piecewise constant exactly the discrete ResNet (docs/design.md §5).
    return OdeResNetConfig.from_preset("cifar10-small", scheme="euler", num_basis=NUM_LAYERS, time_horizon=NUM_LAYERS)


DESCRIPTION = f"stateful ODE-ResNet (cifar10-small, Euler, K=N_T={NUM_LAYERS}) vs discrete ResNet"


def resnet_cases(mode: str, device: torch.device) -> list[Case]:
    """Measure 6 and the ODE-ResNet's part of measure 7; ``mode``: a key of :data:`RESNET_SIZES`."""
    sizes = RESNET_SIZES[mode]
    config = _config()
    return [
        Case(
            f"train_ode_resnet_K{NUM_LAYERS}",
            6,
            f"training step, {DESCRIPTION}",
            lambda: resnet_training(config, sizes, device),
            1.15,
            "ratio <= 1.15",
            sizes=sizes,
        ),
        Case(
            f"memory_train_ode_resnet_K{NUM_LAYERS}",
            7,
            f"peak memory, training step (measure 6), {DESCRIPTION}",
            lambda: resnet_training(config, sizes, device),
            1.10,
            "ratio <= 1.10",
            metric="memory",
            sizes=sizes,
        ),
    ]


def compiled_resnet_cases(mode: str, device: torch.device, compile_mode: str) -> list[Case]:
    """Measure 6 with the ODE-ResNet and the discrete ResNet both compiled with
    ``torch.compile(mode=compile_mode)``."""
    sizes = RESNET_SIZES[mode]
    config = _config()
    return [
        Case(
            f"compiled_train_ode_resnet_K{NUM_LAYERS}",
            6,
            f"training step, {DESCRIPTION}, both compiled ({compile_mode})",
            lambda: warmed(resnet_training(config, sizes, device, compile_mode)),
            1.15,
            "ratio <= 1.15",
            sizes=sizes,
        )
    ]


__all__ = ["compiled_resnet_cases", "resnet_cases", "resnet_training"]
