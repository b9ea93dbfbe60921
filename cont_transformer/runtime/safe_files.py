"""Files and folders written so that a kill at any moment loses nothing already saved.

* :func:`staged_directory` writes a folder (a model, a compressed model, a checkpoint)
  into a staging folder next to its target and swaps it into place only when complete.
  The swap is one atomic ``renameat2(RENAME_EXCHANGE)`` on Linux; elsewhere it is two
  renames, and :func:`recover_directory` undoes a swap that a kill interrupted.
* :func:`write_json` replaces a JSON file atomically (temporary file, then rename).
* :func:`naming_full_disk` turns a write that fails for a full disk into one line naming
  its path, whatever library wrote it (every write here goes through it).

Modes. What the package writes gets the modes the user's umask gives a new file or folder
(0o644 / 0o755 under umask 022, 0o600 / 0o700 under 077): staging files are created with
0o666 less the umask (:func:`hold_lock`), and a staged folder's contents are given those
modes before the swap (:func:`give_umask_modes`), whatever mode a library wrote them with.

What the package owns. Every folder the package writes holds a manifest,
``.cont_transformer_manifest.json`` (:data:`MANIFEST_FILE`), naming the files and folders
its writer put there, recorded before they are written (:func:`record_outputs`; a staged
folder's is written inside the staging folder, so it arrives with the outputs). Replacing
a folder deletes only what its manifest names (:func:`remove_outputs`, recursing into a
named folder with a manifest of its own: ``best/``, ``checkpoints/``), and
:func:`staged_directory` carries every other file of the old folder (a user's notes, the
lock file) into the new one: ``--overwrite-output-dir`` and ``compress.py --overwrite``
leave a user's files where they are.

Locks and leftovers. :func:`lock_output_folder` holds an exclusive lock on
``<folder>/.lock`` (``flock``) until the process ends (the kernel releases it, also after
a kill) or :func:`release_output_folder` (:func:`holding_output_folder` does both around
a writer, and removes a folder it made when the writer fails): a second writer into the
same folder is refused in one line. A staging folder or file is locked the same way while it is written
(:func:`hold_lock`), so :func:`remove_stale` deletes exactly the ones whose writer is
gone: the next run cleans up what a killed one left.

Model and run folders (their layout, loading one, the Hub) are
:mod:`cont_transformer.runtime.model_folders`; preparing a training run's folder is
:mod:`cont_transformer.training.outputs`. This module imports nothing of the package, so
every layer above the core may use it (docs/design.md §1, §8).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
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
# The record of what the package wrote into a folder (module docstring).
MANIFEST_FILE = ".cont_transformer_manifest.json"
_STAGING = ".staging-"
_RETIRED = ".retired-"
_RENAME_EXCHANGE = 2


class OutputFolderError(ValueError):
    """An output folder this run must not write into (as given, it would lose data)."""


def _check_name(name: object, path: Path) -> str:
    """A manifest entry: one name inside the folder (never a path that leaves it)."""
    if not isinstance(name, str) or name in ("", ".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise OutputFolderError(f"{path}: {name!r} is not the name of a file in the folder; the manifest is damaged")
    return name


def read_manifest(folder: PathLike) -> dict | None:
    """``{"kind": ..., "outputs": [names]}`` of the folder's manifest, None where it has
    none. Raises :class:`OutputFolderError` naming a damaged manifest."""
    path = Path(folder) / MANIFEST_FILE
    if not path.is_file():
        return None
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        outputs = saved["outputs"]
        if not isinstance(outputs, list):
            raise TypeError("outputs is not a list")
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise OutputFolderError(f"{path}: unreadable record of what this package wrote ({err})") from None
    return {"kind": saved.get("kind"), "outputs": [_check_name(name, path) for name in outputs]}


def _write_manifest(folder: Path, kind: str | None, outputs: Iterable[str]) -> None:
    write_json(
        folder / MANIFEST_FILE,
        {"written_by": "cont_transformer", "kind": kind, "outputs": sorted(set(outputs))},
    )


def record_outputs(folder: PathLike, *names: str, kind: str | None = None) -> None:
    """Add ``names`` to what the manifest of ``folder`` says the package wrote there (the
    manifest is made if missing, with ``kind``), atomically; call it before writing them,
    so that a kill in between leaves nothing of ours unrecorded."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    known = manifest["outputs"] if manifest else []
    saved_kind = manifest["kind"] if manifest else None
    for name in names:
        _check_name(name, folder / MANIFEST_FILE)
    if manifest is not None and set(names) <= set(known) and (kind is None or kind == saved_kind):
        return
    folder.mkdir(parents=True, exist_ok=True)
    _write_manifest(folder, kind or saved_kind, [*known, *names])


def forget_outputs(folder: PathLike, *names: str) -> None:
    """Drop ``names`` from the manifest of ``folder`` (after deleting them)."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    if manifest is not None and set(names) & set(manifest["outputs"]):
        _write_manifest(folder, manifest["kind"], set(manifest["outputs"]) - set(names))


def remove_path(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def remove_outputs(folder: PathLike) -> None:
    """Delete what the manifest of ``folder`` names; a named folder with a manifest of its own
    loses only what that one names (and goes if nothing else is left in it). Every other file
    stays; the manifest goes too unless other files remain (then it names nothing, so the
    folder stays known as one the package wrote and its next writer keeps them)."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    if manifest is None:
        return
    for name in manifest["outputs"]:
        path = folder / name
        if path.is_dir() and not path.is_symlink() and (path / MANIFEST_FILE).is_file():
            remove_outputs(path)
            with contextlib.suppress(OSError):
                path.rmdir()  # only when nothing of the user's is left in it
        else:
            remove_path(path)
    if {p.name for p in folder.iterdir()} - {MANIFEST_FILE, LOCK_FILE}:
        _write_manifest(folder, manifest["kind"], [])
    else:
        (folder / MANIFEST_FILE).unlink()


def _link_or_copy(source: str, destination: str) -> None:
    try:
        os.link(source, destination)  # the same file (a held lock stays held), no copy
    except OSError:
        shutil.copy2(source, destination)


def _carry_over(target: Path, staging: Path, owned: set[str] | None = None, nested: bool = False) -> None:
    """Put into ``staging`` what ``target`` holds that its manifest (or ``owned``) does not
    name (a user's files, the lock file), as hard links where the file system allows; without
    either, only the lock file. ``nested``: a named folder with a manifest of its own (a run's
    ``best/``, ``checkpoints/``) passes on what that one does not name, into the staging
    folder's folder of that name (made, its manifest naming nothing, where there is none)."""
    manifest = read_manifest(target)
    if owned is None and manifest is not None:
        owned = set(manifest["outputs"])
    for path in target.iterdir():
        scratch = path.name.startswith((_STAGING, _RETIRED))  # a killed writer's, never a user's
        if path.name == MANIFEST_FILE or scratch or (owned is None and path.name != LOCK_FILE):
            continue
        destination = staging / path.name
        if owned is not None and path.name in owned:
            inner = read_manifest(path) if nested and path.is_dir() and not path.is_symlink() else None
            if inner is not None and {p.name for p in path.iterdir()} - {MANIFEST_FILE, *inner["outputs"]}:
                if not destination.is_dir():
                    destination.mkdir()
                    _write_manifest(destination, inner["kind"], [])
                _carry_over(path, destination, nested=True)
            continue
        if destination.exists() or destination.is_symlink():
            logger.warning("%s: replaced by the new output of that name", path)
            continue
        if path.is_symlink():
            destination.symlink_to(os.readlink(path))
        elif path.is_dir():
            shutil.copytree(path, destination, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(str(path), str(destination))


def hold_lock(path: PathLike) -> int | None:
    """Open ``path`` (a file, created if missing, or a folder) and lock it exclusively.

    Returns the descriptor holding the lock (close it to release; the kernel releases it
    when the process dies), or None when another process holds it. Without ``fcntl``
    (not POSIX) it returns a descriptor and locks nothing."""
    path = Path(path)
    fd = os.open(path, os.O_RDONLY) if path.is_dir() else os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
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


@contextlib.contextmanager
def holding_output_folder(folder: PathLike) -> Iterator[Path]:
    """Hold ``folder``'s lock (:func:`lock_output_folder`; the folder is made if missing)
    while the caller writes it, and release it after; a folder this call made is removed
    again when the caller fails before writing anything into it."""
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


def umask() -> int:
    """The process's umask, read where Linux shows it (``/proc/self/status``) so that it is
    never changed, not even for a moment; elsewhere set and restored."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def give_umask_modes(folder: PathLike) -> None:
    """Give ``folder`` and everything in it the modes the user's umask gives a new file
    (0o666 less the umask; 0o777 for a folder or an executable file): a library that writes
    through a private temporary file (safetensors' ``save_file``: 0o600) leaves its mode
    behind. Links are left alone."""
    mask = umask()
    for root, folders, files in os.walk(folder):
        for name in [*folders, *files]:
            path = os.path.join(root, name)
            if os.path.islink(path):
                continue
            mode = os.stat(path).st_mode
            executable = os.path.isdir(path) or mode & 0o111
            os.chmod(path, (0o777 if executable else 0o666) & ~mask)
    os.chmod(folder, 0o777 & ~mask)


class StagedFolder:
    """A folder built beside ``target`` (``.staging-<name>-<hex>``, locked while it is
    written, so :func:`remove_stale` removes it once its writer is gone) that replaces
    ``target`` when complete (:meth:`commit`) or vanishes (:meth:`discard`): until then
    ``target`` is untouched, and a kill at any moment leaves it or its replacement whole."""

    def __init__(self, target: PathLike):
        self.target = Path(target)
        self.target.parent.mkdir(parents=True, exist_ok=True)
        remove_stale(self.target.parent.glob(f"{glob.escape(_STAGING + self.target.name)}-*"))
        self.path = _sibling(self.target, _STAGING)
        self.path.mkdir()
        self._lock = hold_lock(self.path)  # marks it as being written (see remove_stale)
        self.committed = False

    def commit(self, owned: set[str] | None = None, nested: bool = False) -> None:
        """Carry over what ``target`` holds beyond its outputs (its manifest's, or ``owned``;
        ``nested``: see :func:`_carry_over`), then swap the staging folder into place."""
        if self.target.is_dir():
            _carry_over(self.target, self.path, owned, nested)
        replace_directory(self.path, self.target)
        self.committed = True
        self._release()

    def discard(self) -> None:
        if not self.committed:
            shutil.rmtree(self.path, ignore_errors=True)
        self._release()

    def _release(self) -> None:
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


@contextlib.contextmanager
def staged_directory(target: PathLike, kind: str) -> Iterator[Path]:
    """Yield an empty staging folder next to ``target``; on success it replaces ``target``.

    What the caller wrote into the staging folder gets the modes of the user's umask
    (:func:`give_umask_modes`) and is recorded in its manifest (``kind``: what the folder
    holds, ``model_folders.KINDS``), and what the old ``target`` holds beyond its own
    manifest (a user's files, the lock file) is carried over next, so the swap replaces
    only what the package wrote. On an error (a full disk named) ``target`` is untouched."""
    staged = StagedFolder(target)
    try:
        with naming_full_disk(target):
            yield staged.path
            give_umask_modes(staged.path)
            _write_manifest(staged.path, kind, [p.name for p in staged.path.iterdir() if p.name != MANIFEST_FILE])
            staged.commit()
    finally:
        staged.discard()


# Below this many free bytes, a torch write that stopped short is put down to the disk.
_NEARLY_FULL = 1 << 20


class DiskFullError(OSError):
    """A write failed because its file system is full, named in one line."""


def _full_disk(error: BaseException, path: Path) -> bool:
    """Whether ``error`` (raised writing under ``path``) means that the disk is full:
    ``ENOSPC`` or a quota, the same told in a library's message, or torch's ``unexpected
    pos`` (its writer's short write) on a file system with under a mebibyte left."""
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(error)
    if "No space left on device" in text or "os error 28" in text:
        return True
    if "unexpected pos" in text:
        existing = next((p for p in [path, *path.parents] if p.exists()), None)
        with contextlib.suppress(OSError):
            return existing is not None and shutil.disk_usage(existing).free < _NEARLY_FULL
    return False


@contextlib.contextmanager
def naming_full_disk(path: PathLike) -> Iterator[None]:
    """Turn a write under ``path`` that fails for a full disk (:func:`_full_disk`) into one
    :class:`DiskFullError` line naming ``path``; any other error passes unchanged."""
    try:
        yield
    except DiskFullError:
        raise
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
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    os.replace(temporary, path)
