"""The conventions a transformers user brings: the pipeline over raw text,
attentions, trainer-style flags in both spellings, a typed package, a card's dev data, a
bf16 run counted in epochs."""

import importlib.util
import json
import math
from pathlib import Path

import pytest
import torch
from hostile import REPO, load_script, run_compress, run_tag, save_tagger, toy_trainer
from test_tag import TAGGER
from transformers import AutoModelForTokenClassification, AutoTokenizer

import cont_transformer
from cont_transformer.training.arguments import RunArguments
from cont_transformer.training.recipes import parse_arguments


def test_the_package_is_typed():
    assert (Path(cont_transformer.__file__).parent / "py.typed").is_file()
    assert "py.typed" in (REPO / "pyproject.toml").read_text()


def test_the_pipeline_reads_raw_text_as_ud_words_one_entry_per_word(tmp_path, tiny_tagger):
    from transformers import pipeline

    from cont_transformer.pipeline_cont_transformer import ContTransformerTaggingPipeline

    folder = save_tagger(tmp_path / "tagger", tiny_tagger, spelling=True)
    model = AutoModelForTokenClassification.from_pretrained(folder)
    with torch.no_grad():  # every word the same tag: what the entity grouping would merge
        model.classifier.bias.fill_(0).data[TAGGER["label2id"]["."]] = 100
    model.save_pretrained(folder)
    text = "The dog barks. Tom didn't see it!"
    words = ["The", "dog", "barks", ".", "Tom", "did", "n't", "see", "it", "!"]
    plain = pipeline("token-classification", model=str(folder))
    tokens = [entry["word"] for entry in plain(text)]  # one entry per token: "barks" is pieces
    assert tokens[:4] == ["The", "dog", "b", "##a"] and tokens.count(".") == 1 and "n't" in tokens
    grouped = pipeline("token-classification", model=str(folder), aggregation_strategy="first")
    assert len(grouped(text)) == 1  # transformers' entity grouping merges equal neighbours
    # The tagger's own pipeline: one entry per UD word, never grouped, every column.
    tagger = pipeline(model=str(folder), pipeline_class=ContTransformerTaggingPipeline)
    entries = tagger(text)
    assert [entry["word"] for entry in entries] == words
    assert {entry[model.config.primary_column or "xpos"] for entry in entries} == {"."}
    assert [text[e["start"] : e["end"]] for e in entries] == words
    # Already-split words pass whole (treebank words are not cut again).
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert tokenizer(["U.S.", "n't", "3.5", "well-known"], is_split_into_words=True).word_ids()[1:5] == [0, 1, 2, 3]


def test_output_attentions_per_evaluation_of_the_rate(tiny_tagger):
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
        ToyTrainer, toy = toy_trainer()
        with pytest.raises(ValueError, match="--fp16: float16 mixed precision needs a GPU"):
            ToyTrainer(toy(tmp_path, fp16=True))
    assert run_tag(["--num_threads", "1", "--fp16", str(tmp_path)], capsys)  # parsed; then one line
    assert "error: " in run_compress([str(tmp_path), "--output_dir", str(tmp_path / "o"), "--num_basis", "2"], capsys)


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
    trainer.start = SimpleNamespace(word_vectors=None)  # a new tagger without static vectors
    facts = trainer.card_facts({"accuracy": 0.85, "xpos": 0.85, "step": 500})
    (result,) = facts["results"]
    assert (result.dataset_name, result.dataset_config, result.split) == ("UD German-GSD", "de_gsd", "dev")
    assert result.metric_name == "XPOS accuracy"
    assert facts["extra"]["training data"].startswith("UD German-LIT") and facts["language"] == "de"
    assert facts["extra"]["dev data"] == "UD German-GSD, 799 sentences"


@pytest.mark.slow
def test_a_bf16_tagger_run_in_epochs_is_recorded_and_its_folder_loads(tmp_path, capsys):
    output = tmp_path / "pos"
    load_script("train_pos").main(
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
    load_script("train_pos").main(["--do_eval", "--output_dir", str(output)])  # evaluates only
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["num_words"] == metrics["best"]["num_words"]
