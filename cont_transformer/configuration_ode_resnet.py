"""Configuration of the ODE-ResNet image classifier (paper §6.1, docs/design.md §7).

Every continuous choice (basis, K, N_T, scheme, T) lives here, so a refined or
compressed model saves and reloads as what it is.
"""

from __future__ import annotations

from transformers import PreTrainedConfig

from .basis import BASES
from .integrators import SCHEMES

# The paper's image models (docs/design.md §7): channels and strides per stage, the final K.
PRESETS: dict[str, dict] = {
    "mnist-small": {
        "num_channels": 1, "stage_channels": [12], "stage_strides": [1], "num_labels": 10, "num_basis": 8,
    },
    "cifar10-small": {
        "num_channels": 3, "stage_channels": [16, 32], "stage_strides": [1, 2], "num_labels": 10, "num_basis": 8,
    },
    "cifar10-deep": {
        "num_channels": 3, "stage_channels": [16, 32, 64], "stage_strides": [1, 2, 2], "num_labels": 10,
        "num_basis": 16,
    },
    "cifar100-wide": {
        "num_channels": 3, "stage_channels": [64, 128, 256], "stage_strides": [1, 2, 2], "num_labels": 100,
        "num_basis": 8,
    },
}


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return value


class OdeResNetConfig(PreTrainedConfig):
    """Stem conv → per stage (StitchBlock, OdeBlock) → BN → ReLU → average pool → Linear.

    Args:
        num_channels: channels of the input images (1 for MNIST, 3 for CIFAR).
        stage_channels: width of each stage; the stem maps the input to the first.
        stage_strides: stride of each stage's StitchBlock (2 halves height and width).
        use_normalization: False builds the same network without any BatchNorm (the
            paper's ablation).
        basis: basis of every OdeBlock's weights, a key of ``cont_transformer.BASES``.
        num_basis: K, basis functions per OdeBlock.
        num_steps: N_T, integration steps per OdeBlock (default: K).
        scheme: Runge–Kutta scheme, a key of ``cont_transformer.SCHEMES``.
        time_horizon: T, the depth-time each OdeBlock integrates over.
        state_num_basis: K of the BatchNorm running statistics inside the OdeBlocks
            (default None: the same basis as the weights). A compressed model may keep
            its source's finer statistics (buffers, not parameters).
        num_labels / id2label / label2id: the classes, as for any Hugging Face config.
    """

    model_type = "ode_resnet"

    def __init__(
        self,
        num_channels: int = 1,
        stage_channels: list[int] = (12,),
        stage_strides: list[int] = (1,),
        use_normalization: bool = True,
        basis: str = "piecewise_constant",
        num_basis: int = 8,
        num_steps: int | None = None,
        scheme: str = "rk4",
        time_horizon: float = 1.0,
        state_num_basis: int | None = None,
        **kwargs,
    ):
        self.num_channels = _positive_int("num_channels", num_channels)
        self.stage_channels = [_positive_int("stage_channels", c) for c in stage_channels]
        self.stage_strides = [_positive_int("stage_strides", s) for s in stage_strides]
        if not self.stage_channels:
            raise ValueError("stage_channels must name at least one stage")
        if len(self.stage_strides) != len(self.stage_channels):
            raise ValueError(
                f"stage_strides must have one stride per stage ({len(self.stage_channels)}), "
                f"got {len(self.stage_strides)}"
            )
        self.use_normalization = bool(use_normalization)
        if basis not in BASES:
            raise ValueError(f"basis must be one of {sorted(BASES)}, got {basis!r}")
        self.basis = basis
        self.num_basis = _positive_int("num_basis", num_basis)
        self.num_steps = self.num_basis if num_steps is None else _positive_int("num_steps", num_steps)
        if scheme not in SCHEMES:
            raise ValueError(f"scheme must be one of {sorted(SCHEMES)}, got {scheme!r}")
        self.scheme = scheme
        if isinstance(time_horizon, bool) or not isinstance(time_horizon, (int, float)) or not time_horizon > 0:
            raise ValueError(f"time_horizon must be a positive number, got {time_horizon!r}")
        self.time_horizon = float(time_horizon)
        self.state_num_basis = None if state_num_basis is None else _positive_int("state_num_basis", state_num_basis)
        super().__init__(**kwargs)
        if self.num_labels < 1:
            raise ValueError(f"num_labels must be >= 1, got {self.num_labels}")

    @classmethod
    def from_preset(cls, name: str, **kwargs) -> OdeResNetConfig:
        """The paper's model ``name`` (a key of :data:`PRESETS`); ``kwargs`` override fields."""
        if name not in PRESETS:
            raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {name!r}")
        return cls(**{**PRESETS[name], **kwargs})


__all__ = ["PRESETS", "OdeResNetConfig"]
