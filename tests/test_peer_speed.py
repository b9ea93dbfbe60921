"""benchmarks/peers/speed.py on a few sentences of the sample treebank: every file written,
a row per tagger, the gold words counted, accuracies in [0, 100]. The speeds are measured
and reported, never asserted."""

import importlib
import json
from pathlib import Path

import pytest

from cont_transformer.tagging.sample_treebank import write_sample_treebank

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ("UPOS", "XPOS", "UFeats", "AllTags", "Lemmas")


@pytest.fixture
def speed(monkeypatch):
    """The script's module (it imports its sibling common.py as the scripts do)."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks" / "peers"))
    return importlib.import_module("speed")


@pytest.fixture(scope="module")
def treebank(tmp_path_factory) -> dict[str, Path]:
    return write_sample_treebank(tmp_path_factory.mktemp("treebank"), num_train=60, num_dev=12)


@pytest.fixture(scope="module")
def dev_file(treebank) -> Path:
    return treebank["validation"]


def gold_words(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines() if line.split("\t")[0].isdigit())


def check_accuracies(values: dict) -> None:
    for title, value in values.items():
        assert value is None or 0 <= value <= 100, (title, value)


@pytest.mark.slow
def test_ours_and_a_compression_line(speed, sample_run_60, dev_file, tmp_path):
    out = tmp_path / "speed"
    record = speed.main(
        [
            "--dev-file",
            str(dev_file),
            "--ours",
            f"sample={sample_run_60}",
            "--line",
            f"{sample_run_60}:float32",
            "--line-settings",
            "3,3",
            "2,2",
            "--rounds",
            "1",
            "--output-dir",
            str(out),
        ]
    )
    assert {p.name for p in out.iterdir()} == {"speed.json", "speed.md", "speed.png"}
    assert json.loads((out / "speed.json").read_text()) == json.loads(json.dumps(record))
    words = gold_words(dev_file)
    assert record["gold_words"] == words
    assert [t["key"] for t in record["taggers"]] == ["ours:sample", "line:3,3", "line:2,2"]
    assert [t["line"] for t in record["taggers"]] == [None, (3, 3), (2, 2)]
    for tagger in record["taggers"]:
        assert tagger["gold"]["words"] == tagger["raw"]["words"] == words
        assert tagger["gold"]["words_per_cpu_second"] > 0 and tagger["raw"]["words_per_cpu_second"] > 0
        assert set(tagger["gold"]["accuracy"]) == set(COLUMNS)
        check_accuracies(tagger["gold"]["accuracy"])
        check_accuracies(tagger["raw"]["accuracy"])
        assert tagger["peak_mib"] > record["floor_peak_mib"] > 0
    # Gold tokens in, gold tokens out: every word aligned.
    assert record["taggers"][0]["gold"]["accuracy"]["UPOS"] is not None
    assert record["taggers"][0]["raw"]["accuracy"]["Words"] > 50
    table = (out / "speed.md").read_text().split("\n\n")[3].splitlines()
    line = f"| ours ({sample_run_60.name})"
    assert [row.split(" | ")[0] for row in table[2:]] == ["| sample", line, line]
    assert "K=2, N_T=2" in table[-1]


def test_bad_flags_are_one_line(speed, dev_file, tmp_path, capsys):
    for argv, flag in (
        (["--ours", f"x={tmp_path / 'missing'}"], "--ours"),
        (["--line", str(dev_file.parent), "--line-settings", "8"], "--line-settings"),
        (["--udpipe-model", str(tmp_path / "missing.model")], "--udpipe-model"),
        ([], "no tagger"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            speed.main(["--dev-file", str(dev_file), "--output-dir", str(tmp_path / "out"), *argv])
        assert exit_info.value.code == 2
        assert flag in capsys.readouterr().err.strip().splitlines()[-1]
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_spacy_and_udpipe_beside_ours(speed, sample_run_60, treebank, dev_file, tmp_path):
    """spaCy (an untrained pipeline of spacy_ud.py's components) and UDPipe 1 (one iteration
    on the sample's train file), each where installed, beside ours."""
    spacy = pytest.importorskip("spacy")
    pytest.importorskip("ufal.udpipe")
    from spacy.tokens import Doc
    from spacy.training import Example
    from spacy_ud import make_docs
    from udpipe1 import read_sentences, udpipe

    train = speed.Conllu.read(treebank["train"])
    nlp = spacy.blank("en")
    for component in ("tagger", "morphologizer", "trainable_lemmatizer"):
        nlp.add_pipe(component)
    references = make_docs(nlp.vocab, train, annotated=True)
    examples = [
        Example(Doc(nlp.vocab, words=[t.text for t in d], spaces=[bool(t.whitespace_) for t in d]), d)
        for d in references
    ]
    nlp.initialize(lambda: examples)
    nlp.to_disk(tmp_path / "spacy")
    error = udpipe.ProcessingError()
    model = udpipe.Trainer.train(
        "morphodita_parsito",
        read_sentences("\n".join(train.lines) + "\n"),
        udpipe.Sentences(),
        "none",
        "iterations=1",
        "none",
        error,
    )
    assert not error.occurred(), error.message
    (tmp_path / "udpipe.model").write_bytes(
        model if isinstance(model, bytes) else model.encode("utf-8", "surrogateescape")
    )

    record = speed.main(
        [
            "--dev-file",
            str(dev_file),
            "--spacy-model",
            str(tmp_path / "spacy"),
            "--udpipe-model",
            str(tmp_path / "udpipe.model"),
            "--ours",
            f"sample={sample_run_60}:bf16",
            "--rounds",
            "2",
            "--output-dir",
            str(tmp_path / "speed"),
        ]
    )
    spacy_row, udpipe_row, ours = record["taggers"]
    assert [t["key"] for t in record["taggers"]] == ["spacy", "udpipe", "ours:sample"]
    assert udpipe_row["raw"] is None and "tokenizer" in udpipe_row["raw_note"]
    for tagger in record["taggers"]:
        assert tagger["gold"]["words"] == gold_words(dev_file)
        assert len(tagger["gold"]["cpu_seconds"]) == 2
        assert set(tagger["gold"]["accuracy"]) == set(COLUMNS)
        check_accuracies(tagger["gold"]["accuracy"])
    check_accuracies(spacy_row["raw"]["accuracy"])
    assert spacy_row["raw"]["accuracy"]["Words"] > 50  # spaCy's tokenizer, scored by characters
    assert "bf16" in ours["setting"]
    table = (tmp_path / "speed" / "speed.md").read_text().split("\n\n")[3].splitlines()
    assert len(table) == 2 + 3
    assert table[2].split(" | ")[8] == "1.00"  # spaCy's speed against itself
    assert table[3].split(" | ")[9:11] == ["—", "—"]  # UDPipe: no raw-text pass


def test_raw_texts_and_pass_order(speed, dev_file):
    gold = speed.Conllu.read(dev_file)
    texts = speed.raw_texts(gold)
    assert len(texts) == 1  # the sample is one document
    forms = "".join(w[1] for sentence in gold.words() for w in sentence)
    assert "".join(texts[0].split()) == forms
    peers = ["a", "b", "c"]
    orders = [speed.pass_order(peers, r) for r in range(3)]
    assert [order[0] for order in orders] == [("a", "gold"), ("b", "raw"), ("c", "gold")]
    assert all(sorted(order) == sorted(orders[0]) for order in orders)
