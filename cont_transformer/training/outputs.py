"""A training run's output folder: who may write into it, and the model it publishes.

* :func:`prepare_run_folder` enforces who may write into a run's output folder: a new run
  only into an empty (or missing) folder, unless the user asks to overwrite a run of its
  own kind (a tagger's, a language model's, ...: ``model_folders.KINDS``); a resumed run
  only into its own folder (see :mod:`.identity`), and a run resumed from a checkpoint of
  another run folder only into an empty one or, with overwrite, over a run of its kind,
  which it replaces whole. It locks the folder for the run
  (:func:`~cont_transformer.runtime.safe_files.lock_output_folder`). :func:`check_run_folder`
  applies its rules without touching the folder, so a run refuses a wrong one before it
  loads its data.
* :func:`prepare_replacing_run` does the same for a run that replaces an earlier one only
  once it has saved: the new run is built in a staging folder beside the output folder
  and :func:`replace_earlier_run` swaps it in (:class:`RunFolder`, the scaffold's part).
* :func:`record_run_outputs` records what a run writes at its top in the run's manifest.
* :func:`publish_best_model` copies the best model's files to the top of the run folder
  at the end of training, as transformers' ``Trainer`` leaves its model in
  ``output_dir``: ``from_pretrained("runs/pos")`` loads it.

A run folder without a manifest (one holds ``run.json``) loses on overwrite its fixed
outputs (:data:`~cont_transformer.runtime.model_folders.RUN_OUTPUTS`) and its published model
files; its kind, like that of a manifest without one, is read from ``run.json``
(:func:`~cont_transformer.runtime.model_folders.folder_kind`). The crash-safe writing itself
(manifests, locks, staged folders) is :mod:`cont_transformer.runtime.safe_files`; the layout of model and run folders, loading one and
the Hub are :mod:`cont_transformer.runtime.model_folders`, which inference uses without this
package (docs/design.md §1, §8).
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Iterable, Mapping, Sequence
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
    remove_outputs,
    remove_path,
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
    foreign_checkpoint: PathLike | None = None,
) -> bool:
    """Refuse, touching nothing, a folder that a run may not write into (the rules of
    :func:`prepare_run_folder`); returns whether an earlier run's outputs are there to be
    replaced. Raises :class:`OutputFolderError` naming the folder."""
    folder = Path(output_dir)
    if folder.exists() and not folder.is_dir():
        raise OutputFolderError(f"--output-dir: {folder} exists and is not a folder")
    contents = {path.name for path in folder.iterdir()} - {LOCK_FILE, MANIFEST_FILE} if folder.is_dir() else set()
    if resuming:
        found = folder_kind(folder)
        if found is not None and found != kind:
            raise OutputFolderError(
                f"--resume-from-checkpoint: {folder} holds {describe_kind(found)}, not {KINDS[kind][0]}; "
                "a run resumes only a run of its own kind"
            )
        return False
    if not contents or contents == {RUN_FILE}:
        return False
    if not (folder / RUN_FILE).is_file() and read_manifest(folder) is None:
        raise OutputFolderError(
            f"--output-dir: {folder} is not empty and no run of this package wrote it "
            f"(no {RUN_FILE}); choose another folder"
            + (" (--overwrite-output-dir deletes only a run's outputs)" if overwrite else "")
        )
    check_replaceable(folder, kind)
    if foreign_checkpoint is not None and not overwrite:
        raise OutputFolderError(
            f"--resume-from-checkpoint: {foreign_checkpoint} is a checkpoint of another run folder, and "
            f"--output-dir {folder} holds a run of its own; resume that run into an empty folder, resume "
            f"{folder}'s own run with --resume-from-checkpoint latest, or pass --overwrite-output-dir to "
            "replace it"
        )
    if not overwrite:
        raise OutputFolderError(
            f"--output-dir: {folder} is not empty (an earlier run's outputs?); resume it with "
            "--resume-from-checkpoint latest, choose another folder, or pass "
            "--overwrite-output-dir to replace its run"
        )
    _check_sources(folder, sources or {})
    return True


def prepare_run_folder(
    output_dir: PathLike,
    *,
    resuming: bool,
    overwrite: bool,
    sources: Mapping[str, PathLike | Sequence[PathLike] | None] | None = None,
    kind: str = TRAINING_RUN,
    foreign_checkpoint: PathLike | None = None,
) -> Path:
    """Check that a run may write into ``output_dir``, make it exist and lock it for this
    process (:func:`lock_output_folder`).

    A new run needs a missing or empty folder (its lock file and manifest aside, and a
    ``run.json`` alone, from a run that failed before saving anything, counts as empty);
    with ``overwrite`` the outputs of an earlier run are deleted first, and only in a
    folder a run of this package and of this ``kind`` wrote (a key of
    ``model_folders.KINDS``; any other is refused in one line naming both kinds): what its
    manifest names (:func:`remove_outputs`), or in a folder without one
    :data:`RUN_OUTPUTS` and the published model files. Any other file is left alone.
    ``sources``: what the run will read, by flag (``{"--model-name-or-path": path}``); one
    inside the folder to be replaced is refused before anything is deleted. A resumed run
    writes into its own folder (``resuming``; its identity is checked by the caller); one
    resumed from ``foreign_checkpoint``, a checkpoint of another run folder, is a new run
    here: a folder holding a run is refused unless ``overwrite``, which replaces that run
    whole. Raises :class:`OutputFolderError` naming the folder. :func:`check_run_folder`
    applies the same rules without the lock.
    """
    folder = Path(output_dir)
    if folder.exists() and not folder.is_dir():
        raise OutputFolderError(f"--output-dir: {folder} exists and is not a folder")
    lock_output_folder(folder)
    if check_run_folder(
        folder,
        resuming=resuming,
        overwrite=overwrite,
        sources=sources,
        kind=kind,
        foreign_checkpoint=foreign_checkpoint,
    ):
        if read_manifest(folder) is not None:
            remove_outputs(folder)
        else:
            for name in _unrecorded_outputs(folder):
                remove_path(folder / name)
    folder.mkdir(parents=True, exist_ok=True)
    recover_directory(folder / BEST_MODEL_DIR)
    return folder


def _unrecorded_outputs(folder: Path) -> set[str]:
    """What a run folder without a manifest holds of a run: its fixed outputs and its
    published model files."""
    published = [p.name for p in (folder / BEST_MODEL_DIR).glob("*") if p.is_file()]
    return {*published, *RUN_OUTPUTS} - {LOCK_FILE}


def prepare_replacing_run(output_dir: PathLike, **rules) -> StagedFolder | None:
    """:func:`prepare_run_folder` for a run that replaces an earlier one only once it has
    saved (git's rule: nothing is destroyed before its replacement is in place). Where
    ``overwrite`` finds an earlier run, it is left whole and the new run is built in a
    staging folder beside ``output_dir`` (returned; its ``path`` is where the run writes,
    and :func:`replace_earlier_run` swaps it in); a failed or killed new run leaves the
    earlier one as it was. Returns None where there is no earlier run (``output_dir`` is
    then prepared as :func:`prepare_run_folder` does). ``rules``: its keyword arguments."""
    folder = Path(output_dir)
    if folder.exists() and not folder.is_dir():
        raise OutputFolderError(f"--output-dir: {folder} exists and is not a folder")
    lock_output_folder(folder)
    if not check_run_folder(folder, **rules):
        prepare_run_folder(folder, **rules)
        return None
    return StagedFolder(folder)


def replace_earlier_run(staged: StagedFolder) -> None:
    """Put the new run built in ``staged`` in place of the earlier run, in one atomic swap:
    what the earlier run wrote goes, everything else of its folder (a user's files, in
    ``best/`` and ``checkpoints/`` too, the held lock file) is carried into the new one."""
    folder = staged.target
    owned = None if read_manifest(folder) is not None else _unrecorded_outputs(folder)
    staged.commit(owned, nested=True)


def _paths(value: PathLike | Sequence[PathLike] | None) -> list[PathLike]:
    """A flag's paths: none, one, or several (a flag that takes more than one, as --teacher)."""
    if value is None:
        return []
    return [value] if isinstance(value, (str, os.PathLike)) else list(value)


def _check_sources(folder: Path, sources: Mapping[str, PathLike | Sequence[PathLike] | None]) -> None:
    """Refuse a source (a model to start from) that is the run folder to be replaced or
    lies inside it: it would be deleted before the run reads it."""
    resolved = folder.resolve()
    given = [(flag, source) for flag, value in sources.items() for source in _paths(value)]
    for flag, source in given:
        if not Path(source).exists():
            continue  # not a local path (a Hub id)
        path = Path(source).resolve()
        if path == resolved or resolved in path.parents:
            raise OutputFolderError(
                f"{flag}: {source} lies inside --output-dir {folder}, whose run --overwrite-output-dir "
                "replaces; copy the model elsewhere first or choose another --output-dir"
            )


def record_run_outputs(output_dir: PathLike, names: Iterable[str], kind: str = TRAINING_RUN) -> None:
    """Record in the run folder's manifest the names a run of ``kind`` writes at its top
    (before it writes them), and its kind. A run folder without a manifest is adopted with
    its model files published at the top (those of ``best/``)."""
    folder = Path(output_dir)
    adopted = []
    if read_manifest(folder) is None and (folder / RUN_FILE).is_file():
        adopted = [p.name for p in (folder / BEST_MODEL_DIR).glob("*") if p.is_file() and (folder / p.name).is_file()]
    record_outputs(folder, *names, *adopted, kind=kind)


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


class RunFolder:
    """Preparing a run's output folder, and replacing an earlier run there only once the new
    one has saved (a mixin of :class:`.scaffold.Trainer`, from its ``args``,
    ``accelerator``, ``source_run``, ``run_kind``, ``run_folder`` and data hooks)."""

    def _check_identity_and_prepare_folder(self, folder_rules: dict, writes: Sequence[str]) -> None:
        """Compare a resumed run's identity (here, or of the other folder whose checkpoint it
        resumes), then prepare the output folder and record a new run's identity: only a run
        whose data, arguments and checkpoint were accepted touches its folder; ``writes``:
        what the run writes at its top (recorded in its manifest)."""
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
            self.replacement = prepare_replacing_run(self.output_dir, **folder_rules)
            if self.replacement is not None:  # the earlier run stays whole until this one has saved
                self.output_dir = self.replacement.path
            record_run_outputs(self.output_dir, writes, self.run_kind)
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
        """Swap this run into ``--output-dir`` over the earlier run it replaces, once its
        first best model is saved (or at its end): until then that run stays whole."""
        if self.output_dir == self.run_folder:
            return
        if self.replacement is not None:
            replace_earlier_run(self.replacement)
        self.accelerator.wait_for_everyone()
        self.output_dir = self.run_folder

    def _abandon_replacement(self) -> None:
        """A run that fails before it replaced the earlier run leaves that run as it was."""
        if getattr(self, "replacement", None) is not None:
            self.replacement.discard()
