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

What a run owns. Every folder the package writes holds a manifest,
``.cont_transformer_manifest.json`` (:data:`MANIFEST_FILE`), naming the files and folders
its writer put there, recorded before they are written (:func:`record_outputs`; a staged
folder's is written inside the staging folder, so it arrives with the outputs). Replacing
a folder deletes only what its manifest names (:func:`remove_outputs`, recursing into a
named folder with a manifest of its own: ``best/``, ``checkpoints/``), and
:func:`staged_directory` carries every other file of the old folder (a user's notes, the
lock file) into the new one: ``--overwrite-output-dir`` and ``compress.py --overwrite``
leave a user's files where they are. A folder written before manifests existed has
none: a run folder's fixed outputs (:data:`RUN_OUTPUTS`) and its published model files
are replaced as before, and compression refuses to replace it.

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
import functools
import json
import logging
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from huggingface_hub import HfApi
from huggingface_hub.errors import LocalTokenNotFoundError, OfflineModeIsEnabled

try:
    import fcntl
except ImportError:  # not POSIX: no locks, no stale-file cleanup
    fcntl = None

logger = logging.getLogger(__name__)

PathLike = str | os.PathLike

BEST_MODEL_DIR = "best"
METRICS_FILE = "metrics.json"
RUN_FILE = "run.json"
CHECKPOINTS_DIR = "checkpoints"
LOCK_FILE = ".lock"
# What a run writes into its output folder; in a folder without a manifest (written before
# manifests existed) --overwrite-output-dir removes these and the published model files.
RUN_OUTPUTS = (BEST_MODEL_DIR, CHECKPOINTS_DIR, METRICS_FILE, RUN_FILE)
# The record of what the package wrote into a folder (module docstring).
MANIFEST_FILE = ".cont_transformer_manifest.json"
RUN_KIND = "run"  # the manifest of a training run's output folder
MODEL_KIND = "model"  # of a model folder (best/, a compressed model)
# Files of a model folder that hold its weights (as transformers looks for them).
_WEIGHTS_PATTERNS = ("*.safetensors", "pytorch_model*.bin")
_STAGING = ".staging-"
_RETIRED = ".retired-"
_RENAME_EXCHANGE = 2


class OutputFolderError(ValueError):
    """An output folder this run must not write into (as given, it would lose data)."""


# --- manifests -------------------------------------------------------------------------
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


def _remove_path(path: Path) -> None:
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
            _remove_path(path)
    if {p.name for p in folder.iterdir()} - {MANIFEST_FILE, LOCK_FILE}:
        _write_manifest(folder, manifest["kind"], [])
    else:
        (folder / MANIFEST_FILE).unlink()


def _link_or_copy(source: str, destination: str) -> None:
    try:
        os.link(source, destination)  # the same file (a held lock stays held), no copy
    except OSError:
        shutil.copy2(source, destination)


def _carry_over(target: Path, staging: Path) -> None:
    """Put into ``staging`` what ``target`` holds that its manifest does not name (a user's
    files, the lock file), as hard links where the file system allows. Without a manifest
    (a folder written before manifests) only the lock file is carried."""
    manifest = read_manifest(target)
    owned = set(manifest["outputs"]) if manifest is not None else None
    for path in target.iterdir():
        if path.name == MANIFEST_FILE or (owned is None and path.name != LOCK_FILE):
            continue
        if owned is not None and path.name in owned:
            continue
        destination = staging / path.name
        if destination.exists() or destination.is_symlink():
            logger.warning("%s: replaced by the new output of that name", path)
            continue
        if path.is_symlink():
            destination.symlink_to(os.readlink(path))
        elif path.is_dir():
            shutil.copytree(path, destination, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(str(path), str(destination))


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
        manifest = read_manifest(folder)
    except OutputFolderError:
        return True  # a damaged manifest: the package wrote it
    return manifest is not None and manifest["kind"] in (RUN_KIND, MODEL_KIND)


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
        is_run = (manifest is not None and manifest["kind"] == RUN_KIND) or (folder / RUN_FILE).is_file()
        if not is_run:
            continue
        if folder == path:
            return folder
        owned = set(manifest["outputs"]) if manifest is not None else set(RUN_OUTPUTS)
        if path.relative_to(folder).parts[0] in owned:
            return folder
    return None


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
def staged_directory(target: PathLike, kind: str = MODEL_KIND) -> Iterator[Path]:
    """Yield an empty staging folder next to ``target``; on success it replaces ``target``.

    What the caller wrote into the staging folder is recorded in its manifest (``kind``),
    and what the old ``target`` holds beyond its own manifest (a user's files, the lock
    file) is carried over first, so the swap replaces only what the package wrote. On an
    error the staging folder is removed and ``target`` is untouched.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(target.parent.glob(f"{_STAGING}{target.name}-*"))
    staging = _sibling(target, _STAGING)
    staging.mkdir()
    lock = hold_lock(staging)  # marks it as being written (see remove_stale)
    try:
        yield staging
        _write_manifest(staging, kind, [p.name for p in staging.iterdir() if p.name != MANIFEST_FILE])
        if target.is_dir():
            _carry_over(target, staging)
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


def prepare_run_folder(
    output_dir: PathLike,
    *,
    resuming: bool,
    overwrite: bool,
    sources: Mapping[str, PathLike | None] | None = None,
) -> Path:
    """Check that a run may write into ``output_dir``, make it exist and lock it for this
    process (:func:`lock_output_folder`).

    A new run needs a missing or empty folder (its lock file and manifest aside, and a
    ``run.json`` alone, from a run that failed before saving anything, counts as empty);
    with ``overwrite`` the outputs of an earlier run are deleted first, and only in a
    folder a run of this package wrote (it holds ``run.json``): what its manifest names
    (:func:`remove_outputs`), or in a folder without one :data:`RUN_OUTPUTS` and the
    published model files. Any other file is left alone. ``sources``: what the run will
    read, by flag (``{"--model-name-or-path": path}``); one inside the folder to be
    replaced is refused before anything is deleted. A resumed run writes into its own
    folder (its identity is checked by the caller). Raises :class:`OutputFolderError`
    naming the folder.
    """
    folder = Path(output_dir)
    if folder.exists() and not folder.is_dir():
        raise OutputFolderError(f"--output-dir: {folder} exists and is not a folder")
    lock_output_folder(folder)
    contents = {path.name for path in folder.iterdir()} - {LOCK_FILE, MANIFEST_FILE}
    if not resuming and contents and contents != {RUN_FILE}:
        manifest = read_manifest(folder)
        if not (folder / RUN_FILE).is_file() and not (manifest is not None and manifest["kind"] == RUN_KIND):
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
        _check_sources(folder, sources or {})
        if manifest is not None:
            remove_outputs(folder)
        else:  # written before manifests: the fixed outputs and the published model files
            published = [p.name for p in (folder / BEST_MODEL_DIR).glob("*") if p.is_file()]
            for name in {*published, *RUN_OUTPUTS} - {LOCK_FILE}:
                _remove_path(folder / name)
    folder.mkdir(parents=True, exist_ok=True)
    recover_directory(folder / BEST_MODEL_DIR)
    return folder


def _check_sources(folder: Path, sources: Mapping[str, PathLike | None]) -> None:
    """Refuse a source (a model to start from) that is the run folder to be replaced or
    lies inside it: it would be deleted before the run reads it."""
    resolved = folder.resolve()
    for flag, source in sources.items():
        if source is None or not Path(source).exists():
            continue  # not given, or not a local path (a Hub id)
        path = Path(source).resolve()
        if path == resolved or resolved in path.parents:
            raise OutputFolderError(
                f"{flag}: {source} lies inside --output-dir {folder}, whose run --overwrite-output-dir "
                "replaces; copy the model elsewhere first or choose another --output-dir"
            )


def record_run_outputs(output_dir: PathLike, names: Iterable[str]) -> None:
    """Record in the run folder's manifest the names a run writes at its top (before it
    writes them). A folder of a run that began before manifests existed is adopted with
    its model files published at the top (those of ``best/``)."""
    folder = Path(output_dir)
    adopted = []
    if read_manifest(folder) is None and (folder / RUN_FILE).is_file():
        adopted = [p.name for p in (folder / BEST_MODEL_DIR).glob("*") if p.is_file() and (folder / p.name).is_file()]
    record_outputs(folder, *names, *adopted, kind=RUN_KIND)


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
    """Copy the model files of ``output_dir/best`` (those its manifest names) to the top of
    ``output_dir`` (each recorded in the run's manifest, then replaced atomically; the run's
    own ``metrics.json`` and ``run.json`` stay, and so does a file of that name the run did
    not write), so the run folder loads with ``from_pretrained`` as a transformers
    ``Trainer``'s does. Returns the names."""
    folder = Path(output_dir)
    best = folder / BEST_MODEL_DIR
    manifest = read_manifest(best)
    owned = set(manifest["outputs"]) if manifest is not None else None
    run_manifest = read_manifest(folder)
    ours = set(run_manifest["outputs"]) if run_manifest is not None else set()
    names = []
    for path in sorted(best.iterdir()):
        name = path.name
        if not path.is_file() or name in RUN_OUTPUTS or name in (LOCK_FILE, MANIFEST_FILE):
            continue
        if owned is not None and name not in owned:
            continue  # a user's file beside the model
        if run_manifest is not None and name not in ours and (folder / name).exists():
            logger.warning(
                "%s: not written by this run; the best model's %s is not published over it", folder / name, name
            )
            continue
        names.append(name)
    if run_manifest is not None:
        record_outputs(folder, *names)
    for name in names:
        temporary = folder / f".{name}.{uuid.uuid4().hex[:8]}.tmp"
        shutil.copy2(best / name, temporary)
        os.replace(temporary, folder / name)
    return names


class HubError(OSError):
    """The Hub cannot be used as asked (no token, no connection, no write access), in one line."""


def _hub_problem(error: BaseException, endpoint: str | None = None) -> str:
    """What went wrong with a Hub call, in a few words (the first line of its message)."""
    if isinstance(error, LocalTokenNotFoundError):
        return "no Hugging Face token: log in with `hf auth login` or set HF_TOKEN"
    if isinstance(error, OfflineModeIsEnabled):
        return "HF_HUB_OFFLINE is set"
    lines = str(error).strip().splitlines()
    problem = f"{type(error).__name__}: {lines[0] if lines else 'no message'}"
    # httpx's transport errors (no network, no such host, refused): the Hub is out of reach.
    transport = isinstance(error, ConnectionError) or type(error).__name__ in ("ConnectError", "ConnectTimeout")
    return f"cannot reach {endpoint or 'the Hub'}: {problem}" if transport else problem


def check_hub_access(repo_id: str, flag: str = "--push-to-hub") -> None:
    """Check, before any work whose result goes to the Hub, that a token is there, the Hub
    answers and the token may write; :class:`HubError` naming ``flag`` in one line if not."""
    api = HfApi()
    try:
        info = api.whoami()
    except Exception as err:  # no token, no network, a refused token: one line, the chain under --debug
        problem = _hub_problem(err, getattr(api, "endpoint", None))
        raise HubError(f"{flag} {repo_id}: cannot use the Hub ({problem}); fix that or leave out {flag}") from err
    role = ((info.get("auth") or {}).get("accessToken") or {}).get("role") if isinstance(info, dict) else None
    if role == "read":
        raise HubError(f"{flag} {repo_id}: the Hugging Face token is read-only; log in with one that may write")


def _one_line_hub_errors(push):
    """``push(folder, repo_id)`` whose failures (the network, the token, the repository) are one
    :class:`HubError` line naming the repository; ``--debug`` shows the chain."""

    @functools.wraps(push)
    def wrapper(folder: Path | str, repo_id: str) -> str:
        try:
            return push(folder, repo_id)
        except Exception as err:
            raise HubError(f"--push-to-hub {repo_id}: the upload of {folder} failed ({_hub_problem(err)})") from err

    return wrapper


@_one_line_hub_errors
def push_folder_to_hub(folder: Path | str, repo_id: str) -> str:
    """Upload a saved model folder to the Hub model repo ``repo_id``; returns the commit URL."""
    api = HfApi()
    api.create_repo(repo_id, exist_ok=True)
    ignored = [f"{CHECKPOINTS_DIR}/*", LOCK_FILE, MANIFEST_FILE, f"*/{MANIFEST_FILE}"]
    commit = api.upload_folder(repo_id=repo_id, folder_path=str(folder), ignore_patterns=ignored)
    return commit.commit_url
