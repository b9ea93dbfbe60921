"""A tagger's data beside its ``config.json``, each in a file of its own (docs/design.md §6).

A tagger's config holds, besides the encoder's configuration, data drawn from its training
treebank: the labels of its heads besides the primary one and the (UPOS, XPOS, FEATS)
triples seen (:data:`COLUMNS_FILE`: ``column_labels``, ``tag_combinations``; thousands of
lemma scripts, hundreds of triples), and the lemma lexicon (:data:`LEMMA_LEXICON_FILE`:
``lemma_lexicon``, a table per form and tag). In memory they are fields of
``ContTransformerConfig``; ``config.json`` holds none of them (it keeps ``column_sizes``, so
the heads are built before the labels are read).

* Writing: :func:`write_config` (the config's ``to_json_file``, which every
  ``save_pretrained`` calls) writes ``config.json`` without them and, beside it, each file
  whose fields are not all empty, staged and moved into place (``os.replace``); a file
  whose fields are empty is removed, so no other model's data stays in the folder.
* Reading: :func:`read_tagger_files` (run by ``ContTransformerConfig.from_pretrained``, by
  every model load before the weights are read, so that their record of the config
  (``config_record.py``) checks the labels too, and by callers of ``AutoConfig``) puts each file's fields back into the
  config, checked as the config checks its own fields (``validate_columns``); a file that
  is not JSON, or not this model's, is refused in one ``ValueError`` naming it. A file is
  read only where ``config.json`` holds none of its fields itself (such a folder keeps its
  own). Nothing read executes code: the files are JSON.

This module is one of a saved folder's code files (the config imports it), so it imports
nothing of the package: remote code reads a folder's files the same way.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from huggingface_hub.errors import StrictDataclassError
from transformers.utils import cached_file

COLUMNS_FILE = "columns.json"
LEMMA_LEXICON_FILE = "lemma_lexicon.json"
# Each file -> the config fields it holds. A file of one field holds its value, a file of
# several an object of them (its empty fields left out).
TAGGER_FILES = {
    COLUMNS_FILE: ("column_labels", "tag_combinations"),
    LEMMA_LEXICON_FILE: ("lemma_lexicon",),
}
TAGGER_FIELDS = tuple(field for fields in TAGGER_FILES.values() for field in fields)
# Each field -> the file that holds it (the weights' record names the file, config_record.py).
TAGGER_FILE_OF = {field: name for name, fields in TAGGER_FILES.items() for field in fields}
# from_pretrained's options that say where a file of the folder is found.
HUB_OPTIONS = ("cache_dir", "force_download", "local_files_only", "token", "revision", "subfolder", "proxies")


def replace_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a staged file moved over it: never half-written."""
    staging = path.with_name(f".{path.name}.tmp")
    staging.write_text(text, encoding="utf-8")
    os.replace(staging, path)


def write_config(config, json_file_path: str | os.PathLike, use_diff: bool = True) -> None:
    """Write ``config`` (a ``PreTrainedConfig``) to ``json_file_path`` as transformers does,
    but without :data:`TAGGER_FIELDS`, and each of :data:`TAGGER_FILES` beside it (or none
    where its fields are empty)."""
    path = Path(json_file_path)
    saved = json.loads(config.to_json_string(use_diff=use_diff))
    for field in TAGGER_FIELDS:
        saved.pop(field, None)
    replace_file(path, json.dumps(saved, indent=2, sort_keys=True) + "\n")
    for name, fields in TAGGER_FILES.items():
        values = {field: getattr(config, field, None) for field in fields}
        values = {field: value for field, value in values.items() if value}
        target = path.with_name(name)
        if values:
            data = values[fields[0]] if len(fields) == 1 else values
            replace_file(target, json.dumps(data, ensure_ascii=False, sort_keys=True) + "\n")
        elif target.exists():
            target.unlink()  # another model's, from an earlier save into this folder


def _read_file(config, path: str | os.PathLike, name: str) -> None:
    """Put the fields of the file ``path`` (one of :data:`TAGGER_FILES`, ``name``) into
    ``config``, checked by ``config.validate_columns()``; a ``ValueError`` naming the file
    (and ``config`` as it was) if it is not this model's."""
    fields = TAGGER_FILES[name]
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        values = {fields[0]: data} if len(fields) == 1 else data
        if not isinstance(values, dict) or set(values) - set(fields):
            raise ValueError(f"it holds {' and '.join(fields)}, an object of them")
        for field in fields:
            setattr(config, field, values.get(field))
        config.validate_columns()
    except (OSError, UnicodeDecodeError, ValueError, TypeError, StrictDataclassError) as err:
        for field in fields:
            setattr(config, field, None)
        raise ValueError(f"{path}: not this model's {' and '.join(fields)} ({err})") from err


def read_tagger_files(config, source: str | os.PathLike, **options):
    """``config`` with the fields of each of :data:`TAGGER_FILES` found in ``source`` (a
    model folder, or a Hub repository with ``options``: :data:`HUB_OPTIONS`) whose fields
    ``config.json`` left empty; a ``ValueError`` naming a file that is not this model's."""
    options = {name: options[name] for name in HUB_OPTIONS if options.get(name) is not None}
    if os.path.isfile(source):  # a config.json named itself
        source = os.path.dirname(source)
    for name, fields in TAGGER_FILES.items():
        if any(getattr(config, field, None) for field in fields):
            continue  # config.json holds them
        local = Path(source, name)
        if local.is_symlink() and not local.exists():
            raise ValueError(f"{local}: a link to {os.readlink(local)}, which does not exist; restore the file")
        path = cached_file(
            source,
            name,
            _raise_exceptions_for_missing_entries=False,
            _raise_exceptions_for_connection_errors=False,
            **options,
        )
        if path is not None:
            _read_file(config, path, name)
    return config


__all__ = [
    "COLUMNS_FILE",
    "LEMMA_LEXICON_FILE",
    "TAGGER_FIELDS",
    "TAGGER_FILES",
    "TAGGER_FILE_OF",
    "read_tagger_files",
    "replace_file",
    "write_config",
]
