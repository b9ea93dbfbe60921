"""Folders a run writes, written so that a kill at any moment loses nothing already saved.

* :func:`staged_directory` writes a folder (a model, a compressed model, a checkpoint)
  into a staging folder next to its target and swaps it into place only when complete.
  The swap is one atomic ``renameat2(RENAME_EXCHANGE)`` on Linux; elsewhere it is two
  renames, and :func:`recover_directory` undoes a swap that a kill interrupted.
* :func:`write_json` replaces a JSON file atomically (temporary file, then rename).
* :func:`prepare_run_folder` enforces who may write into a run's output folder: a new run
  only into an empty (or missing) folder, unless the user asks to overwrite; a resumed
  run only into its own folder (see :mod:`.identity`).
* :func:`resolve_model_dir` accepts a model folder or a run folder (its ``best/`` model).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

PathLike = str | os.PathLike

BEST_MODEL_DIR = "best"
METRICS_FILE = "metrics.json"
RUN_FILE = "run.json"
CHECKPOINTS_DIR = "checkpoints"
# What a run writes into its output folder; --overwrite-output-dir removes these only.
RUN_OUTPUTS = (BEST_MODEL_DIR, CHECKPOINTS_DIR, METRICS_FILE, RUN_FILE)
_STAGING = ".staging-"
_RETIRED = ".retired-"
_RENAME_EXCHANGE = 2


class OutputFolderError(ValueError):
    """An output folder this run must not write into (as given, it would lose data)."""


def _exchange(first: Path, second: Path) -> bool:
    """Atomically swap two paths with Linux's renameat2; False where unsupported."""
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return False
    libc = ctypes.CDLL(libc_name, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    at_cwd = -100
    result = renameat2(at_cwd, os.fsencode(first), at_cwd, os.fsencode(second), _RENAME_EXCHANGE)
    return result == 0


def _sibling(target: Path, kind: str) -> Path:
    return target.with_name(f"{kind}{target.name}-{uuid.uuid4().hex[:8]}")


def replace_directory(staging: Path, target: Path) -> None:
    """Put the complete folder ``staging`` at ``target``, replacing what was there.

    At no moment is ``target`` missing or half-written where renameat2 works; elsewhere a
    kill between the two renames leaves the old folder as a ``.retired-`` sibling, which
    :func:`recover_directory` puts back.
    """
    if not target.exists():
        staging.rename(target)
        return
    if _exchange(staging, target):
        shutil.rmtree(staging)  # it now holds the old folder
        return
    retired = _sibling(target, _RETIRED)
    target.rename(retired)
    staging.rename(target)
    shutil.rmtree(retired)


def recover_directory(target: PathLike) -> None:
    """Undo what a kill left around ``target``: put back a retired folder if the target is
    missing, and delete abandoned staging and retired folders."""
    target = Path(target)
    if not target.parent.is_dir():
        return
    retired = sorted(target.parent.glob(f"{_RETIRED}{target.name}-*"))
    if retired and not target.exists():
        retired.pop().rename(target)
    for leftover in [*retired, *target.parent.glob(f"{_STAGING}{target.name}-*")]:
        shutil.rmtree(leftover, ignore_errors=True)


@contextlib.contextmanager
def staged_directory(target: PathLike) -> Iterator[Path]:
    """Yield an empty staging folder next to ``target``; on success it replaces ``target``.

    On an error the staging folder is removed and ``target`` is untouched.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = _sibling(target, _STAGING)
    staging.mkdir()
    try:
        yield staging
        replace_directory(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def write_json(path: PathLike, value: object) -> None:
    """Write ``value`` as indented JSON to ``path`` atomically (a reader sees old or new)."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    temporary.write_text(json.dumps(value, indent=2) + "\n")
    os.replace(temporary, path)


def prepare_run_folder(output_dir: PathLike, *, resuming: bool, overwrite: bool) -> Path:
    """Check that a run may write into ``output_dir`` and make it exist.

    A new run needs a missing or empty folder; with ``overwrite`` the outputs of an earlier
    run (:data:`RUN_OUTPUTS`) are deleted first and any other file is left alone. A resumed
    run writes into its own folder (its identity is checked by the caller). Raises
    :class:`OutputFolderError` naming the folder.
    """
    folder = Path(output_dir)
    if folder.exists() and not folder.is_dir():
        raise OutputFolderError(f"--output-dir: {folder} exists and is not a folder")
    if not resuming and folder.is_dir() and any(folder.iterdir()):
        if not overwrite:
            raise OutputFolderError(
                f"--output-dir: {folder} is not empty (an earlier run's outputs?); resume it with "
                "--resume-from-checkpoint latest, choose another folder, or pass "
                "--overwrite-output-dir to replace its run"
            )
        for name in RUN_OUTPUTS:
            path = folder / name
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
    folder.mkdir(parents=True, exist_ok=True)
    recover_directory(folder / BEST_MODEL_DIR)
    return folder


def resolve_model_dir(path: PathLike) -> Path:
    """The model folder ``path`` names: itself if it holds ``config.json``, else its ``best/``
    model if it is a training run's folder. Raises ``FileNotFoundError`` naming it."""
    path = Path(path)
    if (path / "config.json").is_file():
        return path
    if (path / BEST_MODEL_DIR / "config.json").is_file():
        return path / BEST_MODEL_DIR
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such folder")
    raise FileNotFoundError(
        f"{path} is not a saved model folder (no config.json) nor a training run with a "
        f"{BEST_MODEL_DIR}/ model"
    )
