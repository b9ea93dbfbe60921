"""A training run's output folder: who may write into it, and the model it publishes.

A new run writes into an empty folder (its lock, manifest and a lone ``run.json`` aside) or,
with ``--overwrite-output-dir``, over a run of its own kind (``model_folders.KINDS``), which
it replaces only once it has saved (git's rule), keeping every file that run did not write
(its manifests; without one, ``RUN_OUTPUTS`` and the published model files) and never a
model it reads. A resumed run writes only into its own folder (:mod:`.identity`); one
resumed from a checkpoint of another run folder is a new run here.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..runtime.model_folders import (
    BEST_MODEL_DIR,
    KINDS,
    RUN_FILE,
    RUN_OUTPUTS,
    TRAINING_RUN,
    check_replaceable,
    describe_kind,
    folder_kind,
)
from ..runtime.safe_files import (
    LOCK_FILE,
    MANIFEST_FILE,
    OutputFolderError,
    PathLike,
    StagedFolder,
    lock_output_folder,
    read_manifest,
    record_outputs,
    recover_directory,
)
from .checkpoints import remove_abandoned
from .identity import check_identity, file_fingerprints, record_identity

logger = logging.getLogger(__name__)

LOGS_DIR = "logs"


def check_run_folder(
    output_dir: PathLike,
    *,
    resuming: bool,
    overwrite: bool,
    sources: Mapping[str, PathLike | Sequence[PathLike] | None] | None = None,
    kind: str = TRAINING_RUN,
    command: str = "--overwrite-output-dir",
    foreign_checkpoint: PathLike | None = None,
) -> bool:
    """Refuse, touching nothing, a folder that a run of ``kind`` may not write into (module
    docstring; ``sources``: what it reads, by flag; ``command``: its own, as a refusal names
    it). Returns whether an earlier run is there to be replaced."""
    folder = Path(output_dir)
    if folder.exists() and not folder.is_dir():
        raise OutputFolderError(f"--output-dir: {folder} exists and is not a folder")
    if resuming:
        if folder_kind(folder) not in (None, kind):
            raise OutputFolderError(
                f"--resume-from-checkpoint: {folder} holds {describe_kind(folder_kind(folder))}, not "
                f"{KINDS[kind][0]}; a run resumes only a run of its own kind"
            )
        return False
    if ({p.name for p in folder.iterdir()} if folder.is_dir() else set()) <= {LOCK_FILE, MANIFEST_FILE, RUN_FILE}:
        return False  # empty, or a run that failed before saving anything
    if not (folder / RUN_FILE).is_file() and read_manifest(folder) is None:
        raise OutputFolderError(
            f"--output-dir: {folder} is not empty and no run of this package wrote it (no {RUN_FILE}); "
            "choose another folder" + (" (--overwrite-output-dir deletes only a run's outputs)" if overwrite else "")
        )
    check_replaceable(folder, kind, command)
    if foreign_checkpoint is not None and not overwrite:
        raise OutputFolderError(
            f"--resume-from-checkpoint: {foreign_checkpoint} is a checkpoint of another run folder, and "
            f"--output-dir {folder} holds a run of its own; resume that run into an empty folder, resume "
            f"{folder}'s own run with --resume-from-checkpoint latest, or pass --overwrite-output-dir to replace it"
        )
    if not overwrite:
        raise OutputFolderError(
            f"--output-dir: {folder} is not empty (an earlier run's outputs?); resume it with "
            "--resume-from-checkpoint latest, choose another folder, or pass --overwrite-output-dir to replace its run"
        )
    for flag, value in (sources or {}).items():
        for source in [value] if isinstance(value, (str, os.PathLike)) else value or []:
            if Path(source).exists() and folder.resolve() in [Path(source).resolve(), *Path(source).resolve().parents]:
                raise OutputFolderError(
                    f"{flag}: {source} lies inside --output-dir {folder}, whose run --overwrite-output-dir "
                    "replaces; copy the model elsewhere first or choose another --output-dir"
                )
    return True


def _prepare(output_dir: PathLike, rules: dict) -> StagedFolder | None:
    """Lock ``output_dir`` after checking it (``rules``: :func:`check_run_folder`'s); where
    the run replaces an earlier one, the staging folder it is built in beside that run."""
    folder = Path(output_dir)
    if folder.exists() and not folder.is_dir():
        raise OutputFolderError(f"--output-dir: {folder} exists and is not a folder")
    lock_output_folder(folder)
    if check_run_folder(folder, **rules):
        return StagedFolder(folder)
    recover_directory(folder / BEST_MODEL_DIR)
    return None


def _replace(staged: StagedFolder) -> None:
    """Swap the new run in for the earlier one: what that run wrote goes, all else stays."""
    legacy = read_manifest(staged.target) is None  # a run folder without a manifest: its fixed outputs
    owned = {*(p.name for p in (staged.target / BEST_MODEL_DIR).glob("*") if p.is_file()), *RUN_OUTPUTS}
    staged.commit(owned - {LOCK_FILE} if legacy else None, nested=True)


def prepare_run_folder(output_dir: PathLike, **rules) -> Path:
    """Check ``output_dir`` and lock it for this process; an earlier run that the run
    replaces loses its outputs now, and nothing else."""
    staged = _prepare(output_dir, rules)
    if staged is not None:
        manifest = read_manifest(staged.target)
        if manifest is not None:  # what stays is still known as the package's
            record_outputs(staged.path, kind=manifest["kind"])
        _replace(staged)
    return Path(output_dir)


def publish_best_model(output_dir: PathLike) -> list[str]:
    """Copy the model files of ``best/`` (its manifest's) to the top of the run folder, each
    recorded and replaced by rename, so that it loads with ``from_pretrained`` as a
    transformers ``Trainer``'s does; a file there the run did not write stays. Returns the names."""
    folder, best = Path(output_dir), Path(output_dir) / BEST_MODEL_DIR
    owned, ours = read_manifest(best), read_manifest(folder)
    names = []
    for path in sorted(best.iterdir()):
        if not path.is_file() or path.name in (*RUN_OUTPUTS, LOCK_FILE, MANIFEST_FILE):
            continue
        if owned is not None and path.name not in owned["outputs"]:
            continue  # a user's file beside the model
        if ours is not None and path.name not in ours["outputs"] and (folder / path.name).exists():
            logger.warning("%s: not written by this run; the best model's is not published over it", folder / path.name)
            continue
        names.append(path.name)
    if ours is not None:
        record_outputs(folder, *names)
    for name in names:
        temporary = folder / f".{name}.{uuid.uuid4().hex[:8]}.tmp"
        shutil.copy2(best / name, temporary)
        os.replace(temporary, folder / name)
    return names


class RunFolder:
    """Preparing a run's output folder, and replacing an earlier run there only once the new
    one has saved (a mixin of :class:`.scaffold.Trainer`)."""

    def _check_identity_and_prepare_folder(self, folder_rules: dict, writes: Sequence[str]) -> None:
        """Compare a resumed run's identity (here, or of the run whose checkpoint it resumes),
        then prepare the folder and record what the run writes at its top (``writes``) and a
        new run's identity: only an accepted run touches its folder."""
        args, accelerator, resume_here = self.args, self.accelerator, folder_rules["resuming"]
        identity = (args.identity(), self.data_fingerprint(), file_fingerprints(self.data_files()))
        if self.source_run is not None:
            try:
                check_identity(self.source_run, *identity)
            except OutputFolderError as err:
                raise OutputFolderError(
                    f"--resume-from-checkpoint: {args.resume_from_checkpoint} is a checkpoint of another run: {err}"
                ) from None
        if resume_here:
            check_identity(self.output_dir, *identity)
        self.replacement = None  # the staging folder of a run replacing an earlier one (main process)
        if accelerator.is_main_process:
            self.replacement = _prepare(self.output_dir, folder_rules)
            if self.replacement is not None:  # the earlier run stays whole until this one has saved
                self.output_dir = self.replacement.path
            adopted = []  # a run folder without a manifest: its published files are the run's
            if read_manifest(self.output_dir) is None and (self.output_dir / RUN_FILE).is_file():
                best = self.output_dir / BEST_MODEL_DIR
                adopted = [p.name for p in best.glob("*") if p.is_file() and (self.output_dir / p.name).is_file()]
            record_outputs(self.output_dir, *writes, *adopted, kind=self.run_kind)
            remove_abandoned(self.output_dir)
            if not resume_here:
                record_identity(self.output_dir, *identity, mixed_precision=accelerator.mixed_precision)
        if accelerator.num_processes > 1:  # every process writes its share of a checkpoint there
            from accelerate.utils import broadcast_object_list

            self.output_dir = Path(broadcast_object_list([str(self.output_dir)])[0])
        if self.output_dir != self.run_folder and args.logging_dir is None:
            accelerator.project_configuration.logging_dir = str(self.output_dir / LOGS_DIR)
        accelerator.wait_for_everyone()

    def _replace_earlier_run(self) -> None:
        """Swap this run in over the earlier run it replaces, once its first best model is
        saved (or at its end)."""
        if self.output_dir == self.run_folder:
            return
        if self.replacement is not None:
            _replace(self.replacement)
        self.accelerator.wait_for_everyone()
        self.output_dir = self.run_folder

    def _abandon_replacement(self) -> None:
        """A run that fails before it replaced the earlier run leaves that run as it was."""
        if getattr(self, "replacement", None) is not None:
            self.replacement.discard()
