"""Image data: IDX, image-folder, archive, CIFAR-batch and Hub loading; augmentation; processor.

Every file these tests read is written by the test itself, except the real MNIST
checks, which run only when `../shared/data/mnist` (or `$MNIST_DIR`) is present.
"""

import gzip
import os
import pickle
import tarfile
from pathlib import Path

import datasets
import numpy as np
import pytest
import torch
from PIL import Image
from transformers import AutoImageProcessor

from cont_transformer import OdeResNetConfig
from cont_transformer.image_processing_ode_resnet import (
    NORMALIZATION_STATS,
    OdeResNetImageProcessor,
)
from image_models.augmentation import augment_cifar, random_crop, random_horizontal_flip
from image_models.data import (
    extract_archive,
    load_image_dataset,
    normalize_columns,
    read_idx,
    to_tensors,
)

REAL_MNIST = Path(os.environ.get("MNIST_DIR", Path(__file__).resolve().parents[2] / "shared" / "data" / "mnist"))


def write_idx(path: Path, array: np.ndarray, compress: bool = False) -> None:
    codes = {np.dtype(np.uint8): 0x08, np.dtype(">i4"): 0x0C}
    header = bytes([0, 0, codes[array.dtype], array.ndim])
    header += np.array(array.shape, dtype=">u4").tobytes()
    raw = header + array.tobytes()
    path.write_bytes(gzip.compress(raw) if compress else raw)


def make_mnist_folder(folder: Path, rng: np.random.Generator) -> dict[str, np.ndarray]:
    arrays = {}
    for prefix, count, compress in (("train", 12, True), ("t10k", 5, False)):
        images = rng.integers(0, 256, (count, 6, 5), dtype=np.uint8)
        labels = rng.integers(0, 10, count, dtype=np.uint8)
        labels[0] = 9  # the class count comes from the largest label
        suffix = ".gz" if compress else ""
        write_idx(folder / f"{prefix}-images-idx3-ubyte{suffix}", images, compress)
        write_idx(folder / f"{prefix}-labels-idx1-ubyte{suffix}", labels, compress)
        arrays[prefix] = (images, labels)
    return arrays


def make_image_folder(
    folder: Path, rng: np.random.Generator, suffix: str = ".png", mode: str = "RGB"
) -> dict[str, list[tuple[np.ndarray, int]]]:
    """train/test folders with classes 'cat' and 'dog' (sorted: cat=0, dog=1)."""
    shape = (8, 7, 3) if mode == "RGB" else (8, 7)
    written: dict[str, list[tuple[np.ndarray, int]]] = {"train": [], "test": []}
    for split, per_class in (("train", 3), ("test", 2)):
        for label, name in enumerate(["cat", "dog"]):
            (folder / split / name).mkdir(parents=True)
            for index in range(per_class):
                pixels = rng.integers(0, 256, shape, dtype=np.uint8)
                Image.fromarray(pixels, mode).save(folder / split / name / f"{index:04d}{suffix}")
                written[split].append((pixels, label))
    return written


def cifar_rows(images: np.ndarray) -> np.ndarray:
    """(N, 32, 32, 3) -> the CIFAR row layout: all red, then green, then blue, row-major."""
    return images.transpose(0, 3, 1, 2).reshape(len(images), -1)


def dump(path: Path, obj: object) -> None:
    with open(path, "wb") as handle:
        pickle.dump(obj, handle)


# --- IDX ---------------------------------------------------------------------------------


@pytest.mark.parametrize("compress", [False, True])
def test_read_idx_round_trip(tmp_path, compress):
    array = np.arange(60, dtype=np.uint8).reshape(3, 4, 5)
    write_idx(tmp_path / "a.idx", array, compress)
    np.testing.assert_array_equal(read_idx(tmp_path / "a.idx"), array)
    wide = np.array([[1, -2], [70000, 3]], dtype=">i4")
    write_idx(tmp_path / "b.idx", wide, compress)
    assert read_idx(tmp_path / "b.idx").tolist() == wide.tolist()


def test_read_idx_rejects_bad_files_naming_them(tmp_path):
    bad_magic = tmp_path / "bad-magic-idx3-ubyte"
    bad_magic.write_bytes(b"\x12\x34\x08\x01" + b"\x00" * 8)
    with pytest.raises(ValueError, match="bad-magic-idx3-ubyte.*magic"):
        read_idx(bad_magic)
    truncated = tmp_path / "truncated-idx3-ubyte"
    write_idx(truncated, np.zeros((4, 3, 3), dtype=np.uint8))
    truncated.write_bytes(truncated.read_bytes()[:-5])
    with pytest.raises(ValueError, match="truncated-idx3-ubyte.*36 data bytes, file has 31"):
        read_idx(truncated)
    broken_gzip = tmp_path / "broken-idx3-ubyte.gz"
    write_idx(broken_gzip, np.zeros((4, 3, 3), dtype=np.uint8), compress=True)
    broken_gzip.write_bytes(broken_gzip.read_bytes()[:-12])
    with pytest.raises(ValueError, match="broken-idx3-ubyte.gz"):
        read_idx(broken_gzip)


def test_mnist_folder_loads_both_splits(tmp_path):
    arrays = make_mnist_folder(tmp_path, np.random.default_rng(0))
    dataset = load_image_dataset(tmp_path)
    assert set(dataset) == {"train", "test"}
    assert dataset["train"].features["label"].names == [str(i) for i in range(10)]
    for split, prefix in (("train", "train"), ("test", "t10k")):
        images, labels = to_tensors(dataset[split])
        expected_images, expected_labels = arrays[prefix]
        assert images.dtype == torch.uint8 and labels.dtype == torch.int64
        assert images.shape == (len(expected_images), 1, 6, 5)
        np.testing.assert_array_equal(images[:, 0].numpy(), expected_images)
        np.testing.assert_array_equal(labels.numpy(), expected_labels)
    first = dataset["train"].with_format("numpy")[0]
    assert first["image"].shape == (6, 5, 1) and first["label"] == arrays["train"][1][0]


def test_mnist_folder_reports_mismatched_and_missing_files(tmp_path):
    make_mnist_folder(tmp_path, np.random.default_rng(0))
    write_idx(tmp_path / "t10k-labels-idx1-ubyte", np.zeros(4, dtype=np.uint8))
    with pytest.raises(ValueError, match="t10k-labels-idx1-ubyte.*expected 5 labels"):
        load_image_dataset(tmp_path)
    (tmp_path / "t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(FileNotFoundError, match="t10k-labels-idx1-ubyte"):
        load_image_dataset(tmp_path)


# --- image folders and archives ----------------------------------------------------------


def test_image_folder_png_is_lossless_and_labelled_by_sorted_class(tmp_path):
    written = make_image_folder(tmp_path, np.random.default_rng(1))
    dataset = load_image_dataset(tmp_path)
    assert dataset["train"].features["label"].names == ["cat", "dog"]
    for split in ("train", "test"):
        images, labels = to_tensors(dataset[split])
        assert images.shape == (len(written[split]), 3, 8, 7)
        np.testing.assert_array_equal(images.permute(0, 2, 3, 1).numpy(), np.stack([p for p, _ in written[split]]))
        assert labels.tolist() == [label for _, label in written[split]]


def test_image_folder_decodes_only_the_requested_splits(tmp_path):
    make_image_folder(tmp_path, np.random.default_rng(1))
    full = load_image_dataset(tmp_path)
    (tmp_path / "train" / "cat" / "broken.png").write_bytes(b"not an image")
    with pytest.raises(Exception, match="broken.png"):
        load_image_dataset(tmp_path)
    test_only = load_image_dataset(tmp_path, splits=("test",))  # the broken file is not read
    assert list(test_only) == ["test"]
    assert test_only["test"].features["label"].names == ["cat", "dog"]
    for got, expected in zip(to_tensors(test_only["test"]), to_tensors(full["test"])):
        assert torch.equal(got, expected)
    with pytest.raises(ValueError, match="^splits:"):
        load_image_dataset(tmp_path, splits=("validation",))


def test_image_folder_jpeg_and_grayscale(tmp_path):
    make_image_folder(tmp_path / "rgb", np.random.default_rng(2), suffix=".jpg")
    images, labels = to_tensors(load_image_dataset(tmp_path / "rgb")["train"])
    assert images.shape == (6, 3, 8, 7) and labels.tolist() == [0, 0, 0, 1, 1, 1]
    written = make_image_folder(tmp_path / "gray", np.random.default_rng(3), mode="L")
    images, _ = to_tensors(load_image_dataset(tmp_path / "gray")["test"])
    assert images.shape == (4, 1, 8, 7)
    np.testing.assert_array_equal(images[:, 0].numpy(), np.stack([p for p, _ in written["test"]]))


def test_image_folder_rejects_unknown_class_and_mixed_sizes(tmp_path):
    make_image_folder(tmp_path / "a", np.random.default_rng(4))
    (tmp_path / "a" / "test" / "emu").mkdir()
    with pytest.raises(ValueError, match="emu"):
        load_image_dataset(tmp_path / "a")
    make_image_folder(tmp_path / "b", np.random.default_rng(4))
    odd = tmp_path / "b" / "train" / "dog" / "9999.png"
    Image.new("RGB", (9, 9)).save(odd)
    with pytest.raises(ValueError, match="9999.png"):
        load_image_dataset(tmp_path / "b")


def test_archive_is_extracted_once_and_loads_like_the_folder(tmp_path):
    make_image_folder(tmp_path / "data" / "cifar-tiny", np.random.default_rng(5))
    archive = tmp_path / "cifar-tiny.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "data" / "cifar-tiny", arcname="cifar-tiny")  # one folder down
    cache = tmp_path / "cache"
    from_archive = load_image_dataset(archive, cache_dir=cache)
    extracted = extract_archive(archive, cache_dir=cache)
    assert [p.name for p in cache.iterdir()] == [extracted.name]
    marker = extracted / "marker"
    marker.touch()
    load_image_dataset(archive, cache_dir=cache)
    assert marker.exists() and len(list(cache.iterdir())) == 1
    from_folder = load_image_dataset(tmp_path / "data" / "cifar-tiny")
    for split in ("train", "test"):
        for got, expected in zip(to_tensors(from_archive[split]), to_tensors(from_folder[split])):
            assert torch.equal(got, expected)


def test_non_archive_file_and_missing_local_path_are_errors(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ValueError, match="notes.txt"):
        load_image_dataset(tmp_path / "notes.txt")
    with pytest.raises(FileNotFoundError):
        load_image_dataset(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no MNIST IDX files"):
        load_image_dataset(tmp_path / "empty")


# --- CIFAR python batches ----------------------------------------------------------------


def test_cifar10_batches_keep_channel_layout_and_names(tmp_path):
    rng = np.random.default_rng(6)
    images = rng.integers(0, 256, (12, 32, 32, 3), dtype=np.uint8)
    labels = rng.integers(0, 10, 12).tolist()
    for i in range(5):
        rows = slice(2 * i, 2 * i + 2)
        dump(
            tmp_path / f"data_batch_{i + 1}",
            {b"data": cifar_rows(images[rows]), b"labels": labels[rows]},
        )
    dump(tmp_path / "test_batch", {b"data": cifar_rows(images[10:]), b"labels": labels[10:]})
    names = [
        b"airplane",
        b"automobile",
        b"bird",
        b"cat",
        b"deer",
        b"dog",
        b"frog",
        b"horse",
        b"ship",
        b"truck",
    ]
    dump(tmp_path / "batches.meta", {b"label_names": names})
    dataset = load_image_dataset(tmp_path)
    assert dataset["train"].features["label"].names[:2] == ["airplane", "automobile"]
    train_images, train_labels = to_tensors(dataset["train"])
    assert train_images.shape == (10, 3, 32, 32)
    np.testing.assert_array_equal(train_images.permute(0, 2, 3, 1).numpy(), images[:10])
    assert train_labels.tolist() == labels[:10]
    test_images, _ = to_tensors(dataset["test"])
    np.testing.assert_array_equal(test_images.permute(0, 2, 3, 1).numpy(), images[10:])


def test_cifar100_uses_fine_labels(tmp_path):
    rng = np.random.default_rng(7)
    for split, count in (("train", 4), ("test", 2)):
        data = rng.integers(0, 256, (count, 3072), dtype=np.uint8)
        dump(
            tmp_path / split,
            {b"data": data, b"fine_labels": [99, 5, 1, 0][:count], b"coarse_labels": [0] * count},
        )
    dump(tmp_path / "meta", {b"fine_label_names": [f"c{i}".encode() for i in range(100)]})
    dataset = load_image_dataset(tmp_path)
    assert dataset["train"].features["label"].num_classes == 100
    assert to_tensors(dataset["train"])[1].tolist() == [99, 5, 1, 0]


def test_cifar_pickle_with_foreign_globals_is_refused(tmp_path):
    dump(tmp_path / "data_batch_1", {b"data": Path("x"), b"labels": []})
    with pytest.raises(ValueError, match="data_batch_1.*refuses global"):
        load_image_dataset(tmp_path)


# --- Hub datasets and column normalisation -----------------------------------------------


def hub_like(num_classes: int = 3) -> datasets.DatasetDict:
    """A DatasetDict shaped like uoft-cs/cifar100: `img`, `fine_label`, `coarse_label`."""
    rng = np.random.default_rng(8)
    features = datasets.Features(
        {
            "img": datasets.Image(),
            "fine_label": datasets.ClassLabel(names=[f"f{i}" for i in range(num_classes)]),
            "coarse_label": datasets.ClassLabel(names=["x"]),
        }
    )
    splits = {}
    for split, count in (("train", 4), ("validation", 2)):
        pixels = rng.integers(0, 256, (count, 5, 4, 3), dtype=np.uint8)
        splits[split] = datasets.Dataset.from_dict(
            {
                "img": [Image.fromarray(p) for p in pixels],
                "fine_label": [i % num_classes for i in range(count)],
                "coarse_label": [0] * count,
            },
            features=features,
        )
    return datasets.DatasetDict(splits)


def test_normalize_columns_renames_and_decodes_pil(tmp_path):
    raw = hub_like()
    dataset = normalize_columns(raw)
    assert set(dataset) == {"train", "test"}
    assert dataset["train"].column_names == ["image", "label"]
    assert dataset["test"].features["label"].names == ["f0", "f1", "f2"]
    images, labels = to_tensors(dataset["test"])
    expected = np.stack([np.asarray(example["img"]) for example in raw["validation"]])
    np.testing.assert_array_equal(images.permute(0, 2, 3, 1).numpy(), expected)
    assert labels.tolist() == [0, 1]


def test_normalize_columns_encodes_plain_integer_labels():
    raw = datasets.DatasetDict(
        {
            split: datasets.Dataset.from_dict(
                {"image": [Image.new("L", (3, 3))] * 3, "label": values},
                features=datasets.Features({"image": datasets.Image(), "label": datasets.Value("int64")}),
            )
            for split, values in (("train", [10, 2, 10]), ("test", [2, 2, 10]))
        }
    )
    dataset = normalize_columns(raw)
    assert dataset["train"].features["label"].names == ["2", "10"]
    assert dataset["test"]["label"][:] == [0, 0, 1]
    assert to_tensors(dataset["train"])[0].shape == (3, 1, 3, 3)


def test_hub_names_go_to_load_dataset(monkeypatch, tmp_path):
    calls = []

    def fake_load_dataset(name, cache_dir=None):
        calls.append((name, cache_dir))
        return hub_like()

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    dataset = load_image_dataset("uoft-cs/cifar100", cache_dir=tmp_path)
    assert calls == [("uoft-cs/cifar100", str(tmp_path))]
    assert dataset["train"].column_names == ["image", "label"]


def test_to_tensors_follows_shuffle_and_select(tmp_path):
    make_mnist_folder(tmp_path, np.random.default_rng(9))
    train = load_image_dataset(tmp_path)["train"]
    images, labels = to_tensors(train)
    order = [7, 2, 11, 0]
    picked_images, picked_labels = to_tensors(train.select(order))
    assert torch.equal(picked_images, images[order]) and torch.equal(picked_labels, labels[order])
    shuffled = train.shuffle(seed=0)
    permutation = shuffled._indices.column(0).to_numpy().astype(np.int64)
    assert torch.equal(to_tensors(shuffled)[0], images[torch.from_numpy(permutation)])


# --- augmentation ------------------------------------------------------------------------


def test_augmentation_keeps_shape_dtype_and_is_seeded():
    images = torch.randint(0, 256, (16, 3, 32, 32), dtype=torch.uint8)
    first = augment_cifar(images, torch.Generator().manual_seed(0))
    again = augment_cifar(images, torch.Generator().manual_seed(0))
    other = augment_cifar(images, torch.Generator().manual_seed(1))
    assert first.shape == images.shape and first.dtype == torch.uint8
    assert torch.equal(first, again) and not torch.equal(first, other)
    floats = augment_cifar(images.float(), torch.Generator().manual_seed(0))
    assert floats.dtype == torch.float32 and torch.equal(floats, first.float())


def test_flip_flips_exactly_the_chosen_images():
    images = torch.arange(2 * 1 * 2 * 3, dtype=torch.float32).reshape(2, 1, 2, 3)
    generator = torch.Generator()
    assert torch.equal(random_horizontal_flip(images, generator, probability=1.0), images.flip(-1))
    assert torch.equal(random_horizontal_flip(images, generator, probability=0.0), images)
    batch = torch.rand(64, 3, 4, 4)
    flipped = random_horizontal_flip(batch, torch.Generator().manual_seed(3))
    was_flipped = [torch.equal(f, b.flip(-1)) for f, b in zip(flipped, batch)]
    kept = [torch.equal(f, b) for f, b in zip(flipped, batch)]
    assert all(a != b for a, b in zip(was_flipped, kept))
    assert 10 < sum(was_flipped) < 54


def test_crop_is_a_shifted_window_of_the_zero_padded_image():
    images = torch.randint(1, 256, (32, 2, 6, 5), dtype=torch.uint8)
    assert torch.equal(random_crop(images, torch.Generator(), padding=0), images)
    cropped = random_crop(images, torch.Generator().manual_seed(4), padding=2)
    padded = torch.nn.functional.pad(images, (2, 2, 2, 2))
    offsets = set()
    for image, window in zip(padded, cropped):
        matches = [
            (dy, dx) for dy in range(5) for dx in range(5) if torch.equal(image[:, dy : dy + 6, dx : dx + 5], window)
        ]
        assert matches
        offsets.add(matches[0])
    assert len(offsets) > 5  # offsets differ from image to image


# --- image processor ---------------------------------------------------------------------


def test_processor_normalises_pil_numpy_and_batches():
    processor = OdeResNetImageProcessor.for_dataset("cifar10")
    mean, std = (np.array(v, dtype=np.float32) for v in NORMALIZATION_STATS["cifar10"])
    pixels = np.full((6, 5, 3), 51, dtype=np.uint8)
    expected = ((0.2 - mean) / std)[:, None, None] * np.ones((3, 6, 5), np.float32)
    for images in (Image.fromarray(pixels), pixels, [pixels, pixels]):
        out = processor(images, return_tensors="pt")["pixel_values"]
        assert out.shape[1:] == (3, 6, 5) and out.dtype == torch.float32
        np.testing.assert_allclose(out[0].numpy(), expected, rtol=1e-5)
    batch = torch.randint(0, 256, (3, 3, 4, 5), dtype=torch.uint8)
    out = processor(batch, return_tensors="pt")["pixel_values"]
    assert out.shape == (3, 3, 4, 5)
    torch.testing.assert_close(processor.preprocess_tensor(batch), out)


def test_processor_defaults_to_mnist_grayscale():
    processor = OdeResNetImageProcessor()
    out = processor(Image.new("L", (28, 28), color=255), return_tensors="pt")["pixel_values"]
    assert out.shape == (1, 1, 28, 28)
    torch.testing.assert_close(out, torch.full_like(out, (1 - 0.1307) / 0.3081))
    with pytest.raises(ValueError, match="channels"):
        processor.preprocess_tensor(torch.zeros(1, 3, 2, 2))
    with pytest.raises(ValueError, match="imagenet"):
        OdeResNetImageProcessor.for_dataset("imagenet")


def test_processor_round_trips_through_save_pretrained(tmp_path):
    processor = OdeResNetImageProcessor.for_dataset("cifar100")
    processor.save_pretrained(tmp_path)
    loaded = OdeResNetImageProcessor.from_pretrained(tmp_path)
    assert loaded.to_dict() == processor.to_dict()
    assert tuple(loaded.image_std) == NORMALIZATION_STATS["cifar100"][1]
    # AutoImageProcessor finds the class through the model's config, saved beside it.
    OdeResNetConfig.from_preset("cifar10-small", num_labels=100).save_pretrained(tmp_path)
    auto = AutoImageProcessor.from_pretrained(tmp_path)
    batch = torch.randint(0, 256, (2, 3, 4, 4), dtype=torch.uint8)
    torch.testing.assert_close(auto(batch, return_tensors="pt")["pixel_values"], processor.preprocess_tensor(batch))


def test_processor_converts_images_to_the_model_channels():
    rng = np.random.default_rng(0)
    colour = Image.fromarray(rng.integers(0, 256, (5, 6, 3), dtype=np.uint8))
    grey = colour.convert("L")
    mnist = OdeResNetImageProcessor.for_dataset("mnist")
    assert mnist.num_channels == 1 and OdeResNetImageProcessor().num_channels is None

    def pixels(processor, image):
        return processor(image, return_tensors="pt")["pixel_values"]

    # What the image pipeline does: every image to RGB. A grey image survives it exactly.
    torch.testing.assert_close(pixels(mnist, grey.convert("RGB")), pixels(mnist, grey), atol=0, rtol=0)
    assert pixels(mnist, colour).shape == (1, 1, 5, 6)
    torch.testing.assert_close(pixels(mnist, colour), pixels(mnist, grey), atol=0, rtol=0)  # luma, as PIL
    cifar = OdeResNetImageProcessor.for_dataset("cifar10")
    torch.testing.assert_close(pixels(cifar, grey), pixels(cifar, grey.convert("RGB")), atol=0, rtol=0)
    torch.testing.assert_close(pixels(cifar, colour.convert("RGBA")), pixels(cifar, colour), atol=0, rtol=0)


# --- real MNIST (only when present) ------------------------------------------------------


@pytest.mark.skipif(not REAL_MNIST.is_dir(), reason="real MNIST files not present")
def test_real_mnist():
    dataset = load_image_dataset(REAL_MNIST)
    train_images, train_labels = to_tensors(dataset["train"])
    test_images, test_labels = to_tensors(dataset["test"])
    assert train_images.shape == (60000, 1, 28, 28) and test_images.shape == (10000, 1, 28, 28)
    assert train_labels.bincount().tolist() == [
        5923,
        6742,
        5958,
        6131,
        5842,
        5421,
        5918,
        6265,
        5851,
        5949,
    ]
    assert test_labels.unique().tolist() == list(range(10))
    mean, std = NORMALIZATION_STATS["mnist"]
    pixels = train_images.float() / 255
    assert pixels.mean().item() == pytest.approx(mean[0], abs=1e-3)
    assert pixels.std().item() == pytest.approx(std[0], abs=1e-3)


def test_image_folder_decodes_as_rgb_when_any_image_is_colour(tmp_path):
    make_image_folder(tmp_path, np.random.default_rng(4), mode="L")
    # A colour image sorted after grayscale ones: everything decodes as RGB, none is lost.
    Image.fromarray(np.full((8, 7, 3), 200, np.uint8), "RGB").save(tmp_path / "train" / "dog" / "9999.png")
    images, labels = to_tensors(load_image_dataset(tmp_path)["train"])
    assert images.shape == (7, 3, 8, 7) and labels.tolist() == [0, 0, 0, 1, 1, 1, 1]
    assert images[-1].eq(200).all() and (images[0, 0] == images[0, 1]).all()


def test_an_empty_class_folder_is_an_error(tmp_path):
    make_image_folder(tmp_path, np.random.default_rng(5))
    (tmp_path / "train" / "empty").mkdir()
    with pytest.raises(ValueError, match="empty: class folder without images"):
        load_image_dataset(tmp_path)
