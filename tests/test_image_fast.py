"""The fast CIFAR-10 recipe's methods on tiny images: the whitened stem decorrelates the
patches it was fitted to, each image is mirrored every other epoch, a test-time
augmented prediction is the mean over its views, decoupled hyper-parameters decay every
group alike, identity initialisation makes every residual block the identity,
``cifar10-fast`` trains end to end into a folder the image pipeline loads,
``--config-overrides`` changes the preset's network, and ``--flip none`` only translates."""

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torch import nn
from transformers import pipeline

from cont_transformer.modeling_ode_resnet import OdeResNetForImageClassification
from cont_transformer.training.recipes import RECIPES, parse_arguments
from image_models.arguments import ImageTrainingArguments, preset_defaults
from image_models.augmentation import alternating_flip, flip_parities
from image_models.evaluation import evaluate
from image_models.initialization import identity_init_
from image_models.lookahead import Lookahead
from image_models.optimization import build_sgd, is_norm
from image_models.trainer import ImageTrainer, train
from image_models.tta import mean_logits, shift, views_of
from image_models.whitening import image_patches, whiten_conv_


def correlated_images(count=64, size=10, seed=0) -> torch.Tensor:
    """Smooth, channel-correlated images (N, 3, size, size): far from white."""
    generator = torch.Generator().manual_seed(seed)
    base = torch.randn(count, 1, size + 2, size + 2, generator=generator)
    smooth = nn.functional.avg_pool2d(base, 3, stride=1)  # neighbouring pixels correlate
    mix = torch.tensor([[1.0], [0.8], [0.5]])[None, :, :, None]  # channels correlate
    return smooth * mix + 0.1 * torch.randn(count, 3, size, size, generator=generator)


def test_whitened_stem_output_covariance_is_near_identity_on_its_data():
    images = correlated_images()
    conv = nn.Conv2d(3, 24, 2, bias=False)
    before = image_patches(images, (2, 2))
    assert not torch.allclose(torch.cov(before.T), torch.eye(12), atol=0.3)
    whiten_conv_(conv, images, eps=1e-6)
    with torch.no_grad():
        out = conv(images)  # (N, 24, 9, 9)
    features = out.permute(0, 2, 3, 1).reshape(-1, 24).double()
    covariance = torch.cov(features[:, :12].T)
    assert torch.allclose(covariance, torch.eye(12, dtype=covariance.dtype), atol=1e-3)
    assert torch.equal(conv.weight[12:], -conv.weight[:12])  # negated copies for the ReLU


def test_alternating_flip_mirrors_each_image_every_other_epoch():
    images = torch.arange(6 * 2 * 4, dtype=torch.uint8).reshape(6, 1, 2, 4)
    parities = flip_parities(6, seed=3)
    flipped = torch.stack(
        [(alternating_flip(images, parities, epoch) != images).flatten(1).any(1) for epoch in range(4)]
    )  # (epochs, images)
    for epoch in range(3):
        assert torch.equal(flipped[epoch + 1], ~flipped[epoch])
    assert flipped.sum(0).tolist() == [2] * 6
    assert 0 < flipped[0].sum() < 6  # the first epoch's coins differ between images
    assert torch.equal(flip_parities(6, seed=3), parities)  # a function of the seed
    mirrored = alternating_flip(images, torch.ones(6, dtype=torch.bool), epoch=0)
    assert torch.equal(mirrored, images.flip(-1))


@pytest.fixture(scope="module")
def tiny_rgb_model(tiny_ode_resnet_config):
    """``tiny_rgb_model(**overrides)``: the tiny ODE-ResNet over three channels at K = 2, in eval mode."""

    def model(**overrides) -> OdeResNetForImageClassification:
        torch.manual_seed(0)
        config = tiny_ode_resnet_config(num_channels=3, num_basis=2, **overrides)
        return OdeResNetForImageClassification(config).eval()

    return model


def test_tta_prediction_is_the_mean_over_the_views(tiny_rgb_model):
    model = tiny_rgb_model()
    pixels = torch.randn(5, 3, 8, 8)
    views = views_of("flip-translate")
    assert len(views) == 6
    with torch.no_grad():
        by_hand = torch.stack([model(view(pixels)).logits for view in views]).mean(0)
        assert torch.allclose(mean_logits(model, pixels, views), by_hand, atol=1e-6)
        flips = (model(pixels).logits + model(pixels.flip(-1)).logits) / 2
        assert torch.allclose(mean_logits(model, pixels, views_of("flip")), flips, atol=1e-6)
    moved = shift(1, 1)(pixels)  # content one pixel down and right
    assert torch.equal(moved[..., 1:, 1:], pixels[..., :-1, :-1])


class _Identity:
    """A processor that hands uint8 images over as floats."""

    def preprocess_tensor(self, images):
        return images.float() / 255


def test_tta_accuracy_scores_the_mean_of_the_views(tiny_rgb_model):
    model = tiny_rgb_model()
    images = torch.randint(0, 256, (12, 3, 8, 8), dtype=torch.uint8)
    with torch.no_grad():
        logits = mean_logits(model, images.float() / 255, views_of("flip"))
    labels = logits.argmax(-1)
    labels[:4] = (labels[:4] + 1) % 3  # a third wrong
    accuracy = evaluate(model, images, labels, _Identity(), batch_size=5, views="flip")
    assert accuracy == pytest.approx(8 / 12)


def test_decoupled_groups_decay_alike_and_biases_learn_faster(tiny_rgb_model):
    model = tiny_rgb_model()
    optimizer = build_sgd(
        model, learning_rate=2.0, weight_decay=0.01, momentum=0.85, nesterov=True, bias_lr_scale=64.0, decoupled=True
    )
    biases, rest = optimizer.param_groups
    assert biases["lr_scale"] == 64.0 and rest["lr_scale"] == 1.0
    # decay per step = rate x group decay: the same for both groups
    assert 2.0 * 64.0 * biases["weight_decay"] == pytest.approx(2.0 * rest["weight_decay"])
    norm_biases = {id(m.bias) for m in model.modules() if is_norm(m)}
    assert {id(p) for p in biases["params"]} == norm_biases
    plain = build_sgd(model, learning_rate=0.1, weight_decay=5e-4, momentum=0.9)
    assert len(plain.param_groups) == 1


def test_identity_init_makes_every_ode_block_the_identity(tiny_rgb_model):
    model = tiny_rgb_model(stage_channels=[4, 4], stage_strides=[1, 1])
    identity_init_(model)
    pixels = torch.randn(2, 4, 8, 8)
    for stage in model.ode_resnet.stages:
        with torch.no_grad():
            assert torch.allclose(stage.ode(pixels), pixels)
    conv = model.ode_resnet.stages[1].stitch.conv1.weight  # 4 -> 4: the Dirac filters
    assert torch.equal(conv[:, :, 1, 1], torch.eye(4)) and conv[:, :, 0].abs().sum() == 0


def test_pool_stitch_convolves_at_full_resolution_then_pools_and_starts_as_identity(
    tiny_ode_resnet_config, tiny_rgb_model
):
    model = tiny_rgb_model(stage_channels=[4, 6], stage_strides=[1, 2], stitch="pool")
    identity_init_(model)
    model.eval()
    stitch = model.ode_resnet.stages[1].stitch  # 4 -> 6 channels, 8x8 -> 4x4
    x = torch.randn(2, 4, 8, 8)
    with torch.no_grad():
        out = stitch(x)
        convolved = stitch.conv(torch.relu(x))  # at the input's 8x8
        expected = stitch.bn(nn.functional.max_pool2d(convolved, 2))
    assert out.shape == (2, 6, 4, 4) and torch.allclose(out, expected)
    assert torch.allclose(convolved[:, :4], torch.relu(x), atol=1e-6)  # Dirac: the first 4 copy
    assert model(torch.randn(2, 3, 8, 8)).logits.shape == (2, 3)
    with pytest.raises(ValueError, match="stitch"):
        tiny_ode_resnet_config(stitch="strided")


def test_gelu_and_max_pooling_change_the_network_where_configured_and_survive_reloading(
    tmp_path, tiny_ode_resnet_config, tiny_rgb_model
):
    shape = {"stage_channels": [4, 6], "stage_strides": [1, 2], "stitch": "pool"}
    relu = tiny_rgb_model(**shape)
    gelu = tiny_rgb_model(**shape, activation="gelu", pooling="max")
    gelu.load_state_dict(relu.state_dict())  # the same weights: only the two choices differ
    x, h = torch.randn(2, 3, 8, 8), torch.randn(2, 4, 8, 8)
    with torch.no_grad():
        stitch = gelu.ode_resnet.stages[1].stitch
        expected = stitch.bn(nn.functional.max_pool2d(stitch.conv(nn.functional.gelu(h)), 2))
        assert torch.allclose(stitch(h), expected)
        features = gelu.ode_resnet(x)
        assert (features.last_hidden_state < 0).any()  # after the final BN, GELU lets negatives through
        assert torch.allclose(features.pooler_output, features.last_hidden_state.amax((2, 3)))
        assert not torch.allclose(gelu(x).logits, relu(x).logits)
    gelu.save_pretrained(tmp_path)
    reloaded = OdeResNetForImageClassification.from_pretrained(tmp_path).eval()
    assert (reloaded.config.activation, reloaded.config.pooling) == ("gelu", "max")
    with torch.no_grad():
        assert torch.allclose(reloaded(x).logits, gelu(x).logits)
    for field, value in (("activation", "tanh"), ("pooling", "sum")):
        with pytest.raises(ValueError, match=field):
            tiny_ode_resnet_config(**{field: value})


def test_group_stitch_is_airbench_s_conv_group_and_a_one_convolution_rate_halves_the_rate(
    tiny_ode_resnet_config, tiny_rgb_model
):
    model = tiny_rgb_model(stage_channels=[4, 6], stage_strides=[1, 2], stitch="group", rate_convolutions=1)
    stitch, ode = model.ode_resnet.stages[1].stitch, model.ode_resnet.stages[1].ode
    h = torch.randn(2, 4, 8, 8)
    with torch.no_grad():
        first = torch.relu(stitch.bn(nn.functional.max_pool2d(stitch.conv(h), 2)))
        assert torch.allclose(stitch(h), torch.relu(stitch.bn2(stitch.conv2(first))))
    assert stitch(h).shape == (2, 6, 4, 4)
    convolutions = [name for name, _ in ode.named_coefficients() if "conv" in name]
    assert len(convolutions) == 1  # BN -> ReLU -> Conv3x3 once
    two = tiny_rgb_model(stage_channels=[4, 6], stage_strides=[1, 2], stitch="group")
    assert len([n for n, _ in two.ode_resnet.stages[1].ode.named_coefficients() if "conv" in n]) == 2
    assert model(torch.randn(2, 3, 8, 8)).logits.shape == (2, 3)
    with pytest.raises(ValueError, match="rate_convolutions"):
        tiny_ode_resnet_config(rate_convolutions=3)


def test_lookahead_moves_the_slow_copy_and_hands_it_back():
    model = nn.Linear(2, 1)
    lookahead = Lookahead(model)
    start = model.weight.detach().clone()
    with torch.no_grad():
        model.weight.add_(1.0)
    lookahead.sync(model, decay=0.75)
    assert torch.allclose(model.weight, start + 0.25)
    with torch.no_grad():
        model.weight.add_(1.0)
    lookahead.sync(model, decay=1.0)  # the last step: the slow weights win
    assert torch.allclose(model.weight, start + 0.25)


def make_tiny_cifar(folder: Path, per_class=(12, 4), size=12) -> None:
    """train/test folders of three classes told apart by their dominant colour."""
    rng = np.random.default_rng(0)
    for split, count in zip(("train", "test"), per_class):
        for label in range(3):
            (folder / split / f"c{label}").mkdir(parents=True)
            for index in range(count):
                pixels = rng.integers(0, 90, (size, size, 3), dtype=np.uint8)
                pixels[..., label] += 150
                Image.fromarray(pixels).save(folder / split / f"c{label}" / f"{index}.png")


def test_cifar10_fast_trains_end_to_end_and_the_pipeline_loads_it(tmp_path):
    make_tiny_cifar(tmp_path / "data")
    flags = [
        str(RECIPES / "cifar10_fast.json"),
        "--dataset",
        str(tmp_path / "data"),
        "--output-dir",
        str(tmp_path / "run"),
        "--batch-size",
        "8",
        "--epochs",
        "3",
        "--refine-epochs",
        "1",
        "2",
        "--validation-size",
        "6",
    ]
    args, _ = parse_arguments(ImageTrainingArguments, flags, preset_defaults=preset_defaults)
    assert args.whiten_stem and args.flip == "alternating" and args.mixed_precision == "bf16"
    metrics = train(args)
    assert [r["num_basis"] for r in metrics["history"]] == [1, 2, 4]
    assert metrics["test"]["num_images"] == 12 and metrics["test_tta"]["views"] == "flip-translate"
    assert {row["model"] for row in metrics["compression"]} >= {"trained"}
    best = tmp_path / "run" / "best"
    model = OdeResNetForImageClassification.from_pretrained(best)
    assert model.config.stem_kernel_size == 2 and model.config.logit_scale == 1.0
    assert model.config.stitch == "pool" and model.config.activation == "gelu"
    classifier = pipeline("image-classification", model=str(best))
    image = Image.open(tmp_path / "data" / "test" / "c1" / "0.png")
    predictions = classifier(image, top_k=3)
    assert {p["label"] for p in predictions} == {"c0", "c1", "c2"}
    assert "test-time augmentation" in (best / "README.md").read_text()


def test_max_steps_scales_the_epochs_schedule_onto_a_short_run(tmp_path):
    """--max-steps, as the tagger's: the run is that many steps, and the epochs' schedule
    (refinements, evaluations, the triangle) is scaled onto them, so it ends at the final K."""
    make_tiny_cifar(tmp_path / "data")
    flags = [
        str(RECIPES / "cifar10_fast.json"),
        *("--dataset", str(tmp_path / "data"), "--output-dir", str(tmp_path / "run")),
        *("--batch-size", "8", "--validation-size", "6", "--compression-report", "false"),
        *("--epochs", "3", "--refine-epochs", "1", "2", "--num-train-epochs", "5", "--max-steps", "4"),
    ]
    args, _ = parse_arguments(ImageTrainingArguments, flags, preset_defaults=preset_defaults)
    assert (args.max_steps, args.epochs, args.num_train_epochs) == (4, 3, None)  # --max-steps wins, as in transformers
    trainer = ImageTrainer(args)
    assert trainer.steps_per_epoch == 3  # 30 training images in batches of 8: 9 steps without --max-steps
    plan = trainer.plan
    assert (plan.max_steps, plan.eval_steps, plan.schedule.refine_steps) == (4, 1, (1, 3))  # epochs 1, 2 of 4/3 steps
    metrics = trainer.run()
    assert [(r["step"], r["num_basis"]) for r in metrics["history"]] == [(1, 1), (2, 2), (3, 2), (4, 4)]
    with pytest.raises(ValueError, match="max_steps: must be an integer >= 1"):
        ImageTrainingArguments(dataset=str(tmp_path / "data"), max_steps=0)
    assert ImageTrainingArguments(dataset=str(tmp_path / "data")).max_steps is None  # --epochs passes


def test_config_overrides_replace_the_preset_s_network_and_bad_ones_name_the_flag(tmp_path):
    make_tiny_cifar(tmp_path / "data")
    flags = [
        str(RECIPES / "cifar10_fast.json"),
        "--dataset",
        str(tmp_path / "data"),
        "--output-dir",
        str(tmp_path / "run"),
        "--batch-size",
        "8",
        "--epochs",
        "1",
        "--refine-epochs",
        "1",
        "--validation-size",
        "6",
        "--compression-report",
        "false",
        "--config-overrides",
        '{"stitch": "residual", "stage_channels": [8, 12, 16]}',
    ]
    args, _ = parse_arguments(ImageTrainingArguments, flags, preset_defaults=preset_defaults)
    train(args)
    config = OdeResNetForImageClassification.from_pretrained(tmp_path / "run" / "best").config
    assert (config.stitch, config.stage_channels) == ("residual", [8, 12, 16])
    assert config.stem_channels == 24  # the rest stays the preset's
    base = {"dataset": str(tmp_path / "data"), "preset": "cifar10-fast"}
    for text, message in [
        ('{"stitch": "strided"}', "config_overrides: stitch: choose one of"),
        ('{"num_basis": 2}', "'num_basis' has its own flag"),
        ('{"dtype": "float16"}', "'dtype' is not a field"),
        ('{"stage_channels": [8, 8]}', "config_overrides: stage_strides: must have one stride per stage"),
        ('["stitch"]', "must be a JSON object"),
        ("{stitch: pool}", "config_overrides: not JSON"),
    ]:
        with pytest.raises(ValueError, match=message):
            ImageTrainingArguments(**base, config_overrides=text)


@pytest.mark.parametrize(("flip", "mirrored"), [("none", False), ("random", True)])
def test_flip_none_translates_without_mirroring(tmp_path, flip, mirrored):
    make_tiny_cifar(tmp_path / "data")
    args = ImageTrainingArguments(
        dataset=str(tmp_path / "data"),
        preset="cifar10-fast",
        output_dir=str(tmp_path / "run"),
        batch_size=30,
        validation_size=6,
        augment=True,
        translate=0,
        flip=flip,
    )
    trainer = ImageTrainer(args)
    images, _ = trainer.train_split
    batch = next(trainer.epoch_batches(epoch=0, skip=0))["pixel_values"]
    plain = trainer.processor.preprocess_tensor(images)  # translate 0: only a flip can change them
    as_is = [any(torch.equal(image, original) for original in plain) for image in batch]
    assert all(as_is) != mirrored
