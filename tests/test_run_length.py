"""A ``--max-steps`` flag over a recipe scales its schedule (training/arguments.py,
``scale_schedule``): the warm-up, refinements and cool-down keep their share of the run, so a
shortened run still reaches the recipe's K and N_T, as transformers' schedules follow
``max_steps``."""

import json
import logging
from pathlib import Path

import pytest

from cont_transformer.language_modeling.arguments import PretrainingArguments
from cont_transformer.tagging.arguments import SAMPLE_DEFAULTS, TrainingArguments, preset_defaults
from cont_transformer.training.identity import record_identity
from cont_transformer.training.recipes import parse_arguments, scale_schedule

RECIPES = Path(__file__).resolve().parents[1] / "recipes"


def tagger(*argv):
    return parse_arguments(TrainingArguments, list(argv), preset_defaults=preset_defaults)[0]


def test_a_shortened_sample_run_refines_to_its_final_k_within_its_steps(caplog):
    with caplog.at_level(logging.DEBUG, logger="cont_transformer"):  # whatever an earlier command set
        args = tagger(str(RECIPES / "sample.json"), "--max-steps", "100")
    assert (args.max_steps, args.warmup_steps, args.refine_steps) == (100, 17, (17, 33, 80))  # 50,100,240 of 300
    schedule = args.refinement_schedule
    assert schedule.sizes(args.max_steps - 1) == (args.final_num_basis, args.final_num_steps) == (8, 8)
    assert "the schedule written for 300 steps is scaled to it" in caplog.text
    assert "at or past max_steps" not in caplog.text


def test_a_recipe_without_the_flag_keeps_its_schedule():
    recipe = json.loads((RECIPES / "en_gum.json").read_text())
    args = tagger(str(RECIPES / "en_gum.json"))
    assert args.max_steps == recipe["max_steps"] and args.cooldown_steps == recipe["cooldown_steps"]
    assert args.refine_steps == tuple(int(s) for s in recipe["refine_steps"].split(","))
    sample = tagger(str(RECIPES / "sample.json"))
    assert sample.refine_steps == (50, 100, 240) and sample.max_steps == SAMPLE_DEFAULTS["max_steps"]


def test_a_short_run_of_a_long_recipe_parses_and_lengthens_too():
    # The recipe's cool-down (1,500 of 4,000 steps) would not fit in 100 steps unscaled.
    short = tagger(str(RECIPES / "en_gum.json"), "--max-steps", "100")
    assert (short.warmup_steps, short.refine_steps, short.cooldown_steps) == (12, (5, 10, 15, 75), 38)
    long = tagger(str(RECIPES / "sample.json"), "--max-steps", "600")
    assert (long.warmup_steps, long.refine_steps) == (100, (100, 200, 480))


def test_flags_given_with_max_steps_are_kept_and_a_late_refinement_is_named(caplog):
    with caplog.at_level(logging.WARNING, logger="cont_transformer"):
        args = tagger(str(RECIPES / "sample.json"), "--max-steps", "100", "--refine-steps", "50,100,240")
    assert args.refine_steps == (50, 100, 240) and args.warmup_steps == 17  # the warm-up still scales
    # Only the refinements at or past the end are named, with the K the run ends at.
    assert "refine_steps 100,240: at or past max_steps=100, so this run ends at K = 2, below --num-basis 8" in (
        caplog.text
    )
    ratio = tagger(str(RECIPES / "sample.json"), "--max-steps", "100", "--warmup-ratio", "0.1")
    assert (ratio.warmup_steps, ratio.refine_steps) == (10, (17, 33, 80))


def test_the_language_model_scales_its_recipe_too():
    args, _ = parse_arguments(PretrainingArguments, [str(RECIPES / "en_text_lm.json"), "--max-steps", "80"])
    assert (args.warmup_steps, args.refine_steps, args.cooldown_steps) == (10, (2, 4, 6, 60), 20)


def test_a_resumed_run_keeps_the_schedule_it_recorded(tmp_path):
    """Resumed (the same command) or extended (a larger --max-steps), a run keeps the steps
    it was planned with; the default cool-down follows the length, as before."""
    first = tagger(str(RECIPES / "sample.json"), "--max-steps", "100", "--output-dir", str(tmp_path))
    record_identity(tmp_path, first.identity(), "data")
    resume = (str(RECIPES / "sample.json"), "--output-dir", str(tmp_path), "--resume-from-checkpoint", "latest")
    for length, cooldown in ((["--max-steps", "100"], 20), (["--max-steps", "200"], 40), ([], 60)):
        args = tagger(*resume, *length)  # without the flag: the recipe's 300 steps
        assert (args.warmup_steps, args.refine_steps, args.cooldown_steps) == (17, (17, 33, 80), cooldown)
    # A new run into another folder scales afresh.
    assert tagger(str(RECIPES / "sample.json"), "--max-steps", "200").refine_steps == (33, 67, 160)


@pytest.mark.parametrize(
    "written_for, max_steps, expected",
    [
        ({"max_steps": 300, "refine_steps": "50,100,240"}, 300, {}),  # the same length
        ({"max_steps": 300, "refine_steps": "50,100,240"}, 2, {"refine_steps": "1,2,3"}),  # distinct steps >= 1
        (
            {"max_steps": 300, "refine_steps": "none", "warmup_steps": 50},
            30,
            {"warmup_steps": 5},
        ),
        ({"max_steps": 10, "cooldown_steps": 10, "warmup_steps": None}, 3, {"cooldown_steps": 3}),
    ],
)
def test_scale_schedule(written_for, max_steps, expected):
    assert scale_schedule(written_for, max_steps) == expected


def test_scale_schedule_keeps_what_flags_give():
    written_for = {"max_steps": 300, "refine_steps": "50,100,240", "warmup_steps": 50}
    assert scale_schedule(written_for, 30, keep={"refine_steps"}) == {"warmup_steps": 5}


@pytest.mark.slow
def test_the_shortened_sample_run_ends_at_the_recipes_k(sample_run_60):
    """``recipes/sample.json --max-steps 60`` (conftest): the best model is at K = N_T = 8."""
    config = json.loads((sample_run_60 / "best" / "config.json").read_text())
    assert (config["num_basis"], config["num_steps"]) == (8, 8)
