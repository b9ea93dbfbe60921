"""The image trainer's arguments (the flags of ``scripts/train_image.py``) and the presets' schedules.

:class:`ImageTrainingArguments` extends the scaffold's :class:`~cont_transformer.training.arguments.RunArguments`
with the paper's recipe as defaults (docs/design.md §7, §8): SGD with momentum 0.9 and
weight decay 5e-4, learning rate 0.1 with step decay at ``lr_decay_epochs``, batch 128,
RK4, multi-level refinement to the preset's K at ``refine_epochs``. The schedule is
counted in epochs; :meth:`.trainer.ImageTrainer.run_plan` turns it into the scaffold's steps
(``--max-steps``: the schedule scaled onto that many steps).

The fast recipe's methods (``cifar10-fast``, docs/cifar.md) are each a flag, so an
ablation switches one off: patch whitening of the stem (:mod:`.whitening`), identity
initialisation (:mod:`.initialization`), Nesterov SGD with decoupled hyper-parameters
and a scaled rate for BatchNorm biases, the triangle schedule (:mod:`.optimization`),
label smoothing, alternating flip and reflected translation (:mod:`.augmentation`),
Lookahead (:mod:`.lookahead`), test-time augmentation (:mod:`.tta`: the test split is
scored with and without it), bfloat16 autocast and channels_last.

:data:`PRESET_SCHEDULES` fills what the command line and the recipe leave out
(:func:`preset_defaults`); ``--config-overrides`` replaces fields of the preset's network
(:func:`parse_config_overrides`).
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass, field
from typing import ClassVar

import torch

from cont_transformer.checks import check_count
from cont_transformer.configuration_ode_resnet import PRESETS, OdeResNetConfig
from cont_transformer.training.arguments import FINAL_NUM_BASIS_FLAGS, RunArguments, flag_help
from cont_transformer.training.schedules import RefinementSchedule

from .augmentation import PADDING_MODES
from .tta import views_of

WHITENING_IMAGES = 5000  # training images whose patches fit the whitened stem
FLIPS = ("random", "alternating", "none")
LR_SCHEDULES = ("step", "triangle")
MIXED_PRECISION = {"no": None, "bf16": torch.bfloat16}


@dataclass
class ImageTrainingArguments(RunArguments):
    """Everything an image training run depends on; the flags carry the same names.

    Epoch-based fields (``epochs``, ``refine_epochs``, ``lr_decay_epochs``) become the
    scaffold's steps once the data size is known (:meth:`.trainer.ImageTrainer.run_plan`);
    ``max_steps``, when given, is the run's length, and the epochs' schedule is scaled onto it.
    """

    max_steps_optional: ClassVar[bool] = True

    dataset: str | None = field(
        default=None, **flag_help("MNIST/CIFAR folder or archive, or a Hub dataset name (required)")
    )
    output_dir: str = field(
        default="runs/image",
        **flag_help("run folder: best/ (the best model), checkpoints/, metrics.json, run.json"),
    )
    preset: str = field(default="mnist-small", **flag_help(f"model preset: {', '.join(PRESETS)}"))
    config_overrides: str | None = field(
        default=None,
        **flag_help(
            "network fields that replace the preset's, a JSON object of OdeResNetConfig fields "
            '(e.g. \'{"stage_channels": [64, 256, 256], "stitch": "residual"}\'; in a recipe too, '
            "as a string)"
        ),
    )
    epochs: int = field(default=90, **flag_help("passes over the training images"))
    batch_size: int = field(default=128, **flag_help("images per optimiser step, over all processes"))
    learning_rate: float = field(default=0.1, **flag_help("initial learning rate"))
    momentum: float = field(default=0.9, **flag_help("SGD momentum"))
    weight_decay: float = field(default=5e-4, **flag_help("SGD weight decay"))
    lr_decay_epochs: list[int] = field(
        default_factory=list, **flag_help("epochs at whose start the learning rate is multiplied by --lr-decay-factor")
    )
    lr_decay_factor: float = field(default=0.1, **flag_help("step decay factor"))
    refine_epochs: list[int] = field(
        default_factory=list, **flag_help("epochs (>= 1) at whose start K and N_T are refined")
    )
    final_num_basis: int | None = field(
        default=None,
        **flag_help(
            "final K (default: the preset's); the start K follows from the refinements",
            aliases=FINAL_NUM_BASIS_FLAGS,
        ),
    )
    scheme: str = field(default="rk4", **flag_help("Runge-Kutta scheme"))
    use_normalization: bool = field(
        default=True, **flag_help("BatchNorm in the network (--no-use-normalization: the ablation)")
    )
    augment: bool | None = field(
        default=None, **flag_help("random crop + flip (default: on for colour images, off for MNIST)")
    )
    translate: int = field(default=4, **flag_help("augmentation: pad by this many pixels, then crop at random"))
    translate_padding: str = field(
        default="constant", **flag_help(f"padding of the translation: {', '.join(PADDING_MODES)} (mirrored)")
    )
    flip: str = field(
        default="random",
        **flag_help(
            "augmentation: 'random' (a coin per image and epoch), 'alternating' (each image "
            "mirrored every other epoch) or 'none' (translation only: digits)"
        ),
    )
    nesterov: bool = field(default=False, **flag_help("Nesterov momentum"))
    decoupled_hyperparameters: bool = field(
        default=False,
        **flag_help(
            "--learning-rate and --weight-decay per 1024 images, independent of the momentum "
            "and of each other (image_models/optimization.py)"
        ),
    )
    bias_lr_scale: float = field(default=1.0, **flag_help("learning rate of BatchNorm biases: this times the rest's"))
    lr_schedule: str = field(
        default="step", **flag_help("'step' (--lr-decay-epochs) or 'triangle' (warm-up, then linear decline)")
    )
    warmup_fraction: float = field(default=0.23, **flag_help("triangle: the peak's position, a fraction of the run"))
    lr_start_factor: float = field(default=0.2, **flag_help("triangle: the first step's rate, a fraction of the peak"))
    lr_end_factor: float = field(default=0.07, **flag_help("triangle: the last step's rate, a fraction of the peak"))
    label_smoothing: float = field(default=0.0, **flag_help("label smoothing of the cross-entropy"))
    whiten_stem: bool = field(
        default=False, **flag_help(f"initialise the stem as patch whitening of {WHITENING_IMAGES} training images")
    )
    freeze_stem: bool = field(default=False, **flag_help("do not train the stem's filters"))
    identity_init: bool = field(default=False, **flag_help("Dirac stitch convolutions and zero ODE rates at the start"))
    lookahead_steps: int = field(default=0, **flag_help("Lookahead of the weights every N steps (0: off)"))
    lookahead_decay: float = field(default=0.95**5, **flag_help("Lookahead: the decay reached at the last step"))
    test_time_augmentation: str = field(
        default="none",
        **flag_help("views averaged to score the test split besides the plain score: none, flip, flip-translate"),
    )
    mixed_precision: str = field(
        default="no", **flag_help("'bf16': bfloat16 autocast for training and evaluation (CPU or GPU)")
    )
    channels_last: bool = field(default=False, **flag_help("images and discrete convolutions in channels_last"))
    logit_scale: float | None = field(default=None, **flag_help("the logits' scale (default: the preset's)"))
    validation_size: int = field(default=5000, **flag_help("training images held out to select the best epoch"))
    max_train_samples: int | None = field(default=None, **flag_help("use only this many training images"))
    samples_per_epoch: int | None = field(
        default=None, **flag_help("an epoch is a fresh random draw of this many training images")
    )
    max_eval_samples: int | None = field(
        default=None,
        **flag_help("score only this many validation images each epoch (the test split is scored in full, once)"),
    )
    max_steps: int | None = field(
        default=None,
        **flag_help(
            "optimiser steps to train for instead of --epochs passes (a short run, as in transformers): "
            "the epoch-counted schedule (refinements, learning-rate decays or triangle, evaluations, "
            "checkpoints) is scaled onto them, so the run ends at the final K (default: --epochs passes)"
        ),
    )
    # Counted in epochs here (ImageTrainer.run_plan derives the steps): no flags.
    eval_steps: int = field(default=1, init=False)
    save_steps: int = field(default=1, init=False)
    refine_steps: str | None = field(default=None, init=False)

    def __post_init__(self):
        if not self.dataset:
            raise ValueError("dataset: required (an MNIST/CIFAR folder, archive or Hub name)")
        if self.preset not in PRESETS:
            raise ValueError(f"preset: choose one of {sorted(PRESETS)}, got {self.preset!r}")
        self.config_overrides = parse_config_overrides(self.config_overrides, self.preset)
        if self.final_num_basis is None:
            self.final_num_basis = PRESETS[self.preset]["num_basis"]
        check_count("epochs", self.epochs)
        check_count("validation_size", self.validation_size)
        for name in ("max_train_samples", "samples_per_epoch", "max_eval_samples"):
            check_count(name, getattr(self, name), optional=True)
        for name, value, choices in (
            ("flip", self.flip, FLIPS),
            ("lr_schedule", self.lr_schedule, LR_SCHEDULES),
            ("translate_padding", self.translate_padding, PADDING_MODES),
            ("mixed_precision", self.mixed_precision, tuple(MIXED_PRECISION)),
        ):
            if value not in choices:
                raise ValueError(f"{name}: choose one of {list(choices)}, got {value!r}")
        views_of(self.test_time_augmentation)
        for name, ok, requirement in (
            ("translate", self.translate >= 0, ">= 0"),
            ("lookahead_steps", self.lookahead_steps >= 0, ">= 0"),
            ("label_smoothing", 0 <= self.label_smoothing < 1, "in [0, 1)"),
            ("bias_lr_scale", self.bias_lr_scale > 0, "> 0"),
            ("lookahead_decay", 0 <= self.lookahead_decay < 1, "in [0, 1)"),
            ("warmup_fraction", 0 < self.warmup_fraction < 1, "in (0, 1)"),
        ):
            if not ok:
                raise ValueError(f"{name}: must be {requirement}, got {getattr(self, name)!r}")
        if any(e < 1 for e in self.refine_epochs):
            raise ValueError(f"refine_epochs: must be >= 1 (refine after training), got {self.refine_epochs}")
        super().__post_init__()

    def identity(self) -> dict:
        """The run's arguments plus the network its preset and ``config_overrides`` give
        (``network``): a preset whose network changed between versions of the package
        (``cifar10-fast``'s activation, say) refuses to resume a run of
        the old one."""
        return {**super().identity(), "network": {**PRESETS[self.preset], **self.config_overrides}}

    @property
    def refinement_schedule(self) -> RefinementSchedule:
        """The refinements in epochs (the same order and count as in steps, so the same
        sizes); :meth:`.trainer.ImageTrainer.run_plan` converts them to steps."""
        return RefinementSchedule(
            self.basis, self.final_num_basis, self.final_num_steps, tuple(sorted(self.refine_epochs))
        )


# Training schedules of the presets, used for what the command line leaves out. The last
# refinement comes after the last learning-rate decay, so the K = 8 model keeps its paired
# coefficients close and compresses to K = 4 (README, "Compressible by default").
# cifar10-fast trains with the methods of the fast recipe that help this network
# (docs/cifar.md: airbench94's optimiser settings, identity init and 1/9 logits did not);
# its last refinement lies in the triangle's decline. Batches of 256 (airbench's 1,024
# suit a GPU; a CPU's cost is per image, so smaller batches buy more steps per epoch),
# with Lookahead every 20 steps: every 5,120 images, as every 5 steps of 1,024. Every
# second step trains the model as compressed to K/2 and N_T/2 (coarse steps): N_T/2
# stays cheap at this batch, and those steps cost less.
PRESET_SCHEDULES: dict[str, dict[str, object]] = {
    "mnist-small": {"epochs": 14, "refine_epochs": [3, 5, 12], "lr_decay_epochs": [8, 11]},
    "cifar10-fast": {
        "epochs": 18,
        "refine_epochs": [9, 14],
        "scheme": "euler",
        "batch_size": 256,
        "learning_rate": 0.4,
        "weight_decay": 5e-4,
        "momentum": 0.9,
        "nesterov": True,
        "lr_schedule": "triangle",
        "label_smoothing": 0.2,
        "flip": "alternating",
        "translate": 2,
        "translate_padding": "reflect",
        "whiten_stem": True,
        "freeze_stem": True,
        "lookahead_steps": 20,
        "coarse_step_fraction": 0.5,
        "test_time_augmentation": "flip-translate",
        "mixed_precision": "bf16",
    },
}


# Config fields with flags of their own (or set from the data): not overridable by
# --config-overrides, so one value is never given twice.
FLAGGED_CONFIG_FIELDS = (
    "basis",
    "num_basis",
    "num_steps",
    "scheme",
    "time_horizon",
    "use_normalization",
    "logit_scale",
    "num_labels",
    "id2label",
    "label2id",
)


def parse_config_overrides(overrides: str | dict | None, preset: str) -> dict:
    """``--config-overrides`` as a dict of :class:`OdeResNetConfig` fields (the flag's JSON
    text, or a dict given in Python), checked by building the preset's config with them; a
    ValueError names the flag and the field."""
    if overrides is None:
        return {}
    if isinstance(overrides, str):
        try:
            overrides = json.loads(overrides)
        except json.JSONDecodeError as error:
            raise ValueError(f"config_overrides: not JSON ({error})") from None
    if not isinstance(overrides, dict):
        raise ValueError(f"config_overrides: must be a JSON object of config fields, got {overrides!r}")  # noqa: TRY004 (one line, exit 2)
    fields = set(inspect.signature(OdeResNetConfig).parameters) - {"kwargs"}
    for name in overrides:
        if name in FLAGGED_CONFIG_FIELDS:
            raise ValueError(f"config_overrides: {name!r} has its own flag (--{name.replace('_', '-')})")
        if name not in fields:
            raise ValueError(f"config_overrides: {name!r} is not a field of the ODE-ResNet config")
    try:
        OdeResNetConfig.from_preset(preset, **overrides)
    except (TypeError, ValueError) as error:
        raise ValueError(f"config_overrides: {error}") from None
    return dict(overrides)


def preset_defaults(given: dict) -> dict:
    """The schedule of the preset (:data:`PRESET_SCHEDULES`) for the fields not given."""
    return PRESET_SCHEDULES.get(given.get("preset", ImageTrainingArguments.preset), {})
