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
* :func:`publish_best_model` copies the best model's files to the top of the run folder
  at the end of training, as transformers' ``Trainer`` leaves its model in
  ``output_dir``: ``from_pretrained("runs/pos")`` loads it.

Locks and leftovers. :func:`lock_output_folder` holds an exclusive lock on
``<folder>/.lock`` (``flock``) from :func:`prepare_run_folder` until the process ends
(the kernel releases it, also after a kill) or :func:`release_output_folder`: a second run
into the same folder is refused in one line. A staging folder or file is locked the
same way while it is written (:func:`hold_lock`), so :func:`remove_stale` deletes exactly
the ones whose writer is gone: the next run cleans up what a killed one left.
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

from huggingface_hub import HfApi

try:
    import fcntl
except ImportError:  # not POSIX: no locks, no stale-file cleanup
    fcntl = None

PathLike = str | os.PathLike

BEST_MODEL_DIR = "best"
METRICS_FILE = "metrics.json"
RUN_FILE = "run.json"
CHECKPOINTS_DIR = "checkpoints"
LOCK_FILE = ".lock"
# What a run writes into its output folder; --overwrite-output-dir removes these only.
RUN_OUTPUTS = (BEST_MODEL_DIR, CHECKPOINTS_DIR, METRICS_FILE, RUN_FILE)
_STAGING = ".staging-"
_RETIRED = ".retired-"
_RENAME_EXCHANGE = 2


class OutputFolderError(ValueError):
    """An output folder this run must not write into (as given, it would lose data)."""


def hold_lock(path: PathLike) -> int | None:
    """Open ``path`` (a file, created if missing, or a folder) and lock it exclusively.

    Returns the descriptor holding the lock (close it to release; the kernel releases it
    when the process dies), or None when another process holds it. Without ``fcntl``
    (not POSIX) it returns a descriptor and locks nothing."""
    path = Path(path)
    fd = os.open(path, os.O_RDONLY) if path.is_dir() else os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    if fcntl is None:
        return fd
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def remove_stale(paths) -> None:
    """Delete each of ``paths`` (staging files or folders) that no live process holds
    locked with :func:`hold_lock`: what a killed writer left."""
    if fcntl is None:
        return
    for path in paths:
        try:
            fd = hold_lock(path)
        except OSError:  # gone meanwhile
            continue
        if fd is None:
            continue  # being written
        try:
            if Path(path).is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                Path(path).unlink(missing_ok=True)
        finally:
            os.close(fd)


_HELD: dict[Path, int] = {}  # output folders this process holds locked, with the descriptor


def lock_output_folder(folder: PathLike) -> None:
    """Lock ``folder`` (made if missing) for this process's run, through ``<folder>/.lock``.

    Calling it again for a folder this process holds does nothing. Raises
    :class:`OutputFolderError` naming the folder when another process holds it."""
    folder = Path(folder)
    key = folder.resolve()
    held = _HELD.get(key)
    if held is not None:
        lock = folder / LOCK_FILE
        if lock.is_file() and os.fstat(held).st_ino == lock.stat().st_ino:
            return
        os.close(_HELD.pop(key))  # the folder was deleted and made again
    folder.mkdir(parents=True, exist_ok=True)
    fd = hold_lock(folder / LOCK_FILE)
    if fd is None:
        raise OutputFolderError(
            f"--output-dir: {folder} is in use by another run (it holds {folder / LOCK_FILE}); "
            "wait for it to end or choose another folder"
        )
    _HELD[key] = fd


def release_output_folder(folder: PathLike) -> None:
    """Release the lock :func:`lock_output_folder` took (at the end of a run)."""
    fd = _HELD.pop(Path(folder).resolve(), None)
    if fd is not None:
        os.close(fd)


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
    remove_stale(target.parent.glob(f"{_STAGING}{target.name}-*"))
    staging = _sibling(target, _STAGING)
    staging.mkdir()
    lock = hold_lock(staging)  # marks it as being written (see remove_stale)
    try:
        yield staging
        replace_directory(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        if lock is not None:
            os.close(lock)


def write_json(path: PathLike, value: object) -> None:
    """Write ``value`` as indented JSON to ``path`` atomically (a reader sees old or new)."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    temporary.write_text(json.dumps(value, indent=2) + "\n")
    os.replace(temporary, path)


def prepare_run_folder(output_dir: PathLike, *, resuming: bool, overwrite: bool) -> Path:
    """Check that a run may write into ``output_dir``, make it exist and lock it for this
    process (:func:`lock_output_folder`).

    A new run needs a missing or empty folder (its lock file aside, and a ``run.json``
    alone, from a run that failed before saving anything, counts as empty); with
    ``overwrite`` the outputs of an earlier run (:data:`RUN_OUTPUTS`) are deleted first and
    any other file is left alone, and only in a folder a run of this package wrote (it
    holds ``run.json``). A resumed run writes into its own folder (its identity is checked
    by the caller). Raises :class:`OutputFolderError` naming the folder.
    """
    folder = Path(output_dir)
    if folder.exists() and not folder.is_dir():
        raise OutputFolderError(f"--output-dir: {folder} exists and is not a folder")
    lock_output_folder(folder)
    contents = {path.name for path in folder.iterdir()} - {LOCK_FILE}
    if not resuming and contents and contents != {RUN_FILE}:
        if not (folder / RUN_FILE).is_file():
            raise OutputFolderError(
                f"--output-dir: {folder} is not empty and no run of this package wrote it "
                f"(no {RUN_FILE}); choose another folder"
                + (" (--overwrite-output-dir deletes only a run's outputs)" if overwrite else "")
            )
        if not overwrite:
            raise OutputFolderError(
                f"--output-dir: {folder} is not empty (an earlier run's outputs?); resume it with "
                "--resume-from-checkpoint latest, choose another folder, or pass "
                "--overwrite-output-dir to replace its run"
            )
        published = [p.name for p in (folder / BEST_MODEL_DIR).glob("*") if p.is_file()]
        for name in {*published, *RUN_OUTPUTS} - {LOCK_FILE}:
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
    if (path / BEST_MODEL_DIR / "config.json").is_file():
        return path / BEST_MODEL_DIR  # a run folder (with the same model at its top, or not)
    if (path / "config.json").is_file():
        return path
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such folder")
    raise FileNotFoundError(
        f"{path} is not a saved model folder (no config.json) nor a training run with a {BEST_MODEL_DIR}/ model"
    )


def publish_best_model(output_dir: PathLike) -> list[str]:
    """Copy the files of ``output_dir/best`` to the top of ``output_dir`` (each replaced
    atomically; the run's own ``metrics.json`` and ``run.json`` stay), so the run folder
    loads with ``from_pretrained`` as a transformers ``Trainer``'s does. Returns the names."""
    folder = Path(output_dir)
    names = []
    for path in sorted((folder / BEST_MODEL_DIR).iterdir()):
        if not path.is_file() or path.name in RUN_OUTPUTS or path.name == LOCK_FILE:
            continue
        temporary = folder / f".{path.name}.{uuid.uuid4().hex[:8]}.tmp"
        shutil.copy2(path, temporary)
        os.replace(temporary, folder / path.name)
        names.append(path.name)
    return names


def push_folder_to_hub(folder: Path | str, repo_id: str) -> str:
    """Upload a saved model folder to the Hub model repo ``repo_id``; returns the commit URL."""
    api = HfApi()
    api.create_repo(repo_id, exist_ok=True)
    commit = api.upload_folder(repo_id=repo_id, folder_path=str(folder), ignore_patterns=[f"{CHECKPOINTS_DIR}/*"])
    return commit.commit_url
