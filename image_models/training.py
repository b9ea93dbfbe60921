"""Training and evaluation of ODE-ResNets with Accelerate (the logic of scripts/train_image.py).

The recipe of the paper (DESIGN §7): SGD with momentum 0.9 and weight decay 5e-4,
learning rate 0.1 with step decay, batch 128, RK4, multi-level refinement from K = 1:
at each refinement epoch every OdeBlock's basis is refined exactly (K → 2K, N_T → 2N_T)
and the optimiser is rebuilt for the new parameters.

Whole splits are held as uint8 tensors (``image_models.data.to_tensors``); batches are
index slices, augmented and normalised as tensors, never image by image.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from tqdm.auto import tqdm

from cont_transformer import refine
from cont_transformer.configuration_ode_resnet import OdeResNetConfig
from cont_transformer.image_processing_ode_resnet import OdeResNetImageProcessor
from cont_transformer.modeling_ode_resnet import OdeResNetForImageClassification
from cont_transformer.tagging.trainer import end_distributed, make_accelerator

from .augmentation import augment_cifar
from .data import load_image_dataset, to_tensors

CHECKPOINT_DIR = "checkpoint"
BEST_MODEL_DIR = "best"
PROGRESS_FILE = "progress.json"


@dataclass
class ImageTrainingArguments:
    """Everything a training run depends on; the script's flags carry the same names."""

    dataset: str
    output_dir: str
    preset: str = "mnist-small"
    epochs: int = 90
    batch_size: int = 128
    learning_rate: float = 0.1
    momentum: float = 0.9
    weight_decay: float = 5e-4
    # Step decay: the learning rate is multiplied by lr_decay_factor at each of these epochs.
    lr_decay_epochs: list[int] = field(default_factory=list)
    lr_decay_factor: float = 0.1
    # Epochs (0-based, >= 1, at their start) at which every OdeBlock is refined, K → 2K.
    refine_epochs: list[int] = field(default_factory=list)
    num_basis: int = 1
    basis: str = "piecewise_constant"
    scheme: str = "rk4"
    use_normalization: bool = True
    # Random crop + horizontal flip; None: on for colour images (CIFAR), off for MNIST.
    augment: bool | None = None
    max_train_samples: int | None = None
    # An epoch is a fresh random draw of this many training examples (None: all of them);
    # shorter epochs put refinement and evaluation points closer on a slow machine.
    samples_per_epoch: int | None = None
    max_eval_samples: int | None = None
    seed: int = 0
    resume_from_checkpoint: bool = False

    def __post_init__(self):
        if any(e < 1 for e in self.refine_epochs):
            raise ValueError(f"refine_epochs must be >= 1 (refine after training), got {self.refine_epochs}")


def learning_rate_at(args: ImageTrainingArguments, epoch: int) -> float:
    """Step decay: the base rate times the factor once per decay epoch reached."""
    decays = sum(1 for e in args.lr_decay_epochs if epoch >= e)
    return args.learning_rate * args.lr_decay_factor**decays


def num_refinements_before(args: ImageTrainingArguments, epoch: int) -> int:
    """How many refinements a run has made once it starts ``epoch``."""
    return sum(1 for e in args.refine_epochs if e <= epoch)


def subset(images: torch.Tensor, labels: torch.Tensor, size: int | None, seed: int):
    """A seeded random subset of ``size`` examples (all when None or larger)."""
    if size is None or size >= len(labels):
        return images, labels
    keep = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))[:size]
    return images[keep], labels[keep]


@torch.no_grad()
def evaluate(
    model: torch.nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    processor: OdeResNetImageProcessor,
    batch_size: int = 256,
    accelerator: Accelerator | None = None,
) -> float:
    """Top-1 accuracy of ``model`` in eval mode on uint8 ``images`` (N, C, H, W), ``labels`` (N,).

    With an ``accelerator``, each process scores its shard and the counts are summed.
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
        pixels = processor.preprocess_tensor(images[index]).to(device)
        logits = model(pixels).logits
        correct += (logits.argmax(-1) == labels[index].to(device)).sum()
    model.train(was_training)
    if accelerator is not None:
        correct = accelerator.reduce(correct, reduction="sum")
    return correct.item() / len(labels)


@torch.no_grad()
def average_running_statistics(model: torch.nn.Module, accelerator: Accelerator) -> None:
    """Average the floating-point buffers (running statistics) over the processes.

    Each process updates them from its own share of the batches; averaged, every process
    evaluates, and the main process saves, one and the same model.
    """
    if accelerator.num_processes == 1:
        return
    for buffer in model.buffers():
        if buffer.is_floating_point():
            buffer.copy_(accelerator.reduce(buffer, reduction="mean"))


def load_split_tensors(args: ImageTrainingArguments):
    """``(train_images, train_labels), (test_images, test_labels), class_names`` as tensors."""
    data = load_image_dataset(args.dataset)
    train = subset(*to_tensors(data["train"]), args.max_train_samples, args.seed)
    test = subset(*to_tensors(data["test"]), args.max_eval_samples, args.seed)
    return train, test, data["train"].features["label"].names


def build_model(args: ImageTrainingArguments, class_names: list[str]) -> OdeResNetForImageClassification:
    """The preset at the run's initial K (N_T = K), labelled with the dataset's classes."""
    config = OdeResNetConfig.from_preset(
        args.preset,
        num_basis=args.num_basis,
        basis=args.basis,
        scheme=args.scheme,
        use_normalization=args.use_normalization,
        num_labels=len(class_names),
        id2label=dict(enumerate(class_names)),
    )
    return OdeResNetForImageClassification(config)


def build_processor(args: ImageTrainingArguments) -> OdeResNetImageProcessor:
    """Normalisation statistics of the preset's dataset (``cifar10-small`` → ``cifar10``)."""
    return OdeResNetImageProcessor.for_dataset(args.preset.split("-")[0])


def _optimizer(args: ImageTrainingArguments, model: torch.nn.Module, epoch: int) -> torch.optim.SGD:
    return torch.optim.SGD(
        model.parameters(),
        lr=learning_rate_at(args, epoch),
        momentum=args.momentum,
        weight_decay=args.weight_decay,
    )


def train(args: ImageTrainingArguments) -> dict:
    """Train, evaluating every epoch; returns the run's summary (also ``progress.json``).

    Writes under ``output_dir``: ``best/`` (``save_pretrained`` model and image processor
    of the best test accuracy), ``checkpoint/`` (Accelerate state after the last epoch)
    and ``progress.json``. With ``resume_from_checkpoint`` the run continues after the
    last completed epoch, at the K that epoch had.
    """
    accelerator = make_accelerator()
    if args.batch_size % accelerator.num_processes:
        raise ValueError(
            f"--batch-size {args.batch_size} must be divisible by the number of processes "
            f"({accelerator.num_processes}): each step splits one batch over them"
        )
    output_dir = Path(args.output_dir)
    progress_path = output_dir / PROGRESS_FILE
    set_seed(args.seed)
    (train_images, train_labels), (test_images, test_labels), class_names = load_split_tensors(args)
    processor = build_processor(args)
    augment = train_images.shape[1] == 3 if args.augment is None else args.augment
    model = build_model(args, class_names)

    progress = {"args": asdict(args), "best_accuracy": -1.0, "history": []}
    start_epoch = 0
    if args.resume_from_checkpoint:
        progress = json.loads(progress_path.read_text())
        start_epoch = progress["history"][-1]["epoch"] + 1
        for _ in range(num_refinements_before(args, start_epoch - 1)):  # the checkpoint's K
            refine(model)
    model, optimizer = accelerator.prepare(model, _optimizer(args, model, start_epoch))
    if args.resume_from_checkpoint:
        accelerator.load_state(str(output_dir / CHECKPOINT_DIR))

    rank, world = accelerator.process_index, accelerator.num_processes
    for epoch in range(start_epoch, args.epochs):
        if epoch in args.refine_epochs:
            model = accelerator.unwrap_model(model)
            accelerator.free_memory()
            refine(model)
            model, optimizer = accelerator.prepare(model, _optimizer(args, model, epoch))
        for group in optimizer.param_groups:
            group["lr"] = learning_rate_at(args, epoch)

        model.train()
        generator = torch.Generator().manual_seed(args.seed * 1000 + epoch)
        order = torch.randperm(len(train_labels), generator=generator)[: args.samples_per_epoch]
        # One global batch of batch_size per step, split over the processes; every
        # process takes the same number of steps (DDP syncs every backward).
        order = order[: len(order) - len(order) % world]
        num_batches = math.ceil(len(order) / args.batch_size)
        started, total_loss = time.time(), 0.0
        bar = tqdm(
            range(num_batches),
            desc=f"epoch {epoch} K={accelerator.unwrap_model(model).config.num_basis}",
            disable=not accelerator.is_local_main_process,
        )
        for step in bar:
            index = order[step * args.batch_size : (step + 1) * args.batch_size][rank::world]
            images = train_images[index]
            if augment:
                images = augment_cifar(images, generator)
            pixels = processor.preprocess_tensor(images).to(accelerator.device)
            loss = model(pixels, labels=train_labels[index].to(accelerator.device)).loss
            optimizer.zero_grad(set_to_none=True)
            accelerator.backward(loss)
            optimizer.step()
            total_loss += loss.item()
            bar.set_postfix(loss=f"{loss.item():.4f}")
        train_seconds = time.time() - started

        unwrapped = accelerator.unwrap_model(model)
        average_running_statistics(unwrapped, accelerator)
        accuracy = evaluate(model, test_images, test_labels, processor, accelerator=accelerator)
        record = {
            "epoch": epoch,
            "num_basis": unwrapped.config.num_basis,
            "num_steps": unwrapped.config.num_steps,
            "learning_rate": learning_rate_at(args, epoch),
            "train_loss": total_loss / num_batches,
            "test_accuracy": accuracy,
            "train_seconds": train_seconds,
        }
        progress["history"].append(record)
        if accuracy > progress["best_accuracy"]:
            progress["best_accuracy"] = accuracy
            progress["best_epoch"] = epoch
            if accelerator.is_main_process:
                unwrapped.save_pretrained(output_dir / BEST_MODEL_DIR)
                processor.save_pretrained(output_dir / BEST_MODEL_DIR)
        accelerator.save_state(str(output_dir / CHECKPOINT_DIR))
        if accelerator.is_main_process:
            progress_path.write_text(json.dumps(progress, indent=2))
        accelerator.print(json.dumps(record))
    end_distributed(accelerator)
    return progress
