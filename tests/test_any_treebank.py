"""One command trains any UD treebank: ``--treebank CODE`` finds its release folder under
``--data-dir``/``$UD_DIR``, ``--train-file``/``--dev-file`` replace a recipe's treebank,
``recipes/ud.json`` fits the schedule to the train split's size, ``--max-steps`` scales the
evaluations and saves with the rest, and a column the treebank leaves (nearly) empty is
neither trained nor scored."""

import os
from pathlib import Path

import datasets
import pytest

from cont_transformer.tagging.arguments import FIT_MAX_STEPS, FIT_MIN_STEPS, fitted_schedule, preset_defaults
from cont_transformer.tagging.arguments import TrainingArguments as TaggerArguments
from cont_transformer.tagging.columns import annotated_columns
from cont_transformer.tagging.data import count_words, resolve_treebank, treebank_files
from cont_transformer.training.recipes import RECIPES, parse_arguments

UD_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "ud"


def _sentence(index: int, words: int, xpos: str = "_") -> str:
    lines = [f"# sent_id = {index}", f"# text = {' '.join(['w'] * words)}"]
    lines += [f"{i}\tw\tw\tNOUN\t{xpos}\t_\t0\troot\t_\t_" for i in range(1, words + 1)]
    return "\n".join(lines) + "\n\n"


def _release(root: Path, code: str, train_words: int, name: str = "UD_Test-TB") -> Path:
    """A UD release folder ``root/name`` whose train split has ``train_words`` words."""
    folder = root / name
    folder.mkdir(parents=True)
    sentences, rest = divmod(train_words, 10)
    text = "".join(_sentence(i, 10) for i in range(sentences)) + (_sentence(sentences, rest) if rest else "")
    (folder / f"{code}-ud-train.conllu").write_text(text, encoding="utf-8")
    (folder / f"{code}-ud-dev.conllu").write_text(_sentence(0, 5), encoding="utf-8")
    return folder


def _parse(*argv: str) -> TaggerArguments:
    return parse_arguments(TaggerArguments, list(argv), preset_defaults=preset_defaults)[0]


def test_a_treebank_code_is_found_under_the_data_dir_or_ud_dir(tmp_path, monkeypatch):
    folder = _release(tmp_path, "xx_test", 100)
    assert resolve_treebank("xx_test", tmp_path) == str(folder)
    assert _parse("--treebank", "xx_test", "--data-dir", str(tmp_path)).treebank == str(folder)
    monkeypatch.setenv("UD_DIR", str(tmp_path))
    assert _parse("--treebank", "xx_test").treebank == str(folder)
    assert resolve_treebank("sample") == "sample"
    with pytest.raises(ValueError, match=r"treebank: 'yy_none' has no UD_\*/yy_none-ud-train\*.conllu under"):
        resolve_treebank("yy_none", tmp_path)
    monkeypatch.delenv("UD_DIR")
    with pytest.raises(ValueError, match="give --data-dir or set UD_DIR"):
        _parse("--treebank", "xx_test")


def test_train_and_dev_files_replace_the_recipe_s_treebank(tmp_path, monkeypatch):
    monkeypatch.delenv("UD_DIR", raising=False)
    folder = _release(tmp_path, "xx_test", 100)
    train, dev = str(folder / "xx_test-ud-train.conllu"), str(folder / "xx_test-ud-dev.conllu")
    # en_gum is the recipe's treebank; no UD_DIR is needed when both splits are given.
    files = treebank_files("en_gum", None, {"train": [train], "validation": [dev]})
    assert files == {"train": [Path(train)], "validation": [Path(dev)]}
    args = _parse(str(RECIPES / "en_gum_bf16.json"), "--train-file", train, "--dev-file", dev)
    assert (args.treebank, args.train_file, args.dev_file) == ("en_gum", [train], [dev])


@pytest.mark.parametrize("words", [3000, 40000, 175000, 1_000_000])
def test_the_fitted_schedule_follows_the_train_split_s_words(words):
    fitted = fitted_schedule(words)
    steps = fitted["max_steps"]
    assert FIT_MIN_STEPS <= steps <= FIT_MAX_STEPS
    assert steps == min(max(round(words / 20), FIT_MIN_STEPS), FIT_MAX_STEPS)
    refinements = [int(step) for step in fitted["refine_steps"].split(",")]
    assert refinements == sorted(refinements) and refinements[-1] < steps
    assert 0 < fitted["warmup_steps"] < refinements[-1] and 0 < fitted["cooldown_steps"] < steps
    assert fitted["eval_steps"] == fitted["save_steps"] and 7 <= steps / fitted["eval_steps"] <= 8


def test_the_ud_recipe_fits_the_treebank_and_flags_still_win(tmp_path):
    folder = _release(tmp_path, "xx_test", 60000)
    assert count_words([folder / "xx_test-ud-train.conllu"]) == 60000
    recipe = str(RECIPES / "ud.json")
    args = _parse(recipe, "--treebank", "xx_test", "--data-dir", str(tmp_path))
    expected = fitted_schedule(60000)
    assert args.max_steps == expected["max_steps"] == 3000
    assert (args.warmup_steps, args.cooldown_steps, args.eval_steps) == (
        expected["warmup_steps"],
        expected["cooldown_steps"],
        expected["eval_steps"],
    )
    assert ",".join(map(str, args.refine_steps)) == expected["refine_steps"]
    # --max-steps scales the fitted schedule, evaluations and saves included; a flag given stays.
    short = _parse(recipe, "--treebank", "xx_test", "--data-dir", str(tmp_path), "--max-steps", "300")
    assert (short.max_steps, short.eval_steps, short.save_steps, short.warmup_steps) == (300, 38, 38, 19)
    given = _parse(
        recipe, "--treebank", "xx_test", "--data-dir", str(tmp_path), "--max-steps", "300", "--eval-steps", "7"
    )
    assert given.eval_steps == 7
    # Without a treebank the recipe fits the generated sample.
    assert _parse(recipe).max_steps == FIT_MIN_STEPS


def test_max_steps_scales_evaluations_and_saves_of_any_recipe():
    args = _parse(str(RECIPES / "en_gum_bf16.json"), "--max-steps", "1500")
    assert (args.eval_steps, args.save_steps) == (375, 375)  # 2,000 of 8,000 steps: a quarter


def test_a_column_filled_for_under_one_word_in_a_hundred_is_not_annotated():
    def split(filled: int) -> datasets.Dataset:
        feats = [["Foo=Bar"] * filled + ["_"] * (1000 - filled)]
        return datasets.Dataset.from_dict({"tokens": [["w"] * 1000], "feats": feats, "lemma": [["w"] * 1000]})

    assert annotated_columns(split(5), ("feats", "lemma")) == ("lemma",)  # Thai-TUD's few ExtPos
    assert annotated_columns(split(14), ("feats", "lemma")) == ("feats", "lemma")  # Telugu-MTG's 1.4%


@pytest.mark.skipif(not (UD_DIR / "UD_Thai-TUD").is_dir(), reason="needs ../shared/data/ud")
def test_real_treebanks_resolve_and_fit():
    os.environ.setdefault("UD_DIR", str(UD_DIR))
    thai = _parse(str(RECIPES / "ud.json"), "--treebank", "th_tud", "--data-dir", str(UD_DIR))
    assert thai.treebank == str(UD_DIR / "UD_Thai-TUD")
    assert thai.max_steps == fitted_schedule(62011)["max_steps"]
    marathi = _parse(str(RECIPES / "ud.json"), "--treebank", "mr_ufal", "--data-dir", str(UD_DIR))
    assert marathi.max_steps == FIT_MIN_STEPS


@pytest.mark.parametrize(
    ("readme", "license_text", "expected", "source"),
    [
        ("License: CC BY-SA 4.0\n", "", "cc-by-sa-4.0", "README metadata"),
        ("", "licensed under ... https://creativecommons.org/licenses/by-nc-sa/4.0/", "cc-by-nc-sa-4.0", "LICENSE.txt"),
        ("", "Creative Commons Attribution-NonCommercial- ShareAlike 3.0 Generic", "cc-by-nc-sa-3.0", "LICENSE.txt"),
        (
            "License: CC BY-NC-SA 4.0\n",
            "creativecommons.org/licenses/by-nc-sa/3.0",
            "cc-by-nc-sa-4.0",
            "names cc-by-nc",
        ),
        ("# Summary\n", "All rights reserved.", None, "unknown"),
    ],
)
def test_a_treebank_s_licence_is_read_from_its_metadata_or_licence_or_said_unknown(
    tmp_path, readme, license_text, expected, source
):
    from cont_transformer.tagging.data import treebank_facts

    folder = _release(tmp_path, "xx_test", 20)
    (folder / "README.md").write_text(readme, encoding="utf-8")
    (folder / "LICENSE.txt").write_text(license_text, encoding="utf-8")
    facts = treebank_facts([folder / "xx_test-ud-train.conllu"])
    assert facts.license == expected
    assert source in facts.license_source


def test_auxiliary_columns_join_whatever_columns_the_treebank_annotates():
    from cont_transformer.tagging.trainer import choose_columns

    words = [["w"] * 200]
    train = datasets.Dataset.from_dict(
        {
            "tokens": words,
            "upos": [["NOUN", "VERB"] * 100],
            "xpos": [["_"] * 200],
            "feats": [["Case=Nom", "_"] * 100],
            "lemma": [["_"] * 200],
            "deprel": [["nsubj", "root"] * 100],
        }
    )
    train = train.cast_column("upos", datasets.Sequence(datasets.ClassLabel(names=["NOUN", "VERB"])))
    train = train.cast_column("xpos", datasets.Sequence(datasets.ClassLabel(names=["_"])))
    args = _parse("--auxiliary-columns", "deprel")
    primary, labels = choose_columns(args, train)
    assert (primary, list(labels)) == ("upos", ["upos", "feats", "deprel"])
    with pytest.raises(ValueError, match="auxiliary_columns: give columns among deprel"):
        _parse("--auxiliary-columns", "upos")
