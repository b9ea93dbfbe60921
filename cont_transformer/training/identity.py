"""A run's identity: what it was started with, recorded once and checked on resume.

``run.json`` in the output folder holds the arguments that determine the run, the seed, a
fingerprint of the data and one per data file (so a refusal names the file that
changed), and the mixed precision it trains in. Resuming with other arguments or other
data would mix two runs (history, weights and data order of one, settings of the other),
so it is refused with a message naming the first difference; a checkpoint from another
run folder must carry the same identity (:func:`check_identity` on that folder).

What a resumed run may change (decided here, once):

* :data:`RESUMABLE`: fields that do not change what the run computes up to the resumed
  step (where to write, how often to evaluate and save, logging, compilation, where the
  same data lies, the device, activation checkpointing).
* :data:`RUN_LENGTH` (``max_steps``, ``num_train_epochs``, the image trainer's ``epochs``):
  extending (or shortening) a run. When one of them changes, so may the fields whose
  default derives from the length (:data:`FOLLOWS_RUN_LENGTH`: the tagger's cool-down, 20%
  of ``max_steps``); the extended run keeps the steps already trained and schedules the
  rest from the new length.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..runtime.model_folders import RUN_FILE
from ..runtime.safe_files import OutputFolderError, write_json

PathLike = str | os.PathLike

RESUMABLE = frozenset(
    {
        "output_dir",
        "overwrite_output_dir",
        "resume_from_checkpoint",
        "eval_steps",
        "save_steps",
        "save_total_limit",
        "push_to_hub",
        "hub_model_id",
        "report_to",
        "logging_steps",
        "torch_compile",
        "torch_compile_mode",
        "torch_compile_backend",
        "length_buckets",
        "compression_report",
        "best_num_basis",
        "best_num_steps",
        "do_predict",
        "do_train",
        "do_eval",
        "data_dir",
        "train_file",
        "dev_file",
        "dataset",
        # transformers' Trainer flags of cadence, logging, devices and memory, and those that
        # name what the package always does (training/arguments.py)
        "eval_strategy",
        "save_strategy",
        "lr_scheduler_type",
        "per_device_eval_batch_size",
        "logging_dir",
        "run_name",
        "load_best_model_at_end",
        "metric_for_best_model",
        "dataloader_num_workers",
        "gradient_checkpointing",
        "use_cpu",
    }
)
RUN_LENGTH = frozenset({"max_steps", "num_train_epochs", "epochs"})
FOLLOWS_RUN_LENGTH = frozenset({"cooldown_steps"})
# The schedule's step counts, which --max-steps scales when no flag gives them (recipes.py).
SCHEDULE_STEPS = ("warmup_steps", "refine_steps", "cooldown_steps")
# Fields whose value sets the defaults of others: a difference there is named first.
SOURCES = ("preset", "treebank", "model_name_or_path")


def file_fingerprint(paths: Iterable[PathLike]) -> str:
    """SHA-256 over the names and bytes of ``paths`` (read in 1 MiB blocks); a folder
    counts as the files under it, in sorted order."""
    digest = hashlib.sha256()
    for path in paths:
        path = Path(path)
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            digest.update(str(file.relative_to(path.parent)).encode())
            with file.open("rb") as handle:
                while block := handle.read(1 << 20):
                    digest.update(block)
    return digest.hexdigest()


def file_fingerprints(paths: Iterable[PathLike]) -> dict[str, str]:
    """``{path: fingerprint}`` of each data file or folder (for :func:`record_identity`)."""
    return {str(path): file_fingerprint([path]) for path in paths}


# Recorded fields that are no flag of their own, by what sets them.
DERIVED = {"network": "the network of --preset and --config-overrides"}
# Fields spelt on the command line as the config's K and N_T are; run.json may record them
# under either name, and is read with the field's.
SPELT_AS_FLAGS = {"final_num_basis": "num_basis", "final_num_steps": "num_steps"}
FIELD_OF_SPELLING = {spelling: name for name, spelling in SPELT_AS_FLAGS.items()}


def _flag(name: str) -> str:
    return DERIVED.get(name, "--" + SPELT_AS_FLAGS.get(name, name).replace("_", "-"))


def record_identity(
    output_dir: PathLike,
    arguments: Mapping[str, object],
    data: str,
    files: Mapping[str, str] | None = None,
    **facts: object,
) -> dict:
    """Write ``run.json`` for a new run (``facts``: e.g. its mixed precision); returns it."""
    identity = {
        "run_id": uuid.uuid4().hex,
        "arguments": dict(arguments),
        "data": data,
        "files": dict(files or {}),
        **facts,
    }
    write_json(Path(output_dir) / RUN_FILE, identity)
    return identity


def read_identity(run_dir: PathLike) -> dict | None:
    """The ``run.json`` of ``run_dir``, or None where there is none."""
    path = Path(run_dir) / RUN_FILE
    if not path.is_file():
        return None
    try:
        identity = json.loads(path.read_text())
        if not isinstance(identity["arguments"], dict):
            raise TypeError("arguments is not an object")
        identity["arguments"] = {FIELD_OF_SPELLING.get(k, k): v for k, v in identity["arguments"].items()}
    except (ValueError, KeyError, TypeError) as err:
        raise OutputFolderError(f"{path}: unreadable run record ({err})") from err
    return identity


def _shown(value: object) -> str:
    """A recorded value as its flag takes it (a list of steps comma-separated)."""
    return ",".join(map(str, value)) or "none" if isinstance(value, (list, tuple)) else str(value)


def _order(names: set[str]) -> list[str]:
    return sorted(names, key=lambda name: (name not in SOURCES, SOURCES.index(name) if name in SOURCES else 0, name))


def check_identity(
    output_dir: PathLike,
    arguments: Mapping[str, object],
    data: str,
    files: Mapping[str, str] | None = None,
) -> dict:
    """The ``run.json`` of the run in ``output_dir``, after checking that ``arguments`` and
    ``data`` (``files``: per-file fingerprints) are the ones it was started with, up to
    what a resumed run may change (module docstring). Raises :class:`OutputFolderError`."""
    identity = read_identity(output_dir)
    if identity is None:
        raise OutputFolderError(
            f"--resume-from-checkpoint: {output_dir} holds no run to resume (no {RUN_FILE}); "
            "start a new run there without --resume-from-checkpoint"
        )
    recorded = identity["arguments"]
    # Through JSON, so tuples compare with the lists JSON gives back.
    given = json.loads(json.dumps(dict(arguments)))
    differ = {name for name in set(recorded) | set(given) if recorded.get(name) != given.get(name)}
    # A field added to the package since the run started, left at its off default.
    differ -= {name for name in differ if name not in recorded and given.get(name) in (None, False)}
    differ -= RUN_LENGTH
    if any(recorded.get(name) != given.get(name) for name in RUN_LENGTH & (set(recorded) | set(given))):
        differ -= FOLLOWS_RUN_LENGTH
    if differ:
        name = _order(differ)[0]
        length = next((n for n in RUN_LENGTH if recorded.get(n) != given.get(n)), None)
        scaled = (
            f" (without {_flag(name)}, {_flag(length)} sets it: {given.get(length)!r} here, "
            f"{recorded.get(length)!r} in that run; give {_flag(name)} {_shown(recorded.get(name))} or that length)"
            if name in SCHEDULE_STEPS and length is not None
            else ""
        )
        raise OutputFolderError(
            f"{_flag(name)}: {given.get(name)!r} differs from {recorded.get(name)!r}, the "
            f"value of the run in {output_dir}{scaled}; resume with the same settings or train into "
            "another --output-dir"
        )
    if identity.get("data") != data:
        raise OutputFolderError(
            f"--resume-from-checkpoint: {_data_difference(identity.get('files') or {}, dict(files or {}))} "
            f"the run in {output_dir}; resume with its data or train into another --output-dir"
        )
    return identity


def _data_difference(recorded: Mapping[str, str], current: Mapping[str, str]) -> str:
    """Which data file differs, as the start of a sentence."""
    for path, fingerprint in current.items():
        if path in recorded and recorded[path] != fingerprint:
            return f"{path} differs from the file of that name in"
    by_content = {fingerprint: path for path, fingerprint in recorded.items()}
    new = [path for path, fingerprint in current.items() if fingerprint not in by_content]
    gone = [path for path, fingerprint in recorded.items() if fingerprint not in set(current.values())]
    if new and gone:
        return f"{new[0]} is not the data file {gone[0]} of"
    if new:
        return f"{new[0]} was not among the data of"
    if gone:
        return f"{gone[0]} is missing from the data of"
    return "the training or dev data differ from those of"
