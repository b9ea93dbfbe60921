"""Tagging in worker processes: any number of them writes what one process writes, in input
order, reading a bounded number of batches ahead; an error in a worker names its file and
line; Ctrl-C leaves no process and no output; a Tagger pickles."""

import itertools
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from tiny import labels, save_tagger

from cont_transformer import build_tokenizer
from cont_transformer.runtime.workers import mapped, worker_count
from cont_transformer.tagging import tag_files
from cont_transformer.tagging.conllu_document import ConlluDocument
from cont_transformer.tagging.sample_treebank import write_sample_treebank
from cont_transformer.tagging.tag import Tagger

REPO = Path(__file__).resolve().parents[1]
GUM_DEV = REPO.parent / "shared/data/ud/UD_English-GUM/en_gum-ud-dev.conllu"
TAGS = ["DT", "NN", "VB", "IN", ".", ",", "RB", "PRP", "``"]
WORDS = ["the", "dog", "saw", "a", "bird", ".", ",", "I", "do", "n't", "know", "!", '"', "he"]


@pytest.fixture(scope="module")
def tagger(tiny_tagger):
    tokenizer = build_tokenizer(WORDS, spelling=True)  # spelling: the tagger holds a word shortener
    model = tiny_tagger(vocab_size=len(tokenizer), num_basis=2, max_position_embeddings=32, **labels(TAGS))
    return Tagger(model, tokenizer, batch_size=64)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory, tagger):
    return save_tagger(tagger, tmp_path_factory.mktemp("tagger"))


@pytest.fixture(scope="module")
def text(tmp_path_factory) -> str:
    """Raw text of real-ish sentences: the sample treebank's, and GUM dev's first 60,000
    characters where the data is here (multiword tokens, quotes, long sentences)."""
    sample = write_sample_treebank(tmp_path_factory.mktemp("sample"), num_train=1, num_dev=200)["validation"]
    texts = [ConlluDocument.read(sample).text()]
    if GUM_DEV.is_file():
        texts.append(ConlluDocument.read(GUM_DEV).text()[:60_000])
    return "\n\n".join(texts)


def _tag_script(script_here, folder, source, output, *flags):
    result = script_here(REPO / "scripts" / "tag.py", folder, "--input", source, "--output", output, *flags)
    assert result.returncode == 0, result.stderr
    return Path(output).read_bytes()


@pytest.mark.parametrize("model", ["tiny", pytest.param("sample", marks=pytest.mark.slow)])
@pytest.mark.parametrize("format", ["conllu", "json"])
def test_two_processes_write_the_bytes_of_one(request, script_here, monkeypatch, tmp_path, text, model, format):
    folder = request.getfixturevalue("tiny_dir" if model == "tiny" else "sample_run_60")
    monkeypatch.setattr(tag_files, "CHUNK_SENTENCES", 64)  # many batches, so both workers tag
    source = tmp_path / "story.txt"
    source.write_text(text, encoding="utf-8")
    flags = ("--format", format, "--no-progress")
    one = _tag_script(script_here, folder, source, tmp_path / "one", *flags, "--processes", "1")
    two = _tag_script(script_here, folder, source, tmp_path / "two", *flags, "--processes", "2")
    assert len(one.decode().splitlines()) > 10 * 64 and two == one


def test_pipe_keeps_the_input_order(tagger, text):
    paragraphs = [p for p in text.split("\n\n") if p.strip()][:60]
    texts = [paragraphs[i] * (1 + i % 5) for i in range(len(paragraphs))]  # lengths that sorting would reorder
    alone = [tagger(t).to_conllu() for t in texts]
    assert [d.to_conllu() for d in tagger.pipe(texts, batch_size=7, n_process=2)] == alone
    assert [d.to_conllu() for d in tagger.pipe(iter(texts), batch_size=7, n_process=0)] == alone


def _slow_pid(item: int) -> tuple[int, int]:
    time.sleep(0.05)
    return item, os.getpid()


def test_workers_read_a_bounded_number_ahead_and_end_with_the_stream():
    pulled = []

    def endless():
        for item in itertools.count():
            pulled.append(item)
            yield item

    results = mapped(_slow_pid, endless(), processes=2)
    taken = list(itertools.islice(results, 30))
    assert [item for item, _ in taken] == list(range(30))
    assert len(pulled) <= 30 + 2 * 2  # what was taken, and at most two items per worker ahead
    pids = {pid for _, pid in taken}
    assert len(pids) == 2 and os.getpid() not in pids
    results.close()  # the consumer stops early: the workers end
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_processes_zero_is_every_core_and_negative_is_refused():
    assert worker_count(0) == len(os.sched_getaffinity(0)) and worker_count(3) == 3
    with pytest.raises(ValueError, match="--processes"):
        worker_count(-1)


@pytest.mark.parametrize("processes", ["1", "2"])
def test_an_error_in_a_worker_names_the_file_and_line(script_here, monkeypatch, tmp_path, tiny_dir, processes):
    predict_columns = Tagger.predict_columns

    def failing(self, sentences, *args, **kwargs):
        if any("BOOM" in words for words in sentences):
            raise RuntimeError("the model broke")
        return predict_columns(self, sentences, *args, **kwargs)

    monkeypatch.setattr(Tagger, "predict_columns", failing)  # in the workers too: they are forked
    monkeypatch.setattr(tag_files, "CHUNK_SENTENCES", 4)
    lines = ["the dog saw a bird ."] * 30
    lines[16] = "I saw BOOM ."
    source, output = tmp_path / "in.txt", tmp_path / "out.conllu"
    source.write_text("\n".join(lines) + "\n")
    output.write_text("kept")
    result = script_here(
        REPO / "scripts" / "tag.py", tiny_dir, "--input", source, "--input-format", "lines",
        "--output", output, "--processes", processes, "--no-progress",
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"error: {source}:17: RuntimeError: the model broke"]
    assert output.read_text() == "kept" and sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.conllu"]


def test_a_tagger_pickles_and_tags_the_same(tagger):
    text = "I saw the " + "x" * 300 + " bird. The dog didn't know."  # a word its shortener cuts
    copy = pickle.loads(pickle.dumps(tagger))
    assert copy.shorten is not None and copy.shorten("x" * 300) == tagger.shorten("x" * 300) != "x" * 300
    assert copy(text).to_conllu() == tagger(text).to_conllu()


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads children from /proc")
def test_ctrl_c_leaves_no_process_and_no_output(tmp_path, tiny_dir):
    output = tmp_path / "out.conllu"
    command = [sys.executable, REPO / "scripts" / "tag.py", tiny_dir, "--input-format", "lines"]
    command += ["--output", output, "--processes", "2", "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True
    )  # its own process group, as a shell's foreground job is
    try:
        deadline = time.monotonic() + 120
        while len(_children(process.pid)) < 2:  # an open pipe of sentences, tagged by both workers
            assert time.monotonic() < deadline and process.poll() is None, process.stderr.read()
            process.stdin.write(b"the dog saw a bird .\n" * 200)
            process.stdin.flush()
            time.sleep(0.2)
        os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C sends: the whole group
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode != 0
    with pytest.raises(ProcessLookupError):
        os.killpg(process.pid, 0)  # nothing of the group is left
    assert list(tmp_path.iterdir()) == []


# Data sets: Ray Data and Hugging Face datasets --------------------------------------------


@pytest.fixture(scope="module")
def texts_and_tag_py(tmp_path_factory, tiny_dir, text) -> tuple[list[str], list[str]]:
    """A few texts, and what ``tag.py`` writes for each as a file of its own."""
    folder = tmp_path_factory.mktemp("texts")
    texts = [p for p in text.split("\n\n") if p.strip()][:12]
    files = [folder / f"{i:02}.txt" for i in range(len(texts))]
    for path, content in zip(files, texts):
        path.write_text(content, encoding="utf-8")
    run = [sys.executable, REPO / "scripts" / "tag.py", tiny_dir, "--input", *files, "--output-dir", folder / "out"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    subprocess.run([*run, "--no-progress", "--quiet"], env=env, check=True, timeout=300)
    return texts, [(folder / "out" / f"{path.stem}.conllu").read_text(encoding="utf-8") for path in files]


@pytest.mark.slow
def test_datasets_map_in_two_processes_writes_what_tag_py_writes(tiny_dir, texts_and_tag_py):
    datasets = pytest.importorskip("datasets")
    from cont_transformer.tagging.dataset_tagging import TagTexts

    texts, expected = texts_and_tag_py
    rows = datasets.Dataset.from_dict({"text": texts})
    tagged = rows.map(TagTexts(tiny_dir), batched=True, batch_size=5, num_proc=2)
    assert tagged["text"] == texts and tagged["conllu"] == expected


@pytest.mark.slow
def test_ray_data_map_batches_writes_what_tag_py_writes(tiny_dir, texts_and_tag_py):
    ray = pytest.importorskip("ray")
    from cont_transformer.tagging.dataset_tagging import TagTexts

    texts, expected = texts_and_tag_py
    env = {"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": env})
    try:
        rows = ray.data.from_items([{"text": t} for t in texts])
        tagged = rows.map_batches(TagTexts, fn_constructor_args=(tiny_dir,), batch_size=5, concurrency=2, num_cpus=1)
        got = {row["text"]: row["conllu"] for row in tagged.take_all()}
    finally:
        ray.shutdown()
    assert [got[t] for t in texts] == expected


def test_workers_refuse_a_tagger_off_the_cpu(tagger, monkeypatch):
    meta = torch.nn.Parameter(torch.empty(0, device="meta"))
    monkeypatch.setattr(type(tagger.model), "parameters", lambda self: iter([meta]))
    with pytest.raises(ValueError, match="--processes: worker processes tag on the CPU; the tagger is on meta"):
        list(tagger.predict_batches([[["the", "dog"]]], processes=2))
