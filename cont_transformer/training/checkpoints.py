"""Checkpoints of a run, ``checkpoints/step-N``: complete or absent.

Every process writes into one staging folder; the main process then writes
``trainer_state.json`` (the completion marker), names the checkpoint in the manifest of
``checkpoints/`` and renames it into place, keeping the newest ``save_total_limit``.
``latest`` tries the complete checkpoints newest first, past one that does not load (the
scaffold names it). A checkpoint named by its path may lie in another run folder
(:func:`foreign_run_folder`), whose identity the scaffold then checks against this run's.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from accelerate.utils import load as safe_torch_load
from safetensors.torch import load_file

from ..runtime.model_folders import CHECKPOINTS_DIR, RUN_FILE
from ..runtime.safe_files import PathLike, forget_outputs, give_umask_modes, record_outputs, write_json

CHECKPOINT_PREFIX = "step-"
TRAINER_STATE = "trainer_state.json"  # written last: the completion marker
_STAGING_PREFIX = ".staging-"


class CheckpointError(ValueError):
    """No checkpoint to resume from, or a damaged one (the message names the file)."""


def checkpoint_folder(output_dir: PathLike, step: int, staging: bool = False) -> Path:
    """Checkpoint ``step``, or where it is written before it is complete (the same on every process)."""
    return Path(output_dir) / CHECKPOINTS_DIR / f"{_STAGING_PREFIX if staging else ''}{CHECKPOINT_PREFIX}{step}"


def staging_folder(output_dir: PathLike, step: int) -> Path:
    return checkpoint_folder(output_dir, step, staging=True)


def complete_checkpoints(output_dir: PathLike) -> list[Path]:
    """Complete checkpoints of the run in ``output_dir``, oldest first."""
    found = (Path(output_dir) / CHECKPOINTS_DIR).glob(f"{CHECKPOINT_PREFIX}*")
    steps = {int(p.name[len(CHECKPOINT_PREFIX) :]): p for p in found if p.name[len(CHECKPOINT_PREFIX) :].isdigit()}
    return [steps[step] for step in sorted(steps) if (steps[step] / TRAINER_STATE).is_file()]


def remove_abandoned(output_dir: PathLike) -> None:
    """Delete the staging folders a killed run left behind."""
    for path in (Path(output_dir) / CHECKPOINTS_DIR).glob(f"{_STAGING_PREFIX}*"):
        shutil.rmtree(path, ignore_errors=True)


def finish_checkpoint(output_dir: PathLike, step: int, state: dict, keep: int) -> Path:
    """Main process, after every process saved into :func:`staging_folder`: write the
    completion marker, move the checkpoint into place and delete all but the newest ``keep``."""
    staging, final = staging_folder(output_dir, step), checkpoint_folder(output_dir, step)
    write_json(staging / TRAINER_STATE, state)
    give_umask_modes(staging)  # safetensors writes the weights 0o600
    record_outputs(final.parent, final.name, kind=CHECKPOINTS_DIR)  # before it exists
    if final.exists():  # the same step saved again (a run resumed from before it)
        shutil.rmtree(final)
    staging.rename(final)
    for old in complete_checkpoints(output_dir)[:-keep]:
        shutil.rmtree(old)
        forget_outputs(old.parent, old.name)
    return final


def read_state(folder: PathLike) -> dict:
    """``trainer_state.json`` of a checkpoint; raises :class:`CheckpointError` naming it."""
    path = Path(folder) / TRAINER_STATE
    try:
        return json.loads(path.read_text())
    except FileNotFoundError as err:
        raise CheckpointError(f"{folder} is not a complete checkpoint (no {TRAINER_STATE})") from err
    except ValueError as err:
        raise CheckpointError(f"{path}: damaged ({err})") from err


def damaged_file(folder: PathLike) -> Path | None:
    """The first file of a checkpoint that does not load, read as Accelerate resumes it
    (pickles ``weights_only``: naming a damaged file never runs its code)."""
    for path in sorted(Path(folder).iterdir()):
        try:
            if path.suffix == ".safetensors":
                load_file(path)
            elif path.suffix in (".bin", ".pkl", ".pt", ".pth"):
                safe_torch_load(path, map_location="cpu")
            elif path.suffix == ".json":
                json.loads(path.read_text())
        except Exception:  # noqa: BLE001 (any failure to load marks the file as damaged)
            return path
    return None


def check_random_states(folder: PathLike) -> None:
    """Raise :class:`CheckpointError` naming a random-state file that does not load
    (Accelerate only logs that and goes on)."""
    for path in sorted(Path(folder).glob("random_states_*.pkl")):
        try:
            safe_torch_load(path, map_location="cpu")
        except Exception as err:
            raise CheckpointError(f"{path}: the random state does not load ({err})") from err


def foreign_run_folder(spec: str, output_dir: PathLike) -> Path | None:
    """The run folder of ``--resume-from-checkpoint spec`` when it is not ``output_dir``
    (None for ``latest`` and a checkpoint of ``output_dir``). Raises :class:`CheckpointError`
    for a ``spec`` that is no folder and for one in no run folder (whose run is unknown)."""
    if spec == "latest":
        return None
    checkpoint = Path(spec).resolve()
    if not checkpoint.is_dir():
        raise CheckpointError(
            f"--resume-from-checkpoint: {spec} {'is a file' if checkpoint.exists() else 'does not exist'}; "
            f"give a checkpoint folder (RUN/{CHECKPOINTS_DIR}/step-N) or latest"
        )
    run_dir, in_a_run = checkpoint.parent.parent, checkpoint.parent.name == CHECKPOINTS_DIR
    if in_a_run and run_dir == Path(output_dir).resolve():
        return None
    if not in_a_run or not (run_dir / RUN_FILE).is_file():
        raise CheckpointError(
            f"--resume-from-checkpoint: {spec} lies outside --output-dir {output_dir} and in no run folder (no "
            f"{RUN_FILE} beside its {CHECKPOINTS_DIR}/), so whether it belongs to this run cannot be checked"
        )
    return run_dir


def resume_candidates(spec: str, output_dir: PathLike) -> list[Path]:
    """Checkpoints to try, in order, for ``--resume-from-checkpoint spec``: the complete ones
    of ``output_dir`` newest first for ``latest``, else the one folder named."""
    if spec != "latest":
        read_state(spec)  # a clear error for a folder that is no checkpoint
        return [Path(spec)]
    found = complete_checkpoints(output_dir)[::-1]
    if not found:
        raise CheckpointError(
            f"--resume-from-checkpoint latest: no complete checkpoint in {Path(output_dir) / CHECKPOINTS_DIR}"
        )
    return found
