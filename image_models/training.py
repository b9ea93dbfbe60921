"""Training of ODE-ResNets (the logic of scripts/train_image.py) on the training scaffold.

:class:`ImageTrainer` fills the hooks of :class:`cont_transformer.training.scaffold.Trainer`
with the paper's recipe (docs/design.md): SGD with momentum 0.9 and weight decay 5e-4,
learning rate 0.1 with step decay at ``lr_decay_epochs``, batch 128, RK4, multi-level
refinement to the preset's K at ``refine_epochs`` (SGD's momentum is projected onto the
refined basis like the coefficients). The scaffold's steps are grouped into epochs here:
an epoch is one pass over the training images (or a fresh draw of ``samples_per_epoch``
of them); evaluation and checkpoints come at the end of every epoch.

Model selection never sees the test split: ``validation_size`` training images (a fixed
draw, the same for every seed) are held out, the best epoch is chosen on them, and the
test split is scored once, with the best model, at the end.

Whole splits are held as uint8 tensors (``image_models.data.to_tensors``); batches are
index slices, augmented and normalised as tensors, never image by image.

The fast recipe's methods (``cifar10-fast``, docs/cifar.md) are each a flag, so an
ablation switches one off: patch whitening of the stem (:mod:`.whitening`), identity
initialisation (:mod:`.initialization`), Nesterov SGD with decoupled hyper-parameters
and a scaled rate for BatchNorm biases, the triangle schedule (:mod:`.optimization`),
label smoothing, alternating flip and reflected translation (:mod:`.augmentation`),
Lookahead (:mod:`.lookahead`), test-time augmentation (:mod:`.tta`: the test split is
scored with and without it), bfloat16 autocast and channels_last.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from cont_transformer.choices import check_count
from cont_transformer.configuration_ode_resnet import PRESETS, OdeResNetConfig
from cont_transformer.image_processing_ode_resnet import OdeResNetImageProcessor
from cont_transformer.model_card import Evaluation
from cont_transformer.model_folders import BEST_MODEL_DIR, METRICS_FILE
from cont_transformer.modeling_ode_resnet import OdeResNetForImageClassification
from cont_transformer.training.arguments import RunArguments, _help
from cont_transformer.training.scaffold import Trainer
from cont_transformer.training.schedules import RefinementSchedule, RunPlan

from . import family  # noqa: F401  registers the family (card, tools) and the models' Auto classes
from .augmentation import (
    PADDING_MODES,
    alternating_flip,
    flip_parities,
    random_crop,
    random_horizontal_flip,
)
from .data import load_image_dataset, to_tensors
from .initialization import identity_init_
from .lookahead import Lookahead, lookahead_decay
from .optimization import build_sgd, decoupled_rate, triangle_factor
from .tta import mean_logits, views_of
from .whitening import whiten_conv_

# The held-out validation images are the same draw whatever --seed is.
VALIDATION_SEED = 0
WHITENING_IMAGES = 5000  # training images whose patches fit the whitened stem
FLIPS = ("random", "alternating", "none")
LR_SCHEDULES = ("step", "triangle")
MIXED_PRECISION = {"no": None, "bf16": torch.bfloat16}


@dataclass
class ImageTrainingArguments(RunArguments):
    """Everything an image training run depends on; the flags carry the same names.

    Epoch-based fields (``epochs``, ``refine_epochs``, ``lr_decay_epochs``) become the
    scaffold's steps once the data size is known (:meth:`ImageTrainer.run_plan`).
    """

    dataset: str | None = field(
        default=None, **_help("MNIST/CIFAR folder or archive, or a Hub dataset name (required)")
    )
    output_dir: str = field(
        default="runs/image",
        **_help("run folder: best/ (the best model), checkpoints/, metrics.json, run.json"),
    )
    preset: str = field(default="mnist-small", **_help(f"model preset: {', '.join(PRESETS)}"))
    config_overrides: str | None = field(
        default=None,
        **_help(
            "network fields that replace the preset's, a JSON object of OdeResNetConfig fields "
            '(e.g. \'{"stage_channels": [64, 256, 256], "stitch": "residual"}\'; in a recipe too, '
            "as a string)"
        ),
    )
    epochs: int = field(default=90, **_help("passes over the training images"))
    batch_size: int = field(default=128, **_help("images per optimiser step, over all processes"))
    learning_rate: float = field(default=0.1, **_help("initial learning rate"))
    momentum: float = field(default=0.9, **_help("SGD momentum"))
    weight_decay: float = field(default=5e-4, **_help("SGD weight decay"))
    lr_decay_epochs: list[int] = field(
        default_factory=list, **_help("epochs at whose start the learning rate is multiplied by --lr-decay-factor")
    )
    lr_decay_factor: float = field(default=0.1, **_help("step decay factor"))
    refine_epochs: list[int] = field(
        default_factory=list, **_help("epochs (>= 1) at whose start K and N_T are refined")
    )
    num_basis: int | None = field(
        default=None, **_help("final K (default: the preset's); the start K follows from the refinements")
    )
    scheme: str = field(default="rk4", **_help("Runge-Kutta scheme"))
    use_normalization: bool = field(
        default=True, **_help("BatchNorm in the network (--no-use-normalization: the ablation)")
    )
    augment: bool | None = field(
        default=None, **_help("random crop + flip (default: on for colour images, off for MNIST)")
    )
    translate: int = field(default=4, **_help("augmentation: pad by this many pixels, then crop at random"))
    translate_padding: str = field(
        default="constant", **_help(f"padding of the translation: {', '.join(PADDING_MODES)} (mirrored)")
    )
    flip: str = field(
        default="random",
        **_help(
            "augmentation: 'random' (a coin per image and epoch), 'alternating' (each image "
            "mirrored every other epoch) or 'none' (translation only: digits)"
        ),
    )
    nesterov: bool = field(default=False, **_help("Nesterov momentum"))
    decoupled_hyperparameters: bool = field(
        default=False,
        **_help(
            "--learning-rate and --weight-decay per 1024 images, independent of the momentum "
            "and of each other (image_models/optimization.py)"
        ),
    )
    bias_lr_scale: float = field(default=1.0, **_help("learning rate of BatchNorm biases: this times the rest's"))
    lr_schedule: str = field(
        default="step", **_help("'step' (--lr-decay-epochs) or 'triangle' (warm-up, then linear decline)")
    )
    warmup_fraction: float = field(default=0.23, **_help("triangle: the peak's position, a fraction of the run"))
    lr_start_factor: float = field(default=0.2, **_help("triangle: the first step's rate, a fraction of the peak"))
    lr_end_factor: float = field(default=0.07, **_help("triangle: the last step's rate, a fraction of the peak"))
    label_smoothing: float = field(default=0.0, **_help("label smoothing of the cross-entropy"))
    whiten_stem: bool = field(
        default=False, **_help(f"initialise the stem as patch whitening of {WHITENING_IMAGES} training images")
    )
    freeze_stem: bool = field(default=False, **_help("do not train the stem's filters"))
    identity_init: bool = field(default=False, **_help("Dirac stitch convolutions and zero ODE rates at the start"))
    lookahead_steps: int = field(default=0, **_help("Lookahead of the weights every N steps (0: off)"))
    lookahead_decay: float = field(default=0.95**5, **_help("Lookahead: the decay reached at the last step"))
    test_time_augmentation: str = field(
        default="none",
        **_help("views averaged to score the test split besides the plain score: none, flip, flip-translate"),
    )
    mixed_precision: str = field(
        default="no", **_help("'bf16': bfloat16 autocast for training and evaluation (CPU or GPU)")
    )
    channels_last: bool = field(default=False, **_help("images and discrete convolutions in channels_last"))
    logit_scale: float | None = field(default=None, **_help("the logits' scale (default: the preset's)"))
    validation_size: int = field(default=5000, **_help("training images held out to select the best epoch"))
    max_train_samples: int | None = field(default=None, **_help("use only this many training images"))
    samples_per_epoch: int | None = field(
        default=None, **_help("an epoch is a fresh random draw of this many training images")
    )
    max_eval_samples: int | None = field(
        default=None,
        **_help("score only this many validation images each epoch (the test split is scored in full, once)"),
    )
    # Counted in epochs here (ImageTrainer.run_plan derives the steps): no flags.
    max_steps: int = field(default=1, init=False)
    eval_steps: int = field(default=1, init=False)
    save_steps: int = field(default=1, init=False)
    refine_steps: str | None = field(default=None, init=False)

    def __post_init__(self):
        if not self.dataset:
            raise ValueError("dataset: required (an MNIST/CIFAR folder, archive or Hub name)")
        if self.preset not in PRESETS:
            raise ValueError(f"preset: choose one of {sorted(PRESETS)}, got {self.preset!r}")
        self.config_overrides = parse_config_overrides(self.config_overrides, self.preset)
        if self.num_basis is None:
            self.num_basis = PRESETS[self.preset]["num_basis"]
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
        (``cifar10-fast`` took GELU in session 10) refuses to resume a run of the old one."""
        return {**super().identity(), "network": {**PRESETS[self.preset], **self.config_overrides}}

    @property
    def refinement_schedule(self) -> RefinementSchedule:
        """The refinements in epochs (the same order and count as in steps, so the same
        sizes); :meth:`ImageTrainer.run_plan` converts them to steps."""
        return RefinementSchedule(self.basis, self.num_basis, self.num_steps, tuple(sorted(self.refine_epochs)))


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


def subset(images: torch.Tensor, labels: torch.Tensor, size: int | None, seed: int):
    """A seeded random subset of ``size`` examples (all when None or larger)."""
    if size is None or size >= len(labels):
        return images, labels
    keep = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))[:size]
    return images[keep], labels[keep]


def hold_out(images: torch.Tensor, labels: torch.Tensor, size: int):
    """``(train, validation)``: ``size`` examples drawn with :data:`VALIDATION_SEED` held out."""
    if size >= len(labels):
        raise ValueError(f"validation_size: {size} leaves no training images (of {len(labels)})")
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(VALIDATION_SEED))
    held, kept = order[:size], order[size:]
    return (images[kept], labels[kept]), (images[held], labels[held])


@torch.no_grad()
def evaluate(
    model,
    images,
    labels,
    processor,
    batch_size: int = 256,
    accelerator=None,
    *,
    views: str = "none",
    autocast_dtype: torch.dtype | None = None,
    channels_last: bool = False,
) -> float:
    """Top-1 accuracy of ``model`` in eval mode on uint8 ``images`` (N, C, H, W), ``labels`` (N,).

    With an ``accelerator``, each process scores its shard and the counts are summed.
    ``views`` names the test-time augmentation (:data:`.tta.VIEW_SETS`: the logits are
    averaged over them); ``autocast_dtype`` runs the model under autocast.
    """
    rank, world = (accelerator.process_index, accelerator.num_processes) if accelerator else (0, 1)
    device = accelerator.device if accelerator else next(model.parameters()).device
    if accelerator is not None:
        # No collectives inside: the shards may differ by a batch.
        model = accelerator.unwrap_model(model)
    was_training = model.training
    model.eval()
    correct = torch.zeros((), dtype=torch.long, device=device)
    shard = torch.arange(rank, len(labels), world)
    for start in range(0, len(shard), batch_size):
        index = shard[start : start + batch_size]
        pixels = _layout(processor.preprocess_tensor(images[index]).to(device), channels_last)
        with _autocast(device, autocast_dtype):
            logits = mean_logits(model, pixels, views_of(views))
        correct += (logits.argmax(-1) == labels[index].to(device)).sum()
    model.train(was_training)
    if accelerator is not None:
        correct = accelerator.reduce(correct, reduction="sum")
    return correct.item() / len(labels)


@torch.no_grad()
def average_running_statistics(model: nn.Module, accelerator) -> None:
    """Average the floating-point buffers (running statistics) over the processes, so every
    process evaluates, and the main process saves, one and the same model."""
    if accelerator.num_processes == 1:
        return
    for buffer in model.buffers():
        if buffer.is_floating_point():
            buffer.copy_(accelerator.reduce(buffer, reduction="mean"))


def _autocast(device: torch.device, dtype: torch.dtype | None):
    return torch.autocast(device.type, dtype=dtype, enabled=dtype is not None)


def _layout(pixels: torch.Tensor, channels_last: bool) -> torch.Tensor:
    return pixels.contiguous(memory_format=torch.channels_last) if channels_last else pixels


def to_channels_last(model: nn.Module) -> None:
    """The 4-D weights (discrete convolutions) in channels_last; coefficient tensors stay."""
    for parameter in model.parameters():
        if parameter.dim() == 4:
            parameter.data = parameter.data.contiguous(memory_format=torch.channels_last)


def load_split_tensors(args: ImageTrainingArguments):
    """``(train, validation, test, class_names)``, each split an ``(images, labels)`` pair."""
    data = load_image_dataset(args.dataset)
    train_images, train_labels = to_tensors(data["train"])
    train_split, validation = hold_out(train_images, train_labels, args.validation_size)
    train_split = subset(*train_split, args.max_train_samples, args.seed)
    validation = subset(*validation, args.max_eval_samples, VALIDATION_SEED)
    test = to_tensors(data["test"])  # scored once, in full
    return train_split, validation, test, data["train"].features["label"].names


def build_processor(args: ImageTrainingArguments) -> OdeResNetImageProcessor:
    """Normalisation statistics of the preset's dataset (``cifar10-small`` → ``cifar10``)."""
    return OdeResNetImageProcessor.for_dataset(args.preset.split("-")[0])


class ImageTrainer(Trainer):
    """An image classifier's training run: image tensors, an ODE-ResNet, SGD."""

    item_name = "images"

    def load_data(self) -> None:
        args = self.args
        self.train_split, self.validation, self.test, self.class_names = load_split_tensors(args)
        if len(self.train_split[1]) < args.batch_size:
            raise ValueError(
                f"batch_size: {args.batch_size} is more than the {len(self.train_split[1])} training images"
            )
        self.processor = build_processor(args)
        self.augment = self.train_split[0].shape[1] == 3 if args.augment is None else args.augment
        self.flip_parities = flip_parities(len(self.train_split[1]), args.seed)
        self.autocast_dtype = MIXED_PRECISION[args.mixed_precision]
        self.lookahead: Lookahead | None = None
        epoch_size = min(args.samples_per_epoch or len(self.train_split[1]), len(self.train_split[1]))
        self._steps_per_epoch = epoch_size // args.batch_size
        self.fingerprint = _tensor_fingerprint(self.train_split, self.validation)

    def run_plan(self) -> RunPlan:
        """Epochs in steps: train ``epochs`` epochs, evaluate and checkpoint after each,
        refine at the start of each of ``refine_epochs``."""
        spe, in_epochs = self._steps_per_epoch, self.args.refinement_schedule
        schedule = dataclasses.replace(in_epochs, refine_steps=tuple(e * spe for e in in_epochs.refine_steps))
        return RunPlan(max_steps=self.args.epochs * spe, eval_steps=spe, save_steps=spe, schedule=schedule)

    @property
    def steps_per_epoch(self) -> int:
        return self._steps_per_epoch

    def epoch_batches(self, epoch: int, skip: int):
        args, accelerator = self.args, self.accelerator
        images, labels = self.train_split
        generator = torch.Generator().manual_seed(_seed(args.seed, epoch))
        order = torch.randperm(len(labels), generator=generator)
        rank, world = accelerator.process_index, accelerator.num_processes
        if args.lookahead_steps:  # the epoch's slow weights: the model as the last epoch left it
            self.lookahead = Lookahead(accelerator.unwrap_model(self.model))
        for index in range(skip, self._steps_per_epoch):
            # One global batch per step, split over the processes.
            chosen = order[index * args.batch_size : (index + 1) * args.batch_size][rank::world]
            batch = images[chosen]
            if self.augment:
                generator = torch.Generator().manual_seed(_seed(args.seed, epoch, index))
                batch = random_crop(batch, generator, args.translate, args.translate_padding)
                if args.flip == "alternating":
                    batch = alternating_flip(batch, self.flip_parities[chosen], epoch)
                elif args.flip == "random":
                    batch = random_horizontal_flip(batch, generator)
            pixels = self.processor.preprocess_tensor(batch).to(accelerator.device)
            yield {
                "pixel_values": _layout(pixels, args.channels_last),
                "labels": labels[chosen].to(accelerator.device),
            }

    def build_model(self) -> nn.Module:
        args = self.args
        config = OdeResNetConfig.from_preset(
            args.preset,
            **args.config_overrides,
            basis=args.basis,
            num_basis=self.schedule.initial_num_basis,
            num_steps=self.schedule.initial_num_steps,
            scheme=args.scheme,
            time_horizon=args.time_horizon,
            use_normalization=args.use_normalization,
            **({} if args.logit_scale is None else {"logit_scale": args.logit_scale}),
            num_labels=len(self.class_names),
            id2label=dict(enumerate(self.class_names)),
        )
        model = OdeResNetForImageClassification(config)
        if args.identity_init:
            identity_init_(model)
        stem = model.ode_resnet.stem
        if args.whiten_stem:
            images = self.train_split[0][:WHITENING_IMAGES]
            whiten_conv_(stem, self.processor.preprocess_tensor(images))
        stem.weight.requires_grad_(not args.freeze_stem)
        if args.channels_last:
            to_channels_last(model)
        return model

    def build_optimizer(self, model: nn.Module) -> torch.optim.Optimizer:
        args = self.args
        return build_sgd(
            model,
            learning_rate=args.learning_rate,
            weight_decay=args.weight_decay,
            momentum=args.momentum,
            nesterov=args.nesterov,
            bias_lr_scale=args.bias_lr_scale,
            decoupled=args.decoupled_hyperparameters,
        )

    def learning_rate(self, step: int) -> float:
        """The rate of ``step`` (from 1) for the groups without an ``lr_scale``."""
        args = self.args
        if args.lr_schedule == "triangle":
            factor = triangle_factor(
                step, self.plan.max_steps, args.lr_start_factor, args.warmup_fraction, args.lr_end_factor
            )
            base = args.learning_rate * factor
        else:
            base = learning_rate_at(args, (step - 1) // self._steps_per_epoch)
        if args.decoupled_hyperparameters:
            return decoupled_rate(base, args.batch_size, args.momentum)
        return base

    def loss(self, model: nn.Module, batch: dict) -> torch.Tensor:
        with _autocast(self.accelerator.device, self.autocast_dtype):
            logits = model(batch["pixel_values"]).logits
        return F.cross_entropy(logits.float(), batch["labels"], label_smoothing=self.args.label_smoothing)

    def after_optimizer_step(self, step: int) -> None:
        """Lookahead: sync every ``lookahead_steps`` steps, at every epoch's end and at the last step."""
        args, max_steps = self.args, self.plan.max_steps
        if self.lookahead is None:
            return
        if step % args.lookahead_steps == 0 or step % self._steps_per_epoch == 0 or step == max_steps:
            decay = lookahead_decay(step, max_steps, args.lookahead_decay)
            self.lookahead.sync(self.accelerator.unwrap_model(self.model), decay)

    def batch_items(self, batch: dict) -> torch.Tensor:
        return torch.tensor(len(batch["labels"]), device=batch["labels"].device)

    def evaluate(self, model: nn.Module) -> dict:
        unwrapped = self.accelerator.unwrap_model(model)
        average_running_statistics(unwrapped, self.accelerator)
        images, labels = self.validation
        accuracy = self._score(unwrapped, images, labels)
        return {"accuracy": accuracy, "num_images": len(labels), "epoch": self._epoch_of_step()}

    def _epoch_of_step(self) -> int:
        return (self.state.step - 1) // self._steps_per_epoch if self.state.step else 0

    def data_fingerprint(self) -> str:
        return self.fingerprint

    def summary(self) -> dict:
        return {
            "dataset": self.args.dataset,
            "preset": self.args.preset,
            "num_train_images": len(self.train_split[1]),
            "num_validation_images": len(self.validation[1]),
            "num_test_images": len(self.test[1]),
            "num_processes": self.accelerator.num_processes,
        }

    def save_model(self, model: nn.Module, folder: Path, entry: dict) -> None:
        model.save_pretrained(folder)
        self.processor.save_pretrained(folder)
        record = {"dataset": self.args.dataset, "best": entry}
        (folder / METRICS_FILE).write_text(json.dumps(record, indent=2) + "\n")

    def card_facts(self, entry: dict) -> dict:
        name = Path(self.args.dataset).name or self.args.dataset
        results = [Evaluation(name, "validation", entry["accuracy"])]
        if "test" in self.extra_metrics:
            results.append(Evaluation(name, "test", self.extra_metrics["test"]["accuracy"]))
        if "test_tta" in self.extra_metrics:
            tta = self.extra_metrics["test_tta"]
            results.append(Evaluation(name, f"test (test-time augmentation: {tta['views']})", tta["accuracy"]))
        return {
            "extra": {
                "training data": f"{name}, {len(self.train_split[1]):,} images "
                f"({len(self.validation[1]):,} held out for validation)",
                "best epoch": entry["epoch"],
            },
            "results": results,
        }

    def load_best(self) -> nn.Module:
        model = OdeResNetForImageClassification.from_pretrained(
            self.output_dir / BEST_MODEL_DIR, trust_remote_code=False
        )
        return model.to(self.accelerator.device).eval()

    def _score(self, model: nn.Module, images, labels, views: str = "none") -> float:
        return evaluate(
            model,
            images,
            labels,
            self.processor,
            accelerator=self.accelerator,
            views=views,
            autocast_dtype=self.autocast_dtype,
            channels_last=self.args.channels_last,
        )

    def finish(self) -> None:
        """Score the test split once, with the model selected on validation (and once more
        with test-time augmentation when ``test_time_augmentation`` names views)."""
        images, labels = self.test
        model, views = self.load_best(), self.args.test_time_augmentation
        accuracy = self._score(model, images, labels)
        self.extra_metrics["test"] = {"accuracy": accuracy, "num_images": len(labels)}
        if views != "none":
            tta = self._score(model, images, labels, views)
            self.extra_metrics["test_tta"] = {"accuracy": tta, "num_images": len(labels), "views": views}


def learning_rate_at(args: ImageTrainingArguments, epoch: int) -> float:
    """Step decay: the base rate times the factor once per decay epoch reached."""
    decays = sum(1 for e in args.lr_decay_epochs if epoch >= e)
    return args.learning_rate * args.lr_decay_factor**decays


def _seed(*values: int) -> int:
    return int(np.random.SeedSequence(list(values)).generate_state(1, np.uint64)[0] >> 1)


def _tensor_fingerprint(*splits) -> str:
    digest = hashlib.sha256()
    for images, labels in splits:
        digest.update(images.numpy().tobytes())
        digest.update(labels.numpy().tobytes())
    return digest.hexdigest()


def train(args: ImageTrainingArguments) -> dict:
    """Train as ``args`` says; returns the contents of ``metrics.json``."""
    return ImageTrainer(args).run()
