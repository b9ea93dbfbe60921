"""The config a model's weights were saved with, recorded in its weights files.

``save_pretrained`` records, in the metadata of every safetensors file it writes (beside
transformers' ``"format": "pt"``), the config fields that change what the model computes
(:func:`recorded_fields`: every field but :data:`UNRECORDED_FIELDS`, which are transformers'
bookkeeping, training-only settings and fields other fields give; records without a
:data:`VERSION_KEY` kept :data:`NAMED_ONLY_FIELDS` by name only): under :data:`DIGEST_KEY` the SHA-256 of their
canonical JSON, under :data:`FIELDS_KEY` each field's value (a scalar as it is, a list or
mapping by its own SHA-256), so that a mismatch names the fields.

At load (:func:`config_mismatch`), the model's config is compared with that record (a
tagger's config as ``config.json`` and the data files beside it give it, ``tagger_files.py``:
``columns.json``, ``lemma_lexicon.json``, and any file added there; such a file edited or
missing is named): an edited ``config.json`` (or data file) that keeps every tensor's shape (another basis with the same K, T,
the activation, the heads, LayerNorm's epsilon, the positions, two labels exchanged, the tag
combinations) is refused in one line naming the fields, where it would load and compute
something else. Fields added to the config after a folder was saved are not in its record
and are not compared. A weights file without a record loads with one warning per file and process (:func:`unrecorded_warning`).

This module is one of a saved folder's code files (``pretrained.py`` imports it), so it
imports nothing of the package: the folder's remote code checks its own loads the same way.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import struct
from collections.abc import Mapping
from pathlib import Path

logger = logging.getLogger(__name__)

DIGEST_KEY = "config_digest"
FIELDS_KEY = "config_fields"

# Config fields that do not change what a loaded model computes: transformers' bookkeeping
# (versions, class names, code references, the dtype a caller loads in, output switches) and
# settings read only in training (dropout, initialisation, BatchNorm's momentum).
UNRECORDED_FIELDS = frozenset(
    {
        "_name_or_path",
        "name_or_path",
        "transformers_version",
        "architectures",
        "auto_map",
        "custom_pipelines",
        "dtype",
        "torch_dtype",
        "output_hidden_states",
        "output_attentions",
        "return_dict",
        "use_cache",
        "chunk_size_feed_forward",
        "is_encoder_decoder",
        "problem_type",
        "hidden_dropout_prob",
        "attention_probs_dropout_prob",
        "initializer_range",
        "batch_norm_momentum",
        # A tagger's head sizes, which its recorded column_labels give.
        "column_sizes",
    }
)
# Config fields that records without a version (:data:`VERSION_KEY`) kept by name only, as
# null: a tagger's lemma lexicon. They are not compared for such a record; a record with a
# version holds every field, the data files beside config.json included (tagger_files.py).
NAMED_ONLY_FIELDS = frozenset({"lemma_lexicon"})
VERSION_KEY = "config_record_version"
RECORD_VERSION = "2"


def _canonical(value) -> str:
    """One JSON text per value: keys sorted, no spaces, ASCII."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _sha256(value) -> str:
    return hashlib.sha256(_canonical(value).encode("ascii")).hexdigest()


def recorded_fields(config, named_only: frozenset[str] = frozenset()) -> dict[str, object]:
    """``{field: value}`` of every field of ``config`` (a ``PreTrainedConfig``) but
    :data:`UNRECORDED_FIELDS` (``named_only`` as None), as JSON gives them back (mapping keys
    as strings), so a config and its reload from ``config.json`` give the same record."""
    values = json.loads(json.dumps(config.to_dict(), default=str))
    return {
        name: None if name in named_only else value for name, value in values.items() if name not in UNRECORDED_FIELDS
    }


def _summary(value):
    """A field as the record keeps it: a scalar itself, a list or mapping its SHA-256."""
    return {"sha256": _sha256(value)} if isinstance(value, (list, dict)) else value


def config_record(config) -> dict[str, str]:
    """The safetensors metadata entries recording ``config``: :data:`VERSION_KEY`,
    :data:`DIGEST_KEY` and :data:`FIELDS_KEY`."""
    fields = recorded_fields(config)
    return {
        VERSION_KEY: RECORD_VERSION,
        DIGEST_KEY: _sha256(fields),
        FIELDS_KEY: _canonical({name: _summary(value) for name, value in fields.items()}),
    }


def _shown(value) -> str:
    return "(another value)" if isinstance(value, dict) and set(value) == {"sha256"} else repr(value)


def config_mismatch(config, metadata: Mapping[str, str] | None, files: Mapping[str, str] | None = None) -> str | None:
    """Where ``config`` differs from the config recorded in a weights file's ``metadata``, in
    words (the fields, with both values where they are scalars); None when they agree or the
    file records none. The record's fields alone are compared. ``files``: the file beside
    ``config.json`` that holds a field (``{"lemma_lexicon": "lemma_lexicon.json"}``), named
    for it, and named missing where the field is empty but was recorded."""
    if not metadata or DIGEST_KEY not in metadata:
        return None
    try:
        saved = json.loads(metadata.get(FIELDS_KEY, ""))
    except ValueError:
        saved = None
    if not isinstance(saved, dict):
        return f"its {FIELDS_KEY} metadata is damaged"
    now = recorded_fields(config, frozenset() if VERSION_KEY in metadata else NAMED_ONLY_FIELDS)
    fields = {name: now.get(name) for name in saved}
    if _sha256(fields) == metadata[DIGEST_KEY]:
        return None
    differ = [name for name in sorted(saved) if _summary(fields[name]) != saved[name]]
    if not differ:
        return f"its {DIGEST_KEY} metadata does not match its {FIELDS_KEY}"
    files = files or {}
    by_file: dict[str, list[str]] = {}
    for name in differ:
        by_file.setdefault(files.get(name, "config.json"), []).append(name)
    problems = []
    for file, names in by_file.items():
        if file != "config.json" and all(fields[name] is None for name in names):
            problems.append(f"{file} is missing (the weights were saved with its {', '.join(names)})")
            continue
        named = ", ".join(
            f"{name} ({_shown(_summary(fields[name]))}, saved with {_shown(saved[name])})"
            if not isinstance(fields[name], (list, dict))
            else name
            for name in names
        )
        problems.append(f"{file} differs from the config the weights were saved with in {named}")
    return "; ".join(problems)


def read_metadata(path: str | os.PathLike) -> dict[str, str] | None:
    """The metadata of the safetensors file ``path`` (None when its header does not read:
    loading it then fails by itself, naming the file)."""
    try:
        with open(path, "rb") as file:
            (length,) = struct.unpack("<Q", file.read(8))
            header = json.loads(file.read(length))
    except (OSError, ValueError, struct.error):
        return None
    metadata = header.get("__metadata__") if isinstance(header, dict) else None
    return metadata if isinstance(metadata, dict) else {}


def _add_metadata(path: Path, entries: Mapping[str, str]) -> None:
    """Rewrite the safetensors file ``path`` with ``entries`` in its metadata, its tensors as
    they are: a new header (padded to 8 bytes, as safetensors writes it) before the same
    data, written beside it and moved over it, so the file is never half-written."""
    partial = path.with_name(f".{path.name}.partial")
    with open(path, "rb") as source:
        (length,) = struct.unpack("<Q", source.read(8))
        header = json.loads(source.read(length))
        header["__metadata__"] = {**(header.get("__metadata__") or {}), **entries}
        raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
        raw += b" " * (-len(raw) % 8)
        with open(partial, "wb") as target:
            target.write(struct.pack("<Q", len(raw)))
            target.write(raw)
            shutil.copyfileobj(source, target, 1 << 20)
    os.replace(partial, path)


def weights_files(folder: str | os.PathLike) -> list[Path]:
    """The safetensors weights files ``save_pretrained`` writes in ``folder``: the shards an
    index names, else ``model*.safetensors``."""
    folder = Path(folder)
    shards = set()
    for index in folder.glob("model*.safetensors.index.json"):
        try:
            shards |= set(json.loads(index.read_text(encoding="utf-8")).get("weight_map", {}).values())
        except (OSError, ValueError, AttributeError):
            continue
    if shards:
        return sorted(folder / name for name in shards if (folder / name).is_file())
    return sorted(folder.glob("model*.safetensors"))


def record_config(config, folder: str | os.PathLike) -> None:
    """Record ``config`` (:func:`config_record`) in every safetensors weights file of
    ``folder``, as ``save_pretrained`` wrote them."""
    entries = config_record(config)
    for path in weights_files(folder):
        _add_metadata(path, entries)


_warned: set[str] = set()


def unrecorded_warning(path: str | os.PathLike) -> None:
    """Warn, once per file and process, that the weights file ``path`` records no config."""
    key = os.path.realpath(path)
    if key in _warned:
        return
    _warned.add(key)
    logger.warning(
        "%s: saved without a record of its config, so config.json cannot be checked against the weights "
        "(saving the model again with save_pretrained records it)",
        path,
    )


__all__ = [
    "DIGEST_KEY",
    "FIELDS_KEY",
    "NAMED_ONLY_FIELDS",
    "UNRECORDED_FIELDS",
    "VERSION_KEY",
    "config_mismatch",
    "config_record",
    "read_metadata",
    "record_config",
    "recorded_fields",
    "unrecorded_warning",
    "weights_files",
]
