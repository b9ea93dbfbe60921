"""CoNLL-U reading, treebank loading, the generated sample and the token accuracy metric."""

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cont_transformer.tagging.data import (
    UNSEEN_TAG,
    build_vocab,
    load_treebank,
    most_frequent_tag_baseline,
    read_conllu,
)
from cont_transformer.tagging.sample_treebank import write_sample_treebank

UD_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "ud"
GUM_DIR = UD_DIR / "UD_English-GUM"
GSD_DEV = UD_DIR / "UD_German-GSD" / "de_gsd-ud-dev.conllu"


def row(token_id: str, form: str, upos: str = "NOUN", xpos: str = "NN") -> str:
    return f"{token_id}\t{form}\t{form.lower()}\t{upos}\t{xpos}\t_\t0\troot\t_\t_"


SENTENCES = (
    "\n".join(
        [
            "# newdoc id = doc",
            "# sent_id = 1",
            "# text = Cats don't sleep.",
            row("1", "Cats", "NOUN", "NNS"),
            row("2-3", "don't", "_", "_"),
            row("2", "do", "AUX", "VBP"),
            row("3", "n't", "PART", "RB"),
            row("4", "sleep", "VERB", "VB"),
            row("4.1", "sleep", "VERB", "VB"),
            row("5", ".", "PUNCT", "."),
            "",
            "# sent_id = 2",
            row("1", "Dogs", "NOUN", "NNS"),
            row("2", "bark", "VERB", "_"),
        ]
    )
    + "\n\n"
)


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_read_skips_multiword_ranges_empty_nodes_and_comments(tmp_path):
    sentences = read_conllu(write(tmp_path, "a.conllu", SENTENCES))
    assert sentences == [
        {
            "tokens": ["Cats", "do", "n't", "sleep", "."],
            "upos": ["NOUN", "AUX", "PART", "VERB", "PUNCT"],
            "xpos": ["NNS", "VBP", "RB", "VB", "."],
            "feats": ["_"] * 5,
            "lemma": ["cats", "do", "n't", "sleep", "."],
            "deprel": ["root"] * 5,
        },
        {
            "tokens": ["Dogs", "bark"],
            "upos": ["NOUN", "VERB"],
            "xpos": ["NNS", "_"],
            "feats": ["_", "_"],
            "lemma": ["dogs", "bark"],
            "deprel": ["root", "root"],
        },
    ]


def test_split_from_several_files_or_a_glob(tmp_path):
    first = write(tmp_path, "train-1.conllu", SENTENCES)
    second = write(tmp_path, "train-2.conllu", "\n".join([row("1", "Birds"), ""]))
    dev = write(tmp_path, "dev.conllu", SENTENCES)
    from_list = load_treebank({"train": [first, second], "dev": dev})
    from_glob = load_treebank({"train": str(tmp_path / "train-*.conllu"), "dev": str(dev)})
    assert set(from_list) == {"train", "validation"}
    assert from_list["train"]["tokens"] == from_glob["train"]["tokens"]
    assert from_list["train"]["tokens"][-1] == ["Birds"]
    assert from_list["train"].num_rows == 3


def test_class_labels_from_train_and_unseen_tags(tmp_path, caplog):
    train = write(tmp_path, "train.conllu", SENTENCES)
    dev = write(tmp_path, "dev.conllu", "\n".join([row("1", "Birds", "NOUN", "NNPS"), ""]))
    with caplog.at_level(logging.WARNING):
        treebank = load_treebank({"train": train, "validation": dev})
    names = treebank["train"].features["xpos"].feature.names
    assert names == [".", "NNS", "RB", "VB", "VBP", "_"]
    assert treebank["train"]["xpos"][1] == [names.index("NNS"), names.index("_")]
    assert treebank["validation"]["xpos"] == [[UNSEEN_TAG]]
    assert "NNPS" in caplog.text
    assert most_frequent_tag_baseline(treebank["train"], treebank["validation"], "xpos") == 0.0

    given = load_treebank({"validation": dev}, label_names={"xpos": ["NN", "NNPS"]})
    assert given["validation"]["xpos"] == [[1]]
    assert given["validation"].features["upos"].feature.names == ["NOUN"]


MALFORMED = {
    "wrong column count": ([row("1", "a"), "2\tb\tb\tNOUN\tNN\t_\t0\troot\t_"], 2, "10 tab"),
    "spaces instead of tabs": ([row("1", "a").replace("\t", "   ")], 1, "10 tab"),
    "empty column": ([row("1", "a").replace("\tNN\t", "\t\t")], 1, "column 5 is empty"),
    "bad id": ([row("1", "a"), row("x", "b")], 2, "bad id"),
    "zero id": ([row("0", "a")], 1, "bad id"),
    "skipped id": (["# c", row("1", "a"), row("3", "b")], 3, "expected 2"),
    "id not restarting": ([row("1", "a"), "", row("2", "b")], 3, "expected 1"),
    "range out of place": ([row("1", "a"), row("3-4", "bc")], 2, "multiword token"),
    "range past the end": ([row("1-2", "ab"), row("1", "a")], 1, "past the last word"),
    "empty node out of place": ([row("1", "a"), row("2.1", "b")], 2, "empty node"),
    "comments only": (["# c"], 1, "no word lines"),
    "empty file": ([], 1, "empty file"),
}


@pytest.mark.parametrize("lines, line_number, problem", MALFORMED.values(), ids=MALFORMED)
def test_malformed_input_names_file_and_line(tmp_path, lines, line_number, problem):
    path = write(tmp_path, "bad.conllu", "\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=re.escape(f"{path}:{line_number}: ") + ".*" + problem):
        read_conllu(path)
    with pytest.raises(ValueError, match=re.escape(f"{path}:{line_number}: ")):
        load_treebank({"train": path})


def test_missing_files_and_splits(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="nothere.conllu"):
        read_conllu(tmp_path / "nothere.conllu")
    with pytest.raises(FileNotFoundError, match="no files match"):
        load_treebank({"train": str(tmp_path / "*.conllu")})
    write(tmp_path, "UD_English-GUM/en_gum-ud-train.conllu", SENTENCES)
    with pytest.raises(FileNotFoundError, match="en_gum-ud-dev.conllu"):
        load_treebank("en_gum", tmp_path)
    monkeypatch.delenv("UD_DIR", raising=False)
    with pytest.raises(ValueError, match="UD_DIR"):
        load_treebank("en_gum")


def test_known_treebanks_resolve_release_folders(tmp_path, monkeypatch):
    for index, part in enumerate(["a-1", "a-2", "b-1", "b-2"]):
        write(tmp_path, f"UD_German-HDT/de_hdt-ud-train-{part}.conllu", row("1", f"W{index}") + "\n")
    for split in ("dev", "test"):
        write(tmp_path, f"UD_German-HDT/de_hdt-ud-{split}.conllu", SENTENCES)
    write(tmp_path, "UD_English-GUM/en_gum-ud-train.conllu", SENTENCES)
    write(tmp_path, "UD_English-GUM/en_gum-ud-dev.conllu", SENTENCES)

    hdt = load_treebank("de_hdt", tmp_path)
    assert set(hdt) == {"train", "validation", "test"}
    assert hdt["train"]["tokens"] == [["W0"], ["W1"], ["W2"], ["W3"]]
    monkeypatch.setenv("UD_DIR", str(tmp_path))
    gum = load_treebank("en_gum")
    assert set(gum) == {"train", "validation"}
    assert load_treebank(tmp_path / "UD_English-GUM")["validation"].num_rows == 2


def test_sample_treebank_is_valid_and_ambiguous(tmp_path):
    files = write_sample_treebank(tmp_path, num_train=300, num_dev=100)
    assert sorted(path.name for path in files.values()) == [
        "sample-ud-dev.conllu",
        "sample-ud-train.conllu",
    ]
    text = files["train"].read_text(encoding="utf-8")
    assert re.search(r"^# text = ", text, re.MULTILINE)
    assert re.search(r"^\d+-\d+\t", text, re.MULTILINE)
    assert re.search(r"^\d+\.1\t", text, re.MULTILINE)
    treebank = load_treebank(files)
    for column in ("xpos", "upos"):
        baseline = most_frequent_tag_baseline(treebank["train"], treebank["validation"], column)
        assert 0.7 < baseline < 0.95
    assert (
        write_sample_treebank(tmp_path / "again", num_train=300, num_dev=100)["train"].read_text(encoding="utf-8")
        == text
    )


def test_builtin_sample():
    sample = load_treebank("sample")
    assert sample["train"].num_rows == 2000
    assert sample["validation"].num_rows == 400
    assert "NNS" in sample["train"].features["xpos"].feature.names


def test_build_vocab_orders_by_frequency(tmp_path):
    text = SENTENCES + "\n".join([row("1", "bark"), row("2", "bark"), ""])
    treebank = load_treebank({"train": write(tmp_path, "train.conllu", text)})
    assert build_vocab(treebank) == ["bark", ".", "Cats", "Dogs", "do", "n't", "sleep"]
    assert build_vocab(treebank["train"], min_freq=2) == ["bark"]


@pytest.mark.slow
def test_offline_metric_and_hub_error_path():
    script = """
from cont_transformer.tagging.data import load_treebank
from cont_transformer.tagging.metrics import load_conll18
gold = "1\\tHi\\thi\\tINTJ\\tUH\\t_\\t0\\troot\\t_\\t_\\n\\n"
print(load_conll18().compute(predictions=[gold.replace("INTJ", "X")], references=[gold])["XPOS"]["f1"])
try:
    load_treebank("no-such-user/no-such-treebank")
except ValueError as err:
    print("ValueError", "not a known treebank" in str(err))
"""
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1.0", "ValueError", "True"]


requires_gum = pytest.mark.skipif(not GUM_DIR.is_dir(), reason="UD English-GUM not present")


@pytest.fixture(scope="module")
def gum():
    return load_treebank("en_gum", UD_DIR)


def surface_tokens(path: Path) -> int:
    """UD's token count: a multiword token counts once, not once per word."""
    words = extra = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        token_id = line.split("\t", 1)[0]
        if token_id.isdigit():
            words += 1
        elif "-" in token_id and not line.startswith("#"):
            start, end = map(int, token_id.split("-"))
            extra += end - start
    return words - extra


@requires_gum
def test_english_gum(gum):
    assert set(gum) == {"train", "validation"}
    train, dev = gum["train"], gum["validation"]
    assert (train.num_rows, dev.num_rows) == (10_224, 1_575)
    assert sum(map(len, train["tokens"])) == 177_410
    assert sum(map(len, dev["tokens"])) == 28_119
    assert surface_tokens(GUM_DIR / "en_gum-ud-train.conllu") == 174_263
    assert surface_tokens(GUM_DIR / "en_gum-ud-dev.conllu") == 27_602
    assert len(train.features["xpos"].feature.names) == 46
    assert UNSEEN_TAG not in {tag for tags in dev["xpos"] for tag in tags}
    assert len(build_vocab(gum)) == 17_954
    assert most_frequent_tag_baseline(train, dev, "xpos") == pytest.approx(0.861, abs=5e-4)


@pytest.mark.skipif(not GSD_DEV.is_file(), reason="UD German-GSD dev not present")
def test_german_gsd_dev_by_explicit_path():
    gsd = load_treebank({"dev": GSD_DEV})
    assert list(gsd) == ["validation"]
    assert gsd["validation"].num_rows == 799
    assert "ART" in gsd["validation"].features["xpos"].feature.names


def test_a_byte_order_mark_is_not_part_of_the_text(tmp_path):
    path = tmp_path / "bom.conllu"
    path.write_bytes("\ufeff".encode() + SENTENCES.encode())
    assert read_conllu(path)[0]["tokens"] == ["Cats", "do", "n't", "sleep", "."]


def test_a_tag_column_without_tags_is_refused(tmp_path, caplog):
    from cont_transformer.tagging.data import check_tag_column

    no_xpos = "\n".join(row(str(i), w, "NOUN", "_") for i, w in enumerate(["a", "b"], 1)) + "\n\n"
    path = write(tmp_path, "x-ud-train.conllu", no_xpos)
    data = load_treebank({"train": path, "dev": path})
    with pytest.raises(ValueError, match="^tag_column: the xpos column of the train split is '_'"):
        check_tag_column(data["train"], "xpos")
    with pytest.raises(ValueError, match="single tag"):
        check_tag_column(data["train"], "upos")
    partly = load_treebank({"train": write(tmp_path, "y.conllu", SENTENCES)})["train"]
    with caplog.at_level("WARNING"):
        check_tag_column(partly, "xpos")  # 'bark' has no XPOS: warned, not refused
    assert "1 of 7 words" in caplog.text
