"""Image classification data (MNIST, CIFAR) from local files or the Hub, as `datasets`.

`load_image_dataset(source)` is the one entry point. `source` is one of:

* a folder of MNIST IDX files (`train-images-idx3-ubyte[.gz]`, `t10k-labels-idx1-ubyte`, ...);
* an image folder `train/<class>/*.jpg|png`, `test/<class>/...`;
* a folder of CIFAR python batches (`data_batch_1..5`, `test_batch`; CIFAR-100 `train`, `test`);
* a `.tar.gz` / `.tgz` / `.tar` archive of any of these, extracted once into a cache folder;
* otherwise a Hub dataset name such as `ylecun/mnist` or `uoft-cs/cifar10`.

It returns a `DatasetDict` with splits `train` and `test` and columns `image` and `label`
(a `ClassLabel` carrying the class names). Local sources store `image` as uint8
`Array3D` (height, width, channels); Hub sources keep their PIL `Image` column. For
training, `to_tensors(split)` returns the whole split as (images uint8 (N, C, H, W),
labels int64 (N,)) so that the loop indexes tensors instead of decoding item by item.
Image files and PIL columns are decoded with pillow, the ``[images]`` extra, imported only
then (:func:`pil_image`: without it, one line saying how to install it).
"""

import gzip
import hashlib
import os
import pickle
import shutil
import tarfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import datasets
import numpy as np
import pyarrow as pa
import torch

SPLITS = ("train", "test")
DEFAULT_CACHE_DIR = Path.home() / ".cache" / "cont_transformer"

# IDX header: two zero bytes, a type code, the number of dimensions; data is big-endian.
_IDX_DTYPES = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_MNIST_PREFIXES = {"train": "train", "test": "t10k"}
_IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp"}
_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")
_CIFAR10_BATCHES = {"train": [f"data_batch_{i}" for i in range(1, 6)], "test": ["test_batch"]}
# Globals a CIFAR batch pickle may reference: NumPy array reconstruction, nothing else.
_PICKLE_ALLOWED = {
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("_codecs", "encode"),
}


def load_image_dataset(
    source: str | os.PathLike,
    *,
    cache_dir: str | os.PathLike | None = None,
    splits: Sequence[str] = SPLITS,
) -> datasets.DatasetDict:
    """Load an image classification dataset with splits `train` / `test`, columns `image` / `label`.

    source: a local folder or archive (see the module docstring) or a Hub dataset name.
    cache_dir: where archives are extracted and Hub datasets cached
    (default `~/.cache/cont_transformer` for archives, the `datasets` default for the Hub).
    splits: the splits to return; an image folder decodes only these (e.g. `("test",)`
    to evaluate without decoding the training images).
    """
    unknown = sorted(set(splits) - set(SPLITS))
    if unknown or not splits:
        raise ValueError(f"splits: choose from {list(SPLITS)}, got {list(splits)}")
    dataset = _load_splits(source, cache_dir, tuple(splits))
    return datasets.DatasetDict({split: dataset[split] for split in splits})


def _load_splits(
    source: str | os.PathLike, cache_dir: str | os.PathLike | None, splits: tuple[str, ...]
) -> datasets.DatasetDict:
    path = Path(source).expanduser()
    if not path.exists():
        if path.is_absolute() or str(source).startswith("."):
            raise FileNotFoundError(f"{source}: no such file or folder")
        return load_hub_dataset(str(source), cache_dir=cache_dir)
    if path.is_file():
        if not path.name.endswith(_ARCHIVE_SUFFIXES):
            raise ValueError(f"{path}: not a folder or a .tar.gz/.tgz/.tar archive")
        path = extract_archive(path, cache_dir=cache_dir)
    root, kind = _find_dataset_root(path)
    if kind == "image_folder":
        return load_image_folder(root, splits)
    return {"idx": load_mnist_idx, "cifar": load_cifar_batches}[kind](root)


def to_tensors(split: datasets.Dataset) -> tuple[torch.Tensor, torch.Tensor]:
    """Whole split as tensors: images uint8 (N, channels, height, width), labels int64 (N,).

    Fast for the `Array3D` column of local sources (one buffer copy); a PIL `Image`
    column (Hub) is decoded once, image by image.
    """
    feature = split.features["image"]
    if isinstance(feature, datasets.Array3D):
        table = split.with_format("arrow")[:]
        values = table.column("image").combine_chunks().storage.flatten().flatten().flatten()
        images = values.to_numpy(zero_copy_only=False).reshape(len(split), *feature.shape)
    else:
        images = _decode_pil_column(split)
    labels = split.with_format("arrow", columns=["label"])[:].column("label").to_numpy()
    images = images.transpose(0, 3, 1, 2).copy()  # also makes the Arrow buffer writable
    return torch.from_numpy(images), torch.from_numpy(labels.astype(np.int64))


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read one IDX file (optionally gzip-compressed) into an array of its declared shape."""
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError) as error:
        raise ValueError(f"{path}: cannot read ({error})") from error
    if len(raw) < 4 or raw[:2] != b"\x00\x00" or raw[2] not in _IDX_DTYPES:
        raise ValueError(f"{path}: not an IDX file (bad magic number {raw[:4].hex()})")
    dtype, ndim = _IDX_DTYPES[raw[2]], raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{path}: IDX header truncated")
    shape = tuple(int(d) for d in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) - header != expected:
        raise ValueError(f"{path}: IDX shape {shape} needs {expected} data bytes, file has {len(raw) - header}")
    return np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))


def load_mnist_idx(folder: str | os.PathLike) -> datasets.DatasetDict:
    """MNIST (or any IDX image/label pair) from `train-*` and `t10k-*` files in `folder`."""
    folder = Path(folder)
    splits, label_files = {}, {}
    for split, prefix in _MNIST_PREFIXES.items():
        images_path = _find_idx(folder, prefix, "images", 3)
        labels_path = _find_idx(folder, prefix, "labels", 1)
        images, labels = read_idx(images_path), read_idx(labels_path)
        if images.ndim != 3 or images.dtype != np.uint8:
            raise ValueError(f"{images_path}: expected uint8 images (N, H, W), got {images.dtype} {images.shape}")
        if labels.ndim != 1 or len(labels) != len(images):
            raise ValueError(
                f"{labels_path}: expected {len(images)} labels for {images_path.name}, got shape {labels.shape}"
            )
        splits[split] = (images[..., None], labels.astype(np.int64))
        label_files[labels_path] = splits[split][1]
    class_names = [str(i) for i in range(_numbered_classes(label_files))]
    return datasets.DatasetDict(
        {split: _arrays_to_dataset(images, labels, class_names) for split, (images, labels) in splits.items()}
    )


def _numbered_classes(label_files: dict[Path, np.ndarray]) -> int:
    """The number of classes of labels that name none (IDX files, CIFAR batches without their
    meta file): the classes are 0..N-1, N one more than the largest label.

    A label beyond the data set's classes is refused, naming its file: a negative one, and
    one that would make most of the classes 0..N-1 classes no image has (a damaged label,
    such as 200 among MNIST's ten digits, would make a model of 201 classes). A few classes
    without an image (a subset of a data set) are allowed."""
    for path, labels in label_files.items():
        if len(labels) and labels.min() < 0:
            raise ValueError(f"{path}: label {labels.min()} is negative; the labels are the classes 0..N-1")
    seen = np.unique(np.concatenate([np.asarray(labels) for labels in label_files.values()]))
    num_classes = int(seen[-1]) + 1 if len(seen) else 0
    if 2 * len(seen) < num_classes:
        path = next(path for path, labels in label_files.items() if (labels == seen[-1]).any())
        raise ValueError(
            f"{path}: label {seen[-1]} is outside the data set's classes: it would make {num_classes} classes "
            f"0..{num_classes - 1}, of which {num_classes - len(seen)} have no image (the labels are the "
            "classes 0..N-1)"
        )
    return num_classes


def load_image_folder(folder: str | os.PathLike, splits: Sequence[str] = SPLITS) -> datasets.DatasetDict:
    """Images from `folder/{train,test}/<class>/*`; classes are the sorted `train` subfolders.

    All images must share one size; they are decoded as grayscale (1 channel) when all of
    them are grayscale, else as RGB (3). A class folder of `train` without images is an
    error (it would become a label no image has). Only `splits` are read and decoded.
    """
    folder = Path(folder)
    class_names = sorted(p.name for p in (folder / "train").iterdir() if p.is_dir())
    if not class_names:
        raise ValueError(f"{folder / 'train'}: no class subfolders")
    files: dict[str, list[Path]] = {}
    labels: dict[str, list[int]] = {}
    for split in splits:
        split_dir = folder / split
        unknown = sorted({p.name for p in split_dir.iterdir() if p.is_dir()} - set(class_names))
        if unknown:
            raise ValueError(f"{split_dir}: classes {unknown} are not in the train split")
        files[split], labels[split] = [], []
        for label, name in enumerate(class_names):
            class_dir = split_dir / name
            images = (
                sorted(p for p in class_dir.iterdir() if p.suffix.lower() in _IMAGE_SUFFIXES)
                if class_dir.is_dir()
                else []
            )
            if split == "train" and not images:
                raise ValueError(f"{class_dir}: class folder without images")
            files[split] += images
            labels[split] += [label] * len(images)
        if not files[split]:
            raise ValueError(f"{split_dir}: no images")
    mode = _common_mode([path for split in splits for path in files[split]])
    return datasets.DatasetDict(
        {
            split: _arrays_to_dataset(_decode_files(files[split], mode), np.array(labels[split]), class_names)
            for split in splits
        }
    )


def load_cifar_batches(folder: str | os.PathLike) -> datasets.DatasetDict:
    """CIFAR python batches: CIFAR-10 or CIFAR-100 (which uses its 100 fine labels).

    CIFAR-10: `data_batch_1..5`, `test_batch`, `batches.meta`; CIFAR-100: `train`, `test`,
    `meta`. The pickles may only reference NumPy arrays.
    """
    folder = Path(folder)
    if (folder / "data_batch_1").is_file():
        batch_names, label_key = _CIFAR10_BATCHES, b"labels"
        meta_name, names_key = "batches.meta", b"label_names"
    else:
        batch_names, label_key = {"train": ["train"], "test": ["test"]}, b"fine_labels"
        meta_name, names_key = "meta", b"fine_label_names"
    splits, label_files = {}, {}
    for split, names in batch_names.items():
        images, labels = [], []
        for name in names:
            batch = _load_pickle(folder / name, (b"data", label_key))
            data = np.asarray(batch[b"data"], dtype=np.uint8)
            if data.ndim != 2 or data.shape[1] != 3 * 32 * 32 or len(batch[label_key]) != len(data):
                raise ValueError(f"{folder / name}: expected (N, 3072) data and N labels, got {data.shape}")
            images.append(data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))  # (N, 32, 32, 3)
            labels.append(np.asarray(batch[label_key], dtype=np.int64))
            label_files[folder / name] = labels[-1]
        splits[split] = (np.concatenate(images), np.concatenate(labels))
    if (folder / meta_name).is_file():
        meta = _load_pickle(folder / meta_name, (names_key,))
        class_names = [n.decode() for n in meta[names_key]]
        for path, labels in label_files.items():
            outside = labels[(labels < 0) | (labels >= len(class_names))]
            if len(outside):
                raise ValueError(
                    f"{path}: label {outside[0]} is outside the data set's classes 0..{len(class_names) - 1} "
                    f"({folder / meta_name} names {len(class_names)})"
                )
    else:
        class_names = [str(i) for i in range(_numbered_classes(label_files))]
    return datasets.DatasetDict(
        {split: _arrays_to_dataset(images, labels, class_names) for split, (images, labels) in splits.items()}
    )


def load_hub_dataset(name: str, *, cache_dir: str | os.PathLike | None = None) -> datasets.DatasetDict:
    """A Hub dataset by name (e.g. `ylecun/mnist`, `uoft-cs/cifar10`), columns normalised."""
    loaded = datasets.load_dataset(name, cache_dir=None if cache_dir is None else str(cache_dir))
    return normalize_columns(loaded)


def normalize_columns(dataset: datasets.DatasetDict) -> datasets.DatasetDict:
    """Rename to splits `train` / `test` and columns `image` / `label`; drop other columns.

    The image column is the first `Image` (or `Array3D`) feature; the label is `label`,
    `labels` or `fine_label` (CIFAR-100), else the first `ClassLabel`. A test split
    falls back to `validation`; a non-`ClassLabel` label is class-encoded.
    """
    test_name = "test" if "test" in dataset else "validation" if "validation" in dataset else None
    if "train" not in dataset or test_name is None:
        raise ValueError(f"need splits train and test (or validation), got {list(dataset)}")
    features = dataset["train"].features
    image_column = next((c for c, f in features.items() if isinstance(f, (datasets.Image, datasets.Array3D))), None)
    label_column = next((c for c in ("label", "labels", "fine_label") if c in features), None)
    label_column = label_column or next((c for c, f in features.items() if isinstance(f, datasets.ClassLabel)), None)
    if image_column is None or label_column is None:
        raise ValueError(f"cannot find image and label columns among {list(features)}")
    result = {}
    for split, source_split in (("train", "train"), ("test", test_name)):
        part = dataset[source_split].select_columns([image_column, label_column])
        part = part.rename_columns({image_column: "image", label_column: "label"})
        result[split] = part
    if not isinstance(result["train"].features["label"], datasets.ClassLabel):
        class_names = sorted({str(v) for v in result["train"]["label"]}, key=_natural_key)
        label_feature = datasets.ClassLabel(names=class_names)
        result = {
            split: part.cast_column("label", datasets.Value("string")).cast_column("label", label_feature)
            for split, part in result.items()
        }
    return datasets.DatasetDict(result)


def extract_archive(archive: str | os.PathLike, *, cache_dir: str | os.PathLike | None = None) -> Path:
    """Extract `archive` once into `cache_dir` and return the folder; later calls reuse it.

    The folder name includes a digest of the archive's path, size and modification
    time, so a changed archive is extracted afresh. Extraction goes to a temporary
    folder renamed at the end, so an interrupted run leaves nothing half-done in place.
    """
    archive = Path(archive).resolve()
    stat = archive.stat()
    digest = hashlib.sha1(f"{archive}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:12]
    stem = next(archive.name[: -len(s)] for s in _ARCHIVE_SUFFIXES if archive.name.endswith(s))
    target = Path(cache_dir or DEFAULT_CACHE_DIR).expanduser() / f"{stem}-{digest}"
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(partial, filter="data")
        os.replace(partial, target)
    except (tarfile.TarError, EOFError, OSError) as error:
        shutil.rmtree(partial, ignore_errors=True)
        if target.is_dir():  # another process finished the same extraction first
            return target
        raise ValueError(f"{archive}: cannot extract ({error})") from error
    return target


def _find_dataset_root(folder: Path) -> tuple[Path, str]:
    """The folder holding the data (`folder` or one subfolder down) and its format."""
    for candidate in [folder, *sorted(p for p in folder.iterdir() if p.is_dir())]:
        names = {p.name for p in candidate.iterdir()}
        if any(n.startswith("train-images") for n in names):
            return candidate, "idx"
        if "data_batch_1" in names or ((candidate / "train").is_file() and (candidate / "test").is_file()):
            return candidate, "cifar"
        if (candidate / "train").is_dir() and (candidate / "test").is_dir():
            return candidate, "image_folder"
    raise ValueError(f"{folder}: no MNIST IDX files, CIFAR batches or train/ and test/ image folders found")


def _find_idx(folder: Path, prefix: str, kind: str, ndim: int) -> Path:
    """`{prefix}-{kind}-idx{ndim}-ubyte`, also with `.idx` instead of `-idx` and/or `.gz`."""
    candidates = [folder / f"{prefix}-{kind}{sep}idx{ndim}-ubyte{gz}" for sep in ("-", ".") for gz in ("", ".gz")]
    found = next((p for p in candidates if p.is_file()), None)
    if found is None:
        raise FileNotFoundError(f"{candidates[0]}: not found (nor .gz or .idx{ndim}-ubyte variants)")
    return found


def pil_image():
    """PIL's ``Image`` module: pillow is the ``[images]`` extra, imported when images are
    read; OSError in one line without it."""
    try:
        from PIL import Image
    except ImportError:
        raise OSError('reading images needs pillow: pip install "cont-transformer[images]"') from None
    return Image


def _common_mode(files: Sequence[Path]) -> str:
    """'L' when every file is grayscale, else 'RGB' (headers only: nothing is decoded)."""
    Image = pil_image()  # the module, as PIL names it

    def mode(path: Path) -> str:
        try:
            with Image.open(path) as image:
                return _pil_mode(image)
        except OSError as error:
            raise ValueError(f"{path}: cannot read image ({error})") from error

    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        return "RGB" if "RGB" in set(pool.map(mode, files)) else "L"


def _decode_files(files: Sequence[Path], mode: str) -> np.ndarray:
    """Decode image files into one uint8 array (N, height, width, channels), in parallel."""
    Image = pil_image()  # the module, as PIL names it

    def decode(path: Path) -> np.ndarray:
        try:
            with Image.open(path) as image:
                return np.asarray(image.convert(mode))
        except OSError as error:
            raise ValueError(f"{path}: cannot decode image ({error})") from error

    first = decode(files[0])
    channels = 1 if mode == "L" else 3
    out = np.empty((len(files), first.shape[0], first.shape[1], channels), dtype=np.uint8)

    def fill(index: int) -> None:
        pixels = decode(files[index])
        if pixels.shape[:2] != first.shape[:2]:
            raise ValueError(f"{files[index]}: size {pixels.shape[:2]} differs from {first.shape[:2]}")
        out[index] = pixels.reshape(out.shape[1:])

    # PIL releases the GIL while decoding, so threads overlap file reads and decodes.
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        list(pool.map(fill, range(len(files))))
    return out


def _decode_pil_column(split: datasets.Dataset) -> np.ndarray:
    """The PIL `image` column as uint8 (N, height, width, channels); grayscale only when every
    image is."""
    pil_image()  # datasets decodes the column with pillow
    images = split.with_format(None).select_columns(["image"])
    first = images[0]["image"]
    mode = "RGB" if any(_pil_mode(example["image"]) == "RGB" for example in images) else "L"
    out = np.empty((len(images), first.height, first.width, 1 if mode == "L" else 3), np.uint8)
    for index, example in enumerate(images):
        pixels = np.asarray(example["image"].convert(mode))
        if pixels.shape[:2] != out.shape[1:3]:
            raise ValueError(f"image {index}: size {pixels.shape[:2]} differs from {out.shape[1:3]}")
        out[index] = pixels.reshape(out.shape[1:])
    return out


def _pil_mode(image) -> str:
    """Target mode for decoding: 'L' for grayscale sources, 'RGB' for everything else."""
    return "L" if image.mode in ("1", "L", "LA") else "RGB"


def _arrays_to_dataset(images: np.ndarray, labels: np.ndarray, class_names: list[str]) -> datasets.Dataset:
    """A `Dataset` over uint8 images (N, H, W, C) and int labels, built without a row-wise copy."""
    num, height, width, channels = images.shape
    if labels.min(initial=0) < 0 or labels.max(initial=0) >= len(class_names):
        raise ValueError(f"labels outside 0..{len(class_names) - 1}")
    features = datasets.Features(
        {
            "image": datasets.Array3D(shape=(height, width, channels), dtype="uint8"),
            "label": datasets.ClassLabel(names=class_names),
        }
    )
    # Array3D's storage is list<list<list<uint8>>>: build it from offsets over one flat buffer.
    storage = pa.array(np.ascontiguousarray(images).reshape(-1))
    for size, count in ((channels, num * height * width), (width, num * height), (height, num)):
        storage = pa.ListArray.from_arrays(pa.array(np.arange(0, (count + 1) * size, size, dtype=np.int32)), storage)
    image_array = pa.ExtensionArray.from_storage(features["image"](), storage)
    labels = labels.astype(np.int64)
    table = pa.table({"image": image_array, "label": pa.array(labels)})
    # `datasets` would otherwise fingerprint by pickling the whole table (seconds for MNIST).
    content = hashlib.sha1(np.ascontiguousarray(images).data)
    content.update(labels.data)
    content.update(repr(class_names).encode())
    info = datasets.DatasetInfo(features=features)
    return datasets.Dataset(table, info=info, fingerprint=content.hexdigest())


def _load_pickle(path: Path, keys: Sequence[bytes]) -> dict:
    """Unpickle a CIFAR dict holding `keys`, refusing any global but NumPy array reconstruction."""

    class _ArraysOnly(pickle.Unpickler):
        def find_class(self, module: str, name: str):
            if (module, name) not in _PICKLE_ALLOWED:
                raise pickle.UnpicklingError(f"{path}: refuses global {module}.{name}")
            return super().find_class(module, name)

    try:
        with open(path, "rb") as handle:
            loaded = _ArraysOnly(handle, encoding="bytes").load()
    except (OSError, EOFError, pickle.UnpicklingError) as error:
        raise ValueError(f"{path}: cannot read CIFAR batch ({error})") from error
    if not isinstance(loaded, dict) or any(key not in loaded for key in keys):
        raise ValueError(f"{path}: expected a dict with keys {list(keys)}")
    return loaded


def _natural_key(text: str) -> tuple[int, int | str]:
    """Sort numbers numerically before other strings: '2' < '10' < 'cat'."""
    return (0, int(text)) if text.lstrip("-").isdigit() else (1, text)


__all__ = [
    "DEFAULT_CACHE_DIR",
    "extract_archive",
    "load_cifar_batches",
    "load_hub_dataset",
    "load_image_dataset",
    "load_image_folder",
    "load_mnist_idx",
    "normalize_columns",
    "read_idx",
    "to_tensors",
]
