"""CoNLL-U treebanks for POS tagging as Hugging Face `datasets`.

Reading. `read_conllu` parses a file with the `conllu` package after a fast
validation pass of its own (`conllu_document.check_conllu`; the parser is lenient: it accepts short
lines and splits on runs of spaces), so malformed input fails with `file:line` in the
message instead of producing silently wrong columns. Only syntactic words are
kept: multiword-token ranges (`1-2`) and empty nodes (`1.1`) are skipped,
comments are ignored. A treebank's "tokens" column therefore holds words: for
English-GUM train that is 177,410 words, where UD statistics count 174,263
surface tokens.

Loading. `load_treebank` returns a `DatasetDict` with splits `train`,
`validation` (UD "dev") and `test` when present, and columns `tokens`
(`Sequence(Value("string"))`), `upos` and `xpos` (`Sequence(ClassLabel)`), and
`feats`, `lemma` and `deprel` as they are written (`Sequence(Value("string"))`, `_` where
the treebank has none; `columns.py` turns them into labels). The
tag names are the sorted tags of the train split (or `label_names`, e.g. those
of a saved model). A treebank is named by a known UD name (`TREEBANKS`,
resolved under `data_dir` or `$UD_DIR`), `"sample"`, a UD release folder, an
explicit mapping split -> file(s) or glob(s), or a Hub dataset with the same
columns.

Unseen tags. A dev/test tag absent from the label names is stored as
`UNSEEN_TAG` (-1, the `ClassLabel` "no label" value) and a warning counts them.
No model can predict -1, so such words count as errors in accuracy (the metric
ignores only -100). A loss must mask them like padding: cross-entropy rejects
negative targets other than its `ignore_index`.

Long sentences. Nothing is dropped or cut here. Training truncates sentences
to the model's maximum length (the training script does it); evaluation never
drops tokens: sentences longer than the model's maximum length must be scored
in full (e.g. in windows), never skipped or cut.

Sample. `load_treebank("sample")` generates and loads the synthetic treebank
of `sample_treebank.write_sample_treebank`, so that training runs with no data files.
"""

from __future__ import annotations

import glob
import logging
import os
import re
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import conllu

from .conllu_document import check_conllu, decode_utf8
from .sample_treebank import write_sample_treebank

if TYPE_CHECKING:
    import datasets

logger = logging.getLogger(__name__)

TAG_COLUMNS = ("upos", "xpos")
TEXT_COLUMNS = ("feats", "lemma", "deprel")  # kept as strings; see columns.py for their labels
UNSEEN_TAG = -1

PathLike = str | os.PathLike
SplitFiles = PathLike | Sequence[PathLike]

# Treebank name -> split -> files relative to a folder of UD release folders.
TREEBANKS: dict[str, dict[str, list[str]]] = {
    "en_gum": {
        split: [f"UD_English-GUM/en_gum-ud-{ud_split}.conllu"]
        for split, ud_split in (("train", "train"), ("validation", "dev"), ("test", "test"))
    },
    "de_hdt": {
        "train": [f"UD_German-HDT/de_hdt-ud-train-{part}.conllu" for part in ("a-1", "a-2", "b-1", "b-2")],
        "validation": ["UD_German-HDT/de_hdt-ud-dev.conllu"],
        "test": ["UD_German-HDT/de_hdt-ud-test.conllu"],
    },
}
OPTIONAL_SPLITS = ("test",)
SPLIT_ALIASES = {"train": "train", "dev": "validation", "validation": "validation", "test": "test"}


def _raw(fields: list[str], index: int) -> str:
    return fields[index]


def _word_id(fields: list[str], index: int) -> int | str:
    """Words get int ids; ranges and empty nodes keep their (already checked) text."""
    value = fields[index]
    return int(value) if value.isdigit() else value


# Columns the tagger does not use are kept as strings: parsing them is most of the cost.
_FIELD_PARSERS = {"id": _word_id, "head": _raw, "feats": _raw, "deps": _raw, "misc": _raw}


def read_conllu(path: PathLike) -> list[dict[str, list[str]]]:
    """Read a CoNLL-U file into sentences `{"tokens", "upos", "xpos", "feats", "lemma"}`
    of words.

    Multiword-token ranges and empty nodes are skipped, comments ignored, a
    missing XPOS (`_`) is kept as the tag `"_"`, FEATS and LEMMA are kept as written. Raises `FileNotFoundError` for
    a missing file and `ValueError` naming `file:line` for malformed input.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such CoNLL-U file")
    lines = decode_utf8(path.read_bytes(), path).splitlines()
    check_conllu(path, lines)
    sentences = []
    # Comments are dropped before parsing: they are ignored, and checked blocks never
    # consist of comments alone, so sentence boundaries are unchanged.
    body = "\n".join(line for line in lines if not line.startswith("#"))
    for sentence in conllu.parse(body, field_parsers=_FIELD_PARSERS):
        words = [token for token in sentence if isinstance(token["id"], int)]
        sentences.append(
            {
                "tokens": [word["form"] for word in words],
                "upos": [word["upos"] for word in words],
                "xpos": [word["xpos"] or "_" for word in words],
                "feats": [word["feats"] for word in words],
                "lemma": [word["lemma"] or "_" for word in words],
                "deprel": [word["deprel"] or "_" for word in words],
            }
        )
    return sentences


def count_words(paths: Sequence[PathLike]) -> int:
    """The syntactic words of CoNLL-U files (lines whose ID is a whole number), read fast:
    what sizes a run (``--fit-to-treebank``)."""
    words = 0
    for path in paths:
        with open(path, "rb") as lines:
            words += sum(1 for line in lines if line[:1].isdigit() and line.split(b"\t", 1)[0].isdigit())
    return words


def _expand(split: str, spec: SplitFiles) -> list[Path]:
    """Files of one split: paths must exist, globs must match at least one file."""
    items = [spec] if isinstance(spec, (str, os.PathLike)) else list(spec)
    if not items:
        raise FileNotFoundError(f"split {split!r}: no files given")
    files: list[Path] = []
    for item in items:
        item = os.fspath(item)
        if glob.has_magic(item):
            matches = sorted(glob.glob(item))
            if not matches:
                raise FileNotFoundError(f"split {split!r}: no files match {item}")
            files.extend(Path(match) for match in matches)
        elif not Path(item).is_file():
            raise FileNotFoundError(f"split {split!r}: {item}: no such CoNLL-U file")
        else:
            files.append(Path(item))
    return files


def _known_treebank_files(name: str, data_dir: PathLike | None) -> dict[str, list[Path]]:
    root = data_dir if data_dir is not None else os.environ.get("UD_DIR")
    if root is None:
        raise ValueError(f"treebank {name!r} needs data_dir or the UD_DIR environment variable")
    files = {}
    for split, relative in TREEBANKS[name].items():
        paths = [Path(root) / item for item in relative]
        if split in OPTIONAL_SPLITS and not any(path.is_file() for path in paths):
            continue
        files[split] = _expand(split, paths)
    return files


def _release_folder_files(folder: Path) -> dict[str, list[Path]]:
    files = {}
    for ud_split in ("train", "dev", "test"):
        matches = sorted(folder.glob(f"*-ud-{ud_split}*.conllu"))
        if matches:
            files[SPLIT_ALIASES[ud_split]] = matches
    if not files:
        raise FileNotFoundError(f"{folder}: no *-ud-{{train,dev,test}}*.conllu files")
    return files


@dataclass(frozen=True)
class TreebankFacts:
    """What a model card says about the training data: its name, the Hub id and config of
    a UD treebank (``universal_dependencies`` / ``en_gum``), its language and licence, and
    where the licence was read (or why it is unknown)."""

    name: str
    language: str | None = None
    license: str | None = None
    dataset_id: str | None = None
    dataset_config: str | None = None
    license_source: str | None = None


_UD_FILE = re.compile(r"([a-z]{2,3})_([a-z0-9]+)-ud-")
# UD's machine-readable metadata in a treebank's README: "License: CC BY-SA 4.0".
_README_LICENSE = re.compile(
    r"^License:\s*CC[ -]?(BY(?:[ -]NC)?(?:[ -]SA|[ -]ND)?)\s+(\d\.\d)", re.MULTILINE | re.IGNORECASE
)
_CC_URL = re.compile(r"creativecommons\.org/licenses/([a-z-]+)/(\d\.\d)")
_CC_WORDS = re.compile(r"Attribution((?:-NonCommercial)?(?:-ShareAlike|-NoDerivatives|-NoDerivs)?)[\s-]+(\d\.\d)")
_CC_WORD_PARTS = {"-NonCommercial": "-nc", "-ShareAlike": "-sa", "-NoDerivatives": "-nd", "-NoDerivs": "-nd"}


def _license_in_words(text: str) -> str | None:
    """The Creative Commons licence a LICENSE.txt names, by its URL or its name in words."""
    text = re.sub(r"-\s+", "-", text)  # "NonCommercial- ShareAlike", broken over a line
    found = _CC_URL.search(text)
    if found:
        return f"cc-{found[1]}-{found[2]}"
    found = _CC_WORDS.search(text)
    if found is None:
        return None
    parts = "".join(code for word, code in _CC_WORD_PARTS.items() if word in found[1])
    return f"cc-by{parts}-{found[2]}"


def treebank_license(folder: PathLike) -> tuple[str | None, str]:
    """The Hub licence id of the UD treebank in ``folder`` and where it was read: UD's
    metadata in README.md (``License: CC BY-SA 4.0``, what UD publishes), else the licence
    that LICENSE.txt names; a disagreement between the two is said, and so is no licence."""
    folder = Path(folder)
    texts = {}
    for name in ("README.md", "README.txt", "LICENSE.txt"):
        path = folder / name
        texts[name] = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    readme = next((m for m in map(_README_LICENSE.search, (texts["README.md"], texts["README.txt"])) if m), None)
    from_readme = f"cc-{readme[1].lower().replace(' ', '-')}-{readme[2]}" if readme else None
    from_license = _license_in_words(texts["LICENSE.txt"])
    if from_readme and from_license and from_readme != from_license:
        return from_readme, f"the treebank's README metadata ({from_readme}; its LICENSE.txt names {from_license})"
    if from_readme:
        return from_readme, "the treebank's README metadata"
    if from_license:
        return from_license, "the treebank's LICENSE.txt"
    return None, "unknown: the treebank's README and LICENSE.txt name no Creative Commons licence"


def treebank_facts(files: Sequence[PathLike]) -> TreebankFacts | None:
    """Facts about the UD treebank of ``files`` (train files), read from UD's file names
    (``en_gum-ud-train.conllu``), release folder (``UD_English-GUM``) and its licence
    (:func:`treebank_license`); None when the files do not look like a UD release."""
    if not files:
        return None
    path = Path(files[0])
    match = _UD_FILE.match(path.name)
    if match is None:
        return None
    license, source = treebank_license(path.parent)
    folder = path.parent.name
    return TreebankFacts(
        name=folder.replace("_", " ", 1) if folder.startswith("UD_") else f"UD {match[0][:-4]}",
        language=match[1],
        license=license,
        dataset_id="universal_dependencies",
        dataset_config=f"{match[1]}_{match[2]}",
        license_source=source,
    )


UD_CODE = re.compile(r"[a-z]{2,3}_[a-z0-9]+")


def find_ud_treebank(code: str, data_dir: PathLike | None = None) -> Path:
    """The UD release folder under ``data_dir`` or ``$UD_DIR`` that holds
    ``{code}-ud-train*.conllu`` (``tr_imst`` -> ``.../UD_Turkish-IMST``); ``ValueError``
    naming ``treebank`` when there is none, or several."""
    root = data_dir if data_dir is not None else os.environ.get("UD_DIR")
    found = sorted({path.parent for path in Path(root).glob(f"UD_*/{code}-ud-train*.conllu")}) if root else []
    if len(found) == 1:
        return found[0]
    where = f"under {root}" if root else "(give --data-dir or set UD_DIR to the folder of UD_* folders)"
    problem = f"is in several release folders {where}" if found else f"has no UD_*/{code}-ud-train*.conllu {where}"
    raise ValueError(f"treebank: {code!r} {problem}")


def resolve_treebank(name: str, data_dir: PathLike | None = None) -> str:
    """``name`` as :func:`load_treebank` reads it: a UD treebank code that this package does
    not name (``tr_imst``) becomes its release folder under ``data_dir`` or ``$UD_DIR``
    (:func:`find_ud_treebank`); any other name is returned as it is."""
    if name in TREEBANKS or name == "sample" or UD_CODE.fullmatch(name) is None or Path(name).is_dir():
        return name
    return str(find_ud_treebank(name, data_dir))


def treebank_files(
    name: str, data_dir: PathLike | None = None, replace: Mapping[str, Sequence[PathLike]] | None = None
) -> dict[str, list[Path]]:
    """Split (``train``, ``validation``, ``test``) -> the CoNLL-U files a treebank name
    resolves to, with the splits in ``replace`` (file paths or globs) replacing its own;
    no files of its own for the generated sample and Hub data sets, nor when ``replace``
    gives both the train and the dev split."""
    files: dict[str, list[Path]] = {}
    replaced = {SPLIT_ALIASES.get(split, split) for split, spec in (replace or {}).items() if spec}
    own = not {"train", "validation"} <= replaced  # the name's files count only for a split not replaced
    if own and name in TREEBANKS:
        files = _known_treebank_files(name, data_dir)
    elif own and name != "sample" and Path(name).is_dir():
        files = _release_folder_files(Path(name))
    for split, spec in (replace or {}).items():
        if spec:
            files[SPLIT_ALIASES.get(split, split)] = _expand(split, list(spec))
    return files


def _hub_sentences(name: str) -> dict[str, list[dict[str, list[str]]]]:
    import datasets  # only for training and Hub data: tagging never loads it

    try:
        loaded = datasets.load_dataset(name)
    except Exception as err:
        raise ValueError(
            f"{name!r} is not a known treebank ({', '.join(['sample', *TREEBANKS])}), "
            f"a folder, or a dataset loadable from the Hub: {err}"
        ) from err
    splits = {}
    for split, dataset in loaded.items():
        missing = {"tokens", *TAG_COLUMNS} - set(dataset.column_names)
        if missing:
            raise ValueError(f"Hub dataset {name!r} split {split!r} lacks columns {sorted(missing)}")
        columns = {"tokens": dataset["tokens"]}
        for column in TAG_COLUMNS:
            values = dataset[column]
            feature = dataset.features[column].feature
            if isinstance(feature, datasets.ClassLabel):
                values = [feature.int2str(tags) for tags in values]
            columns[column] = values
        for column in TEXT_COLUMNS:  # absent (or named "lemmas", as UD's Hub data set does)
            source = next((c for c in (column, column + "s") if c in dataset.column_names), None)
            columns[column] = dataset[source] if source else [["_"] * len(tokens) for tokens in columns["tokens"]]
        splits[SPLIT_ALIASES.get(split, split)] = [dict(zip(columns, row)) for row in zip(*columns.values())]
    return splits


def _to_dataset_dict(
    splits: dict[str, list[dict[str, list[str]]]],
    label_names: Mapping[str, Sequence[str]] | None,
) -> datasets.DatasetDict:
    import datasets  # only for training and Hub data: tagging never loads it

    names = {}
    for column in TAG_COLUMNS:
        if label_names is not None and column in label_names:
            names[column] = list(label_names[column])
        else:
            sources = [splits["train"]] if "train" in splits else list(splits.values())
            names[column] = sorted({tag for source in sources for sentence in source for tag in sentence[column]})
    features = datasets.Features(
        {
            "tokens": datasets.Sequence(datasets.Value("string")),
            **{column: datasets.Sequence(datasets.ClassLabel(names=names[column])) for column in TAG_COLUMNS},
            **{column: datasets.Sequence(datasets.Value("string")) for column in TEXT_COLUMNS},
        }
    )
    result = datasets.DatasetDict()
    for split, sentences in splits.items():
        columns: dict[str, list] = {"tokens": [sentence["tokens"] for sentence in sentences]}
        for column in TAG_COLUMNS:
            ids = {tag: index for index, tag in enumerate(names[column])}
            encoded = [[ids.get(tag, UNSEEN_TAG) for tag in sentence[column]] for sentence in sentences]
            unseen = Counter(tag for sentence in sentences for tag in sentence[column] if tag not in ids)
            if unseen:
                logger.warning(
                    "%s %s: %d words have tags outside the label names (stored as %d): %s",
                    split,
                    column,
                    sum(unseen.values()),
                    UNSEEN_TAG,
                    dict(unseen.most_common(5)),
                )
            columns[column] = encoded
        for column in TEXT_COLUMNS:
            columns[column] = [sentence.get(column, ["_"] * len(sentence["tokens"])) for sentence in sentences]
        result[split] = datasets.Dataset.from_dict(columns, features=features)
    return result


def load_treebank(
    name_or_files: str | os.PathLike | Mapping[str, SplitFiles],
    data_dir: PathLike | None = None,
    *,
    label_names: Mapping[str, Sequence[str]] | None = None,
    extra_train: Sequence[dict[str, list[str]]] = (),
) -> datasets.DatasetDict:
    """Load a treebank as a `DatasetDict` with `tokens`, `upos`, `xpos`, `feats`, `lemma`
    columns; `extra_train` (sentences as `read_conllu` reads them, e.g. silver ones from
    `self_training.py`) follows the train split's own.

    `name_or_files` is one of: a name in `TREEBANKS` (files under `data_dir`
    or `$UD_DIR`); `"sample"` (generated, see `write_sample_treebank`); a UD
    release folder (`*-ud-{train,dev,test}*.conllu`); a mapping from split
    (`train`, `dev`/`validation`, `test`) to a file, a glob, or a list of them;
    otherwise a Hub dataset name for `datasets.load_dataset`.

    Tag names come from `label_names[column]` when given (e.g. a saved model's),
    else from the sorted tags of train (of all splits when there is no train).
    Tags not among them become `UNSEEN_TAG`.
    """
    if name_or_files == "sample":
        with tempfile.TemporaryDirectory(prefix="cont_transformer_sample_") as directory:
            files = {split: [path] for split, path in write_sample_treebank(directory).items()}
            splits = _read_splits(files)
    elif isinstance(name_or_files, Mapping):
        files = {SPLIT_ALIASES.get(split, split): _expand(split, spec) for split, spec in name_or_files.items()}
        splits = _read_splits(files)
    elif name_or_files in TREEBANKS:
        splits = _read_splits(_known_treebank_files(str(name_or_files), data_dir))
    elif Path(name_or_files).is_dir():
        splits = _read_splits(_release_folder_files(Path(name_or_files)))
    else:
        splits = _hub_sentences(str(name_or_files))
    if extra_train:
        splits["train"] = [*splits.get("train", []), *extra_train]
    return _to_dataset_dict(splits, label_names)


def load_splits(
    treebank: str,
    data_dir: str | None = None,
    train_file: Sequence[str] = (),
    dev_file: Sequence[str] = (),
    label_names: Mapping[str, Sequence[str]] | None = None,
    extra_train: Sequence[dict[str, list[str]]] = (),
):
    """The treebank as a ``DatasetDict``, with ``train_file`` / ``dev_file`` replacing splits
    and ``extra_train`` (silver sentences) after the train split's own.

    Replacing one split of a known UD treebank keeps its other files; otherwise give both.
    """
    if not train_file and not dev_file:
        return load_treebank(treebank, data_dir, label_names=label_names, extra_train=extra_train)
    files: dict[str, Sequence[str]] = {}
    if treebank in TREEBANKS and not (train_file and dev_file):
        root = data_dir if data_dir is not None else os.environ.get("UD_DIR")
        if root is None:
            raise ValueError(f"treebank: {treebank!r} needs --data-dir or the UD_DIR environment variable")
        files = {split: [str(Path(root) / f) for f in TREEBANKS[treebank][split]] for split in ("train", "validation")}
    elif not (train_file and dev_file):
        raise ValueError(f"train_file: give both --train-file and --dev-file for treebank {treebank!r}")
    files.update({k: list(v) for k, v in (("train", train_file), ("validation", dev_file)) if v})
    return load_treebank(files, label_names=label_names, extra_train=extra_train)


def _read_splits(files: dict[str, list[Path]]) -> dict[str, list[dict[str, list[str]]]]:
    return {split: [sentence for path in paths for sentence in read_conllu(path)] for split, paths in files.items()}


def build_vocab(dataset: datasets.Dataset | datasets.DatasetDict, min_freq: int = 1) -> list[str]:
    """Word forms of `dataset` (its train split for a `DatasetDict`) seen at least
    `min_freq` times, most frequent first, ties in alphabetical order."""
    import datasets  # only for training and Hub data: tagging never loads it

    if isinstance(dataset, datasets.DatasetDict):
        dataset = dataset["train"]
    counts = Counter(token for tokens in dataset["tokens"] for token in tokens)
    kept = [word for word, count in counts.items() if count >= min_freq]
    return sorted(kept, key=lambda word: (-counts[word], word))


def check_tag_column(train: datasets.Dataset, column: str) -> None:
    """Refuse a training split whose ``column`` holds no tags to learn.

    A treebank without XPOS has ``_`` in that column: training on it would predict ``_``
    everywhere and report a perfect accuracy. Raises ``ValueError`` when every word's tag
    is ``_`` or all words share one tag; warns when some words have ``_``.
    """
    names = train.features[column].feature.names
    counts = Counter(tag for tags in train[column] for tag in tags)
    total = sum(counts.values())
    empty = counts.get(names.index("_"), 0) if "_" in names else 0
    if empty == total:
        raise ValueError(
            f"tag_column: the {column} column of the train split is '_' (no tag) for all "
            f"{total:,} words; choose the other --tag-column or a treebank that has {column}"
        )
    if len(counts) < 2:
        raise ValueError(
            f"tag_column: the {column} column of the train split has a single tag "
            f"({names[next(iter(counts))]!r}) for all {total:,} words: nothing to learn"
        )
    if empty:
        logger.warning(
            "train %s: %d of %d words (%.1f%%) have no tag ('_'); they are learnt as the tag '_'",
            column,
            empty,
            total,
            100 * empty / total,
        )


def most_frequent_tag_baseline(train: datasets.Dataset, eval: datasets.Dataset, column: str = "xpos") -> float:
    """Accuracy on `eval` of tagging each word with its most frequent `column` tag
    in `train` (unknown words: the most frequent tag overall). Ties go to the
    lower tag id; `UNSEEN_TAG` references count as errors."""
    if train.features[column] != eval.features[column]:
        raise ValueError(f"train and eval have different {column!r} label names")
    per_word: dict[str, Counter] = {}
    overall: Counter = Counter()
    for tokens, tags in zip(train["tokens"], train[column]):
        for token, tag in zip(tokens, tags):
            per_word.setdefault(token, Counter())[tag] += 1
            overall[tag] += 1

    def best(counts: Counter) -> int:
        return max(counts, key=lambda tag: (counts[tag], -tag))

    guess = {token: best(counts) for token, counts in per_word.items()}
    default = best(overall)
    correct = total = 0
    for tokens, tags in zip(eval["tokens"], eval[column]):
        for token, tag in zip(tokens, tags):
            correct += guess.get(token, default) == tag
            total += 1
    return correct / total if total else 0.0
