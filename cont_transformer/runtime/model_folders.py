"""Model and run folders as the package reads them: their names, their kinds, where a file
may be written, and the model a folder holds (:func:`resolve_model_dir`: a model folder,
or a run folder's ``best/``). Writing any folder safely is :mod:`.safe_files`.

Kinds. A manifest records what its folder holds (:data:`KINDS`); a writer replaces only a
folder of its own kind (:func:`check_replaceable`, naming the writer's own command). A
manifest that says ``run``, ``model`` or nothing, and a run folder without one, are known by
their files (:func:`folder_kind`); a folder whose files tell no kind is replaced by no writer.
"""

from __future__ import annotations

import json
import os
from itertools import takewhile
from pathlib import Path

from .safe_files import OutputFolderError, PathLike, read_manifest

BEST_MODEL_DIR = "best"
UNCOMPRESSED_MODEL_DIR = "uncompressed"  # the model as trained, beside a best/ compressed by the run
METRICS_FILE = "metrics.json"
RUN_FILE = "run.json"
CHECKPOINTS_DIR = "checkpoints"
PREDICTIONS_DIR = "predictions"
RUN_OUTPUTS = (BEST_MODEL_DIR, CHECKPOINTS_DIR, METRICS_FILE, RUN_FILE)  # a run's, where no manifest tells
VECTORS_FILE, WORDS_FILE, SETTINGS_FILE = "word_vectors.safetensors", "words.txt", "word_vectors.json"

TAGGER_RUN, LANGUAGE_MODEL_RUN, IMAGE_RUN = "tagger-run", "language-model-run", "image-run"
TRAINING_RUN = "training-run"  # a run of a trainer that names no kind of its own
MODEL_FOLDER, COMPRESSED_MODEL = "model-folder", "compressed-model"
COMPRESSION_SWEEP, WORD_VECTORS = "sweep", "word-vectors"
# kind: (one of them, several of them), as a refusal names them
KINDS = {
    TAGGER_RUN: ("a tagger training run", "tagger training runs"),
    LANGUAGE_MODEL_RUN: ("a language-model training run", "language-model training runs"),
    IMAGE_RUN: ("an image training run", "image training runs"),
    TRAINING_RUN: ("a training run", "training runs"),
    MODEL_FOLDER: ("a model folder", "model folders"),
    COMPRESSED_MODEL: ("a compressed model", "compressed models"),
    COMPRESSION_SWEEP: ("a compression sweep", "compression sweeps"),
    WORD_VECTORS: ("word vectors", "word vectors"),
    CHECKPOINTS_DIR: ("a run's checkpoints", "a run's checkpoints"),
    PREDICTIONS_DIR: ("a run's predictions", "a run's predictions"),
}
RUN_KINDS = frozenset({TAGGER_RUN, LANGUAGE_MODEL_RUN, IMAGE_RUN, TRAINING_RUN})
_UNTOLD_KINDS = (None, "run", "model")  # manifest kinds that tell no kind
# The field only a run of that kind records in run.json's arguments (for a manifest that tells no kind).
_RUN_MARKS = {TAGGER_RUN: "treebank", LANGUAGE_MODEL_RUN: "mask_probability", IMAGE_RUN: "preset"}


def _kind_from_files(folder: Path) -> str | None:
    """The one kind the files of ``folder`` show, None where they show none or several."""
    if (folder / RUN_FILE).is_file():
        try:
            arguments = json.loads((folder / RUN_FILE).read_text(encoding="utf-8"))["arguments"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        found = [kind for kind, mark in _RUN_MARKS.items() if isinstance(arguments, dict) and mark in arguments]
        return found[0] if len(found) == 1 else None
    if (folder / "config.json").is_file():
        try:  # a compressed model's card holds compression metadata in its YAML header
            lines = (folder / "README.md").read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            lines = []
        header = takewhile(lambda line: line.strip() != "---", lines[1:]) if lines and lines[0].strip() == "---" else ()
        return COMPRESSED_MODEL if any(line.startswith("compression:") for line in header) else MODEL_FOLDER
    return WORD_VECTORS if (folder / VECTORS_FILE).is_file() and (folder / WORDS_FILE).is_file() else None


def folder_kind(folder: PathLike) -> str | None:
    """What ``folder`` holds: its manifest's kind, or the kind its files show where the
    manifest tells none or a run folder has none; None for a folder the package did not
    write. Raises :class:`OutputFolderError` naming a damaged manifest."""
    manifest = read_manifest(folder)
    if manifest is not None and manifest["kind"] not in _UNTOLD_KINDS:
        return manifest["kind"]
    return _kind_from_files(Path(folder)) if manifest is not None or (Path(folder) / RUN_FILE).is_file() else None


def describe_kind(kind: str | None) -> str:
    """How a message names a folder of ``kind``."""
    if kind is None:
        return "outputs of this package of a kind neither its manifest nor its files tell"
    return KINDS[kind][0] if kind in KINDS else f"a folder of kind {kind!r}"


def check_replaceable(folder: PathLike, kind: str, command: str, flag: str = "--output-dir") -> None:
    """Refuse, naming both kinds, to replace ``folder`` (of the package) with a folder of
    ``kind``: ``command``, the writer's, replaces only a folder of its own kind."""
    found = folder_kind(folder)
    if found != kind:
        raise OutputFolderError(
            f"{flag}: {folder} holds {describe_kind(found)}, not {KINDS[kind][0]}; {command} replaces only "
            f"{KINDS[kind][1]}: choose another folder"
        )


def _is_model_folder(folder: Path) -> bool:
    """A model folder (config.json beside weights), a run's folder or one this package wrote
    a model, a run or word vectors into."""
    weights = ("*.safetensors", "pytorch_model*.bin")
    if (
        (folder / RUN_FILE).is_file()
        or (folder / "config.json").is_file()
        and any(next(folder.glob(p), 0) for p in weights)
    ):
        return True
    try:
        manifest, kind = read_manifest(folder), folder_kind(folder)
    except OutputFolderError:
        return True  # a damaged manifest: the package wrote it
    untold = manifest is not None and manifest["kind"] in _UNTOLD_KINDS[1:]
    return untold or kind in RUN_KINDS | {MODEL_FOLDER, COMPRESSED_MODEL, WORD_VECTORS}


def check_outside_model_folders(path: PathLike | None, flag: str = "output") -> None:
    """Refuse a file to write inside a model or run folder: the model's own files would be
    at the mercy of a typo."""
    if path is None or str(path) == "-":
        return
    for folder in Path(os.path.abspath(path)).resolve().parents:
        if _is_model_folder(folder):
            raise OutputFolderError(
                f"{flag}: {path} lies inside the model folder {folder}; write it outside the model's folder"
            )


def run_folder_owning(path: PathLike) -> Path | None:
    """The training run folder that ``path`` is, or lies in under a name its manifest lists
    (:data:`RUN_OUTPUTS` without one): what that run's ``--overwrite-output-dir`` would delete."""
    path = Path(os.path.abspath(path)).resolve()
    for folder in [path, *path.parents]:
        try:
            manifest = read_manifest(folder)
        except OutputFolderError:
            manifest = None
        if (folder / RUN_FILE).is_file() or (manifest is not None and manifest["kind"] in {*RUN_KINDS, "run"}):
            owned = manifest["outputs"] if manifest is not None else RUN_OUTPUTS
            if folder == path or path.relative_to(folder).parts[0] in owned:
                return folder
    return None


def resolve_model_dir(path: PathLike) -> Path:
    """The model folder ``path`` names: its ``best/`` model if it is a training run's
    folder, else itself if it holds ``config.json``. Raises ``FileNotFoundError`` naming it."""
    path = Path(path)
    if (path / BEST_MODEL_DIR / "config.json").is_file():
        return path / BEST_MODEL_DIR
    if (path / "config.json").is_file():
        return path
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such folder")
    raise FileNotFoundError(
        f"{path} is not a saved model folder (no config.json) nor a training run with a {BEST_MODEL_DIR}/ model"
    )
