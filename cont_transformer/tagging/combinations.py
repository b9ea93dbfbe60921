"""The (UPOS, XPOS, FEATS) combinations seen in training, which a tagger decodes jointly
(those of the three it predicts, two or more).

A model whose config records ``tag_combinations`` chooses, per word, the seen triple of
highest summed log-probability of its three heads (``column_decoding.predicted_label_ids``)
instead of each head's own argmax. The trainer records them; :func:`add_tag_combinations`
adds them to a model trained before, from its train file:

    python -m cont_transformer.tagging.combinations MODEL_DIR TRAIN.conllu
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import datasets

from ..column_decoding import model_column_labels
from ..config_record import config_mismatch, read_metadata, record_config, weights_files
from ..configuration_cont_transformer import JOINT_COLUMNS, joint_columns
from ..runtime.model_folders import resolve_model_dir
from ..tagger_files import TAGGER_FILE_OF, read_tagger_files
from .columns import canonical_feats, column_values
from .data import load_treebank
from .tag import saved_tag_column


def tag_combinations(
    train: datasets.Dataset, labels: Mapping[str, Sequence[str]], feats_mode: str = "whole"
) -> list[list[str]] | None:
    """The ``[upos, xpos, feats]`` triples of ``train`` whose values in the joint columns
    that ``labels`` has (:func:`joint_columns`) are all among ``labels``, ``"_"`` for a column
    not predicted (sorted); None with fewer than two joint columns, or factored FEATS."""
    joint = joint_columns(labels)
    if len(joint) < 2 or ("feats" in joint and feats_mode != "whole"):
        return None
    known = [set(labels[column]) for column in joint]
    values = [column_values(train, column) for column in joint]
    normalise = [canonical_feats if column == "feats" else str for column in joint]
    seen = set()
    for sentence in zip(*values):
        for word in zip(*sentence):
            word = tuple(f(value) for f, value in zip(normalise, word))
            if all(value in labels for value, labels in zip(word, known)):
                by_column = dict(zip(joint, word))
                seen.add(tuple(by_column.get(column, "_") for column in JOINT_COLUMNS))
    return [list(triple) for triple in sorted(seen)] or None


def add_tag_combinations(model_dir: str | os.PathLike, train_file: str | os.PathLike) -> int:
    """Record in ``model_dir``'s tagger (a run folder's and its ``best/`` model's) the
    combinations of ``train_file`` (CoNLL-U); returns how many. Each folder's config is
    written again (``config.json`` and its data files, ``columns.json`` holding the
    combinations, each replaced atomically) and recorded in its weights. A folder whose
    config is not the one its weights record is refused first, untouched. Raises
    ``ValueError`` when the model does not predict UPOS, XPOS and whole FEATS."""
    from ..pretrained import check_no_custom_code

    folder = resolve_model_dir(model_dir)
    check_no_custom_code(folder)
    config = _whole_config(folder)
    labels = model_column_labels(config, saved_tag_column(folder))
    train = load_treebank({"train": [str(train_file)]})["train"]
    combinations = tag_combinations(train, labels, getattr(config, "feats_mode", "whole"))
    if combinations is None:
        raise ValueError(
            f"{model_dir}: the model predicts fewer than two of {', '.join(JOINT_COLUMNS)} with whole FEATS"
        )
    # A run folder may hold the model at its top besides best/: both get them, and the
    # config recorded in their weights follows (config_record.py), once it is found to be
    # the config they hold.
    folders = [
        path.parent for path in {Path(model_dir) / "config.json", Path(folder) / "config.json"} if path.is_file()
    ]
    configs = [_whole_config(path) for path in folders]
    for path, saved in zip(folders, configs):
        for weights in weights_files(path):
            problem = config_mismatch(saved, read_metadata(weights), TAGGER_FILE_OF)
            if problem is not None:
                raise ValueError(f"{path}: {problem} (recorded in {weights.name}); not adding to it")
    for path, saved in zip(folders, configs):
        saved.tag_combinations = combinations
        saved.validate_columns()
        saved.to_json_file(path / "config.json")
        record_config(saved, path)
    return len(combinations)


def _whole_config(folder: Path):
    """The config of the tagger in ``folder``: ``config.json`` and its data files."""
    from transformers import AutoConfig

    return read_tagger_files(AutoConfig.from_pretrained(folder, trust_remote_code=False), folder)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if len(arguments) != 2:
        print(
            "usage: python -m cont_transformer.tagging.combinations MODEL_DIR TRAIN.conllu",
            file=sys.stderr,
        )
        return 2
    try:
        count = add_tag_combinations(*arguments)
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"{arguments[0]}: {count} tag combinations recorded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
