"""Train an ODE-ResNet image classifier (MNIST, CIFAR) with Accelerate.

The presets' default schedules (``image_models.arguments.PRESET_SCHEDULES``) refine last,
after the learning rate decays, so the trained model compresses; for example MNIST on a
CPU: ``python scripts/train_image.py --dataset ../shared/data/mnist --output-dir runs/mnist``.
The paper's MNIST recipe (refinement K = 1 → 8):

    python scripts/train_image.py --dataset ../shared/data/mnist --preset mnist-small \
        --output-dir runs/mnist --epochs 90 --refine-epochs 20 50 80 --lr-decay-epochs 30 60 85

The fast CIFAR-10 recipe (docs/cifar.md: every method a flag, ``--whiten-stem false`` and
the like for an ablation): ``python scripts/train_image.py recipes/cifar10_fast.json``,
or ``--preset cifar10-fast`` with any dataset.

Multi-process CPU: ``accelerate launch --multi_gpu --num_processes 2 scripts/train_image.py ...``.
Every field of ``image_models.arguments.ImageTrainingArguments`` is a flag (``--batch-size``
or ``--batch_size``). The best epoch is chosen on ``--validation-size`` held-out training
images; the test split is scored once at the end. Bad arguments or files: one line,
exit 2 (``--debug`` shows the traceback).
"""

import json

from accelerate import PartialState

from cont_transformer.tools.cli import run_cli
from cont_transformer.training.recipes import parse_arguments
from image_models.arguments import ImageTrainingArguments, preset_defaults
from image_models.trainer import train


def main(argv: list[str]) -> None:
    args, _ = parse_arguments(
        ImageTrainingArguments,
        argv,
        description=__doc__.split("\n")[0],
        preset_defaults=preset_defaults,
    )
    if args.do_eval and not args.do_train:
        raise ValueError(
            "do_eval: the image trainer has no evaluate-only mode; score a saved model with "
            "scripts/compress.py MODEL --eval-file DATA (its source row)"
        )
    metrics = train(args)
    if PartialState().is_main_process:
        print(json.dumps({k: metrics.get(k) for k in ("best", "test", "compression")}))


if __name__ == "__main__":
    run_cli(main)
