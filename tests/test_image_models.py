"""ODE-ResNet image models: ResNet equivalence, init, presets, save/load, training."""

import copy
import gzip
import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from transformers import AutoConfig, AutoImageProcessor, AutoModelForImageClassification

from cont_transformer import (
    OdeResNetConfig,
    OdeResNetForImageClassification,
    OdeResNetImageProcessor,
    change_basis,
    set_num_steps,
)
from cont_transformer.modeling_ode_resnet import RateUnit
from cont_transformer.ode_block import Coefficients
from cont_transformer.runtime.safe_files import OutputFolderError
from image_models.arguments import PRESETS, ImageTrainingArguments
from image_models.batching import load_split_tensors
from image_models.evaluation import evaluate
from image_models.trainer import train

REPO = Path(__file__).resolve().parents[1]


@torch.no_grad()
def randomize(model: nn.Module) -> None:
    """Non-trivial BatchNorm affine parameters and running statistics everywhere."""
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        if name.endswith(("bn1.weight", "bn2.weight", "norm.weight", "shortcut.1.weight")):
            tensor.uniform_(0.5, 1.5)
        elif name.endswith(("bn1.bias", "bn2.bias", "norm.bias", "shortcut.1.bias", "running_mean")):
            tensor.normal_(0, 0.3)
        elif name.endswith("running_var"):
            tensor.uniform_(0.5, 2.0)


def discrete_units(block) -> list[RateUnit]:
    """The K residual units of a piecewise-constant OdeBlock, as ordinary modules."""
    units = []
    dtype = next(block.parameters()).dtype
    for k in range(block.num_basis):
        unit = copy.deepcopy(block.template).to_empty(device="cpu").to(dtype)
        with torch.no_grad():
            for name, coefficients in block.named_coefficients():
                unit.get_parameter(name).copy_(coefficients[k])
            for name, state in block.rate.named_buffers():
                unit.get_buffer(name).copy_(state[k] if state.is_floating_point() else state)
        units.append(unit)
    return units


def discrete_forward(model: OdeResNetForImageClassification, units: list[list[RateUnit]], pixels):
    """The same network written as a discrete pre-activation ResNet: x ← x + unit_k(x)."""
    x = model.ode_resnet.stem(pixels)
    for stage, stage_units in zip(model.ode_resnet.stages, units):
        x = stage.stitch(x)
        for unit in stage_units:
            x = x + unit(x)
    x = F.relu(model.ode_resnet.norm(x))
    return model.classifier(x.mean((2, 3)))


def test_euler_piecewise_constant_is_a_resnet_with_batchnorm_per_layer(tiny_ode_resnet_config):
    torch.manual_seed(0)
    K = 3
    config = tiny_ode_resnet_config(
        scheme="euler", basis="piecewise_constant", num_basis=K, num_steps=K, time_horizon=K
    )
    model = OdeResNetForImageClassification(config).double()
    randomize(model)
    reference = copy.deepcopy(model)
    units = [discrete_units(stage.ode) for stage in model.ode_resnet.stages]
    reference_params = [*reference.parameters(), *(p for stage in units for u in stage for p in u.parameters())]
    pixels = torch.randn(5, 1, 8, 8, dtype=torch.float64)
    labels = torch.tensor([0, 1, 2, 1, 0])

    model.eval()
    for stage in units:
        for unit in stage:
            unit.eval()
    reference.eval()
    torch.testing.assert_close(model(pixels).logits, discrete_forward(reference, units, pixels), atol=1e-5, rtol=0)

    # One training step on both: outputs, updated running statistics, updated weights.
    model.train()
    reference.train()
    for stage in units:
        for unit in stage:
            unit.train()
    optimizers = [torch.optim.SGD(params, lr=0.1, momentum=0.9) for params in (model.parameters(), reference_params)]
    logits = model(pixels).logits
    reference_logits = discrete_forward(reference, units, pixels)
    torch.testing.assert_close(logits, reference_logits, atol=1e-5, rtol=0)
    for loss, optimizer in zip(
        (F.cross_entropy(logits, labels), F.cross_entropy(reference_logits, labels)), optimizers
    ):
        loss.backward()
        optimizer.step()
    for stage, stage_units in zip(model.ode_resnet.stages, units):
        for name, values in [*stage.ode.named_states(), *stage.ode.named_coefficients()]:
            expected = torch.stack([dict([*u.named_parameters(), *u.named_buffers()])[name] for u in stage_units])
            torch.testing.assert_close(values, expected, atol=1e-5, rtol=0, msg=name)

    model.eval()
    reference.eval()
    for stage in units:
        for unit in stage:
            unit.eval()
    torch.testing.assert_close(model(pixels).logits, discrete_forward(reference, units, pixels), atol=1e-5, rtol=0)


def test_init_reaches_the_coefficients(tiny_ode_resnet_config):
    torch.manual_seed(0)
    model = OdeResNetForImageClassification(tiny_ode_resnet_config(stage_channels=[16], stage_strides=[1], num_basis=4))
    rate = model.ode_resnet.stages[0].ode.rate
    assert isinstance(rate.conv1, Coefficients) and rate.conv1.template_cls is nn.Conv2d
    kaiming_std = math.sqrt(2.0 / (16 * 9))  # fan-out; the template's own init gives ~0.048
    for k in range(4):
        assert rate.conv1.weight[k].std().item() == pytest.approx(kaiming_std, rel=0.15)
    assert not torch.equal(rate.conv1.weight[0], rate.conv1.weight[1])
    assert torch.equal(rate.bn1.weight, torch.ones(4, 16))
    assert torch.equal(rate.bn1.bias, torch.zeros(4, 16))
    stitch = model.ode_resnet.stages[0].stitch
    assert stitch.conv1.weight.std().item() == pytest.approx(kaiming_std, rel=0.15)


@pytest.mark.parametrize(
    ("preset", "paper_count"),
    [("mnist-small", 24_000), ("cifar10-small", 207_000), ("cifar10-deep", 1_630_000), ("cifar100-wide", 13_600_000)],
)
def test_preset_parameter_counts(preset, paper_count):
    model = OdeResNetForImageClassification(OdeResNetConfig.from_preset(preset))
    count = sum(p.numel() for p in model.parameters())
    assert abs(count - paper_count) / paper_count < 0.05, count


def test_config_rejects_invalid_values_by_field():
    with pytest.raises(ValueError, match="stage_strides"):
        OdeResNetConfig(stage_channels=[8, 16], stage_strides=[1])
    with pytest.raises(ValueError, match="scheme"):
        OdeResNetConfig(scheme="rk5")
    with pytest.raises(ValueError, match="num_basis"):
        OdeResNetConfig(num_basis=0)
    with pytest.raises(ValueError, match="preset"):
        OdeResNetConfig.from_preset("imagenet")


def test_ablation_has_no_normalization(tiny_ode_resnet_config):
    model = OdeResNetForImageClassification(tiny_ode_resnet_config(use_normalization=False))
    kinds = {m.template_cls if isinstance(m, Coefficients) else type(m) for m in model.modules()}
    assert nn.BatchNorm2d not in kinds
    assert not list(model.buffers())
    loss = model(torch.randn(2, 1, 8, 8), labels=torch.tensor([0, 2])).loss
    loss.backward()
    assert torch.isfinite(loss)


def test_compressed_model_round_trips(tmp_path, tiny_ode_resnet_config):
    torch.manual_seed(0)
    model = OdeResNetForImageClassification(tiny_ode_resnet_config(num_basis=4, basis="piecewise_linear"))
    randomize(model)
    model.train()
    model(torch.randn(8, 1, 8, 8))  # fills the continuous running statistics
    change_basis(model, num_basis=2)
    set_num_steps(model, 2)
    model.eval()
    model.save_pretrained(tmp_path)
    config = AutoConfig.from_pretrained(tmp_path)
    assert (config.num_basis, config.num_steps, config.basis) == (2, 2, "piecewise_linear")
    loaded = AutoModelForImageClassification.from_pretrained(tmp_path).eval()
    assert isinstance(loaded, OdeResNetForImageClassification)
    assert sum(p.numel() for p in loaded.parameters()) == sum(p.numel() for p in model.parameters())
    pixels = torch.randn(3, 1, 8, 8)
    with torch.no_grad():
        torch.testing.assert_close(loaded(pixels).logits, model(pixels).logits, atol=0, rtol=0)


def test_statistics_on_their_own_basis_save_and_reload(tmp_path, tiny_ode_resnet_config):
    torch.manual_seed(0)
    model = OdeResNetForImageClassification(tiny_ode_resnet_config(num_basis=4))
    randomize(model)
    model.train()
    model(torch.randn(8, 1, 8, 8))
    change_basis(model, num_basis=2, state_num_basis=4)  # weights compressed, statistics kept
    assert (model.config.num_basis, model.config.state_num_basis) == (2, 4)
    model.eval()
    model.save_pretrained(tmp_path)
    loaded = AutoModelForImageClassification.from_pretrained(tmp_path).eval()
    assert loaded.config.state_num_basis == 4
    assert loaded.ode_resnet.stages[0].ode.rate.bn1.running_var.shape[0] == 4
    assert loaded.ode_resnet.stages[0].ode.rate.conv1.weight.shape[0] == 2
    pixels = torch.randn(3, 1, 8, 8)
    with torch.no_grad():
        torch.testing.assert_close(loaded(pixels).logits, model(pixels).logits, atol=0, rtol=0)
    change_basis(model, num_basis=2)  # the statistics follow the weights again
    assert model.config.state_num_basis is None
    with pytest.raises(ValueError, match="state_num_basis"):
        tiny_ode_resnet_config(state_num_basis=0)


def test_hidden_states_are_each_stage_trajectory(tiny_ode_resnet_config):
    torch.manual_seed(0)
    model = OdeResNetForImageClassification(tiny_ode_resnet_config(num_basis=3, num_steps=2)).eval()
    pixels = torch.randn(2, 1, 8, 8)
    out = model(pixels, output_hidden_states=True)
    hidden = out.hidden_states
    assert len(hidden) == 1 + 2 * (2 + 1)  # stem, then N_T + 1 states per stage
    assert [h.shape[1:] for h in hidden] == [(4, 8, 8)] * 4 + [(6, 4, 4)] * 3
    base = model.ode_resnet
    torch.testing.assert_close(hidden[0], base.stem(pixels))
    torch.testing.assert_close(hidden[1], base.stages[0].stitch(hidden[0]))
    torch.testing.assert_close(hidden[3], base.stages[0](hidden[0]))
    torch.testing.assert_close(hidden[4], base.stages[1].stitch(hidden[3]))
    torch.testing.assert_close(out.logits, model(pixels).logits)
    logits, states = model(pixels, output_hidden_states=True, return_dict=False)
    assert torch.equal(logits, out.logits) and len(states) == len(hidden)


@pytest.mark.filterwarnings("ignore::FutureWarning")  # transformers 5 says activation_checkpointing_*
def test_gradient_checkpointing_keeps_gradients_and_running_statistics(tiny_ode_resnet_config):
    torch.manual_seed(0)
    model = OdeResNetForImageClassification(tiny_ode_resnet_config(num_basis=4, scheme="rk4", basis="piecewise_linear"))
    randomize(model)
    checkpointed = copy.deepcopy(model)
    checkpointed.gradient_checkpointing_enable()
    pixels, labels = torch.randn(6, 1, 8, 8), torch.tensor([0, 1, 2, 0, 1, 2])
    for m in (model, checkpointed):
        m.train()
        m(pixels, labels=labels).loss.backward()
    for (name, p), q in zip(model.named_parameters(), checkpointed.parameters()):
        torch.testing.assert_close(q.grad, p.grad, atol=1e-6, rtol=0, msg=name)
    for (name, b), c in zip(model.named_buffers(), checkpointed.buffers()):
        torch.testing.assert_close(c, b, atol=0, rtol=0, msg=name)


def write_idx(path, array: np.ndarray) -> None:
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    with gzip.open(path, "wb") as handle:
        handle.write(header + array.astype(np.uint8).tobytes())


def make_mnist_like(folder, num_train=96, num_test=48, size=10) -> None:
    """Three classes: a bright left, top or bottom-right square on noise, as MNIST IDX files."""
    rng = np.random.default_rng(0)
    for prefix, count in (("train", num_train), ("t10k", num_test)):
        labels = np.arange(count) % 3
        images = rng.integers(0, 60, size=(count, size, size))
        half = size // 2
        for image, label in zip(images, labels):
            rows, cols = [
                (slice(None), slice(0, half)),
                (slice(0, half), slice(None)),
                (slice(half, None), slice(half, None)),
            ][label]
            image[rows, cols] += 190
        write_idx(folder / f"{prefix}-images-idx3-ubyte.gz", images)
        write_idx(folder / f"{prefix}-labels-idx1-ubyte.gz", labels)


def test_training_end_to_end_refines_saves_and_resumes(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    make_mnist_like(data, num_train=160)
    args = {
        "dataset": str(data),
        "output_dir": str(tmp_path / "run"),
        "preset": "mnist-small",
        "epochs": 2,
        "batch_size": 16,
        "refine_epochs": [1],
        "lr_decay_epochs": [1],
        "scheme": "euler",
        "final_num_basis": 2,
        "validation_size": 20,
    }
    metrics = train(ImageTrainingArguments(**args))
    assert [r["num_basis"] for r in metrics["history"]] == [1, 2]
    assert metrics["history"][1]["learning_rate"] == pytest.approx(0.01)
    assert metrics["num_validation_images"] == 20 and metrics["test"]["num_images"] == 48

    # The preset's network changed since the run started (as cifar10-fast's activation did):
    # the run's weights belong to the old network, so resuming is refused.
    changed = {**PRESETS, "mnist-small": {**PRESETS["mnist-small"], "activation": "gelu"}}
    monkeypatch.setattr("image_models.arguments.PRESETS", changed)
    with pytest.raises(OutputFolderError, match="network of --preset and --config-overrides"):
        train(ImageTrainingArguments(**{**args, "epochs": 3, "resume_from_checkpoint": "latest"}))
    monkeypatch.undo()
    resumed = train(ImageTrainingArguments(**{**args, "epochs": 3, "resume_from_checkpoint": "latest"}))
    assert [r["epoch"] for r in resumed["history"]] == [0, 1, 2]
    assert resumed["history"][2]["num_basis"] == 2
    assert resumed["best"]["accuracy"] > 0.6

    best = tmp_path / "run" / "best"
    model = AutoModelForImageClassification.from_pretrained(best).eval()
    processor = AutoImageProcessor.from_pretrained(best)
    assert isinstance(processor, OdeResNetImageProcessor)
    assert model.config.id2label[2] == "2"
    images = torch.randint(0, 255, (4, 1, 10, 10), dtype=torch.uint8)
    with torch.no_grad():
        assert model(processor.preprocess_tensor(images)).logits.shape == (4, 3)


@pytest.mark.slow
def test_two_process_training_splits_batches_and_counts_every_test_image(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    make_mnist_like(data, num_train=97, num_test=45)  # odd sizes: uneven shards
    command = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--multi_gpu",
        "--num_processes",
        "2",
        str(REPO / "scripts" / "train_image.py"),
        "--dataset",
        str(data),
        "--output-dir",
        str(tmp_path / "run"),
        "--preset",
        "mnist-small",
        "--epochs",
        "2",
        "--refine-epochs",
        "1",
        "--num-basis",
        "2",
        "--validation-size",
        "21",
        "--scheme",
        "euler",
        "--batch-size",
        "16",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    # Its own process group, killed whole on a timeout: accelerate's workers must not outlive the test.
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
        start_new_session=True,
    )
    try:
        _, stderr = process.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail("the two-process run took over 600 s; its process group was killed")
    assert process.returncode == 0, stderr[-3000:]
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert [r["num_basis"] for r in metrics["history"]] == [1, 2]
    assert all(r["num_images"] == 21 for r in metrics["history"])
    best = tmp_path / "run" / "best"
    model = AutoModelForImageClassification.from_pretrained(best)
    processor = AutoImageProcessor.from_pretrained(best)
    _, _, (test_images, test_labels), _ = load_split_tensors(
        ImageTrainingArguments(dataset=str(data), validation_size=21)
    )
    assert len(test_labels) == 45
    # The gathered test accuracy of the run is the accuracy over all 45 test images, once each.
    assert evaluate(model, test_images, test_labels, processor) == metrics["test"]["accuracy"]

    odd = subprocess.run(
        [*command[:-2], "--batch-size", "15", "--output-dir", str(tmp_path / "odd")],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    # accelerate launch reports the failed process (exit 1); the process says why in one line.
    assert odd.returncode != 0 and "error: batch_size: 15 must be divisible" in odd.stderr


@pytest.mark.slow
def test_killed_image_run_resumes_like_an_uninterrupted_one(tmp_path):
    """SIGKILL an image run during its second epoch; the best model still loads, and the
    resumed run ends with the history and best model of an uninterrupted run."""
    import random
    import signal
    import time

    data = tmp_path / "data"
    data.mkdir()
    make_mnist_like(data, num_train=200)
    command = [
        sys.executable,
        str(REPO / "scripts" / "train_image.py"),
        "--dataset",
        str(data),
        "--preset",
        "mnist-small",
        "--epochs",
        "3",
        "--refine-epochs",
        "1",
        "--num-basis",
        "2",
        "--validation-size",
        "24",
        "--scheme",
        "euler",
        "--batch-size",
        "16",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    reference = tmp_path / "reference"
    subprocess.run([*command, "--output-dir", str(reference)], check=True, capture_output=True, env=env, timeout=300)
    output = tmp_path / "killed"
    process = subprocess.Popen(
        [*command, "--output-dir", str(output)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    first = output / "checkpoints" / "step-11" / "trainer_state.json"
    deadline = time.monotonic() + 300
    while not first.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(random.Random(1).uniform(0, 0.5))
    os.killpg(process.pid, signal.SIGKILL)
    assert process.wait() != 0, "the run ended before it could be killed"
    AutoModelForImageClassification.from_pretrained(output / "best")
    resumed = subprocess.run(
        [*command, "--output-dir", str(output), "--resume-from-checkpoint", "latest"],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    expected = json.loads((reference / "metrics.json").read_text())
    got = json.loads((output / "metrics.json").read_text())
    assert got["history"] == expected["history"] and got["test"] == expected["test"]
