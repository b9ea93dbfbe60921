"""Tagging many texts and long streams: ``Tagger.pipe``, ``tag.py`` writing as it reads (stdin,
FIFOs, devices), several inputs, the summary, ``--evaluate`` without ``--output``, and the
tagging path's imports."""

import itertools
import json
import os
import select
import stat
import subprocess
import sys
import threading
import time

import pytest
from hostile import load_script, run_tag, save_tagger
from test_tag import TAGGER, WORDS, build_tokenizer

from cont_transformer.tagging.document import Document
from cont_transformer.tagging.tag import Tagger
from cont_transformer.tagging.tag_files import tag_file

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "PYTHONPATH": REPO, "OMP_NUM_THREADS": "1"}
TEXTS = ["The dog saw a bird.", "I don't know! He saw the dog.", "A bird.", "He saw a dog, I know."]


@pytest.fixture(scope="module")
def tagger(tiny_tagger):
    tokenizer = build_tokenizer(WORDS)
    return Tagger(tiny_tagger(vocab_size=len(tokenizer), **TAGGER), tokenizer, batch_size=64)


@pytest.fixture(scope="module")
def saved(tmp_path_factory, tiny_tagger):
    return save_tagger(tmp_path_factory.mktemp("streaming") / "tagger", tiny_tagger)


def tagged(document):
    return [[(w.text, w.xpos, w.start) for w in s.words] for s in document.sentences]


# Tagger.pipe ------------------------------------------------------------------------------


def test_pipe_tags_each_text_as_a_call_does_in_order(tagger):
    words = [["the", "dog"], ["I", "do", "n't", "know", "!"]]
    inputs = [*TEXTS, words, Document.from_words(words)]
    separately = [tagger(item) for item in inputs[:-1]] + [tagger(Document.from_words(words))]
    for batch_size in (1, 2, 1000):
        piped = list(tagger.pipe(inputs, batch_size=batch_size))
        assert [tagged(d) for d in piped] == [tagged(d) for d in separately]
        assert [d.text for d in piped] == [d.text for d in separately]
    assert piped[-1] is inputs[-1]  # a Document is tagged in place, as by a call
    assert [tagged(d) for d in tagger.bulk_process(TEXTS)] == [tagged(d) for d in separately[:4]]
    assert list(tagger.pipe([])) == []


def test_pipe_is_lazy_and_reads_a_bounded_number_ahead(tagger):
    read = []

    def endless():
        for number in itertools.count():
            read.append(number)
            yield TEXTS[number % len(TEXTS)]

    documents = tagger.pipe(endless(), batch_size=3)
    first = [next(documents) for _ in range(5)]
    assert [d.text for d in first] == [TEXTS[i % 4] for i in range(5)]
    assert len(read) <= 5 + 3  # what it yielded, and at most a batch of 3 sentences more


def test_a_list_of_documents_gives_a_list_and_a_mix_points_to_pipe(tagger):
    documents = [Document.from_words([["the", "dog"]]), Document.from_words([["a", "bird", "."]])]
    result = tagger(documents)
    assert isinstance(result, list) and result[0] is documents[0] and result[1].sentences[0].xpos is not None
    with pytest.raises(TypeError, match="Tagger.pipe"):
        tagger(["a dog", documents[0]])
    one = tagger(["The dog saw a bird.", "I know."])  # a list of strings: the sentences of one text
    assert isinstance(one, Document) and len(one.sentences) == 2


@pytest.mark.parametrize("word", ["a\tb", "a\nb", "b\r", "", "  "])
def test_a_word_with_a_tab_a_line_break_or_nothing_is_refused(tagger, word):
    with pytest.raises(ValueError, match=r"sentence 2, word 2: "):
        tagger([["the", "dog"], ["the", word]])
    with pytest.raises(ValueError, match=r"sentence 1, word 1: "):
        tagger(Document.from_words([[word]]))


def test_tokens_input_splits_at_tabs_so_no_word_holds_one(tagger, tmp_path):
    (tmp_path / "in.txt").write_text("the\tdog\n\n  a  bird \n")
    tag_file(tagger, tmp_path / "in.txt", tmp_path / "out.jsonl", input_format="tokens", output_format="json")
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["words"] for r in records] == [["the", "dog"], ["a", "bird"]]


# Output formats and the summary ---------------------------------------------------------------


def test_json_keeps_multiword_tokens_and_writes_null(tagger, tmp_path):
    (tmp_path / "in.txt").write_text("I don't know.")
    tag_file(tagger, tmp_path / "in.txt", tmp_path / "out.jsonl", output_format="json")
    record = json.loads((tmp_path / "out.jsonl").read_text())
    assert record["tokens"] == [
        {"id": [1], "text": "I"},
        {"id": [2, 3], "text": "don't"},
        {"id": [4], "text": "know"},
        {"id": [5], "text": "."},
    ]
    assert "_" not in record["xpos"] and set(record) >= {"words", "tokens", "xpos", "spans"}
    conllu = "1\tI\t_\t_\t_\t_\t_\t_\t_\t_\n2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n2\tdo\t_\t_\t_\t_\t_\t_\t_\t_\n"
    (tmp_path / "in.conllu").write_text(conllu + "3\tn't\t_\t_\t_\t_\t_\t_\t_\t_\n\n")
    tag_file(tagger, tmp_path / "in.conllu", tmp_path / "c.jsonl", input_format="conllu", output_format="json")
    record = json.loads((tmp_path / "c.jsonl").read_text())
    assert record["tokens"] == [{"id": [1], "text": "I"}, {"id": [2, 3], "text": "don't"}]
    assert record["words"] == ["I", "do", "n't"]


def test_null_for_an_empty_value_in_json(tagger, tmp_path, monkeypatch):
    monkeypatch.setattr(tagger, "predict_columns", lambda words, *a: [{"xpos": ["_"] * len(w)} for w in words])
    tag_file(tagger, None, tmp_path / "out.jsonl", output_format="json", text="the _ dog")
    assert json.loads((tmp_path / "out.jsonl").read_text())["xpos"] == [None, "_", None]  # the word "_" keeps it


def test_summary_counts_in_the_singular_for_one(saved, tmp_path, capsys):
    (tmp_path / "one.txt").write_text("the dog")
    load_script("tag").main([str(saved), "--input", str(tmp_path / "one.txt"), "--output", str(tmp_path / "o")])
    assert "tagged 2 words in 1 sentence:" in capsys.readouterr().err
    (tmp_path / "one.txt").write_text("dog")
    load_script("tag").main([str(saved), "--input", str(tmp_path / "one.txt"), "--output", str(tmp_path / "o")])
    assert "tagged 1 word in 1 sentence:" in capsys.readouterr().err
    load_script("tag").main([str(saved), "--input", str(tmp_path / "one.txt"), "--output", "-", "--quiet"])
    assert capsys.readouterr().err == ""


def test_log_level_takes_logging_names_only(saved, tmp_path, capsys):
    (tmp_path / "in.txt").write_text("the dog")
    line = run_tag([str(saved), "--input", str(tmp_path / "in.txt"), "--log-level", "LOUD"], capsys)
    assert "--log-level" in line and "'LOUD'" in line
    load_script("tag").main([str(saved), "--input", str(tmp_path / "in.txt"), "--log-level", "error", "--quiet"])
    assert "1\tthe\t" in capsys.readouterr().out


# Several inputs ---------------------------------------------------------------------------------


def test_several_inputs_and_globs_go_one_output_each(saved, tmp_path, capsys):
    (tmp_path / "a.txt").write_text("the dog")
    (tmp_path / "b.txt").write_text("a bird .")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.text").write_text("I know")
    out = tmp_path / "out" / "new"
    script = load_script("tag")
    script.main(
        [
            str(saved),
            "--input",
            str(tmp_path / "*.txt"),
            str(tmp_path / "sub" / "c.text"),
            "--output-dir",
            str(out),
            "--format",
            "tsv",
        ]
    )
    assert sorted(p.name for p in out.iterdir()) == ["a.tsv", "b.tsv", "c.tsv"]
    assert (out / "b.tsv").read_text().splitlines()[1].startswith("a\t")
    assert len([line for line in capsys.readouterr().err.splitlines() if "words/s" in line]) == 3
    (tmp_path / "sub" / "a.txt").write_text("the bird")
    line = run_tag(
        [str(saved), "--input", str(tmp_path / "a.txt"), str(tmp_path / "sub" / "a.txt"), "--output-dir", str(out)],
        capsys,
    )
    assert "a.txt" in line and "would both write" in line and str(out / "a.conllu") in line
    line = run_tag(
        [str(saved), "--input", str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), "--output", str(tmp_path / "o")],
        capsys,
    )
    assert "--output takes one input" in line
    line = run_tag([str(saved), "--input", str(tmp_path / "*.nothing")], capsys)
    assert "matches no file" in line
    assert not (tmp_path / "o").exists()


def test_evaluate_needs_no_output(saved, tmp_path, capsys):
    gold = "# text = the dog\n1\tthe\tthe\tDET\tDT\t_\t0\troot\t_\t_\n2\tdog\tdog\tNOUN\tNN\t_\t1\tx\t_\t_\n\n"
    (tmp_path / "gold.conllu").write_text(gold)
    load_script("tag").main([str(saved), "--evaluate", str(tmp_path / "gold.conllu"), "--quiet"])
    captured = capsys.readouterr()
    assert "# text = the dog" in captured.out  # the tagged output, on stdout
    scores = captured.err.splitlines()
    assert scores[0].split() == ["precision", "recall", "F1", "aligned", "acc."]
    assert scores[1].split()[:4] == ["tokens", "100.00", "100.00", "100.00"] and scores[-1].startswith("xpos")


def test_conllu_errors_name_the_line_of_the_file(saved, tmp_path, capsys):
    block = "1\tthe\t_\t_\t_\t_\t_\t_\t_\t_\n"
    (tmp_path / "in.conllu").write_text(block + "\n\n" + block + "3\tdog\t_\t_\t_\t_\t_\t_\t_\t_\n\n")
    line = run_tag([str(saved), "--input", str(tmp_path / "in.conllu"), "--input-format", "conllu"], capsys)
    assert line.endswith("in.conllu:5: word id 3, expected 2")
    (tmp_path / "in.conllu").write_text(block + "\n" + block + "2\t \t_\t_\t_\t_\t_\t_\t_\t_\n\n")
    line = run_tag([str(saved), "--input", str(tmp_path / "in.conllu"), "--input-format", "conllu"], capsys)
    assert line.endswith("in.conllu:4: blank word (FORM is whitespace)")


# Streaming ------------------------------------------------------------------------------------


def _read_until(fd: int, marker: bytes, timeout: float) -> bytes:
    """What ``fd`` gives until ``marker`` has come (or the timeout, or its end)."""
    data, deadline = b"", time.monotonic() + timeout
    while marker not in data and time.monotonic() < deadline:
        if select.select([fd], [], [], 1)[0]:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            data += chunk
    return data


@pytest.mark.slow
def test_stdin_streams_a_sentence_out_before_the_input_ends(saved):
    process = subprocess.Popen(
        [sys.executable, os.path.join(REPO, "scripts", "tag.py"), str(saved), "--format", "tsv", "--quiet"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
    )
    try:
        process.stdin.write(b"the dog saw a bird.\n")
        process.stdin.flush()
        first = _read_until(process.stdout.fileno(), b"bird\t", timeout=240)
        assert process.poll() is None  # still reading its input
        lines = first.decode().splitlines()
        assert lines[0] == "word\txpos" and [line.split("\t")[0] for line in lines[1:6]] == WORDS[:5]
        rest, err = process.communicate(b"\nI know.\n", timeout=120)
    finally:
        process.kill()
    assert process.returncode == 0, err.decode()
    assert [line.split("\t")[0] for line in (first + rest).decode().splitlines()][-4:] == ["I", "know", ".", ""]


def test_output_to_a_fifo_streams_and_stays_a_fifo(saved, tmp_path):
    source, sink = tmp_path / "in.fifo", tmp_path / "out.fifo"
    os.mkfifo(source)
    os.mkfifo(sink)
    script = load_script("tag")
    errors = []

    def run():
        try:
            script.main([str(saved), "--input", str(source), "--output", str(sink), "--format", "tsv", "--quiet"])
        except BaseException as err:  # noqa: BLE001  reported by the test
            errors.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    # The tagger opens its output, then its input: the output's reader first (not waiting
    # for a writer), then the input's writer (waiting for the tagger to open it).
    reader = os.open(sink, os.O_RDONLY | os.O_NONBLOCK)
    writer = os.open(source, os.O_WRONLY)
    try:
        os.write(writer, b"the dog .\n")
        first = _read_until(reader, b".\t", timeout=60)
        assert b"dog\t" in first and thread.is_alive()  # out while the input is still open
        os.write(writer, b"\nI know\n")
        os.close(writer)
        rest = _read_until(reader, b"know\t", timeout=60)
    finally:
        thread.join(timeout=60)
        os.close(reader)
    assert not errors and b"know\t" in rest
    assert stat.S_ISFIFO(os.stat(sink).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fifo", "out.fifo"]  # nothing staged


def test_output_to_a_character_device_leaves_the_device(saved, tmp_path, capsys):
    device = tmp_path / "null"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.stat("/dev/null").st_rdev)
    except (PermissionError, OSError) as err:
        pytest.skip(f"cannot make a device here: {err}")
    try:  # a sandbox may let a device be made but not opened: then tag.py fails on it, in one line
        open(device, "wb").close()
        usable = True
    except OSError:
        usable = False
    (tmp_path / "in.txt").write_text("the dog")
    link = tmp_path / "link"
    link.symlink_to(device)
    for output in (device, link):
        argv = [str(saved), "--input", str(tmp_path / "in.txt"), "--output", str(output), "--quiet"]
        if usable:
            load_script("tag").main(argv)
        else:
            assert str(output) in run_tag(argv, capsys)
        assert stat.S_ISCHR(os.stat(output).st_mode)  # written to, never replaced by a file
    assert link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "link", "null"]  # nothing staged


# Imports of the tagging path ---------------------------------------------------------------------

TRAINING_ONLY = ("accelerate", "datasets", "evaluate", "pyarrow")


@pytest.mark.slow
def test_the_tagging_path_imports_nothing_for_training_or_scoring(saved, tmp_path):
    (tmp_path / "in.txt").write_text("the dog saw a bird.")
    code = f"""
import sys
import cont_transformer.tagging.tag_command
print(sorted(m for m in {TRAINING_ONLY!r} + ("torch", "transformers") if m in sys.modules))
from cont_transformer.tagging.tag import Tagger
from cont_transformer.tagging.tag_files import tag_file
tag_file(Tagger.from_pretrained(sys.argv[1]), sys.argv[2], sys.argv[3])
print(sorted(m for m in {TRAINING_ONLY!r} if m in sys.modules))
"""
    result = subprocess.run(
        [sys.executable, "-c", code, str(saved), str(tmp_path / "in.txt"), str(tmp_path / "out.conllu")],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    at_import, after_tagging = result.stdout.splitlines()
    assert at_import == "[]"  # tag.py's own import: not even torch, so --help answers at once
    # transformers imports accelerate with its model classes when it is installed; nothing else
    assert after_tagging in ("[]", "['accelerate']")
    assert result.stderr == ""  # from_pretrained prints nothing (no progress bar)
    assert (tmp_path / "out.conllu").read_text().count("\t") > 0
