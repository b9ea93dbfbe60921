"""Pushing a saved folder to the Hugging Face Hub, failing in one line.

:func:`check_hub_access` checks a token, the connection and write access before any work
whose result goes to the Hub; :func:`push_folder_to_hub` uploads a model folder (without
its checkpoints, lock or manifest). Every failure is a :class:`HubError` naming the flag or
the repository; ``--debug`` shows the chain.
"""

from __future__ import annotations

import functools
from pathlib import Path

from huggingface_hub import HfApi
from huggingface_hub.errors import LocalTokenNotFoundError, OfflineModeIsEnabled

from .model_folders import CHECKPOINTS_DIR
from .safe_files import LOCK_FILE, MANIFEST_FILE


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
