"""Identity initialisation of an ODE-ResNet: each residual block starts as (nearly) the
identity map.

* The 3×3 convolutions of the stitch blocks get Dirac filters on their first
  ``min(in, out)`` output channels (each copies one input channel; a strided one
  subsamples it), as airbench initialises its convolutions.
* An ODE block's rate gets its last convolution's coefficients set to zero: dx/dt = 0,
  so the block is the identity at the start, the continuous analogue (a Dirac rate
  would make the block an exponential, not the identity).
"""

from __future__ import annotations

import torch
from torch import nn

from cont_transformer.modeling_ode_resnet import STITCH_BLOCKS
from cont_transformer.ode_block import OdeBlock


@torch.no_grad()
def identity_init_(model: nn.Module) -> None:
    """Initialise every stitch block and ODE block of ``model`` as described above."""
    for module in model.modules():
        if isinstance(module, tuple(STITCH_BLOCKS.values())):
            for conv in (m for m in module.modules() if isinstance(m, nn.Conv2d) and m.kernel_size == (3, 3)):
                weight = conv.weight  # (out, in, kh, kw)
                nn.init.dirac_(weight[: min(weight.shape[:2])])
        elif isinstance(module, OdeBlock):
            last = [name for name, _ in module.named_coefficients() if "conv" in name][-1]
            dict(module.named_coefficients())[last].zero_()


__all__ = ["identity_init_"]
