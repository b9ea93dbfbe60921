"""Model folders and training run folders as the package reads them.

* :func:`resolve_model_dir` accepts a model folder or a run folder (its ``best/`` model).
* :func:`check_outside_model_folders` refuses a file to write inside a model or run folder;
  :func:`run_folder_owning` names the run whose outputs a path is part of.
* :func:`folder_kind` tells what a folder of the package holds (:data:`KINDS`), and
  :func:`check_replaceable` refuses a writer that would replace a folder of another kind.
* The Hub (:func:`check_hub_access`, :func:`push_folder_to_hub`) is :mod:`.hub`'s, so that
  reading a folder loads no ``huggingface_hub``.

A run folder holds ``best/``, ``checkpoints/``, ``metrics.json`` and ``run.json``
(:data:`RUN_OUTPUTS`); writing one is the training scaffold's
(:mod:`cont_transformer.training.outputs`), writing any folder safely is
:mod:`cont_transformer.safe_files` (docs/design.md §8).

Kinds. The manifest of every folder the package writes records its kind: a tagger's,
a language model's or an image classifier's training run, a model folder (a run's
``best/``), a compressed model, a compression sweep, word vectors (and, inside a run,
its ``checkpoints/`` and ``predictions/``). ``--overwrite`` / ``--overwrite-output-dir``
replaces only a folder of the kind its command writes. A manifest whose kind says
``run``, ``model`` or nothing tells no kind: its kind is read from its files where
they tell it (a run's ``run.json`` arguments, the vector files, a compressed model's card),
and a folder whose files do not tell is replaced by no command.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .safe_files import OutputFolderError, PathLike, read_manifest

BEST_MODEL_DIR = "best"
# A run that ships its best model compressed (--best-num-basis) keeps the model as trained here.
UNCOMPRESSED_MODEL_DIR = "uncompressed"
METRICS_FILE = "metrics.json"
RUN_FILE = "run.json"
CHECKPOINTS_DIR = "checkpoints"
# What a run writes into its output folder; in a run folder without a manifest
# --overwrite-output-dir removes these and the published model files.
RUN_OUTPUTS = (BEST_MODEL_DIR, CHECKPOINTS_DIR, METRICS_FILE, RUN_FILE)
# Files of a model folder that hold its weights (as transformers looks for them).
_WEIGHTS_PATTERNS = ("*.safetensors", "pytorch_model*.bin")
# A folder of static word vectors (language_modeling/word_vectors.py writes it, text/word_vectors.py reads it).
VECTORS_FILE = "word_vectors.safetensors"
WORDS_FILE = "words.txt"
SETTINGS_FILE = "word_vectors.json"

# The kinds of folder the package writes, as manifests record them (module docstring).
TAGGER_RUN = "tagger-run"
LANGUAGE_MODEL_RUN = "language-model-run"
IMAGE_RUN = "image-run"
TRAINING_RUN = "training-run"  # a run of a trainer that names no kind of its own
MODEL_FOLDER = "model-folder"
COMPRESSED_MODEL = "compressed-model"
COMPRESSION_SWEEP = "sweep"
WORD_VECTORS = "word-vectors"
PREDICTIONS_DIR = "predictions"
# kind: (one of them, several of them, the command that replaces one; None: no command does)
KINDS = {
    TAGGER_RUN: ("a tagger training run", "tagger training runs", "train_pos.py --overwrite-output-dir"),
    LANGUAGE_MODEL_RUN: (
        "a language-model training run",
        "language-model training runs",
        "pretrain.py --overwrite-output-dir",
    ),
    IMAGE_RUN: ("an image training run", "image training runs", "train_image.py --overwrite-output-dir"),
    TRAINING_RUN: ("a training run", "training runs", "--overwrite-output-dir"),
    MODEL_FOLDER: ("a model folder", "model folders", None),
    COMPRESSED_MODEL: ("a compressed model", "compressed models", "compress.py --overwrite"),
    COMPRESSION_SWEEP: ("a compression sweep", "compression sweeps", "compress.py --sweep --overwrite"),
    WORD_VECTORS: ("word vectors", "word vectors", "train_word_vectors.py --overwrite"),
    CHECKPOINTS_DIR: ("a run's checkpoints", "a run's checkpoints", None),
    PREDICTIONS_DIR: ("a run's predictions", "a run's predictions", None),
}
RUN_KINDS = frozenset({TAGGER_RUN, LANGUAGE_MODEL_RUN, IMAGE_RUN, TRAINING_RUN})
# Manifest kinds that tell no kind: read from the files instead.
_UNTOLD_KINDS = (None, "run", "model")
# The argument only the run of that kind records in run.json (for a run of an untold kind).
_RUN_MARKS = {TAGGER_RUN: "treebank", LANGUAGE_MODEL_RUN: "mask_probability", IMAGE_RUN: "preset"}


def _card_metadata_keys(card: Path) -> set[str]:
    """The top-level keys of a model card's YAML header (read as lines, nothing executed)."""
    try:
        lines = card.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return set()
    if not lines or lines[0].strip() != "---":
        return set()
    keys = set()
    for line in lines[1:]:
        if line.strip() == "---":
            break
        if line[:1].isalpha() and ":" in line:
            keys.add(line.split(":", 1)[0])
    return keys


def _kind_from_files(folder: Path) -> str | None:
    """The kind the files of ``folder`` show (a folder whose manifest tells no kind), None
    where they show none or more than one."""
    if (folder / RUN_FILE).is_file():
        try:
            arguments = json.loads((folder / RUN_FILE).read_text(encoding="utf-8"))["arguments"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        found = [kind for kind, mark in _RUN_MARKS.items() if isinstance(arguments, dict) and mark in arguments]
        return found[0] if len(found) == 1 else None
    if (folder / "config.json").is_file():
        return COMPRESSED_MODEL if "compression" in _card_metadata_keys(folder / "README.md") else MODEL_FOLDER
    if (folder / VECTORS_FILE).is_file() and (folder / WORDS_FILE).is_file():
        return WORD_VECTORS
    return None


def folder_kind(folder: PathLike) -> str | None:
    """What ``folder`` holds (a key of :data:`KINDS`, or the kind string of a newer
    manifest): its manifest's kind, or for a manifest that tells no kind and a run folder
    without a manifest (``run.json``), the kind its files show. None for a folder the
    package did not write and one whose files do not tell. Raises
    :class:`OutputFolderError` naming a damaged manifest."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    if manifest is None and not (folder / RUN_FILE).is_file():
        return None
    if manifest is not None and manifest["kind"] not in _UNTOLD_KINDS:
        return manifest["kind"]
    return _kind_from_files(folder)


def describe_kind(kind: str | None) -> str:
    """How a message names a folder of ``kind``."""
    if kind is None:
        return "outputs of this package of a kind neither its manifest nor its files tell"
    return KINDS[kind][0] if kind in KINDS else f"a folder of kind {kind!r}"


def check_replaceable(folder: PathLike, kind: str, flag: str = "--output-dir") -> None:
    """Refuse, in one line naming both kinds, to replace ``folder`` (a folder of the package,
    see :func:`folder_kind`) with a folder of ``kind``: only a folder of the same kind is
    replaced, by the command that writes that kind."""
    found = folder_kind(folder)
    if found == kind:
        return
    _, several, command = KINDS[kind]
    raise OutputFolderError(
        f"{flag}: {folder} holds {describe_kind(found)}, not {KINDS[kind][0]}; {command} replaces only "
        f"{several}: choose another folder"
    )


def _looks_like_model_folder(folder: Path) -> bool:
    """Whether ``folder`` is a model folder (config.json beside weights), a training run's
    folder (run.json) or a folder this package wrote a model or a run into (its manifest)."""
    if (folder / RUN_FILE).is_file():
        return True
    if (folder / "config.json").is_file() and any(
        next(folder.glob(pattern), None) is not None for pattern in _WEIGHTS_PATTERNS
    ):
        return True
    try:
        manifest, kind = read_manifest(folder), folder_kind(folder)
    except OutputFolderError:
        return True  # a damaged manifest: the package wrote it
    untold = manifest is not None and manifest["kind"] in _UNTOLD_KINDS[1:]
    return untold or kind in RUN_KINDS | {MODEL_FOLDER, COMPRESSED_MODEL, WORD_VECTORS}


def model_folder_containing(path: PathLike) -> Path | None:
    """The nearest folder above ``path`` that is a model or run folder, or None."""
    for folder in Path(os.path.abspath(path)).resolve().parents:
        if _looks_like_model_folder(folder):
            return folder
    return None


def check_outside_model_folders(path: PathLike | None, flag: str = "output") -> None:
    """Refuse, in one line, a file to write that lies inside a model or run folder: the
    model's own files (its config, weights, tokenizer) would be at the mercy of a typo."""
    if path is None or str(path) == "-":
        return
    folder = model_folder_containing(path)
    if folder is not None:
        raise OutputFolderError(
            f"{flag}: {path} lies inside the model folder {folder}; write it outside the model's folder"
        )


def run_folder_owning(path: PathLike) -> Path | None:
    """The training run folder whose outputs ``path`` is or lies in (the run folder itself,
    or a path under one of the names its manifest lists, :data:`RUN_OUTPUTS` without one):
    what ``--overwrite-output-dir`` of that run would delete. None otherwise."""
    path = Path(os.path.abspath(path)).resolve()
    for folder in [path, *path.parents]:
        try:
            manifest = read_manifest(folder)
        except OutputFolderError:
            manifest = None
        is_run = (folder / RUN_FILE).is_file() or (manifest is not None and manifest["kind"] in {*RUN_KINDS, "run"})
        if not is_run:
            continue
        if folder == path:
            return folder
        owned = set(manifest["outputs"]) if manifest is not None else set(RUN_OUTPUTS)
        if path.relative_to(folder).parts[0] in owned:
            return folder
    return None


def resolve_model_dir(path: PathLike) -> Path:
    """The model folder ``path`` names: itself if it holds ``config.json``, else its ``best/``
    model if it is a training run's folder. Raises ``FileNotFoundError`` naming it."""
    path = Path(path)
    if (path / BEST_MODEL_DIR / "config.json").is_file():
        return path / BEST_MODEL_DIR  # a run folder (with the same model at its top, or not)
    if (path / "config.json").is_file():
        return path
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such folder")
    raise FileNotFoundError(
        f"{path} is not a saved model folder (no config.json) nor a training run with a {BEST_MODEL_DIR}/ model"
    )
