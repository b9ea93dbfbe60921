"""Recipes as data: every ``recipes/*.json`` parses into its script's arguments, flags
beat the file, a bad recipe is one line naming the file and key, and the sample recipe
trains end to end through ``scripts/train_pos.py``."""

import importlib.util
import json
from pathlib import Path

import pytest
import torch

from cont_transformer.benchmarks.training import gum_recipe
from cont_transformer.language_modeling.arguments import PretrainingArguments
from cont_transformer.runtime.model_folders import BEST_MODEL_DIR, METRICS_FILE
from cont_transformer.tagging import arguments as tagging
from cont_transformer.tools.cli import run_cli
from cont_transformer.training.recipes import RECIPES, parse_arguments, read_recipe
from image_models import arguments as imaging

ROOT = Path(__file__).resolve().parents[1]
TAGGER = (tagging.TrainingArguments, tagging.preset_defaults)
IMAGES = (imaging.ImageTrainingArguments, imaging.preset_defaults)
LANGUAGE_MODEL = (PretrainingArguments, None)
# Each recipe and the arguments of the script that reads it.
KINDS = {
    "en_gum": TAGGER,
    "en_gum_bf16": TAGGER,
    "de_lit": TAGGER,
    "sample": TAGGER,
    "ud": TAGGER,
    "en_gum_pretrained": TAGGER,
    "en_gum_vectors": TAGGER,
    "en_gum_vectors_self_trained": TAGGER,
    "en_gum_self_trained": TAGGER,
    "en_text_lm": LANGUAGE_MODEL,
    "en_text_lm_gpu": LANGUAGE_MODEL,
    "mnist_small": IMAGES,
    "cifar10_small": IMAGES,
    "cifar10_fast": IMAGES,
}


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _parse(name: str, *flags: str):
    kind, defaults = KINDS[name]
    return parse_arguments(kind, [str(RECIPES / f"{name}.json"), *flags], preset_defaults=defaults)


def test_recipes_are_the_repository_files():
    assert RECIPES == ROOT / "recipes"
    assert {path.stem for path in RECIPES.glob("*.json")} == set(KINDS)


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_recipe_parses_into_valid_arguments(name, tiny_tagger_config, tmp_path, monkeypatch):
    recipe = json.loads((RECIPES / f"{name}.json").read_text())
    if "model_name_or_path" in recipe:  # the language model it fine-tunes, as the pretraining recipe writes it
        from cont_transformer import ContTransformerForMaskedLM

        monkeypatch.chdir(tmp_path)
        # vectors need spelling (and its [UNK])
        spelling = {"word_representation": "word+chars", "unk_token_id": 1} if "word_vectors" in recipe else {}
        ContTransformerForMaskedLM(tiny_tagger_config(**{"word_representation": "word", **spelling})).save_pretrained(
            tmp_path / recipe["model_name_or_path"]
        )
    if "word_vectors" in recipe:  # the vectors it reads, as train_word_vectors.py writes them
        from safetensors.torch import save_file

        from cont_transformer.runtime.model_folders import VECTORS_FILE, WORDS_FILE

        monkeypatch.chdir(tmp_path)
        folder = tmp_path / recipe["word_vectors"]
        folder.mkdir(parents=True)
        save_file({"vectors": torch.zeros(2, 4)}, str(folder / VECTORS_FILE))
        (folder / WORDS_FILE).write_text("a\nb\n", encoding="utf-8")
    args, extra = _parse(name)
    assert extra["given_fields"] == set(recipe)  # every key a field, given like a flag
    assert args.output_dir.startswith("runs/")
    for key, value in recipe.items():
        parsed = getattr(args, key)
        if key == "refine_steps":
            value = () if value == "none" else tuple(int(s) for s in value.split(","))
        assert parsed == value


def test_a_flag_beats_the_recipe_file():
    args, extra = _parse("en_gum", "--max-steps", "3500", "--word_dropout", "1", "--output-dir", "x")
    assert (args.max_steps, args.word_dropout, args.output_dir) == (3500, 1.0, "x")
    # The recipe's schedule, written for 4,000 steps, keeps its shares of the 3,500.
    assert (args.final_num_basis, args.warmup_steps, args.refine_steps, args.cooldown_steps) == (
        16,
        438,
        (175, 350, 525, 2625),
        1312,
    )
    assert {"max_steps", "word_dropout", "treebank"} <= extra["given_fields"]


def test_the_sample_recipe_leaves_the_rest_to_the_sample_defaults():
    args, _ = _parse("sample")
    assert (args.treebank, args.max_steps) == ("sample", tagging.SAMPLE_DEFAULTS["max_steps"])


def test_recipe_keys_in_either_spelling_and_values_checked_like_flags(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"batch-size": "7", "learning_rate": 0.5, "refine-epochs": [1, 2], "augment": false}')
    assert read_recipe(path, imaging.ImageTrainingArguments) == {
        "batch_size": 7,
        "learning_rate": 0.5,
        "refine_epochs": [1, 2],
        "augment": False,
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"max_stepz": 3}', "'max_stepz' is not an argument of TrainingArguments"),
        ('{"eval_only": "runs/gum"}', "'eval_only' is not an argument of TrainingArguments"),
        ('{"max_steps": 3,', "not valid JSON: Expecting property name"),
        ('["--max-steps", "3"]', "a recipe is a JSON object of arguments, got list"),
        ('{"max_steps": "many"}', "max_steps: invalid value 'many'"),
        ('{"max_steps": null}', "max_steps: null is not allowed here"),
        ('{"train_file": "a.conllu"}', "train_file: expected a list, got 'a.conllu'"),
    ],
)
def test_a_bad_recipe_is_one_line_naming_the_file_and_key(tmp_path, capsys, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(SystemExit) as exit_info:
        run_cli(_script("train_pos").main, [str(path)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: ") and message in err and err.count("\n") == 1


def test_a_missing_recipe_names_the_file(capsys):
    with pytest.raises(SystemExit) as exit_info:
        run_cli(_script("train_image").main, ["recipes/no_such_recipe.json"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == "error: recipes/no_such_recipe.json: no such recipe file\n"


def test_the_benchmark_trains_the_gum_recipe_file():
    recipe = read_recipe(RECIPES / "en_gum.json", tagging.TrainingArguments)
    assert gum_recipe() == {
        key: value for key, value in recipe.items() if key not in ("output_dir", "compression_report", "do_predict")
    }
    assert gum_recipe()["treebank"] == "en_gum"


def test_the_sample_recipe_trains_end_to_end(tmp_path, capsys):
    out = tmp_path / "pos"
    flags = [
        "--output-dir",
        str(out),
        "--max-steps",
        "4",
        "--warmup-steps",
        "2",
        "--refine-steps",
        "2",
        "--eval-steps",
        "4",
        "--save-steps",
        "4",
    ]
    run_cli(_script("train_pos").main, [str(RECIPES / "sample.json"), *flags])
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["step"] == 4
    assert (out / METRICS_FILE).is_file()
    config = json.loads((out / BEST_MODEL_DIR / "config.json").read_text())
    assert config["num_basis"] == tagging.SAMPLE_DEFAULTS["final_num_basis"]  # the sample's K, reached
