"""A run's identity: what it was started with, recorded once and checked on resume.

``run.json`` in the output folder holds the arguments that determine the run (everything
but the fields a resumed run may change, such as ``max_steps``), the seed and a
fingerprint of the data. Resuming with other arguments or other data would mix two runs
(history, weights and data order of one, settings of the other), so it is refused with a
message naming the first difference.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path

from .outputs import RUN_FILE, OutputFolderError, write_json

PathLike = str | os.PathLike


def file_fingerprint(paths: Iterable[PathLike]) -> str:
    """SHA-256 over the names and bytes of ``paths`` (read in 1 MiB blocks)."""
    digest = hashlib.sha256()
    for path in paths:
        path = Path(path)
        digest.update(path.name.encode())
        with path.open("rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
    return digest.hexdigest()


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def record_identity(output_dir: PathLike, arguments: Mapping[str, object], data: str) -> dict:
    """Write ``run.json`` for a new run; returns it."""
    identity = {"run_id": uuid.uuid4().hex, "arguments": dict(arguments), "data": data}
    write_json(Path(output_dir) / RUN_FILE, identity)
    return identity


def check_identity(output_dir: PathLike, arguments: Mapping[str, object], data: str) -> dict:
    """The ``run.json`` of the run in ``output_dir``, after checking that ``arguments`` and
    ``data`` are the ones it was started with. Raises :class:`OutputFolderError`."""
    path = Path(output_dir) / RUN_FILE
    if not path.is_file():
        raise OutputFolderError(
            f"--resume-from-checkpoint: {output_dir} has no {RUN_FILE}, so it is not a run "
            "of this version of the package to resume"
        )
    try:
        identity = json.loads(path.read_text())
        recorded = identity["arguments"]
    except (ValueError, KeyError, TypeError) as err:
        raise OutputFolderError(f"{path}: unreadable run record ({err})") from err
    # Through JSON, so tuples compare with the lists JSON gives back.
    given = json.loads(json.dumps(dict(arguments)))
    for name in sorted(set(recorded) | set(given)):
        if recorded.get(name) != given.get(name):
            raise OutputFolderError(
                f"{_flag(name)}: {given.get(name)!r} differs from {recorded.get(name)!r}, the "
                f"value of the run in {output_dir}; resume with the same settings or train into "
                "another --output-dir"
            )
    if identity.get("data") != data:
        raise OutputFolderError(
            f"--resume-from-checkpoint: the training or dev data differ from those of the run in "
            f"{output_dir}"
        )
    return identity
