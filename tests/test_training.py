"""Training: schedules, batching, refinement of the optimiser, and end-to-end runs of
``scripts/train_pos.py`` on the generated sample (one process, two CPU processes,
killed and resumed)."""

import importlib.util
import itertools
import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from huggingface_hub.utils import filter_repo_objects
from safetensors.torch import load_file
from tiny import labels

from cont_transformer import (
    ContTransformerConfig,
    ContTransformerForTokenClassification,
    Tagger,
    build_tokenizer,
)
from cont_transformer.basis import get_basis
from cont_transformer.column_decoding import combination_index, model_column_labels, predicted_label_ids
from cont_transformer.runtime import hub, model_folders
from cont_transformer.runtime.model_folders import BEST_MODEL_DIR, CHECKPOINTS_DIR, METRICS_FILE
from cont_transformer.tagging.arguments import resolve_arguments
from cont_transformer.tagging.data import load_treebank, most_frequent_tag_baseline
from cont_transformer.tagging.metrics import load_conll18
from cont_transformer.tagging.sample_treebank import write_sample_treebank
from cont_transformer.tagging.trainer import train
from cont_transformer.text.batching import (
    IGNORE_INDEX,
    LengthGroupedBatchSampler,
    PaddingCollator,
    encode_for_evaluation,
    encode_for_training,
    evaluation_windows,
    word_dropout_probabilities,
)
from cont_transformer.text.optimization import build_optimizer
from cont_transformer.text.tokenization import spelling_tables
from cont_transformer.tools.cli import run_cli
from cont_transformer.training.checkpoints import TRAINER_STATE
from cont_transformer.training.refinement import refine_with_optimizer
from cont_transformer.training.schedules import (
    RefinementSchedule,
    cooldown_factor,
    initial_num_basis,
    inverse_sqrt_learning_rate,
    parse_steps,
)

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = str(ROOT / "scripts" / "train_pos.py")
# Small but long enough to beat the most-frequent-tag baseline (88% on the sample dev set)
# in XPOS, with every column predicted.
RUN = [
    "--treebank",
    "sample",
    "--max-steps",
    "120",
    "--warmup-steps",
    "30",
    "--learning-rate",
    "1e-2",
    "--num-basis",
    "4",
    "--refine-steps",
    "30,60",
    "--word-dropout",
    "0",
    "--eval-steps",
    "40",
    "--save-steps",
    "40",
    "--compression-report",
    "--do-predict",
    "--report-to",
    "tensorboard",
]


# --- schedules -----------------------------------------------------------------------


def test_inverse_sqrt_learning_rate():
    lr = [inverse_sqrt_learning_rate(s, 1e-3, 100) for s in range(1, 1001)]
    assert lr[0] == pytest.approx(1e-5)
    assert lr[49] == pytest.approx(5e-4)  # linear warm-up
    assert max(lr) == lr[99] == pytest.approx(1e-3)  # peak at the end of the warm-up
    assert lr[399] == pytest.approx(5e-4)  # then 1/sqrt(step): step 400 -> half the peak
    assert all(a > b for a, b in itertools.pairwise(lr[99:]))
    assert inverse_sqrt_learning_rate(4, 1e-3, 0) == pytest.approx(5e-4)
    with pytest.raises(ValueError):
        inverse_sqrt_learning_rate(0, 1e-3, 100)


def test_cooldown_factor_falls_linearly_over_the_last_steps():
    factors = [cooldown_factor(s, 100, 20) for s in range(1, 101)]
    assert factors[:81] == [1.0] * 81  # steps 1..81
    assert factors[81] == pytest.approx(19 / 20) and factors[-1] == pytest.approx(1 / 20)
    assert all(a > b for a, b in itertools.pairwise(factors[80:]))
    assert cooldown_factor(50, 100, 0) == 1.0
    with pytest.raises(ValueError):
        cooldown_factor(1, 100, -1)


@pytest.mark.parametrize(
    "basis, final, refinements, start",
    [
        ("piecewise_constant", 16, 4, 1),
        ("piecewise_constant", 64, 6, 1),
        ("piecewise_constant", 12, 2, 3),
        ("piecewise_linear", 17, 4, 2),  # 2 -> 3 -> 5 -> 9 -> 17
        ("piecewise_linear", 2, 1, 1),
        ("discontinuous_linear", 8, 2, 2),
        ("piecewise_constant", 8, 0, 8),
    ],
)
def test_initial_num_basis(basis, final, refinements, start):
    assert initial_num_basis(basis, final, refinements) == start
    current = get_basis(basis, start)
    for _ in range(refinements):
        current = current.refine()
    assert current.num_basis == final


def test_unreachable_num_basis_is_an_error():
    with pytest.raises(ValueError, match="reachable"):
        initial_num_basis("piecewise_constant", 6, 2)


def test_refinement_schedule_sizes():
    schedule = RefinementSchedule(
        "piecewise_constant", final_num_basis=16, final_num_steps=32, refine_steps=(10, 20, 30, 40)
    )
    assert (schedule.initial_num_basis, schedule.initial_num_steps) == (1, 2)
    assert schedule.sizes(0) == schedule.sizes(9) == (1, 2)
    assert schedule.sizes(10) == (2, 4)  # refined right after step 10
    assert schedule.sizes(35) == (8, 16)
    assert schedule.sizes(1000) == (16, 32)
    assert schedule.num_refinements(20) == 2
    with pytest.raises(ValueError, match="divisible"):
        RefinementSchedule("piecewise_constant", 16, 12, (1, 2, 3, 4))
    with pytest.raises(ValueError, match="increasing"):
        RefinementSchedule("piecewise_constant", 4, 4, (20, 10))


def test_parse_steps_and_sample_defaults():
    assert parse_steps("1000, 2000,3000") == (1000, 2000, 3000)
    assert parse_steps("none") == parse_steps("") == parse_steps(None) == ()
    sample = resolve_arguments({"treebank": "sample", "max_steps": None, "learning_rate": 3e-3})
    assert sample.max_steps == 300 and sample.learning_rate == 3e-3 and sample.final_num_steps == 8
    gum = resolve_arguments({"treebank": "en_gum"})
    assert (gum.max_steps, gum.warmup_steps, gum.final_num_basis, gum.batch_size) == (35000, 8000, 64, 64)
    assert gum.refine_steps == (1000, 2000, 3000, 4000, 5000, 28000) and gum.cooldown_steps == 7000
    assert resolve_arguments({"max_steps": 100, "cooldown_steps": 0}).cooldown_steps == 0
    with pytest.raises(ValueError, match="tag_column"):
        resolve_arguments({"tag_column": "lemma"})


# --- batching ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer(["the", "dog", "barks", "."])


def test_label_alignment_and_truncation(tokenizer):
    sentences = [["the", "cat", "barks", "."], ["the", "dog"]]
    tags = [[0, 1, 2, -1], [0, 1]]
    rows, cut = encode_for_training(tokenizer, sentences, tags, max_length=16)
    assert cut == 0
    unk, root = tokenizer.unk_token_id, tokenizer.bos_token_id
    assert rows[0]["input_ids"] == [
        root,
        tokenizer.convert_tokens_to_ids("the"),
        unk,
        tokenizer.convert_tokens_to_ids("barks"),
        tokenizer.convert_tokens_to_ids("."),
    ]
    # The root gets no label; an unknown word keeps its tag; an unseen tag (-1) stays.
    assert rows[0]["labels"] == [IGNORE_INDEX, 0, 1, 2, -1]
    rows, cut = encode_for_training(tokenizer, sentences, tags, max_length=3)
    assert cut == 2 and rows[0]["labels"] == [IGNORE_INDEX, 0, 1] and len(rows[1]["input_ids"]) == 3


def test_words_of_several_pieces_are_cut_and_windowed_whole():
    tokenizer = build_tokenizer(["the", "dog", "barks", "."], spelling=True)
    ids = tokenizer.convert_tokens_to_ids
    sentence = ["the", "dogs", "barked", "."]  # 1 + 2 + 3 + 1 pieces
    rows, cut = encode_for_training(tokenizer, [sentence], [[0, 1, 2, 3]], max_length=3)
    assert cut == 2
    assert rows[0]["input_ids"] == [tokenizer.bos_token_id, ids("the"), ids("dog"), ids("##s")]
    assert rows[0]["labels"] == [IGNORE_INDEX, 0, 1, IGNORE_INDEX]
    rows = encode_for_evaluation(tokenizer, [sentence * 3], [list(range(12))], max_length=4, known_words={"the", "."})
    scored = [label for row in rows for label in row["labels"] if label != IGNORE_INDEX]
    assert sorted(scored) == list(range(12))
    for row in rows:  # every window starts at a word: after the root comes no continuation
        assert not tokenizer.convert_ids_to_tokens(row["input_ids"][1]).startswith("##")
        assert len(row["unseen"]) == len(row["input_ids"])
    first = rows[0]
    pieces = tokenizer.convert_ids_to_tokens(first["input_ids"])
    assert pieces[:4] == ["[ROOT]", "the", "dog", "##s"]
    assert first["unseen"][:4] == [0, 0, 1, 1]


@pytest.mark.parametrize("length, capacity", [(5, 8), (8, 8), (9, 8), (20, 8), (101, 10), (7, 1), (30, 3)])
def test_evaluation_windows_partition_the_sentence(length, capacity):
    windows = evaluation_windows(length, capacity)
    owned = [j for _, begin, end in windows for j in range(begin, end)]
    assert owned == list(range(length))  # every position scored exactly once, in order
    for start, begin, end in windows:
        assert 0 <= start <= begin < end <= start + capacity and start + capacity <= max(length, capacity)


def test_long_sentences_are_scored_in_full(tokenizer):
    sentence = ["the", "dog", "barks", "."] * 10  # 40 words, 41 tokens with the root
    tags = [list(range(40))]
    rows = encode_for_evaluation(tokenizer, [sentence, ["the"]], [tags[0], [3]], max_length=8)
    assert all(len(row["input_ids"]) <= 8 for row in rows)
    assert all(row["input_ids"][0] == tokenizer.bos_token_id for row in rows)
    assert sum(row["sentence_start"] for row in rows) == 2
    scored = sorted(label for row in rows[:-1] for label in row["labels"] if label != IGNORE_INDEX)
    assert scored == list(range(40))
    assert rows[-1]["labels"] == [IGNORE_INDEX, 3]


def test_padding_collator():
    batch = PaddingCollator(pad_token_id=0)(
        [
            {"input_ids": [2, 5, 6], "labels": [IGNORE_INDEX, 1, 2], "sentence_start": 1},
            {"input_ids": [2, 7], "labels": [IGNORE_INDEX, 3], "sentence_start": 0},
        ]
    )
    assert batch["input_ids"].tolist() == [[2, 5, 6], [2, 7, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]
    assert batch["labels"].tolist() == [[IGNORE_INDEX, 1, 2], [IGNORE_INDEX, 3, IGNORE_INDEX]]
    assert batch["sentence_start"].tolist() == [1, 0]


@pytest.mark.parametrize("word_representation", ["word", "word+chars"])
def test_word_dropout_drops_rare_words_and_spares_special_tokens(word_representation):
    spelling = word_representation != "word"
    tokenizer = build_tokenizer(["the", "dog", "barks", "."], spelling=spelling)
    counts = {"the": 1000, "dog": 3, "barks": 1, ".": 999}
    probabilities = word_dropout_probabilities(tokenizer, counts, alpha=1.0)
    ids = tokenizer.convert_tokens_to_ids
    assert probabilities[ids("barks")] == pytest.approx(0.5)
    assert probabilities[ids("dog")] == pytest.approx(0.25)
    assert probabilities[ids("the")] == pytest.approx(1 / 1001)
    assert all(probabilities[i] == 0 for i in tokenizer.all_special_ids)
    if spelling:  # pieces that are no training word are never dropped
        assert probabilities[ids("b")] == 0 and probabilities[ids("##s")] == 0
    assert not word_dropout_probabilities(tokenizer, counts, alpha=0.0).any()

    # The model applies it to the word channel, in training mode only.
    config = ContTransformerConfig(
        vocab_size=len(tokenizer),
        hidden_size=8,
        intermediate_size=8,
        num_basis=1,
        unk_token_id=tokenizer.unk_token_id,
        word_representation=word_representation,
        char_vocab_size=64,
        id2label={0: "A"},
    )
    embeddings = ContTransformerForTokenClassification(config).cont_transformer.embeddings
    if spelling:
        embeddings.set_spelling(**spelling_tables(tokenizer, counts, config.max_word_length)[0])
    embeddings.set_word_dropout(probabilities)
    seen = []
    embeddings.word_embeddings.register_forward_hook(lambda module, args, out: seen.append(args[0]))
    sentence = [tokenizer.bos_token_id, ids("the"), ids("dog"), ids("barks"), ids(".")]
    input_ids = torch.tensor([sentence + [tokenizer.pad_token_id] * 3] * 5000)
    mask = (input_ids != tokenizer.pad_token_id).long()
    torch.manual_seed(0)
    embeddings.train()(input_ids, mask)
    rates = (seen[-1] == tokenizer.unk_token_id).float().mean(0)
    assert rates[0].item() == 0 and rates[5:].sum().item() == 0  # root, padding: never
    assert rates[2].item() == pytest.approx(0.25, abs=0.03)
    assert rates[3].item() == pytest.approx(0.5, abs=0.03)
    embeddings.eval()(input_ids, mask)
    assert not (seen[-1] == tokenizer.unk_token_id).any()


def test_length_grouped_batches_are_a_function_of_seed_and_epoch():
    lengths = [(i * 37) % 50 + 1 for i in range(1000)]
    sampler = LengthGroupedBatchSampler(lengths, batch_size=64, seed=3, group_batches=4)
    assert len(sampler) == 15
    sampler.set_epoch(0)
    first = list(sampler)
    assert first == list(sampler)
    assert all(len(b) == 64 for b in first) and len({i for b in first for i in b}) == 15 * 64
    sampler.set_epoch(1)
    assert list(sampler) != first
    # Length grouping: a batch spans far less of the length range than a random batch would.
    spread = sum(max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in first) / len(first)
    assert spread < 20
    resumed = LengthGroupedBatchSampler(lengths, batch_size=64, seed=3, group_batches=4)
    resumed.set_epoch(0)
    assert list(resumed) == first


# --- optimiser and refinement -----------------------------------------------------------


# The tiny tagger (conftest.py) narrowed to width 8 and one head, without dropout.
TAGGER = {
    "vocab_size": 20,
    "hidden_size": 8,
    "intermediate_size": 8,
    "num_attention_heads": 1,
    "hidden_dropout_prob": 0.0,
    "attention_probs_dropout_prob": 0.0,
    **labels("ABC"),
}


def test_no_weight_decay_on_biases_and_layer_norms(tiny_tagger):
    model = tiny_tagger(**TAGGER, num_basis=2).train()
    decay, no_decay = build_optimizer(model, 1e-3, 0.1).param_groups
    names = {id(p): n for n, p in model.named_parameters()}
    no_decay_names = {names[id(p)] for p in no_decay["params"]}
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert "cont_transformer.encoder.rate.attention_norm.weight" in no_decay_names
    assert "cont_transformer.encoder.rate.mlp.fc1.bias" in no_decay_names
    assert "cont_transformer.final_norm.weight" in no_decay_names
    assert {names[id(p)] for p in decay["params"]} == {
        "cont_transformer.embeddings.word_embeddings.weight",
        "classifier.weight",
        *(
            f"cont_transformer.encoder.rate.{m}.weight"
            for m in ("attention.query", "attention.key", "attention.value", "attention.output", "mlp.fc1", "mlp.fc2")
        ),
    }
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(model.parameters()))


def test_each_named_parameter_gets_its_own_learning_rate_multiple(tiny_tagger):
    """Fine-tuning from a language model: the encoder at one multiple, the character CNN at
    another (--spelling-learning-rate-scale), the heads at 1; decay as before."""
    model = tiny_tagger(**TAGGER, num_basis=2, word_representation="word+chars", unk_token_id=1).train()
    names = {id(p): n for n, p in model.named_parameters()}
    scales = {n: (1.0 if ".characters." in n else 0.3) for n in names.values() if n.startswith("cont_transformer.")}
    optimizer = build_optimizer(
        model, 1e-3, 0.1, scales, no_decay=["cont_transformer.embeddings.word_embeddings.weight"]
    )
    seen = {}
    for group in optimizer.param_groups:
        for parameter in group["params"]:
            seen[names[id(parameter)]] = (group["lr_scale"], group["weight_decay"])
    assert len(seen) == len(names)
    assert seen["classifier.weight"] == (1.0, 0.1)
    assert seen["cont_transformer.encoder.rate.mlp.fc1.weight"] == (0.3, 0.1)
    assert seen["cont_transformer.embeddings.word_embeddings.weight"] == (0.3, 0.0)
    assert all(seen[n][0] == 1.0 for n in names.values() if ".characters." in n)


def test_refinement_projects_the_optimizer_state(tiny_tagger):
    model = tiny_tagger(**TAGGER, num_basis=2).train()
    optimizer = build_optimizer(model, 1e-2, 0.1)
    input_ids = torch.randint(3, 20, (4, 6))
    labels = torch.randint(0, 3, (4, 6))
    for _ in range(3):
        model(input_ids, labels=labels).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    query = "cont_transformer.encoder.rate.attention.query.weight"
    old = {n: {k: v.clone() for k, v in optimizer.state[p].items()} for n, p in model.named_parameters()}
    old_query = dict(model.named_parameters())[query].detach().clone()
    embedding = model.get_input_embeddings().weight
    optimizer = refine_with_optimizer(model, optimizer, lambda m: build_optimizer(m, 1e-2, 0.1))
    params = dict(model.named_parameters())
    assert params[query].shape[0] == 4 and model.config.num_basis == 4 and model.config.num_steps == 4
    # Piecewise constant K -> 2K: each new cell inherits its parent's moments.
    state = optimizer.state[params[query]]
    assert torch.allclose(state["exp_avg"], old[query]["exp_avg"].repeat_interleave(2, 0))
    assert torch.allclose(state["exp_avg_sq"], old[query]["exp_avg_sq"].repeat_interleave(2, 0))
    assert torch.equal(state["step"], old[query]["step"])
    # Parameters outside the ODE block are the same objects, with the same state.
    assert params["cont_transformer.embeddings.word_embeddings.weight"] is embedding
    assert torch.equal(
        optimizer.state[embedding]["exp_avg"],
        old["cont_transformer.embeddings.word_embeddings.weight"]["exp_avg"],
    )
    assert {id(p) for g in optimizer.param_groups for p in g["params"]} == {id(p) for p in model.parameters()}
    # The weight function is unchanged: each new cell holds its parent's value.
    assert torch.equal(params[query].detach(), old_query.repeat_interleave(2, 0))


def test_push_to_hub_uploads_the_model_folder_without_checkpoints(monkeypatch, tmp_path):
    calls = {}

    class FakeApi:
        def create_repo(self, repo_id, exist_ok):
            calls["create_repo"] = (repo_id, exist_ok)

        def upload_folder(self, repo_id, folder_path, ignore_patterns):
            calls["upload_folder"] = (repo_id, folder_path)
            calls["uploaded"] = list(
                filter_repo_objects(
                    ["config.json", "model.safetensors", "checkpoints/step-40/optimizer.bin"],
                    ignore_patterns=ignore_patterns,
                )
            )
            return SimpleNamespace(commit_url="https://huggingface.co/me/tagger/commit/1")

    monkeypatch.setattr(hub, "HfApi", FakeApi)
    url = hub.push_folder_to_hub(tmp_path, "me/tagger")
    assert url.endswith("/commit/1")
    assert calls["create_repo"] == ("me/tagger", True)
    assert calls["upload_folder"] == ("me/tagger", str(tmp_path))
    assert calls["uploaded"] == ["config.json", "model.safetensors"]


# --- end to end --------------------------------------------------------------------------


def _env():
    # One thread per process: faster on small shared machines, and runs compare bit for bit.
    return {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}


def _launch_command(*args, processes=1):
    """``accelerate launch scripts/train_pos.py *args`` on CPU processes."""
    launch = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
    ]
    if processes > 1:
        launch += ["--multi_gpu", "--num_processes", str(processes)]
    else:
        launch += ["--num_processes", "1"]
    return [*launch, SCRIPT, *args]


def _launch(*args, processes=1, timeout=300):
    return subprocess.run(
        _launch_command(*args, processes=processes),
        check=False,
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _check(result):
    assert result.returncode == 0, result.stderr[-4000:]
    return result


def _metrics(folder):
    return json.loads((Path(folder) / METRICS_FILE).read_text())


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    """``accelerate launch scripts/train_pos.py --treebank sample`` with a short schedule."""
    output = tmp_path_factory.mktemp("sample_run")
    _check(_launch(*RUN, "--output-dir", str(output)))
    return output


@pytest.mark.slow
def test_sample_run_saves_a_model_that_beats_the_baseline(sample_run):
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    metrics = _metrics(sample_run)
    assert [h["step"] for h in metrics["history"]] == [40, 80, 120]
    assert [(h["num_basis"], h["num_steps"]) for h in metrics["history"]] == [
        (2, 2),
        (4, 4),
        (4, 4),
    ]
    model = AutoModelForTokenClassification.from_pretrained(sample_run)  # the run folder loads
    tokenizer = AutoTokenizer.from_pretrained(sample_run)
    assert model.config.num_basis == metrics["best"]["num_basis"]
    assert (sample_run / "model.safetensors").read_bytes() == (
        sample_run / BEST_MODEL_DIR / "model.safetensors"
    ).read_bytes()
    names = [model.config.id2label[i] for i in range(model.config.num_labels)]
    data = load_treebank("sample", label_names={"xpos": names})
    dev = data["validation"]
    encoding = tokenizer(
        [list(words) for words in dev["tokens"]],
        is_split_into_words=True,
        padding=True,
        return_tensors="pt",
    )
    # Decoded as the tagger and the trainer decode: UPOS, XPOS and FEATS jointly over the
    # training triples the config records.
    labels = model_column_labels(model.config)
    assert model.config.tag_combinations and combination_index(model.config, labels) is not None
    with torch.no_grad():
        output = model(**encoding)
    predicted = predicted_label_ids(
        output, ["xpos"], "xpos", labels, model.config.feats_mode, combination_index(model.config, labels)
    )["xpos"]  # (sentences, seq)
    correct = total = 0
    for i, gold in enumerate(dev["xpos"]):
        first = {}  # word -> position of its first token
        for position, word in enumerate(encoding.word_ids(i)):
            if word is not None:
                first.setdefault(word, position)
        correct += sum(int(predicted[i, first[w]]) == g for w, g in enumerate(gold))
        total += len(gold)
    accuracy = correct / total
    baseline = most_frequent_tag_baseline(data["train"], dev)
    assert metrics["baseline_accuracy"] == pytest.approx(baseline)
    # Every column of the sample is predicted and scored; ``accuracy`` (the selection
    # score) is the mean of the columns' rows.
    best = metrics["best"]
    assert metrics["columns"] == ["xpos", "upos", "feats", "lemma"]
    assert best["accuracy"] == pytest.approx((best["upos"] + best["xpos"] + best["ufeats"] + best["lemmas"]) / 4)
    assert 0 < best["alltags"] <= min(best["upos"], best["xpos"], best["ufeats"])
    assert accuracy == pytest.approx(metrics["best"]["xpos"], abs=2 / total)
    # Four heads share this short run: XPOS still beats the baseline, by less than alone.
    assert accuracy > baseline + 0.005, (accuracy, baseline)
    assert metrics["best"]["num_words"] == total and metrics["best"]["num_sentences"] == len(dev)


@pytest.mark.slow
def test_a_run_ships_its_best_model_compressed_and_keeps_the_model_as_trained(tmp_path):
    output = tmp_path / "run"
    _check(_launch(*RUN, "--output-dir", str(output), "--best-num-basis", "2", "--best-num-steps", "2"))
    metrics = _metrics(output)
    shipped = metrics["compressed_best"]
    assert (shipped["num_basis"], shipped["num_steps"]) == (2, 2)
    assert (
        shipped["compressed_from"]
        == {"num_basis": 4, "num_steps": 4}
        == {key: metrics["best"][key] for key in ("num_basis", "num_steps")}
    )
    # The same change of basis as the report's K/2, N_T/2 row, scored on the same dev data.
    row = next(r for r in metrics["compression"] if r["model"] == "K/2, N_T/2")
    for column in ("upos", "xpos", "ufeats", "alltags", "lemmas"):
        assert shipped[column] == pytest.approx(row[column])
    uncompressed = output / model_folders.UNCOMPRESSED_MODEL_DIR
    assert json.loads((uncompressed / "config.json").read_text())["num_basis"] == 4
    assert json.loads((uncompressed / METRICS_FILE).read_text())["best"] == metrics["best"]
    tagger = Tagger.from_pretrained(output)  # the run folder gives the compressed model
    assert (tagger.model.config.num_basis, tagger.model.config.num_steps) == (2, 2)
    assert (output / "model.safetensors").read_bytes() == (output / BEST_MODEL_DIR / "model.safetensors").read_bytes()
    card = (output / BEST_MODEL_DIR / "README.md").read_text()
    assert "compressed without retraining | from K = 4, N_T = 4" in card
    assert f"xpos {100 * metrics['best']['xpos']:.2f} → {100 * shipped['xpos']:.2f}" in card
    assert "K (num_basis) | 2 |" in card
    # A finished run resumed compresses the model as trained again, never the compressed one.
    trained = (uncompressed / "model.safetensors").read_bytes()
    flags = ("--best-num-basis", "2", "--best-num-steps", "2", "--resume-from-checkpoint", "latest")
    _check(_launch(*RUN, "--output-dir", str(output), *flags))
    assert (uncompressed / "model.safetensors").read_bytes() == trained
    assert _metrics(output)["compressed_best"] == shipped
    assert json.loads((output / BEST_MODEL_DIR / "config.json").read_text())["num_basis"] == 2


@pytest.mark.slow
def test_sample_run_reports_compression_card_predictions_and_logs(sample_run):
    from huggingface_hub import ModelCard

    metrics = _metrics(sample_run)
    report = json.loads((sample_run / "compression.json").read_text())
    assert report == metrics["compression"]
    assert [(r["model"], r["num_basis"], r["num_steps"]) for r in report] == [
        ("trained", 4, 4),
        ("K/2", 2, 4),
        ("K/4", 1, 4),
        ("N_T/2", 4, 2),
        ("N_T/4", 4, 1),
        ("K/2, N_T/2", 2, 2),
    ]
    rows = ["accuracy", "upos", "xpos", "ufeats", "alltags", "lemmas"]
    for row in rows:  # the report covers every column
        assert report[0][row] == pytest.approx(metrics["best"][row])
        assert all(0 <= r[row] <= 1 for r in report)
    # The card: Hub metadata whose model-index is the saved model's own metrics.json, one
    # metric per column.
    card = ModelCard.load(sample_run / BEST_MODEL_DIR / "README.md")
    saved = json.loads((sample_run / BEST_MODEL_DIR / METRICS_FILE).read_text())
    results = card.data.eval_results
    assert [r.metric_name for r in results] == [
        "UPOS accuracy",
        "XPOS accuracy",
        "UFeats accuracy",
        "AllTags accuracy",
        "Lemmas accuracy",
    ]
    assert {(r.metric_type, r.dataset_split) for r in results} == {("accuracy", "dev")}
    for result, row in zip(results, rows[1:]):
        assert result.metric_value == saved["best"][row] == metrics["best"][row]
    assert card.data.language == "en" and "## Compression without retraining" in card.text
    assert "| ufeats |" in card.text and "drop lemmas (pts)" in card.text
    # --do-predict: the dev file re-tagged, exactly the predicted columns changed (LEMMA,
    # UPOS, XPOS, FEATS) ...
    (predicted,) = metrics["predictions"]
    text = Path(predicted).read_text()
    gold_text = write_sample_treebank(sample_run / "gold")["validation"].read_text()
    lines, gold = text.splitlines(), gold_text.splitlines()
    assert len(lines) == len(gold)
    changed = {
        i for a, b in zip(lines, gold) if a != b for i, (x, y) in enumerate(zip(a.split("\t"), b.split("\t"))) if x != y
    }
    assert changed == {2, 3, 4, 5}
    # ... and the CoNLL 2018 scorer on that file gives the trainer's dev figures.
    official = load_conll18().compute(predictions=[text], references=[gold_text])
    for name, row in (
        ("UPOS", "upos"),
        ("XPOS", "xpos"),
        ("UFeats", "ufeats"),
        ("AllTags", "alltags"),
        ("Lemmas", "lemmas"),
    ):
        assert official[name]["aligned_accuracy"] == pytest.approx(metrics["best"][row], abs=1e-12)
    assert list((sample_run / "logs").rglob("events.out.tfevents.*"))


@pytest.mark.slow
def test_fine_tuning_keeps_the_saved_model_sizes_and_tokenizer(sample_run, tmp_path):
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    output = tmp_path / "tuned"
    _check(
        _launch(
            "--model-name-or-path",
            str(sample_run / BEST_MODEL_DIR),
            "--treebank",
            "sample",
            "--max-steps",
            "10",
            "--warmup-steps",
            "0",
            "--eval-steps",
            "10",
            "--save-steps",
            "10",
            "--output-dir",
            str(output),
        )
    )
    metrics = _metrics(output)
    assert [(h["num_basis"], h["num_steps"]) for h in metrics["history"]] == [(4, 4)]
    assert metrics["arguments"]["refine_steps"] == []
    tuned = AutoTokenizer.from_pretrained(output / BEST_MODEL_DIR)
    assert tuned.get_vocab() == AutoTokenizer.from_pretrained(sample_run / BEST_MODEL_DIR).get_vocab()
    model = AutoModelForTokenClassification.from_pretrained(output / BEST_MODEL_DIR)
    assert model.config.num_basis == 4 and model.config.language == "en"


@pytest.mark.slow
def test_eval_only_scores_a_saved_model(sample_run):
    result = _check(
        subprocess.run(
            [sys.executable, SCRIPT, "--eval-only", str(sample_run), "--treebank", "sample", "--eval-split", "dev"],
            check=False,
            cwd=ROOT,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
    )
    scores = json.loads(result.stdout.strip().splitlines()[-1])
    best = _metrics(sample_run)["best"]
    assert scores["accuracy"] == pytest.approx(best["accuracy"])
    assert (scores["num_words"], scores["num_sentences"], scores["tag_column"]) == (
        best["num_words"],
        best["num_sentences"],
        "xpos",
    )


@pytest.mark.slow
def test_killed_and_resumed_run_ends_like_an_uninterrupted_one(sample_run, tmp_path):
    """Kill a run (SIGKILL) after its first checkpoint, resume from the latest: same metrics
    and the same final weights as the uninterrupted run."""
    output = tmp_path / "interrupted"
    marker = output / CHECKPOINTS_DIR / "step-40" / TRAINER_STATE
    process = subprocess.Popen(
        _launch_command(*RUN, "--output-dir", str(output)),
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while not marker.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(random.Random(0).uniform(0, 1.5))  # somewhere in the next steps, saves included
    os.killpg(process.pid, signal.SIGKILL)
    assert process.wait() != 0, "the run ended before it could be killed"
    assert not (output / CHECKPOINTS_DIR / "step-120" / TRAINER_STATE).exists()
    # What was saved before the kill is whole: the best model loads.
    from transformers import AutoModelForTokenClassification

    AutoModelForTokenClassification.from_pretrained(output / BEST_MODEL_DIR)

    _check(_launch(*RUN, "--output-dir", str(output), "--resume-from-checkpoint", "latest"))
    reference, resumed = _metrics(sample_run), _metrics(output)
    assert resumed["history"] == reference["history"]
    assert resumed["best"] == reference["best"]
    final = f"{CHECKPOINTS_DIR}/step-120/model.safetensors"
    reference_weights, resumed_weights = load_file(sample_run / final), load_file(output / final)
    assert all(torch.equal(reference_weights[k], resumed_weights[k]) for k in reference_weights)
    assert resumed["padding_ratio"] == reference["padding_ratio"]  # every batch of the run
    # A finished run extends with a larger --max-steps (its derived cool-down follows).
    _check(_launch(*RUN, "--output-dir", str(output), "--resume-from-checkpoint", "latest", "--max-steps", "140"))
    extended = _metrics(output)
    assert [h["step"] for h in extended["history"]] == [40, 80, 120, 140]
    assert extended["history"][:3] == reference["history"]


def _two_process_run(output, max_steps, *extra):
    """The sample recipe, shortened, on two CPU processes (gloo)."""
    steps = ["--max-steps", str(max_steps), "--refine-steps", "10", "--warmup-steps", "10"]
    return _check(
        _launch(
            str(ROOT / "recipes" / "sample.json"),
            *steps,
            *("--num-basis", "2", "--eval-steps", "10", "--save-steps", "20", "--output-dir", str(output)),
            *extra,
            processes=2,
        )
    )


@pytest.mark.slow
def test_two_cpu_processes_save_one_model_and_count_every_dev_sentence_once(tmp_path):
    from transformers import AutoModelForTokenClassification

    output = tmp_path / "two_processes"
    result = _two_process_run(output, 20)
    dev = load_treebank("sample")["validation"]
    metrics = _metrics(output)
    assert metrics["num_processes"] == 2
    assert metrics["arguments"]["batch_size"] == 64  # the recipe's batch over both processes
    for entry in metrics["history"]:
        assert entry["num_sentences"] == len(dev)
        assert entry["num_words"] == sum(len(tokens) for tokens in dev["tokens"])
    assert metrics["history"][-1]["num_basis"] == 2
    states = (output / CHECKPOINTS_DIR / "step-20").glob("random_states_*")
    assert sorted(p.name for p in states) == [
        "random_states_0.pkl",
        "random_states_1.pkl",
    ]
    assert "Traceback" not in result.stderr and math.isfinite(metrics["best"]["train_loss"])
    # Replacing that run, the second process writes into the first one's staging folder;
    # in the end one run folder is left, holding one model that loads.
    _two_process_run(output, 20, "--overwrite-output-dir", "--save-strategy", "no", "--seed", "1")
    assert [p.name for p in tmp_path.iterdir()] == ["two_processes"]
    assert _metrics(output)["arguments"]["seed"] == 1
    assert not list((output / CHECKPOINTS_DIR).glob("*"))  # --save-strategy no
    assert not [p for p in output.rglob("*") if "staging" in p.name or p.name.endswith(".tmp")]
    model = AutoModelForTokenClassification.from_pretrained(output)
    assert model.config.num_basis == 2
    assert (output / "model.safetensors").read_bytes() == (output / BEST_MODEL_DIR / "model.safetensors").read_bytes()


def test_one_process_launched_for_several_is_refused(monkeypatch):
    """``accelerate launch --num_processes 2`` without ``--multi_gpu`` where there is no GPU
    starts the script alone, in the environment of Accelerate's simple launcher."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils.launch import prepare_simple_launcher_cmd_env

    from cont_transformer.training.accelerator import check_started_processes

    monkeypatch.delenv("MASTER_ADDR", raising=False)
    flags = ["--cpu", "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
    for processes in (2, 1):
        args, _, _ = _validate_launch_command(
            launch_command_parser().parse_args([*flags, "--num_processes", str(processes), SCRIPT])
        )
        _, environ = prepare_simple_launcher_cmd_env(args)
        if processes == 1:
            check_started_processes(environ)
            continue
        with pytest.raises(ValueError, match=r"only with --multi_gpu \(accelerate launch --multi_gpu"):
            check_started_processes(environ)
        check_started_processes({**environ, "WORLD_SIZE": "2"})  # as torchrun starts each of them


def test_eval_only_refuses_another_model_type(tmp_path, capsys):
    bert = tmp_path / "bert"
    bert.mkdir()
    (bert / "config.json").write_text(json.dumps({"model_type": "bert"}))
    spec = importlib.util.spec_from_file_location("train_pos", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    with pytest.raises(SystemExit) as exit_info:
        run_cli(script.main, ["--eval-only", str(bert)])
    assert exit_info.value.code == 2
    assert f"error: {bert} holds a 'bert' model, not a 'cont_transformer' tagger" in capsys.readouterr().err


@pytest.mark.slow
def test_compiled_training_equals_eager_with_a_bounded_number_of_graphs(tmp_path):
    """--torch-compile (aot_eager here: Inductor takes minutes to warm up on a CPU) gives the
    eager run's losses and accuracies; batches padded to the data's length buckets keep the
    compiled graphs to a few per K and N_T, across refinements."""
    # No randomness in the step (compiled, a row has one word slot per token; eager, as
    # many as its words: the same draws would land elsewhere).
    common = {
        "treebank": "sample",
        "max_steps": 8,
        "eval_steps": 4,
        "save_steps": 8,
        "final_num_basis": 2,
        "refine_steps": "4",
        "length_buckets": 4,
        "word_dropout": 0.0,
        "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0,
    }
    train(resolve_arguments({**common, "output_dir": str(tmp_path / "eager")}))
    train(
        resolve_arguments(
            {
                **common,
                "output_dir": str(tmp_path / "compiled"),
                "torch_compile": True,
                "torch_compile_backend": "aot_eager",
            }
        )
    )
    eager, compiled = _metrics(tmp_path / "eager"), _metrics(tmp_path / "compiled")
    for a, b in zip(eager["history"], compiled["history"], strict=True):
        assert a["accuracy"] == pytest.approx(b["accuracy"], abs=1e-5)
        assert a["train_loss"] == pytest.approx(b["train_loss"], abs=1e-5)
    buckets = compiled["length_buckets"]
    assert 1 <= len(buckets) <= 4 and compiled["padding_ratio"] < 1.5
    # Per K (two: 1, 2): a training graph per bucket, evaluation graphs per bucket and the
    # last, smaller evaluation batch; never one per batch.
    assert compiled["compiled_graphs"] <= 2 * (2 * len(buckets) + 2)
