"""ODE-ResNet: a convolutional Stateful ODE-Net for image classification (docs/design.md §7).

Stem conv, then per stage a discrete :class:`StitchBlock` (changes width and
resolution) and an :class:`~cont_transformer.OdeBlock` that integrates the
pre-activation :class:`RateUnit` with continuous-in-depth weights and BatchNorm
statistics, then BN → ReLU → global average pool → Linear. ``config.activation`` may
replace every ReLU by GELU and ``config.pooling`` the average pool by a max pool.

Every import of this package's own modules is a relative ``from .module import name``:
``save_pretrained`` copies exactly the files found that way (the image processor
included), so a saved folder loads with ``trust_remote_code=True`` where this package
is not installed.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from transformers import initialization as init
from transformers.modeling_outputs import (
    BaseModelOutputWithPoolingAndNoAttention,
    ImageClassifierOutput,
)
from transformers.utils import can_return_tuple

from .card_texts import IMAGE_CLASSIFIER_CARD
from .configuration_ode_resnet import OdeResNetConfig
from .image_processing_ode_resnet import OdeResNetImageProcessor
from .ode_block import Coefficients, OdeBlock
from .pretrained import ContinuousPreTrainedModel


def _norm(channels: int, use_normalization: bool, momentum: float = 0.1) -> nn.Module:
    return nn.BatchNorm2d(channels, momentum=momentum) if use_normalization else nn.Identity()


# config.activation -> the function; every "ReLU" named in this module is this choice.
ACTIVATION_FUNCTIONS = {"relu": F.relu, "gelu": F.gelu}


def _conv3x3(in_channels: int, out_channels: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)


class RateUnit(nn.Module):
    """The rate R(x): BN → ReLU → Conv3×3 → BN → ReLU → Conv3×3, (batch, C, H, W) → same;
    with ``num_convolutions=1`` only its first half, BN → ReLU → Conv3×3."""

    def __init__(
        self,
        channels: int,
        use_normalization: bool = True,
        momentum: float = 0.1,
        activation: str = "relu",
        num_convolutions: int = 2,
    ):
        super().__init__()
        self.act = ACTIVATION_FUNCTIONS[activation]
        self.bn1 = _norm(channels, use_normalization, momentum)
        self.conv1 = _conv3x3(channels, channels)
        self.two = num_convolutions == 2
        if self.two:
            self.bn2 = _norm(channels, use_normalization, momentum)
            self.conv2 = _conv3x3(channels, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv1(self.act(self.bn1(x)))
        return self.conv2(self.act(self.bn2(x))) if self.two else x


class StitchBlock(nn.Module):
    """A discrete pre-activation residual block between ODE blocks.

    The same two convs as :class:`RateUnit`, the first with ``stride``; the shortcut
    is the identity, or Conv1×1 with ``stride`` + BN when the shape changes.
    (batch, in_channels, H, W) → (batch, out_channels, ⌈H/stride⌉, ⌈W/stride⌉).
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        stride: int = 1,
        use_normalization: bool = True,
        momentum: float = 0.1,
        activation: str = "relu",
    ):
        super().__init__()
        self.act = ACTIVATION_FUNCTIONS[activation]
        self.bn1 = _norm(in_channels, use_normalization, momentum)
        self.conv1 = _conv3x3(in_channels, out_channels, stride)
        self.bn2 = _norm(out_channels, use_normalization, momentum)
        self.conv2 = _conv3x3(out_channels, out_channels)
        if stride == 1 and in_channels == out_channels:
            self.shortcut = nn.Identity()
        else:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                _norm(out_channels, use_normalization, momentum),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.conv1(self.act(self.bn1(x)))
        out = self.conv2(self.act(self.bn2(out)))
        return self.shortcut(x) + out


class PoolStitchBlock(nn.Module):
    """ReLU → Conv3×3 at the input's resolution → max pool by ``stride`` → BN: a stage's
    start as airbench's conv groups begin (the convolution sees every input pixel).
    (batch, in_channels, H, W) → (batch, out_channels, ⌊H/stride⌋, ⌊W/stride⌋).
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        stride: int = 1,
        use_normalization: bool = True,
        momentum: float = 0.1,
        activation: str = "relu",
    ):
        super().__init__()
        self.act = ACTIVATION_FUNCTIONS[activation]
        self.conv = _conv3x3(in_channels, out_channels)
        self.pool = nn.MaxPool2d(stride) if stride > 1 else nn.Identity()
        self.bn = _norm(out_channels, use_normalization, momentum)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.pool(self.conv(self.act(x))))


class GroupStitchBlock(PoolStitchBlock):
    """airbench's whole conv group: the pool stitch's Conv3×3 at the input's resolution →
    max pool by ``stride`` → BN, here without the ReLU before it and with one after it,
    then Conv3×3 → BN → ReLU, with no shortcut.
    (batch, in_channels, H, W) → (batch, out_channels, ⌊H/stride⌋, ⌊W/stride⌋).
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        stride: int = 1,
        use_normalization: bool = True,
        momentum: float = 0.1,
        activation: str = "relu",
    ):
        super().__init__(in_channels, out_channels, stride, use_normalization, momentum, activation)
        self.conv2 = _conv3x3(out_channels, out_channels)
        self.bn2 = _norm(out_channels, use_normalization, momentum)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.act(self.bn(self.pool(self.conv(x))))
        return self.act(self.bn2(self.conv2(x)))


STITCH_BLOCKS = {"residual": StitchBlock, "pool": PoolStitchBlock, "group": GroupStitchBlock}


class Stage(nn.Module):
    """StitchBlock to the stage's width and resolution, then an OdeBlock over RateUnit."""

    def __init__(self, config: OdeResNetConfig, in_channels: int, out_channels: int, stride: int):
        super().__init__()
        momentum = config.batch_norm_momentum
        stitch = STITCH_BLOCKS[config.stitch]
        norm, act = config.use_normalization, config.activation
        self.stitch = stitch(in_channels, out_channels, stride, norm, momentum, act)
        self.ode = OdeBlock(
            RateUnit(out_channels, norm, momentum, act, config.rate_convolutions),
            basis=config.basis,
            num_basis=config.num_basis,
            num_steps=config.num_steps,
            scheme=config.scheme,
            time_horizon=config.time_horizon,
            state_num_basis=config.state_num_basis,
        )

    def forward(self, x: torch.Tensor, return_trajectory: bool = False) -> torch.Tensor | tuple[torch.Tensor, ...]:
        """(batch, C_in, H, W) → (batch, C, H', W'), or with ``return_trajectory`` the ODE
        block's states at its step boundaries (N_T + 1 tensors, the stitch output first)."""
        return self.ode(self.stitch(x), return_trajectory=return_trajectory)


class OdeResNetPreTrainedModel(ContinuousPreTrainedModel):
    """Config class, weight initialisation and input name shared by the ODE-ResNet models;
    parameter counts, complete save folders (image processor included) with a model card
    and activation checkpointing come from :class:`ContinuousPreTrainedModel`."""

    config_class = OdeResNetConfig
    base_model_prefix = "ode_resnet"
    main_input_name = "pixel_values"
    image_processor_class = OdeResNetImageProcessor

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """Kaiming (fan-out) convs, unit BatchNorm, small Linear; OdeBlock coefficients alike.

        A :class:`Coefficients` container is initialised as the class it mirrors, each of
        its K slices an independent draw.
        """
        kind = module.template_cls if isinstance(module, Coefficients) else type(module)
        if issubclass(kind, nn.Conv2d):
            weight = module.weight  # (out, in, kh, kw), or (K, out, in, kh, kw) for coefficients
            shape = weight.shape[1:] if isinstance(module, Coefficients) else weight.shape
            fan_out = shape[0] * math.prod(shape[2:])
            init.normal_(weight, std=math.sqrt(2.0 / fan_out))
        elif issubclass(kind, nn.BatchNorm2d):
            init.ones_(module.weight)
            init.zeros_(module.bias)
            init.zeros_(module.running_mean)
            init.ones_(module.running_var)
            init.zeros_(module.num_batches_tracked)
        elif issubclass(kind, nn.Linear):
            init.normal_(module.weight, std=0.01)
            init.zeros_(module.bias)


class OdeResNetModel(OdeResNetPreTrainedModel):
    """Features of the ODE-ResNet: ``pixel_values`` (batch, num_channels, H, W) →
    ``last_hidden_state`` (batch, C, H', W') and ``pooler_output`` (batch, C), C the last
    stage's width, after the final BN → ReLU."""

    def __init__(self, config: OdeResNetConfig):
        super().__init__(config)
        widths = config.stage_channels
        stem_channels, kernel = config.stem_channels or widths[0], config.stem_kernel_size
        padding = (kernel - 1) // 2 if kernel % 2 else 0
        self.stem = nn.Conv2d(config.num_channels, stem_channels, kernel, padding=padding, bias=False)
        self.stages = nn.ModuleList(
            Stage(config, c_in, c_out, stride)
            for c_in, c_out, stride in zip([stem_channels, *widths[:-1]], widths, config.stage_strides)
        )
        self.norm = _norm(widths[-1], config.use_normalization, config.batch_norm_momentum)
        self.act = ACTIVATION_FUNCTIONS[config.activation]
        self.post_init()

    @can_return_tuple
    def forward(
        self, pixel_values: torch.Tensor, output_hidden_states: bool | None = None, **kwargs
    ) -> BaseModelOutputWithPoolingAndNoAttention:
        """Hidden states of a continuous model are the depth trajectory: with
        ``output_hidden_states`` (default ``config.output_hidden_states``),
        ``hidden_states`` holds the stem output, then, stage by stage, the state of the
        stage's ODE at its N_T step boundaries (N_T + 1 tensors each, x(0) = the stitch
        block's output first, x(T) last): 1 + stages·(N_T + 1) tensors
        (batch, C_s, H_s, W_s). ``return_dict=False`` (or ``config.return_dict``) returns
        the plain tuple."""
        if output_hidden_states is None:
            output_hidden_states = self.config.output_hidden_states
        x = self.stem(pixel_values)  # (batch, C0, H, W)
        hidden_states = [x]
        for stage in self.stages:
            if output_hidden_states:
                hidden_states += stage(x, return_trajectory=True)
                x = hidden_states[-1]
            else:
                x = stage(x)
        x = self.act(self.norm(x))  # (batch, C, H', W')
        pooled = x.mean((2, 3)) if self.config.pooling == "average" else x.amax((2, 3))
        return BaseModelOutputWithPoolingAndNoAttention(
            last_hidden_state=x,
            pooler_output=pooled,
            hidden_states=tuple(hidden_states) if output_hidden_states else None,
        )


class OdeResNetForImageClassification(OdeResNetPreTrainedModel):
    """ODE-ResNet with a Linear head: ``pixel_values`` (batch, num_channels, H, W) →
    ``logits`` (batch, num_labels); cross-entropy ``loss`` when ``labels`` (batch,) are given;
    ``hidden_states`` (the depth trajectory) and ``return_dict`` as in :class:`OdeResNetModel`."""

    card_text = IMAGE_CLASSIFIER_CARD

    def __init__(self, config: OdeResNetConfig):
        super().__init__(config)
        self.ode_resnet = OdeResNetModel(config)
        self.classifier = nn.Linear(config.stage_channels[-1], config.num_labels)
        self.post_init()

    @can_return_tuple
    def forward(
        self,
        pixel_values: torch.Tensor,
        labels: torch.Tensor | None = None,
        output_hidden_states: bool | None = None,
        **kwargs,
    ) -> ImageClassifierOutput:
        features = self.ode_resnet(pixel_values, output_hidden_states, return_dict=True)
        logits = self.classifier(features.pooler_output) * self.config.logit_scale  # (batch, num_labels)
        loss = F.cross_entropy(logits, labels) if labels is not None else None
        return ImageClassifierOutput(loss=loss, logits=logits, hidden_states=features.hidden_states)


__all__ = [
    "GroupStitchBlock",
    "OdeResNetForImageClassification",
    "OdeResNetModel",
    "OdeResNetPreTrainedModel",
    "PoolStitchBlock",
    "RateUnit",
    "StitchBlock",
]
