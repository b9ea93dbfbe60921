"""Files and folders written so that a kill at any moment loses nothing, replaced only where
the package wrote them. Two rules: refuse a non-empty folder the command does not own, and
write by staged rename.

* Staged writes: :class:`StagedFolder` builds a folder beside its target, locked while
  written, and swaps it in whole (one ``renameat2(RENAME_EXCHANGE)``; elsewhere two renames
  that :func:`recover_directory` completes after a kill), carrying every file the old
  folder's writer did not own (a user's notes, the lock) into it; :func:`write_json` replaces
  a file by rename. What is written gets the modes of the user's umask.
* Ownership: the manifest of every folder the package writes (:data:`MANIFEST_FILE`) names
  its kind and what its writer put there, recorded before it is written.
* Locks: ``flock`` on ``<folder>/.lock`` while a writer holds a folder, and on each staging
  file or folder, so :func:`remove_stale` deletes exactly what a killed writer left.

It imports nothing of the package (docs/design.md §1, §8).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import glob
import json
import logging
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: no locks, no stale-file cleanup
    fcntl = None

logger = logging.getLogger(__name__)

PathLike = str | os.PathLike
LOCK_FILE = ".lock"
MANIFEST_FILE = ".cont_transformer_manifest.json"
_STAGING, _RETIRED = ".staging-", ".retired-"


class OutputFolderError(ValueError):
    """An output folder this run must not write into (as given, it would lose data)."""


class DiskFullError(OSError):
    """A write failed because its file system is full, named in one line."""


# --- what the package owns --------------------------------------------------------------
def _check_name(name: object, manifest: Path) -> str:
    """A manifest entry: one name inside the folder, never a path that leaves it."""
    if not isinstance(name, str) or name in ("", ".", "..") or any(c in name for c in "/\\\0"):
        raise OutputFolderError(
            f"{manifest}: {name!r} is not the name of a file in the folder; the manifest is damaged"
        )
    return name


def read_manifest(folder: PathLike) -> dict | None:
    """``{"kind": ..., "outputs": [names]}`` of the folder's manifest, None where it has
    none. Raises :class:`OutputFolderError` naming a damaged manifest."""
    path = Path(folder) / MANIFEST_FILE
    if not path.is_file():
        return None
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(saved["outputs"], list):
            raise TypeError("outputs is not a list")
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise OutputFolderError(f"{path}: unreadable record of what this package wrote ({err})") from None
    return {"kind": saved.get("kind"), "outputs": [_check_name(name, path) for name in saved["outputs"]]}


def _write_manifest(folder: Path, kind: str | None, outputs: Iterable[str]) -> None:
    write_json(
        folder / MANIFEST_FILE, {"written_by": "cont_transformer", "kind": kind, "outputs": sorted(set(outputs))}
    )


def record_outputs(folder: PathLike, *names: str, kind: str | None = None) -> None:
    """Add ``names`` to the manifest of ``folder`` (made if missing, with ``kind``), before
    they are written: a kill in between leaves nothing of ours unrecorded."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    for name in names:
        _check_name(name, folder / MANIFEST_FILE)
    known, saved_kind = (manifest["outputs"], manifest["kind"]) if manifest else ([], None)
    if manifest is None or not set(names) <= set(known) or kind not in (None, saved_kind):
        folder.mkdir(parents=True, exist_ok=True)
        _write_manifest(folder, kind or saved_kind, [*known, *names])


def forget_outputs(folder: PathLike, *names: str) -> None:
    """Drop ``names`` from the manifest of ``folder`` (after deleting them)."""
    manifest = read_manifest(folder)
    if manifest is not None and set(names) & set(manifest["outputs"]):
        _write_manifest(Path(folder), manifest["kind"], set(manifest["outputs"]) - set(names))


def _link_or_copy(source: str, destination: str) -> None:
    try:
        os.link(source, destination)  # the same file (a held lock stays held), no copy
    except OSError:
        shutil.copy2(source, destination)


def _carry_over(target: Path, staging: Path, owned: set[str] | None = None, nested: bool = False) -> None:
    """Link into ``staging`` what ``target`` holds beyond what its writer owns (``owned``, else
    its manifest's names, else all but the lock). ``nested``: an owned folder with a manifest
    of its own (a run's ``best/``) passes on what that one does not name, the same way."""
    manifest = read_manifest(target)
    if owned is None:
        owned = set(manifest["outputs"]) if manifest else {p.name for p in target.iterdir()} - {LOCK_FILE}
    for path in target.iterdir():
        destination = staging / path.name
        if path.name == MANIFEST_FILE or path.name.startswith((_STAGING, _RETIRED)):  # never a user's
            continue
        if path.name in owned:
            inner = read_manifest(path) if nested and path.is_dir() and not path.is_symlink() else None
            if inner is not None and {p.name for p in path.iterdir()} - {MANIFEST_FILE, *inner["outputs"]}:
                if not destination.is_dir():
                    destination.mkdir()
                    _write_manifest(destination, inner["kind"], [])
                _carry_over(path, destination, nested=True)
        elif destination.exists() or destination.is_symlink():
            logger.warning("%s: replaced by the new output of that name", path)
        elif path.is_symlink():
            destination.symlink_to(os.readlink(path))
        elif path.is_dir():
            shutil.copytree(path, destination, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(str(path), str(destination))


# --- locks ------------------------------------------------------------------------------
def hold_lock(path: PathLike) -> int | None:
    """Open ``path`` (a file, made if missing, or a folder) and lock it: the descriptor
    holding the lock (close it to release), or None when another process holds it."""
    path = Path(path)
    fd = os.open(path, os.O_RDONLY) if path.is_dir() else os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def remove_stale(paths: Iterable[PathLike]) -> None:
    """Delete each of ``paths`` (staging files or folders) that no live process holds locked."""
    for path in paths if fcntl is not None else ():
        try:
            fd = hold_lock(path)
        except OSError:  # gone meanwhile
            continue
        if fd is None:
            continue  # being written
        if Path(path).is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            Path(path).unlink(missing_ok=True)
        os.close(fd)


_HELD: dict[Path, int] = {}  # output folders this process holds locked, with the descriptor


def lock_output_folder(folder: PathLike) -> None:
    """Lock ``folder`` (made if missing) for this process through ``<folder>/.lock``, or
    raise :class:`OutputFolderError` naming it when another process holds it."""
    folder, key = Path(folder), Path(folder).resolve()
    if key in _HELD:
        lock = folder / LOCK_FILE
        if lock.is_file() and os.fstat(_HELD[key]).st_ino == lock.stat().st_ino:
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
    """Release the lock :func:`lock_output_folder` took."""
    fd = _HELD.pop(Path(folder).resolve(), None)
    if fd is not None:
        os.close(fd)


@contextlib.contextmanager
def holding_output_folder(folder: PathLike) -> Iterator[Path]:
    """Hold ``folder``'s lock while the caller writes it; a folder made here goes again when
    the caller fails before writing into it."""
    folder = Path(folder)
    made = not folder.exists()
    lock_output_folder(folder)
    try:
        yield folder
    except BaseException:
        if made and {p.name for p in folder.iterdir()} <= {LOCK_FILE}:
            (folder / LOCK_FILE).unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    finally:
        release_output_folder(folder)


# --- staged folders ---------------------------------------------------------------------
def _exchange(first: Path, second: Path) -> bool:
    """Swap two paths atomically with Linux's ``renameat2``; False where unsupported."""
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None) if os.name == "posix" else None
    at_cwd, exchange = -100, 2
    return renameat2 is not None and renameat2(at_cwd, os.fsencode(first), at_cwd, os.fsencode(second), exchange) == 0


def _sibling(target: Path, kind: str) -> Path:
    return target.with_name(f"{kind}{target.name}-{uuid.uuid4().hex[:8]}")


def replace_directory(staging: Path, target: Path) -> None:
    """Put the complete folder ``staging`` at ``target``, replacing what was there."""
    if not target.exists():
        staging.rename(target)
    elif _exchange(staging, target):
        shutil.rmtree(staging)  # it now holds the old folder
    else:
        retired = _sibling(target, _RETIRED)
        target.rename(retired)
        staging.rename(target)
        shutil.rmtree(retired)


def recover_directory(target: PathLike) -> None:
    """Undo what a kill left around ``target``: a retired folder put back, staging folders deleted."""
    target = Path(target)
    if not target.parent.is_dir():
        return
    retired = sorted(target.parent.glob(f"{_RETIRED}{target.name}-*"))
    if retired and not target.exists():
        retired.pop().rename(target)
    for leftover in [*retired, *target.parent.glob(f"{_STAGING}{target.name}-*")]:
        shutil.rmtree(leftover, ignore_errors=True)


def _umask() -> int:
    """The process's umask, read where Linux shows it (never changed, not even for a moment)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def give_umask_modes(folder: PathLike) -> None:
    """Give ``folder`` and what it holds (links aside) the modes the user's umask gives a new
    file or folder, whatever mode a library wrote them with (safetensors: 0o600)."""
    mask = _umask()
    for root, folders, files in os.walk(folder):
        for path in (os.path.join(root, name) for name in [*folders, *files]):
            if not os.path.islink(path):
                executable = os.path.isdir(path) or os.stat(path).st_mode & 0o111
                os.chmod(path, (0o777 if executable else 0o666) & ~mask)
    os.chmod(folder, 0o777 & ~mask)


class StagedFolder:
    """A folder built beside ``target``, locked while written, that replaces it when complete
    (:meth:`commit`) or vanishes (:meth:`discard`): until then ``target`` is untouched."""

    def __init__(self, target: PathLike):
        self.target = Path(target)
        self.target.parent.mkdir(parents=True, exist_ok=True)
        remove_stale(self.target.parent.glob(f"{glob.escape(_STAGING + self.target.name)}-*"))
        self.path = _sibling(self.target, _STAGING)
        self.path.mkdir()
        self._lock = hold_lock(self.path)
        self.committed = False

    def commit(self, owned: set[str] | None = None, nested: bool = False) -> None:
        """Carry what ``target``'s writer did not own over (:func:`_carry_over`), then swap in."""
        if self.target.is_dir():
            _carry_over(self.target, self.path, owned, nested)
        replace_directory(self.path, self.target)
        self.committed = True
        self.discard()

    def discard(self) -> None:
        if not self.committed:
            shutil.rmtree(self.path, ignore_errors=True)
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


@contextlib.contextmanager
def staged_directory(target: PathLike, kind: str) -> Iterator[Path]:
    """Yield an empty staging folder that replaces ``target`` on success, what it holds given
    the umask's modes and recorded with ``kind`` (``model_folders.KINDS``) in its manifest."""
    staged = StagedFolder(target)
    try:
        with naming_full_disk(target):
            yield staged.path
            give_umask_modes(staged.path)
            _write_manifest(staged.path, kind, [p.name for p in staged.path.iterdir() if p.name != MANIFEST_FILE])
            staged.commit()
    finally:
        staged.discard()


# --- full disks and single files --------------------------------------------------------
def _full_disk(error: BaseException, path: Path) -> bool:
    """Whether ``error``, raised writing under ``path``, means a full disk: ``ENOSPC``, a
    quota, a library's words for it, or torch's short write with under a mebibyte left."""
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(error)
    if "No space left on device" in text or "os error 28" in text:
        return True
    if "unexpected pos" in text:
        existing = next((p for p in [path, *path.parents] if p.exists()), None)
        with contextlib.suppress(OSError):
            return existing is not None and shutil.disk_usage(existing).free < 1 << 20
    return False


@contextlib.contextmanager
def naming_full_disk(path: PathLike) -> Iterator[None]:
    """Turn a write under ``path`` that fails for a full disk into one line naming ``path``."""
    try:
        yield
    except Exception as err:
        if not _full_disk(err, Path(path)):
            raise
        raise DiskFullError(f"{path}: no space left on device; free some space there and run again") from err


def write_json(path: PathLike, value: object) -> None:
    """Write ``value`` as indented JSON to ``path`` atomically (a reader sees old or new)."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with naming_full_disk(path):
            temporary.write_text(json.dumps(value, indent=2) + "\n")
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
