"""Training of ODE-ResNets (the logic of scripts/train_image.py) on the training scaffold.

:class:`ImageTrainer` fills the hooks of :class:`cont_transformer.training.scaffold.Trainer`
with the paper's recipe (docs/design.md): SGD with momentum 0.9 and weight decay 5e-4,
learning rate 0.1 with step decay at ``lr_decay_epochs``, batch 128, RK4, multi-level
refinement to the preset's K at ``refine_epochs`` (SGD's momentum is projected onto the
refined basis like the coefficients). The scaffold's steps are grouped into epochs here:
an epoch is one pass over the training images (or a fresh draw of ``samples_per_epoch``
of them); evaluation and checkpoints come at the end of every epoch.

Its arguments and the presets' schedules are in :mod:`.arguments`, the splits and an
epoch's batches in :mod:`.batching`, the optimiser and the learning rate in
:mod:`.optimization`, the scoring in :mod:`.evaluation`. The best epoch is chosen on
held-out training images; :meth:`ImageTrainer.finish` scores the test split once, with
the best model.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from cont_transformer.configuration_ode_resnet import OdeResNetConfig
from cont_transformer.model_card import Evaluation
from cont_transformer.modeling_ode_resnet import OdeResNetForImageClassification
from cont_transformer.runtime.model_folders import IMAGE_RUN, METRICS_FILE
from cont_transformer.training.scaffold import Trainer
from cont_transformer.training.schedules import RunPlan, scale_steps

from . import (
    family,  # noqa: F401  registers the family (card, tools) and the models' Auto classes
    optimization,
)
from .arguments import MIXED_PRECISION, WHITENING_IMAGES, ImageTrainingArguments
from .augmentation import flip_parities
from .batching import build_processor, load_split_tensors, tensor_fingerprint, training_batches
from .evaluation import autocast_context, average_running_statistics, evaluate
from .initialization import identity_init_
from .lookahead import Lookahead, lookahead_decay
from .whitening import whiten_conv_


def to_channels_last(model: nn.Module) -> None:
    """The 4-D weights (discrete convolutions) in channels_last; coefficient tensors stay."""
    for parameter in model.parameters():
        if parameter.dim() == 4:
            parameter.data = parameter.data.contiguous(memory_format=torch.channels_last)


class ImageTrainer(Trainer):
    """An image classifier's training run: image tensors, an ODE-ResNet, SGD."""

    item_name = "images"
    run_kind = IMAGE_RUN
    overwrite_command = "train_image.py --overwrite-output-dir"

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
        self.fingerprint = tensor_fingerprint(self.train_split, self.validation)

    def run_plan(self) -> RunPlan:
        """Epochs in steps: train ``epochs`` epochs, evaluate and checkpoint after each,
        refine at the start of each of ``refine_epochs``. With ``max_steps`` the run is that
        many steps and each of those epochs is :meth:`schedule_epoch_steps` long."""
        length, in_epochs = self.schedule_epoch_steps, self.args.refinement_schedule
        schedule = dataclasses.replace(in_epochs, refine_steps=scale_steps(in_epochs.refine_steps, length))
        every = max(1, round(length))
        return RunPlan(
            max_steps=round(self.args.epochs * length), eval_steps=every, save_steps=every, schedule=schedule
        )

    @property
    def schedule_epoch_steps(self) -> float:
        """Optimiser steps per epoch of the schedule: an epoch of the data, or with
        ``--max-steps`` that many steps over ``--epochs``."""
        args = self.args
        return self._steps_per_epoch if args.max_steps is None else args.max_steps / args.epochs

    @property
    def steps_per_epoch(self) -> int:
        return self._steps_per_epoch

    def epoch_batches(self, epoch: int, skip: int):
        args, accelerator = self.args, self.accelerator
        if args.lookahead_steps:  # the epoch's slow weights: the model as the last epoch left it
            self.lookahead = Lookahead(accelerator.unwrap_model(self.model))
        yield from training_batches(
            args,
            self.train_split,
            self.processor,
            epoch,
            skip,
            self._steps_per_epoch,
            augment=self.augment,
            flip_parities=self.flip_parities,
            rank=accelerator.process_index,
            world=accelerator.num_processes,
            device=accelerator.device,
        )

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
        return optimization.build_optimizer(model, self.args)

    def learning_rate(self, step: int) -> float:
        """The rate of ``step`` (from 1) for the groups without an ``lr_scale``."""
        return optimization.learning_rate(self.args, step, self.plan.max_steps, self.schedule_epoch_steps)

    def loss(self, model: nn.Module, batch: dict) -> torch.Tensor:
        with autocast_context(self.accelerator.device, self.autocast_dtype):
            logits = model(batch["pixel_values"]).logits
        return F.cross_entropy(logits.float(), batch["labels"], label_smoothing=self.args.label_smoothing)

    def after_optimizer_step(self, step: int) -> None:
        """Lookahead: sync every ``lookahead_steps`` steps, at every epoch's end (of the data
        and of the schedule), before a refinement and at the last step."""
        args, max_steps = self.args, self.plan.max_steps
        if self.lookahead is None:
            return
        epoch_end = step % self._steps_per_epoch == 0 or step % max(1, round(self.schedule_epoch_steps)) == 0
        if step % args.lookahead_steps == 0 or epoch_end or step in self.schedule.refine_steps or step == max_steps:
            decay = lookahead_decay(step, max_steps, args.lookahead_decay)
            self.lookahead.sync(self.accelerator.unwrap_model(self.model), decay)

    def after_refinement(self) -> None:
        """The Lookahead copy restarts from the refined model (synced just before, so it
        loses nothing)."""
        if self.lookahead is not None:
            self.lookahead = Lookahead(self.accelerator.unwrap_model(self.model))

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

    def load_model(self, folder: Path) -> nn.Module:
        model = OdeResNetForImageClassification.from_pretrained(folder, trust_remote_code=False)
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


def train(args: ImageTrainingArguments) -> dict:
    """Train as ``args`` says; returns the contents of ``metrics.json``."""
    return ImageTrainer(args).run()
