"""Self-training: a teacher's tags of unlabelled text join the treebank as silver sentences.

The teacher is conftest's ``sample_run_60`` (a tagger of every column); the text is a small
generated gzip file.
"""

import gzip
import json
import shutil
from pathlib import Path

import pytest
from hostile import train_pos

from cont_transformer.tagging.self_training import (
    MAX_LINE_WORDS,
    MIN_LINE_WORDS,
    sample_lines,
    silver_sentences,
    unanimous,
    vote,
)

TEXT_ONLY_WORD = "zygote"  # a word of the text that the sample treebank never shows


def _write(path: Path, lines: list[str]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as stream:
        stream.write("".join(line + "\n" for line in lines))
    return path


def _sentences(count: int) -> list[str]:
    return [f"The old {TEXT_ONLY_WORD} number {i} saw a bird ." for i in range(count)]


def _train(*args: str):
    return train_pos("recipes/sample.json", "--max-steps", "4", "--refine-steps", "none", *args)


def test_lines_are_drawn_by_seed_from_sentence_lines_only(tmp_path):
    short, long = "Hello there", " ".join(["word"] * (MAX_LINE_WORDS + 1))
    text = _write(tmp_path / "text.txt.gz", [short, *_sentences(30), long, "", " ".join(["w"] * MIN_LINE_WORDS)])
    drawn = sample_lines([str(text)], 10, seed=1)
    assert len(drawn) == 10 and short not in drawn and long not in drawn
    order = [_sentences(30).index(line) for line in drawn]
    assert order == sorted(order)  # in the order of the text
    assert sample_lines([str(text)], 10, seed=1) == drawn
    assert sample_lines([str(text)], 10, seed=2) != drawn
    everything = sample_lines([str(text)], 100, seed=1)  # fewer lines than asked: all of them
    assert everything == [*_sentences(30), " ".join(["w"] * MIN_LINE_WORDS)]


def _tags(*words: tuple[str, ...]) -> dict[str, list[str]]:
    """A teacher's columns of a sentence, from (UPOS, XPOS, FEATS, lemma[, DEPREL]) per word
    (DEPREL ``_`` when not given)."""
    words = tuple((*word, "_")[:5] for word in words)
    return dict(zip(("upos", "xpos", "feats", "lemma", "deprel"), (list(column) for column in zip(*words))))


def test_teachers_vote_word_by_word_keeping_each_triple_whole():
    first = _tags(("NOUN", "NN", "Number=Sing", "run"), ("NOUN", "NN", "Number=Sing", "saw"), ("X", "FW", "_", "a"))
    second = _tags(("VERB", "VB", "VerbForm=Inf", "run"), ("NOUN", "NNS", "Number=Plur", "see"), ("X", "FW", "_", "b"))
    third = _tags(("VERB", "VB", "VerbForm=Inf", "ran"), ("PROPN", "NN", "Number=Plur", "see"), ("X", "FW", "_", "c"))
    voted = vote([first, second, third])
    # Word 1: two of three give the verb triple; its lemma, "run", is two of three too.
    # Word 2: three different triples, so the first teacher's (not NOUN + NN + Plur, each
    # column's own majority, which no teacher gave whole); the lemma "see" is two of three.
    # Word 3: the lemmas tie, so the first teacher's.
    assert voted == _tags(
        ("VERB", "VB", "VerbForm=Inf", "run"), ("NOUN", "NN", "Number=Sing", "see"), ("X", "FW", "_", "a")
    )
    assert vote([second]) == second and vote([first, second]) == first  # a tie of two: the first


def test_unanimity_needs_every_word_s_triple_alike_and_ignores_lemmas():
    first = _tags(("NOUN", "NN", "Number=Sing", "run"), ("X", "FW", "_", "a"))
    assert unanimous([first]) and unanimous([first, _tags(("NOUN", "NN", "Number=Sing", "ran"), ("X", "FW", "_", "b"))])
    for other in (("VERB", "NN", "Number=Sing"), ("NOUN", "NNS", "Number=Sing"), ("NOUN", "NN", "Number=Plur")):
        assert not unanimous([first, first, _tags((*other, "run"), ("X", "FW", "_", "a"))])
    with pytest.raises(ValueError, match="silver_agreement: one of majority, all, got 'most'"):
        silver_sentences("unused", ["unused"], 1, seed=0, agreement="most")


@pytest.mark.slow
def test_the_teacher_tags_every_column_of_the_drawn_lines(sample_run_60, tmp_path):
    text = _write(tmp_path / "text.txt.gz", ["Tom didn't see the old dog .", *_sentences(5)])
    sentences, columns = silver_sentences(sample_run_60, [str(text)], 10, seed=0, device="cpu")  # all six
    assert columns == ("upos", "xpos", "feats", "lemma")
    labels = json.loads((sample_run_60 / "best" / "config.json").read_text())["label2id"]
    assert len(sentences) == 6 and sentences[0]["tokens"][:3] == ["Tom", "did", "n't"]
    for sentence in sentences:
        assert {len(values) for values in sentence.values()} == {len(sentence["tokens"])}
        assert all(tag in labels for tag in sentence["xpos"])  # the teacher's own tags
    # Teachers that agree vote for what each gives alone.
    assert silver_sentences([sample_run_60] * 2, [str(text)], 10, seed=0, device="cpu") == (sentences, columns)
    unanimous_only = silver_sentences([sample_run_60] * 2, [str(text)], 10, seed=0, device="cpu", agreement="all")
    assert unanimous_only == (sentences, columns)  # they agree on every sentence: none is dropped


@pytest.mark.slow
def test_a_student_trains_on_the_treebank_and_the_silver_sentences(sample_run_60, tmp_path):
    text = _write(tmp_path / "text.txt.gz", _sentences(40))
    plain, student = tmp_path / "plain", tmp_path / "student"
    assert _train("--output-dir", str(plain)).returncode == 0
    second = shutil.copytree(sample_run_60, tmp_path / "second")  # two teachers vote
    silver = ("--teacher", str(sample_run_60), str(second), "--silver-text-files", str(text), "--silver-lines", "25")
    result = _train("--output-dir", str(student), *silver)
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((student / "metrics.json").read_text())
    before = json.loads((plain / "metrics.json").read_text())
    assert metrics["num_silver_sentences"] == 25
    assert metrics["num_train_sentences"] == before["num_train_sentences"]
    # The silver words join the vocabulary, not the treebank's words that "unseen" is measured against.
    vocabulary = json.loads((student / "best" / "tokenizer.json").read_text())["model"]["vocab"]
    assert TEXT_ONLY_WORD in vocabulary
    assert metrics["best"]["num_unseen_words"] == before["best"]["num_unseen_words"]
    # The lemma lexicon is the treebank's: no silver word, whose lemma is the teacher's guess.
    lexicon = json.loads((student / "best" / "lemma_lexicon.json").read_text())["xpos"]
    assert "dog" in lexicon["NN"] and not any(TEXT_ONLY_WORD in forms for forms in lexicon.values())
    assert (
        f"25 sentences of unlabelled text tagged by the vote of {sample_run_60}, {second}"
        in (student / "best" / "README.md").read_text()
    )


@pytest.mark.slow
def test_self_training_refuses_bad_input_in_one_line(sample_run_60, tmp_path):
    text = _write(tmp_path / "text.txt.gz", _sentences(5))
    binary = tmp_path / "image.txt"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 50)
    cases = [
        (("--teacher", str(sample_run_60)), "needs both --teacher and --silver-text-files"),
        (("--silver-text-files", str(text)), "needs both --teacher and --silver-text-files"),
        (("--teacher", str(sample_run_60), "--silver-text-files", str(binary)), str(binary)),
        (("--teacher", str(tmp_path / "absent"), "--silver-text-files", str(text)), str(tmp_path / "absent")),
        (("--teacher", str(sample_run_60), "--silver-text-files", str(text), "--silver-lines", "0"), "silver_lines"),
    ]
    output = tmp_path / "run"  # an earlier run, asked to be overwritten, keeps its model
    inside = ("--teacher", str(sample_run_60), str(output / "best"), "--silver-text-files", str(text))
    cases.append((inside, "--teacher: " + str(output / "best") + " lies inside --output-dir"))
    shutil.copytree(sample_run_60, output)
    weights = (output / "best" / "model.safetensors").read_bytes()
    for args, message in cases:
        result = _train("--output-dir", str(output), "--overwrite-output-dir", *args)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and len(lines) == 1 and message in lines[0], (args, result.stderr[-2000:])
        assert (output / "best" / "model.safetensors").read_bytes() == weights
