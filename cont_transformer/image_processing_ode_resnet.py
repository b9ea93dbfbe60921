"""Image processor for ODE-ResNets: rescale to [0, 1], then normalise each channel.

`OdeResNetImageProcessor` is saved next to the model with `save_pretrained`, so a
checkpoint carries the statistics it was trained with. It accepts a PIL image, a
NumPy array (HWC or CHW), a torch tensor or a list/batch of them, and returns
`pixel_values` of shape (batch, channels, height, width), with the model's number of
channels (`num_channels`): `pipeline("image-classification")` converts every image to
RGB, so an MNIST model's processor turns it back into one grey channel. The training
loop, which holds whole datasets as uint8 tensors, uses `preprocess_tensor` for the same
arithmetic on a batch at once.

The model's `config.json` names this class in its `auto_map` (the model's
`save_pretrained` writes it), so `AutoImageProcessor` and `pipeline` find it with or
without this package installed; `preprocessor_config.json` names no class (see
`to_dict`). This file imports nothing from the package, so it is copied flat as remote
code.
"""

import numpy as np
import torch
from transformers.image_processing_backends import PilBackend

# Per-channel mean and std of the training split, after rescaling to [0, 1], keyed by
# the dataset prefix of the model presets. CIFAR stds are over all pixels (the often
# quoted 0.2023/0.1994/0.2010 are means of per-image stds).
NORMALIZATION_STATS: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    "mnist": ((0.1307,), (0.3081,)),
    "cifar10": ((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)),
    "cifar100": ((0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)),
}


class OdeResNetImageProcessor(PilBackend):
    """Convert to the model's channels, rescale by 1/255 and normalise per channel; no
    resizing or cropping.

    Defaults to the MNIST statistics; use `for_dataset` or `image_mean` / `image_std`
    for others. `num_channels`: the channels the model takes (default: one per
    normalisation statistic); an RGB(A) image becomes grey (ITU-R 601-2 luma, as PIL's
    mode "L") for a one-channel model, a grey image is repeated for a three-channel
    one, alpha is dropped. Output: `pixel_values` (batch, channels, height, width),
    float32.
    """

    do_resize = False
    do_center_crop = False
    do_rescale = True
    rescale_factor = 1 / 255
    do_normalize = True
    image_mean = NORMALIZATION_STATS["mnist"][0]
    image_std = NORMALIZATION_STATS["mnist"][1]
    num_channels = None

    @classmethod
    def for_dataset(cls, name: str, **kwargs) -> "OdeResNetImageProcessor":
        """Processor with the statistics of `name` (a key of `NORMALIZATION_STATS`)."""
        if name not in NORMALIZATION_STATS:
            known = ", ".join(NORMALIZATION_STATS)
            raise ValueError(f"no normalisation statistics for {name!r}; known: {known}")
        mean, std = NORMALIZATION_STATS[name]
        return cls(image_mean=list(mean), image_std=list(std), num_channels=len(mean), **kwargs)

    def process_image(self, image, *args, **kwargs) -> np.ndarray:
        """One image as a (channels, height, width) array with the model's channels."""
        image = super().process_image(image, *args, **kwargs)  # (C, H, W)
        channels = self.num_channels or (len(self.image_mean) if self.do_normalize else None)
        return image if channels is None else _with_channels(image, channels)

    def to_dict(self) -> dict:
        # Without an `image_processor_type`, AutoImageProcessor looks the class up through
        # the model's config (its registration, or its `auto_map` as remote code). A
        # type here, or an `auto_map` in this file, would make AutoImageProcessor fail
        # without the package, or make the pipeline's video-processor probe ask whether to
        # run custom code.
        output = super().to_dict()
        output.pop("image_processor_type", None)
        return output

    def preprocess_tensor(self, images: torch.Tensor) -> torch.Tensor:
        """Vectorised `__call__` for a batch already in memory.

        images: (batch, channels, height, width), uint8 (0..255) or float on the same
        scale. Returns float32 `pixel_values` of the same shape and device.
        """
        if self.do_normalize and images.shape[1] != len(self.image_mean):
            raise ValueError(f"images have {images.shape[1]} channels, normalisation statistics {len(self.image_mean)}")
        pixels = images.to(torch.float32)
        if self.do_rescale:
            pixels = pixels * self.rescale_factor
        if self.do_normalize:
            mean = torch.tensor(self.image_mean, dtype=torch.float32, device=images.device)
            std = torch.tensor(self.image_std, dtype=torch.float32, device=images.device)
            pixels = (pixels - mean.view(-1, 1, 1)) / std.view(-1, 1, 1)
        return pixels


_LUMA = np.array([0.299, 0.587, 0.114])


def _with_channels(image: np.ndarray, channels: int) -> np.ndarray:
    """``image`` (C, H, W) with ``channels`` channels: alpha dropped, RGB to luma, grey repeated."""
    if image.shape[0] == 4 and channels != 4:
        image = image[:3]
    if image.shape[0] == channels:
        return image
    if image.shape[0] == 3 and channels == 1:
        grey = np.tensordot(_LUMA, image.astype(np.float64), axes=1)[None]  # (1, H, W)
        return grey.round().astype(image.dtype) if image.dtype.kind in "iu" else grey.astype(image.dtype)
    if image.shape[0] == 1 and channels == 3:
        return np.repeat(image, 3, axis=0)
    raise ValueError(f"cannot convert an image of {image.shape[0]} channels to {channels}")


__all__ = ["NORMALIZATION_STATS", "OdeResNetImageProcessor"]
