"""Hostile but fair inputs (issue 23, the probes outside the training scaffold): loading runs
no code, limits instead of hangs, locks and leftovers, and each bad input is one line
naming it with a non-zero exit."""

import importlib.util
import json
import logging
import math
import os
import pickle
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from conftest import tiny_tagger
from safetensors.torch import load_file, save_file
from test_tag import TAGGER, WORDS
from transformers import AutoModelForTokenClassification, AutoTokenizer

import cont_transformer
from cont_transformer import build_tokenizer
from cont_transformer.tagging.tag import Tagger
from cont_transformer.tagging.tag_files import tag_file
from cont_transformer.tagging.tokenization import spelling_tables
from cont_transformer.tools.cli import run_cli
from cont_transformer.training.arguments import RunArguments, parse_arguments
from cont_transformer.training.checkpoints import CheckpointError
from cont_transformer.training.divergence import TrainingDiverged
from cont_transformer.training.identity import check_identity, file_fingerprints, record_identity
from cont_transformer.training.outputs import (
    LOCK_FILE,
    OutputFolderError,
    hold_lock,
    prepare_run_folder,
    release_output_folder,
    staged_directory,
)

REPO = Path(__file__).resolve().parents[1]


def _script(name):
    spec = importlib.util.spec_from_file_location(f"hostile_{name}", REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Planted:
    """A pickle whose loading creates ``marker``: proof that code ran."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def save_tagger(folder: Path, spelling: bool = False) -> Path:
    tokenizer = build_tokenizer(WORDS, spelling=spelling)
    if spelling:
        tables, char_vocab_size = spelling_tables(tokenizer, set(WORDS), 6)
        model = tiny_tagger(
            vocab_size=len(tokenizer),
            **TAGGER,
            word_representation="word+chars",
            char_vocab_size=char_vocab_size,
            unk_token_id=tokenizer.unk_token_id,
            max_word_length=6,
            char_embedding_size=8,
            char_hidden_size=12,
        )
        model.cont_transformer.embeddings.set_spelling(**tables)
    else:
        model = tiny_tagger(vocab_size=len(tokenizer), **TAGGER)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    (folder / "metrics.json").write_text(json.dumps({"tag_column": "xpos"}))
    return folder


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    return save_tagger(tmp_path_factory.mktemp("tagger"))


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


def run_tag(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        _script("tag").main(argv)
    assert exit_info.value.code == 2
    return one_error_line(capsys)


def run_compress(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        run_cli(_script("compress").main, argv)
    assert exit_info.value.code == 2
    return one_error_line(capsys)


def damaged_copy(saved: Path, tmp_path: Path, kind: str) -> tuple[Path, Path]:
    folder = tmp_path / kind
    folder.mkdir()
    for path in saved.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    if kind == "pickle":
        (folder / "model.safetensors").unlink()
        damaged = folder / "pytorch_model.bin"
        damaged.write_bytes(pickle.dumps(_Planted(tmp_path / "code-ran")))
    else:
        damaged = folder / "model.safetensors"
        damaged.write_bytes(damaged.read_bytes()[:300])
    return folder, damaged


# --- loading never executes code ---------------------------------------------------------
@pytest.mark.parametrize("kind", ["pickle", "truncated"])
def test_a_damaged_weights_file_runs_no_code_and_is_named(saved, tmp_path, capsys, kind):
    folder, damaged = damaged_copy(saved, tmp_path, kind)
    with pytest.raises(OSError, match=f"^{damaged}: cannot be loaded"):
        AutoModelForTokenClassification.from_pretrained(folder)
    with pytest.raises(OSError, match=f"^{damaged}: cannot be loaded"):
        Tagger.from_pretrained(folder, device="cpu")
    text = tmp_path / "in.txt"
    text.write_text("the dog saw a bird.\n")
    assert str(damaged) in run_tag([str(folder), "--input", str(text), "--output", str(tmp_path / "o")], capsys)
    assert str(damaged) in run_compress([str(folder), "--output-dir", str(tmp_path / "c")], capsys)
    assert not (tmp_path / "code-ran").exists()
    assert not (tmp_path / "o").exists() and not (tmp_path / "c").exists()
    if kind == "pickle":
        with pytest.raises(OSError, match="could run code; it was not run"):
            AutoModelForTokenClassification.from_pretrained(folder)


def test_a_non_finite_model_is_refused_at_load(saved, tmp_path, capsys):
    folder = tmp_path / "nan"
    folder.mkdir()
    for path in saved.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    weights = load_file(folder / "model.safetensors")
    name = sorted(key for key in weights if weights[key].is_floating_point())[3]
    weights[name][0] = float("nan")
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    message = f"^{folder}: tensor .* holds NaN or infinite values"
    with pytest.raises(ValueError, match=message):
        AutoModelForTokenClassification.from_pretrained(folder)
    with pytest.raises(ValueError, match=message):
        Tagger.from_pretrained(folder, device="cpu")
    text = tmp_path / "in.txt"
    text.write_text("the dog saw a bird.\n")
    line = run_tag([str(folder), "--input", str(text), "--output", str(tmp_path / "o")], capsys)
    assert str(folder) in line and "NaN" in line
    line = run_compress([str(folder), "--output-dir", str(tmp_path / "c")], capsys)
    assert str(folder) in line and "NaN" in line


# --- limits instead of hangs -------------------------------------------------------------
@pytest.fixture(scope="module")
def spelling_tagger(tmp_path_factory):
    tagger = Tagger.from_pretrained(save_tagger(tmp_path_factory.mktemp("spelling"), spelling=True), device="cpu")
    # As tokenizers saved before the cap were: every word spelled, however long.
    tagger.tokenizer.backend_tokenizer.model.max_input_chars_per_word = 10**6
    return tagger


def _word(n: int, seed: int = 0) -> str:
    generator = random.Random(seed)
    return "".join(generator.choice("dogsawbirhe") for _ in range(n))  # spelled in pieces


def _word_logits(tagger, words):
    """The logits of each word's first token, from the model over the words as given."""
    encoding = tagger.tokenizer(words, is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        logits = tagger.model(**encoding).logits[0]
    first = {}
    for position, word in enumerate(encoding.word_ids()):
        if word is not None:
            first.setdefault(word, position)
    return logits[[first[i] for i in range(len(words))]], encoding["input_ids"].shape[1]


def test_a_long_word_tags_fast_and_as_if_whole(spelling_tagger):
    tagger = spelling_tagger
    started = time.perf_counter()
    tagger.predict([[_word(100_000)]])
    assert time.perf_counter() - started < 5
    # Shortened, a word gives the model exactly what the whole word gives it.
    words = ["the", _word(300, 1), "saw", "a", _word(60, 2) + "é" + _word(60, 3), "dogsaw", *WORDS]
    whole, pieces = _word_logits(tagger, words)
    shortened, shortened_pieces = _word_logits(tagger, [tagger.shorten(w) for w in words])
    assert pieces > 300 and shortened_pieces < 100  # spelled in hundreds of pieces, or a few
    torch.testing.assert_close(whole, shortened, rtol=0, atol=1e-6)  # rounding: other shapes
    assert [tagger.shorten(w) for w in WORDS] == WORDS


def test_the_saved_tokenizer_does_not_spell_a_huge_word(tmp_path):
    tokenizer = build_tokenizer(WORDS, spelling=True)
    tokenizer.save_pretrained(tmp_path)
    started = time.perf_counter()
    assert tokenizer.tokenize(_word(100_000)) == ["[UNK]"]
    assert time.perf_counter() - started < 5


def test_tagging_time_is_linear_in_the_input(spelling_tagger, tmp_path):
    seconds = {}
    for size in (100_000, 1_000_000):
        path = tmp_path / f"{size}.txt"
        path.write_text(_word(size) + "\n")
        started = time.perf_counter()
        tag_file(spelling_tagger, path, tmp_path / f"{size}.conllu", input_format="tokens", progress=False)
        seconds[size] = time.perf_counter() - started
    assert seconds[1_000_000] < 30 * max(seconds[100_000], 0.05)
    assert seconds[1_000_000] < 20


# --- locks and leftovers -----------------------------------------------------------------
def test_one_run_per_output_folder_and_the_lock_goes_with_a_killed_run(tmp_path):
    folder = tmp_path / "run"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time; from cont_transformer.training.outputs import prepare_run_folder as p; "
                f"p({str(folder)!r}, resuming=False, overwrite=False); print('locked', flush=True); time.sleep(60)"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(OutputFolderError, match=f"^--output-dir: {folder} is in use by another run"):
            prepare_run_folder(folder, resuming=False, overwrite=False)
    finally:
        holder.kill()
        holder.wait()
    prepare_run_folder(folder, resuming=False, overwrite=False)  # the kill released it
    assert sorted(p.name for p in folder.iterdir()) == [LOCK_FILE]
    release_output_folder(folder)


def test_overwrite_deletes_only_in_a_folder_a_run_wrote(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "metrics.json").write_text('{"mine": 1}')
    with pytest.raises(OutputFolderError, match=f"^--output-dir: {folder} is not empty and no run"):
        prepare_run_folder(folder, resuming=False, overwrite=True)
    assert (folder / "metrics.json").read_text() == '{"mine": 1}'
    release_output_folder(folder)
    failed = tmp_path / "failed"  # a run that failed before saving anything: run.json alone
    failed.mkdir()
    (failed / "run.json").write_text("{}")
    prepare_run_folder(failed, resuming=False, overwrite=False)
    release_output_folder(failed)


def test_the_next_run_removes_what_a_killed_one_left(saved, tmp_path):
    tagger = Tagger.from_pretrained(saved, device="cpu")
    text, output = tmp_path / "in.txt", tmp_path / "out.conllu"
    text.write_text("the dog saw a bird.\n")
    stale = tmp_path / f".out.conllu.{'a' * 32}.tmp"  # a killed tag.py's staging file
    live = tmp_path / f".out.conllu.{'b' * 32}.tmp"  # one being written now
    other = tmp_path / ".out.conllu.notours.tmp"
    stale.write_text("partial")
    other.write_text("keep")
    lock = hold_lock(live)
    try:
        tag_file(tagger, text, output, progress=False)
        assert not stale.exists() and live.exists() and other.exists() and output.is_file()
    finally:
        os.close(lock)
    # compress.py's staging folder (staged_directory) the same way
    target = tmp_path / "compressed"
    (tmp_path / ".staging-compressed-deadbeef").mkdir()
    with staged_directory(target) as staging:
        (staging / "config.json").write_text("{}")
    assert sorted(p.name for p in tmp_path.glob(".staging-*")) == []


def test_tag_refuses_output_equal_to_input_and_a_directory_input(saved, tmp_path, capsys):
    text = tmp_path / "in.txt"
    text.write_text("the dog saw a bird.\n")
    link = tmp_path / "link.txt"
    link.symlink_to(text)
    line = run_tag([str(saved), "--input", str(text), "--output", str(link)], capsys)
    assert f"output: {link} is the input file" in line and "--in-place" in line
    assert text.read_text() == "the dog saw a bird.\n"
    _script("tag").main([str(saved), "--input", str(text), "--output", str(text), "--in-place", "--no-progress"])
    assert text.read_text().startswith("# newdoc")
    line = run_tag([str(saved), "--input", str(tmp_path), "--output", str(tmp_path / "o")], capsys)
    assert line == f"error: input: {tmp_path} is a directory, not a file"


def test_the_package_is_typed():
    assert (Path(cont_transformer.__file__).parent / "py.typed").is_file()
    assert "py.typed" in (REPO / "pyproject.toml").read_text()


# --- the training scaffold (with test_scaffold's toy trainer) -------------------------------
def _toy():
    from test_scaffold import ToyTrainer, toy

    return ToyTrainer, toy


def test_a_checkpoint_of_another_run_must_carry_this_runs_identity(tmp_path):
    ToyTrainer, toy = _toy()
    ToyTrainer(toy(tmp_path, output_dir=str(tmp_path / "a"), max_steps=8)).run()
    other = ToyTrainer(toy(tmp_path, output_dir=str(tmp_path / "b"), max_steps=4, learning_rate=0.01)).run()
    foreign = str(tmp_path / "a" / "checkpoints" / "step-8")
    with pytest.raises(OutputFolderError, match="step-8 is a checkpoint of another run: --learning-rate"):
        ToyTrainer(toy(tmp_path, output_dir=str(tmp_path / "b"), learning_rate=0.01, resume_from_checkpoint=foreign))
    assert json.loads((tmp_path / "b" / "metrics.json").read_text())["history"] == other["history"]
    # The same identity: its weights and optimiser go on here, its history stays there.
    resumed = ToyTrainer(toy(tmp_path, output_dir=str(tmp_path / "c"), resume_from_checkpoint=foreign)).run()
    assert [entry["step"] for entry in resumed["history"]] == [12]
    assert resumed["best"] == resumed["history"][0]
    assert (tmp_path / "c" / "best" / "model.pt").is_file()
    loose = tmp_path / "loose"
    shutil.copytree(foreign, loose)
    with pytest.raises(CheckpointError, match="in no run folder"):
        ToyTrainer(toy(tmp_path, output_dir=str(tmp_path / "d"), resume_from_checkpoint=str(loose)))


def test_a_diverging_run_stops_naming_the_step_and_saves_nothing_non_finite(tmp_path):
    ToyTrainer, toy = _toy()
    with pytest.raises(ValueError, match="learning_rate: must be a finite positive number, got inf"):
        parse_arguments(RunArguments, ["--learning-rate", "inf"])
    with pytest.raises(
        TrainingDiverged,
        match=r"^step \d+: the (training loss is|weights are).*--learning-rate 10000 is likely too high",
    ):
        ToyTrainer(toy(tmp_path, learning_rate=1e4, refine_steps="none", eval_steps=1, max_steps=20)).run()
    best = tmp_path / "run" / "best" / "model.pt"
    if best.exists():
        assert all(torch.isfinite(v).all() for v in torch.load(best).values())
    for checkpoint in (tmp_path / "run" / "checkpoints").glob("step-*"):
        assert all(torch.isfinite(v).all() for v in load_file(checkpoint / "model.safetensors").values())


def test_a_finished_run_extends_with_a_larger_max_steps(tmp_path):
    record_identity(tmp_path, {"max_steps": 100, "cooldown_steps": 20, "learning_rate": 0.1}, "data")
    check_identity(tmp_path, {"max_steps": 200, "cooldown_steps": 40, "learning_rate": 0.1}, "data")
    with pytest.raises(OutputFolderError, match="^--cooldown-steps: 40 differs from 20"):
        check_identity(tmp_path, {"max_steps": 100, "cooldown_steps": 40, "learning_rate": 0.1}, "data")
    ToyTrainer, toy = _toy()
    reference = ToyTrainer(toy(tmp_path, output_dir=str(tmp_path / "reference"))).run()
    ToyTrainer(toy(tmp_path, max_steps=8)).run()
    extended = ToyTrainer(toy(tmp_path, max_steps=12, resume_from_checkpoint="latest")).run()
    assert extended["history"] == reference["history"]


class _PaddedToy:
    """The toy trainer with an attention mask of 3 real positions in 4 (a padding ratio of 4/3)."""

    def __new__(cls, args):
        ToyTrainer, _ = _toy()

        class Padded(ToyTrainer):
            def epoch_batches(self, epoch, skip):
                for batch in super().epoch_batches(epoch, skip):
                    mask = torch.ones(len(batch["y"]), 4, dtype=torch.long)
                    mask[:, -1] = 0
                    yield {**batch, "attention_mask": mask}

            def batch_items(self, batch):
                return batch["attention_mask"].sum()

        return Padded(args)


def test_the_padding_ratio_counts_every_batch_of_a_resumed_run(tmp_path):
    _, toy = _toy()
    _PaddedToy(toy(tmp_path, max_steps=8)).run()
    resumed = _PaddedToy(toy(tmp_path, max_steps=12, resume_from_checkpoint="latest")).run()
    assert resumed["padding_ratio"] == pytest.approx(4 / 3)
    assert resumed["train_items"] == 12 * 16 * 3


def test_a_random_state_that_does_not_load_is_named(tmp_path, caplog):
    ToyTrainer, toy = _toy()
    ToyTrainer(toy(tmp_path, max_steps=8)).run()
    (state,) = (tmp_path / "run" / "checkpoints" / "step-8").glob("random_states_*.pkl")
    state.write_bytes(b"not a pickle")
    with caplog.at_level(logging.WARNING):
        trainer = ToyTrainer(toy(tmp_path, max_steps=12, resume_from_checkpoint="latest"))
    assert f"{state} is damaged" in caplog.text and trainer.state.step == 4
    with pytest.raises(CheckpointError, match=f"^{state}: cannot resume"):
        ToyTrainer(toy(tmp_path, max_steps=12, resume_from_checkpoint=str(state.parent)))


def test_resume_refusals_name_the_real_argument_and_file(tmp_path, capsys):
    # The preset, not the schedule it brought, is what differs.
    record_identity(tmp_path, {"preset": "mnist-small", "lr_decay_epochs": [8, 11]}, "data")
    with pytest.raises(OutputFolderError, match="^--preset: 'cifar10-small' differs"):
        check_identity(tmp_path, {"preset": "cifar10-small", "lr_decay_epochs": []}, "data")
    train, dev = tmp_path / "train.conllu", tmp_path / "dev.conllu"
    train.write_text("a"), dev.write_text("b")
    record_identity(tmp_path, {}, "data-1", file_fingerprints([train, dev]))
    dev.write_text("c")
    with pytest.raises(OutputFolderError, match=f"{dev} differs from the file of that name"):
        check_identity(tmp_path, {}, "data-2", file_fingerprints([train, dev]))
    train_pos = _script("train_pos")
    with pytest.raises(SystemExit, match="2"):
        run_cli(train_pos.main, ["--max-steps", "-5"])
    assert one_error_line(capsys).startswith("error: max_steps: ")


def test_the_run_folder_loads_with_from_pretrained_and_is_unlocked(tmp_path):
    ToyTrainer, toy = _toy()
    ToyTrainer(toy(tmp_path, max_steps=4)).run()
    run = tmp_path / "run"
    assert (run / "model.pt").read_bytes() == (run / "best" / "model.pt").read_bytes()
    assert json.loads((run / "config.json").read_text())["num_basis"] == 1
    fd = hold_lock(run / LOCK_FILE)
    assert fd is not None  # released at the end of the run
    os.close(fd)
    ToyTrainer(toy(tmp_path, max_steps=4, overwrite_output_dir=True)).run()  # the copies are a run's outputs


# --- the conventions a transformers user brings ----------------------------------------------
def test_the_pipeline_reads_raw_text_as_ud_words_one_entry_per_word(tmp_path):
    from transformers import pipeline

    from cont_transformer.tagging.pipeline import WordTaggingPipeline

    folder = save_tagger(tmp_path / "tagger", spelling=True)
    model = AutoModelForTokenClassification.from_pretrained(folder)
    with torch.no_grad():  # every word the same tag: what the entity grouping would merge
        model.classifier.bias.fill_(0).data[TAGGER["label2id"]["."]] = 100
    model.save_pretrained(folder)
    text = "The dog barks. Tom didn't see it!"
    words = ["The", "dog", "barks", ".", "Tom", "did", "n't", "see", "it", "!"]
    plain = pipeline("token-classification", model=str(folder))
    tokens = [entry["word"] for entry in plain(text)]  # one entry per token: "barks" is pieces
    assert tokens[:4] == ["The", "dog", "b", " ##a"] and tokens.count(".") == 1 and "n't" in tokens
    grouped = pipeline("token-classification", model=str(folder), aggregation_strategy="first")
    assert len(grouped(text)) == 1  # transformers' entity grouping merges equal neighbours
    tagger = pipeline(
        "token-classification", model=str(folder), aggregation_strategy="first", pipeline_class=WordTaggingPipeline
    )
    entries = tagger(text)
    assert [entry["word"] for entry in entries] == words
    assert {entry["entity_group"] for entry in entries} == {"."}
    assert [text[e["start"] : e["end"]] for e in entries] == words
    # Already-split words pass whole (treebank words are not cut again).
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert tokenizer(["U.S.", "n't", "3.5", "well-known"], is_split_into_words=True).word_ids()[1:5] == [0, 1, 2, 3]


def test_output_attentions_per_evaluation_of_the_rate():
    from conftest import tiny_tagger

    model = tiny_tagger(scheme="rk4", num_steps=2)
    ids, mask = torch.tensor([[2, 3, 4, 5, 0]]), torch.tensor([[1, 1, 1, 1, 0]])
    plain = model(ids, mask)
    output = model(ids, mask, output_attentions=True)
    assert torch.equal(plain.logits, output.logits) and plain.attentions is None
    assert len(output.attentions) == 2 * 4  # N_T steps x the four stages of RK4
    for weights in output.attentions:
        assert weights.shape == (1, 2, 5, 5)
        assert torch.allclose(weights.sum(-1), torch.ones(1, 2, 5)) and (weights[..., 4] == 0).all()


def test_trainer_style_flags_in_both_spellings(tmp_path, capsys, monkeypatch):
    from cont_transformer.tagging.arguments import TrainingArguments, preset_defaults

    args, _ = parse_arguments(
        TrainingArguments,
        [
            "--bf16",
            "--num_train_epochs",
            "2",
            "--do_train",
            "--do_eval",
            "--validation_file",
            "d.conllu",
            "--train_file",
            "t.conllu",
            "--push_to_hub",
            "--hub_model_id",
            "me/pos",
            "--report_to",
            "tensorboard",
            "--output_dir",
            str(tmp_path / "pos"),
        ],
        preset_defaults=preset_defaults,
    )
    assert (args.mixed_precision, args.num_train_epochs, args.do_train, args.do_eval) == ("bf16", 2.0, True, True)
    assert (args.dev_file, args.train_file, args.push_to_hub, args.report_to) == (
        ["d.conllu"],
        ["t.conllu"],
        "me/pos",
        "tensorboard",
    )
    assert parse_arguments(RunArguments, ["--push-to-hub", "--output-dir", "runs/x"])[0].push_to_hub == "x"
    for argv, message in [
        (["--report_to", "wandb"], "report_to: wandb needs its package"),
        (["--report_to", "bogus"], "report_to: choose none, all or of"),
        (["--bf16", "--fp16"], "fp16: choose one of --bf16 and --fp16"),
    ]:
        monkeypatch.setattr(
            importlib.util,
            "find_spec",
            lambda name, real=importlib.util.find_spec: None if name == "wandb" else real(name),
        )
        with pytest.raises(ValueError, match=message):
            parse_arguments(RunArguments, argv)
    if not torch.cuda.is_available():
        ToyTrainer, toy = _toy()
        with pytest.raises(ValueError, match="--fp16: float16 mixed precision needs a GPU"):
            ToyTrainer(toy(tmp_path, fp16=True))
    assert run_tag(["--num_threads", "1", "--fp16", str(tmp_path)], capsys)  # parsed; then one line
    assert "error: " in run_compress([str(tmp_path), "--output_dir", str(tmp_path / "o"), "--num_basis", "2"], capsys)


def test_a_model_folder_without_its_tokenizer_is_named(saved, tmp_path, capsys, monkeypatch):
    folder = tmp_path / "model"
    shutil.copytree(saved, folder)
    (folder / "tokenizer.json").unlink()
    monkeypatch.chdir(tmp_path)
    message = run_tag([f"../{tmp_path.name}/model"], capsys)
    assert message.startswith(f"error: ../{tmp_path.name}/model: no tokenizer.json beside the model")
    assert "sentencepiece" not in message


def test_the_german_card_credits_its_dev_score_to_the_dev_treebank(tmp_path):
    from types import SimpleNamespace

    from cont_transformer.tagging.data import treebank_facts
    from cont_transformer.tagging.trainer import PosTrainer

    files = {
        "train": [tmp_path / "UD_German-LIT" / "de_lit-ud-test.conllu"],
        "validation": [tmp_path / "UD_German-GSD" / "de_gsd-ud-dev.conllu"],
    }
    trainer = object.__new__(PosTrainer)
    trainer.args = SimpleNamespace(treebank="de_lit", tag_column="xpos")
    trainer.files, trainer.facts, trainer.num_sentences = files, treebank_facts(files["train"]), (1922, 799)
    trainer.labels = {"xpos": ["NN", "VVFIN"]}
    facts = trainer.card_facts({"accuracy": 0.85, "xpos": 0.85, "step": 500})
    (result,) = facts["results"]
    assert (result.dataset_name, result.dataset_config, result.split) == ("UD German-GSD", "de_gsd", "dev")
    assert result.metric_name == "XPOS accuracy"
    assert facts["extra"]["training data"].startswith("UD German-LIT") and facts["language"] == "de"
    assert facts["extra"]["dev data"] == "UD German-GSD, 799 sentences"


@pytest.mark.slow
def test_a_bf16_tagger_run_in_epochs_is_recorded_and_its_folder_loads(tmp_path, capsys):
    output = tmp_path / "pos"
    _script("train_pos").main(
        [
            "--bf16",
            "--num_train_epochs",
            "0.2",
            "--warmup_steps",
            "0",
            "--refine_steps",
            "none",
            "--num_basis",
            "2",
            "--output_dir",
            str(output),
            "--hidden_size",
            "32",
            "--intermediate_size",
            "32",
            "--char_hidden_size",
            "16",
        ]
    )
    metrics = json.loads((output / "metrics.json").read_text())
    steps_per_epoch = math.ceil(metrics["num_train_sentences"] / 64)
    assert metrics["step"] == math.ceil(0.2 * steps_per_epoch) and metrics["mixed_precision"] == "bf16"
    assert json.loads((output / "run.json").read_text())["mixed_precision"] == "bf16"
    assert "| mixed precision | bf16 |" in (output / "README.md").read_text()
    model = AutoModelForTokenClassification.from_pretrained(output)  # the run folder loads
    assert model.config.num_basis == 2
    capsys.readouterr()
    _script("train_pos").main(["--do_eval", "--output_dir", str(output)])  # evaluates only
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["num_words"] == metrics["best"]["num_words"]
