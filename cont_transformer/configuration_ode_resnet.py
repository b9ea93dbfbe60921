"""Configuration of the ODE-ResNet image classifier (paper §6.1, docs/design.md §7).

Every continuous choice (basis, K, N_T, scheme, T) lives here, so a refined or
compressed model saves and reloads as what it is.
"""

from __future__ import annotations

from transformers import PreTrainedConfig

from .checks import check_count
from .choices import check_continuous_choices

STITCHES = ("residual", "pool", "group")
ACTIVATIONS = ("relu", "gelu")
POOLINGS = ("average", "max")

# The paper's image models (docs/design.md §7): channels and strides per stage, the final K.
PRESETS: dict[str, dict] = {
    "mnist-small": {
        "num_channels": 1,
        "stage_channels": [12],
        "stage_strides": [1],
        "num_labels": 10,
        "num_basis": 8,
    },
    "cifar10-small": {
        "num_channels": 3,
        "stage_channels": [16, 32],
        "stage_strides": [1, 2],
        "num_labels": 10,
        "num_basis": 8,
    },
    "cifar10-deep": {
        "num_channels": 3,
        "stage_channels": [16, 32, 64],
        "stage_strides": [1, 2, 2],
        "num_labels": 10,
        "num_basis": 16,
    },
    "cifar100-wide": {
        "num_channels": 3,
        "stage_channels": [64, 128, 256],
        "stage_strides": [1, 2, 2],
        "num_labels": 100,
        "num_basis": 8,
    },
    # A fast CIFAR-10 network (docs/cifar.md): a 2x2 stem of 24 channels (patch whitening
    # fills 12 filters and their negatives), every stage starting with a convolution at
    # its input's resolution, then halving it by max pooling (the pool stitch), wider
    # stages than cifar10-small, GELU as airbench's network has.
    "cifar10-fast": {
        "num_channels": 3,
        "stage_channels": [64, 128, 256],
        "stage_strides": [2, 2, 2],
        "num_labels": 10,
        "num_basis": 4,
        "stem_channels": 24,
        "stem_kernel_size": 2,
        "batch_norm_momentum": 0.4,
        "stitch": "pool",
        "activation": "gelu",
    },
}


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
        stem_channels: output channels of the stem conv (default: the first stage's width).
        stem_kernel_size: the stem conv's kernel; odd sizes pad to keep H and W, even
            sizes do not pad (a 2x2 stem maps 32x32 to 31x31).
        logit_scale: the logits are the classifier's output times this (a temperature).
        batch_norm_momentum: momentum of every BatchNorm's running statistics.
        stitch: the discrete block that starts each stage: ``"residual"`` (a pre-activation
            residual block, strided) or ``"pool"`` (ReLU → Conv3×3 at the input's
            resolution → max pool by the stride → BN, as airbench's conv groups begin) or
            ``"group"`` (airbench's whole conv group: Conv3×3 → max pool → BN → ReLU →
            Conv3×3 → BN → ReLU, no shortcut).
        rate_convolutions: convolutions in each ODE block's rate: 2 (BN → ReLU → Conv3×3,
            twice) or 1 (once).
        activation: the nonlinearity everywhere ReLU is named here: ``"relu"`` or ``"gelu"``.
        pooling: the global pooling before the head: ``"average"`` or ``"max"``.
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
        stem_channels: int | None = None,
        stem_kernel_size: int = 3,
        logit_scale: float = 1.0,
        batch_norm_momentum: float = 0.1,
        stitch: str = "residual",
        activation: str = "relu",
        pooling: str = "average",
        rate_convolutions: int = 2,
        **kwargs,
    ):
        check_count("num_channels", num_channels)
        for channels, stride in zip(stage_channels, stage_strides):
            check_count("stage_channels", channels)
            check_count("stage_strides", stride)
        if not stage_channels:
            raise ValueError("stage_channels: must name at least one stage")
        if len(stage_strides) != len(stage_channels):
            raise ValueError(
                f"stage_strides: must have one stride per stage ({len(stage_channels)}), got {len(stage_strides)}"
            )
        check_count("stem_channels", stem_channels, optional=True)
        check_count("stem_kernel_size", stem_kernel_size)
        if not logit_scale > 0:
            raise ValueError(f"logit_scale: must be positive, got {logit_scale}")
        if not 0 < batch_norm_momentum <= 1:
            raise ValueError(f"batch_norm_momentum: must be in (0, 1], got {batch_norm_momentum}")
        if stitch not in STITCHES:
            raise ValueError(f"stitch: choose one of {', '.join(STITCHES)}, got {stitch!r}")
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation: choose one of {', '.join(ACTIVATIONS)}, got {activation!r}")
        if rate_convolutions not in (1, 2):
            raise ValueError(f"rate_convolutions: must be 1 or 2, got {rate_convolutions!r}")
        if pooling not in POOLINGS:
            raise ValueError(f"pooling: choose one of {', '.join(POOLINGS)}, got {pooling!r}")
        num_steps = num_basis if num_steps is None else num_steps
        check_continuous_choices(basis, num_basis, num_steps, scheme, time_horizon, state_num_basis)
        self.num_channels = num_channels
        self.stage_channels, self.stage_strides = list(stage_channels), list(stage_strides)
        self.use_normalization = bool(use_normalization)
        self.basis, self.num_basis, self.num_steps, self.scheme = basis, num_basis, num_steps, scheme
        self.time_horizon = float(time_horizon)
        self.state_num_basis = state_num_basis
        self.stem_channels = stem_channels
        self.stem_kernel_size = stem_kernel_size
        self.logit_scale = float(logit_scale)
        self.batch_norm_momentum = float(batch_norm_momentum)
        self.stitch = stitch
        self.activation, self.pooling = activation, pooling
        self.rate_convolutions = rate_convolutions
        super().__init__(**kwargs)
        if self.num_labels < 1:
            raise ValueError(f"num_labels: must be >= 1, got {self.num_labels}")

    @classmethod
    def from_preset(cls, name: str, **kwargs) -> OdeResNetConfig:
        """The paper's model ``name`` (a key of :data:`PRESETS`); ``kwargs`` override fields."""
        if name not in PRESETS:
            raise ValueError(f"preset: choose one of {sorted(PRESETS)}, got {name!r}")
        return cls(**{**PRESETS[name], **kwargs})


__all__ = ["ACTIVATIONS", "POOLINGS", "PRESETS", "STITCHES", "OdeResNetConfig"]
