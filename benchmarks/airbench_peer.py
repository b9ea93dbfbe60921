"""The discrete peer of the fast CIFAR-10 recipe: airbench94's network and schedule
(PyPI ``airbench``, Jordan 2024) on this package's data split and CPU.

From the package: the network's building blocks (``lib_airbench94``: whitening conv,
three conv groups of widths 64/256/256, logits times 1/9), its hyper-parameters
(``hyp``), its whitening initialisation and its Lookahead state. Adapted here: float32
weights on the CPU (or GPU) with optional bfloat16 autocast instead of ``.half().cuda()``;
the images come from ``image_models`` (the same 45,000 training images, the same 5,000
held out, the test split scored once) and are augmented by ``image_models.augmentation``
(alternating flip, translation by 2 with mirrored borders, airbench's choices); the
test-time augmentation is ``image_models.tta``'s ``flip-translate`` (an unweighted mean
over six views, where airbench weighs the untranslated pair double).

    python benchmarks/airbench_peer.py --steps 3            # step time only
    python benchmarks/airbench_peer.py --output runs/airbench.json   # the full run

airbench imports torchvision for its own CIFAR downloader, which is not used here: when
torchvision is absent an empty stand-in module lets the import succeed.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import types
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from image_models.arguments import ImageTrainingArguments
from image_models.augmentation import alternating_flip, flip_parities, random_crop
from image_models.batching import build_processor, load_split_tensors
from image_models.optimization import triangle_factor
from image_models.tta import mean_logits, views_of

DATASET = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cifar10" / "cifar10-jpg.tar.gz"


def import_airbench():
    """``(lib_airbench94, utils)`` of the installed airbench package."""
    if "torchvision" not in sys.modules:
        try:
            import torchvision  # noqa: F401
        except ImportError:
            stand_in = types.ModuleType("torchvision")
            stand_in.transforms = types.ModuleType("torchvision.transforms")
            sys.modules.update({"torchvision": stand_in, "torchvision.transforms": stand_in.transforms})
    try:
        from airbench import lib_airbench94, utils
    except ImportError as error:
        raise SystemExit(f"error: airbench: not installed ({error}); pip install airbench") from None
    return lib_airbench94, utils


def make_network(lib) -> nn.Sequential:
    """airbench94's network in float32 (make_net94 without .half().cuda())."""
    widths, momentum = lib.hyp["net"]["widths"], lib.hyp["net"]["batchnorm_momentum"]
    whiten_width = 2 * 3 * 2**2
    net = nn.Sequential(
        lib.Conv(3, whiten_width, 2, padding=0, bias=True),
        nn.GELU(),
        lib.ConvGroup(whiten_width, widths["block1"], momentum),
        lib.ConvGroup(widths["block1"], widths["block2"], momentum),
        lib.ConvGroup(widths["block2"], widths["block3"], momentum),
        nn.MaxPool2d(3),
        lib.Flatten(),
        nn.Linear(widths["block3"], 10, bias=False),
        lib.Mul(lib.hyp["net"]["scaling_factor"]),
    )
    net[0].weight.requires_grad = False
    return net.to(memory_format=torch.channels_last)


def optimizer_for(net: nn.Module, hyp: dict, batch_size: int) -> torch.optim.SGD:
    """airbench's two groups: BatchNorm biases at a scaled rate, the rest; decoupled decay."""
    opt = hyp["opt"]
    kilostep_scale = 1024 * (1 + 1 / (1 - opt["momentum"]))
    lr = opt["lr"] / kilostep_scale
    wd = opt["weight_decay"] * batch_size / kilostep_scale
    lr_biases = lr * opt["bias_scaler"]
    named = [(k, p) for k, p in net.named_parameters() if p.requires_grad]
    groups = [
        {
            "params": [p for k, p in named if "norm" in k],
            "lr": lr_biases,
            "weight_decay": wd / lr_biases,
        },
        {"params": [p for k, p in named if "norm" not in k], "lr": lr, "weight_decay": wd / lr},
    ]
    for group in groups:
        group["initial_lr"] = group["lr"]
    return torch.optim.SGD(groups, momentum=opt["momentum"], nesterov=True)


def run(args: argparse.Namespace) -> dict:
    lib, utils = import_airbench()
    hyp = lib.hyp
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.num_threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.mixed_precision == "bf16")
    data_args = ImageTrainingArguments(dataset=str(args.dataset), preset="cifar10-fast")
    (images, labels), validation, test, _ = load_split_tensors(data_args)
    processor = build_processor(data_args)
    batch_size = hyp["opt"]["batch_size"]
    steps_per_epoch = len(labels) // batch_size
    epochs = args.epochs or hyp["opt"]["train_epochs"]
    max_steps = math.ceil(steps_per_epoch * epochs)
    net = make_network(lib).to(device)
    utils.init_whitening_conv(net[0], processor.preprocess_tensor(images[:5000]).to(device))
    optimizer = optimizer_for(net, hyp, batch_size)
    lookahead = utils.LookaheadState(net)
    parities = flip_parities(len(labels), args.seed)
    step, step_seconds, started = 0, [], time.perf_counter()
    for epoch in range(math.ceil(epochs)):
        net[0].bias.requires_grad = epoch < hyp["opt"]["whiten_bias_epochs"]
        order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(args.seed + epoch))
        for index in range(steps_per_epoch):
            tick = time.perf_counter()
            chosen = order[index * batch_size : (index + 1) * batch_size]
            generator = torch.Generator().manual_seed(args.seed * 100_003 + step)
            batch = random_crop(images[chosen], generator, hyp["aug"]["translate"], "reflect")
            batch = alternating_flip(batch, parities[chosen], epoch)
            pixels = processor.preprocess_tensor(batch).to(device).contiguous(memory_format=torch.channels_last)
            step += 1
            for group in optimizer.param_groups:
                group["lr"] = group["initial_lr"] * triangle_factor(step, max_steps, 0.2, 0.23, 0.07)
            with autocast:
                logits = net(pixels)
            loss = F.cross_entropy(
                logits.float(),
                labels[chosen].to(device),
                label_smoothing=hyp["opt"]["label_smoothing"],
                reduction="sum",
            )
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            if step % 5 == 0:
                lookahead.update(net, decay=0.95**5 * (step / max_steps) ** 3)
            if step >= max_steps:
                lookahead.update(net, decay=1.0)
            step_seconds.append(time.perf_counter() - tick)
            if args.steps and step >= args.steps:
                return {
                    "steps": step,
                    "batch_size": batch_size,
                    "step_seconds": step_seconds,
                    "projected_run_minutes": max_steps * min(step_seconds[1:] or step_seconds) / 60,
                }
            if step >= max_steps:
                break
    train_minutes = (time.perf_counter() - started) / 60

    def score(split, views: str) -> float:
        net.eval()
        model = lambda x: types.SimpleNamespace(logits=net(x))
        correct = 0
        with torch.no_grad(), autocast:
            for start in range(0, len(split[1]), 500):
                pixels = processor.preprocess_tensor(split[0][start : start + 500]).to(device)
                logits = mean_logits(model, pixels.contiguous(memory_format=torch.channels_last), views_of(views))
                correct += (logits.argmax(-1).cpu() == split[1][start : start + 500]).sum().item()
        return correct / len(split[1])

    return {
        "steps": step,
        "train_minutes": train_minutes,
        "mean_step_seconds": sum(step_seconds) / len(step_seconds),
        "validation_accuracy": score(validation, "none"),
        "test_accuracy": score(test, "none"),
        "test_accuracy_tta": score(test, "flip-translate"),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", type=Path, default=DATASET, help="CIFAR-10 folder or archive")
    parser.add_argument(
        "--steps",
        type=int,
        default=0,
        help="stop after N steps and report step times (0: full run)",
    )
    parser.add_argument("--epochs", type=float, default=0, help="train this many epochs (0: airbench94's 9.9)")
    parser.add_argument("--mixed-precision", choices=("no", "bf16"), default="bf16")
    parser.add_argument("--num-threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, help="also write the result here as JSON")
    args = parser.parse_args(argv)
    if not args.dataset.exists():
        raise SystemExit(f"error: --dataset: {args.dataset}: no such file or folder")
    result = run(args)
    text = json.dumps(result, indent=2)
    print(text)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
