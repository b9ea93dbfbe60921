"""Train an ODE-ResNet image classifier (MNIST, CIFAR) with Accelerate.

Example, the paper's MNIST recipe (refinement K = 1 → 8):

    python scripts/train_image.py --dataset ../shared/data/mnist --preset mnist-small \
        --output-dir runs/mnist --epochs 90 --refine-epochs 20 50 80 --lr-decay-epochs 30 60 85

Multi-process CPU: ``accelerate launch --multi_gpu --num_processes 2 scripts/train_image.py ...``.
"""

import argparse
import json

from image_models.training import ImageTrainingArguments, train


def parse_args() -> ImageTrainingArguments:
    defaults = ImageTrainingArguments(dataset="", output_dir="")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", required=True, help="MNIST/CIFAR folder or archive, or a Hub name")
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--preset", default=defaults.preset)
    parser.add_argument("--epochs", type=int, default=defaults.epochs)
    parser.add_argument("--batch-size", type=int, default=defaults.batch_size)
    parser.add_argument("--learning-rate", type=float, default=defaults.learning_rate)
    parser.add_argument("--momentum", type=float, default=defaults.momentum)
    parser.add_argument("--weight-decay", type=float, default=defaults.weight_decay)
    parser.add_argument("--lr-decay-epochs", type=int, nargs="*", default=[])
    parser.add_argument("--lr-decay-factor", type=float, default=defaults.lr_decay_factor)
    parser.add_argument("--refine-epochs", type=int, nargs="*", default=[])
    parser.add_argument("--num-basis", type=int, default=defaults.num_basis, help="initial K")
    parser.add_argument("--basis", default=defaults.basis)
    parser.add_argument("--scheme", default=defaults.scheme)
    parser.add_argument("--no-normalization", dest="use_normalization", action="store_false")
    parser.add_argument("--augment", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument("--max-train-samples", type=int)
    parser.add_argument("--samples-per-epoch", type=int)
    parser.add_argument("--max-eval-samples", type=int)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--resume-from-checkpoint", action="store_true")
    return ImageTrainingArguments(**vars(parser.parse_args()))


if __name__ == "__main__":
    summary = train(parse_args())
    print(json.dumps({k: summary[k] for k in ("best_accuracy", "best_epoch")}))
