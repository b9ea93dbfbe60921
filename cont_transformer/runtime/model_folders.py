"""Model folders and training run folders as the package reads them, and the Hub.

* :func:`resolve_model_dir` accepts a model folder or a run folder (its ``best/`` model).
* :func:`check_outside_model_folders` refuses a file to write inside a model or run folder;
  :func:`run_folder_owning` names the run whose outputs a path is part of.
* :func:`check_hub_access` and :func:`push_folder_to_hub` push a saved folder to the Hub,
  failing in one line.

A run folder holds ``best/``, ``checkpoints/``, ``metrics.json`` and ``run.json``
(:data:`RUN_OUTPUTS`); writing one is the training scaffold's
(:mod:`cont_transformer.training.outputs`), writing any folder safely is
:mod:`cont_transformer.runtime.safe_files` (docs/design.md §8).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from huggingface_hub import HfApi
from huggingface_hub.errors import LocalTokenNotFoundError, OfflineModeIsEnabled

from .safe_files import LOCK_FILE, MANIFEST_FILE, MODEL_KIND, RUN_KIND, OutputFolderError, PathLike, read_manifest

BEST_MODEL_DIR = "best"
METRICS_FILE = "metrics.json"
RUN_FILE = "run.json"
CHECKPOINTS_DIR = "checkpoints"
# What a run writes into its output folder; in a folder without a manifest (written before
# manifests existed) --overwrite-output-dir removes these and the published model files.
RUN_OUTPUTS = (BEST_MODEL_DIR, CHECKPOINTS_DIR, METRICS_FILE, RUN_FILE)
# Files of a model folder that hold its weights (as transformers looks for them).
_WEIGHTS_PATTERNS = ("*.safetensors", "pytorch_model*.bin")


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
