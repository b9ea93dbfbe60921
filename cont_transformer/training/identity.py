"""A run's identity, ``run.json``: the arguments that determine the run, a fingerprint of its
data and one per data file, and facts such as its mixed precision; recorded once and
checked on resume (also for a checkpoint of another run folder), so that two runs never
mix. A refusal names the first difference: a field that sets others' defaults first
(:data:`SOURCES`), a changed data file by name.

A resumed run may change :data:`RESUMABLE` (where to write, cadence, logging, compilation,
where the same data lies, devices) and its length (:data:`RUN_LENGTH`), with what derives
from the length (:data:`FOLLOWS_RUN_LENGTH`: the tagger's cool-down).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..runtime.model_folders import RUN_FILE
from ..runtime.safe_files import OutputFolderError, PathLike, write_json

# Fields that do not change what a run computes up to the resumed step (transformers'
# Trainer flags of cadence, logging, devices and memory among them: training/arguments.py).
RESUMABLE = frozenset(
    """output_dir overwrite_output_dir resume_from_checkpoint eval_steps save_steps save_total_limit
    push_to_hub hub_model_id report_to logging_steps logging_dir run_name torch_compile torch_compile_mode
    torch_compile_backend length_buckets compression_report best_num_basis best_num_steps do_predict do_train
    do_eval data_dir train_file dev_file dataset eval_strategy save_strategy lr_scheduler_type
    per_device_eval_batch_size load_best_model_at_end metric_for_best_model dataloader_num_workers
    gradient_checkpointing use_cpu""".split()  # noqa: SIM905 (a list of names, read as words)
)
RUN_LENGTH = frozenset({"max_steps", "num_train_epochs", "epochs"})
FOLLOWS_RUN_LENGTH = frozenset({"cooldown_steps"})
SCHEDULE_STEPS = ("warmup_steps", "refine_steps", "cooldown_steps")  # scaled by --max-steps (recipes.py)
SOURCES = ("preset", "treebank", "model_name_or_path")
DERIVED = {"network": "the network of --preset and --config-overrides"}  # recorded, no flag of its own
# Fields spelt on the command line as the config's K and N_T; run.json may hold either name.
SPELT_AS_FLAGS = {"final_num_basis": "num_basis", "final_num_steps": "num_steps"}
FIELD_OF_SPELLING = {spelling: name for name, spelling in SPELT_AS_FLAGS.items()}


def file_fingerprint(paths: Iterable[PathLike]) -> str:
    """SHA-256 over the names and bytes of ``paths``; a folder counts as its files, sorted."""
    digest = hashlib.sha256()
    for path in map(Path, paths):
        for file in sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]:
            digest.update(str(file.relative_to(path.parent)).encode())
            with file.open("rb") as handle:
                while block := handle.read(1 << 20):
                    digest.update(block)
    return digest.hexdigest()


def file_fingerprints(paths: Iterable[PathLike]) -> dict[str, str]:
    """``{path: fingerprint}`` of each data file or folder."""
    return {str(path): file_fingerprint([path]) for path in paths}


def _flag(name: str) -> str:
    return DERIVED.get(name, "--" + SPELT_AS_FLAGS.get(name, name).replace("_", "-"))


def record_identity(output_dir: PathLike, arguments: Mapping, data: str, files: Mapping | None = None, **facts) -> dict:
    """Write ``run.json`` for a new run (``facts``: e.g. its mixed precision); returns it."""
    identity = {"run_id": uuid.uuid4().hex, "arguments": dict(arguments), "data": data, "files": dict(files or {})}
    write_json(Path(output_dir) / RUN_FILE, {**identity, **facts})
    return {**identity, **facts}


def read_identity(run_dir: PathLike) -> dict | None:
    """The ``run.json`` of ``run_dir``, or None where there is none."""
    path = Path(run_dir) / RUN_FILE
    if not path.is_file():
        return None
    try:
        identity = json.loads(path.read_text())
        if not isinstance(identity["arguments"], dict):
            raise TypeError("arguments is not an object")
    except (ValueError, KeyError, TypeError) as err:
        raise OutputFolderError(f"{path}: unreadable run record ({err})") from err
    identity["arguments"] = {FIELD_OF_SPELLING.get(k, k): v for k, v in identity["arguments"].items()}
    return identity


def check_identity(output_dir: PathLike, arguments: Mapping, data: str, files: Mapping | None = None) -> dict:
    """The ``run.json`` of the run in ``output_dir``, after checking that ``arguments`` and
    ``data`` (``files``: per-file fingerprints) are the ones it was started with, up to what
    a resumed run may change. Raises :class:`OutputFolderError` naming the first difference."""
    identity = read_identity(output_dir)
    if identity is None:
        raise OutputFolderError(
            f"--resume-from-checkpoint: {output_dir} holds no run to resume (no {RUN_FILE}); "
            "start a new run there without --resume-from-checkpoint"
        )
    recorded, given = identity["arguments"], json.loads(json.dumps(dict(arguments)))  # tuples as JSON lists
    differ = {name for name in {*recorded, *given} if recorded.get(name) != given.get(name)} - RUN_LENGTH
    differ -= {name for name in differ if name not in recorded and given.get(name) in (None, False)}  # a new field
    length = next((n for n in sorted(RUN_LENGTH) if recorded.get(n) != given.get(n)), None)
    if length is not None:
        differ -= FOLLOWS_RUN_LENGTH
    if differ:
        name = min(differ, key=lambda n: (n not in SOURCES, SOURCES.index(n) if n in SOURCES else 0, n))
        shown = recorded.get(name)
        shown = ",".join(map(str, shown)) or "none" if isinstance(shown, (list, tuple)) else shown
        scaled = (
            f" (without {_flag(name)}, {_flag(length)} sets it: {given.get(length)!r} here, "
            f"{recorded.get(length)!r} in that run; give {_flag(name)} {shown} or that length)"
            if name in SCHEDULE_STEPS and length is not None
            else ""
        )
        raise OutputFolderError(
            f"{_flag(name)}: {given.get(name)!r} differs from {recorded.get(name)!r}, the value of the run in "
            f"{output_dir}{scaled}; resume with the same settings or train into another --output-dir"
        )
    if identity.get("data") != data:
        raise OutputFolderError(
            f"--resume-from-checkpoint: {_data_difference(identity.get('files') or {}, dict(files or {}))} "
            f"the run in {output_dir}; resume with its data or train into another --output-dir"
        )
    return identity


def _data_difference(recorded: Mapping[str, str], current: Mapping[str, str]) -> str:
    """Which data file differs, as the start of a sentence."""
    changed = [path for path, print_ in current.items() if path in recorded and recorded[path] != print_]
    new = [path for path, print_ in current.items() if print_ not in recorded.values()]
    gone = [path for path, print_ in recorded.items() if print_ not in current.values()]
    if changed:
        return f"{changed[0]} differs from the file of that name in"
    if new and gone:
        return f"{new[0]} is not the data file {gone[0]} of"
    if new or gone:
        return f"{new[0]} was not among the data of" if new else f"{gone[0]} is missing from the data of"
    return "the training or dev data differ from those of"
