"""Recipes and the command line of every training script.

A recipe is a JSON file of arguments (``recipes/*.json``), HfArgumentParser's JSON-file
convention with the command line on top: ``train_pos.py recipes/en_gum.json --max-steps
100`` reads the file (:func:`read_recipe`: its keys are flags in either spelling, its
values are checked and converted as the flags' values are) and then the flags, so a flag
beats the file. A recipe's values count as given, like flags. A ``--max-steps`` flag that
changes the run's length scales its schedule with it (:func:`scale_schedule`): the
warm-up, refinement and cool-down steps, and how often it evaluates and saves, that no flag
gives (the recipe's, the preset's or the defaults') keep their share of the run, as transformers' ratios do, so ``--max-steps
100`` trains the recipe's whole schedule, refinements included, in 100 steps. A resumed
run (``--resume-from-checkpoint``) keeps the steps its ``run.json`` recorded, so a larger
``--max-steps`` extends it without moving a refinement it has passed.

:func:`argument_parser` is ``HfArgumentParser`` over a run's arguments with transformers'
flag names as aliases (:data:`ALIASES`); :func:`parse_arguments` reads a recipe, then the
flags, and builds the arguments (:mod:`.arguments`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from transformers import HfArgumentParser
from transformers.hf_argparser import string_to_bool

from ..checks import check_count
from .arguments import RunArguments
from .identity import SCHEDULE_STEPS, read_identity
from .schedules import parse_steps, scale_steps

logger = logging.getLogger(__name__)

Arguments = TypeVar("Arguments", bound=RunArguments)

# Trainer's and run_ner.py's flag names for fields these trainers call otherwise: alias ->
# the first of the fields that the arguments have.
ALIASES = {
    "validation_file": ("dev_file",),
    "train_file": ("train_file", "dataset"),
    "dataset_name": ("dataset_name", "treebank", "dataset"),
    "max_seq_length": ("max_length",),
    "evaluation_strategy": ("eval_strategy",),  # transformers 4's spelling
    "activation_checkpointing": ("gradient_checkpointing",),  # transformers 5's spelling
}
# Flags of which a user gives one: given as a flag, one beats the other from a recipe;
# both as flags (or both in a recipe) are refused.
EXCLUSIVE = (("warmup_ratio", "warmup_steps"),)
# The recipes of a source checkout (the README's commands): <repository>/recipes/*.json.
RECIPES = Path(__file__).resolve().parents[2] / "recipes"
RECIPE_SUFFIX = ".json"
RECIPE_HELP = (
    "A first argument FILE.json is a recipe: a JSON object of these arguments "
    "(recipes/*.json); the flags after it override it."
)


def argument_parser(kind: type[RunArguments], **kwargs) -> HfArgumentParser:
    """``HfArgumentParser`` over ``kind`` with the Trainer-style :data:`ALIASES` as further
    spellings of the fields they stand for."""
    parser = HfArgumentParser(kind, **kwargs)
    fields = {f.name for f in dataclasses.fields(kind) if f.init}
    for alias, targets in ALIASES.items():
        target = next((name for name in targets if name in fields), None)
        if target is None or target == alias:
            continue
        action = parser._option_string_actions[f"--{target}"]
        for spelling in (f"--{alias}", f"--{alias.replace('_', '-')}"):
            action.option_strings.append(spelling)
            parser._option_string_actions[spelling] = action
    return parser


def _one_line_error(message: str) -> NoReturn:
    """argparse's error without the usage block (dozens of flags): one line, exit 2."""
    print(f"error: {message} (see --help)", file=sys.stderr)
    sys.exit(2)


_NOT_GIVEN = object()


def _dashed(name: str) -> str:
    return name.replace("_", "-")


def _recipe_value(action: argparse.Action, value: Any) -> Any:
    """``value`` converted as the flag's value would be; ValueError says why not."""
    if value is None:
        if action.default is not None:
            raise ValueError("null is not allowed here")
        return None
    if action.nargs in ("+", "*"):
        if not isinstance(value, list):
            raise ValueError(f"expected a list, got {value!r}")
        return [_one_value(action, item) for item in value]
    return _one_value(action, value)


def _one_value(action: argparse.Action, value: Any) -> Any:
    if isinstance(value, (list, dict)):
        raise ValueError(f"expected one value, got {value!r}")  # noqa: TRY004 (one line, exit 2)
    if isinstance(value, bool) and action.const is None and action.type is not string_to_bool:
        # JSON's true where a number or text belongs would read as 1 or "True": refused.
        wanted = {int: "a whole number", float: "a number"}.get(action.type, "a value, not a switch")
        raise ValueError(f"{json.dumps(value)} is a boolean; this argument takes {wanted}")
    try:
        # As on the command line: the flag's type reads the value's text (bools as they are).
        text = value if isinstance(value, bool) else str(value)
        converted = value if action.type is None else action.type(text)
    except (TypeError, ValueError, argparse.ArgumentTypeError):
        raise ValueError(f"invalid value {value!r}") from None
    if action.choices is not None and converted not in action.choices:
        raise ValueError(f"choose one of {list(action.choices)}, got {value!r}")
    return converted


def read_recipe(path: str | Path, kind: type[RunArguments]) -> dict[str, Any]:
    """The arguments a recipe file holds, as field values of ``kind`` (see the module doc).

    Keys are flag names without the dashes, in either spelling (``max_steps`` or
    ``max-steps``). A missing file, bad JSON, a key that is not a field of ``kind`` or a
    value the flag would refuse raises an error naming the file and the key.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such recipe file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise OSError(f"{path}: cannot read the recipe: {err}") from None
    try:
        recipe = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON: {err}") from None
    if not isinstance(recipe, dict):
        kind_of = type(recipe).__name__
        raise ValueError(f"{path}: a recipe is a JSON object of arguments, got {kind_of}")  # noqa: TRY004
    names = {f.name for f in dataclasses.fields(kind) if f.init}
    flags = argument_parser(kind)._option_string_actions
    values: dict[str, Any] = {}
    for key, value in recipe.items():
        action = flags.get(f"--{key}")
        if action is None or action.dest not in names or action.const is False:
            raise ValueError(f"{path}: {key!r} is not an argument of {kind.__name__}")
        try:
            values[action.dest] = _recipe_value(action, value)
        except ValueError as err:
            raise ValueError(f"{path}: {key}: {err}") from None
    return values


def parse_arguments(
    kind: type[Arguments],
    argv: Sequence[str] | None = None,
    *,
    description: str | None = None,
    preset_defaults: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
    extra: Callable[[HfArgumentParser], None] | None = None,
) -> tuple[Arguments, dict[str, Any]]:
    """Parse ``argv`` into ``kind``; returns the arguments and the values of ``extra`` flags
    (with ``given_fields``: the names of the fields the user gave). A first argument ending
    in ``.json`` is a recipe (:func:`read_recipe`); the flags after it override it.

    ``preset_defaults(given)`` returns defaults for the fields the user did not give
    (``given``: the fields they did). ``extra(parser)`` may add flags that are not fields
    (``--eval-only``); their values come back in the dict.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    recipe: dict[str, Any] = {}
    if argv and argv[0].endswith(RECIPE_SUFFIX):
        recipe = read_recipe(argv.pop(0), kind)

    def build() -> HfArgumentParser:
        parser = argument_parser(kind, description=description, epilog=RECIPE_HELP)
        parser.error = _one_line_error
        if extra is not None:
            extra(parser)
        return parser

    names = [f.name for f in dataclasses.fields(kind) if f.init]
    values = vars(build().parse_args(argv))
    # Parsed again with a marker for every default: a flag given with its default value
    # still counts as given (the first parser's help shows the real defaults).
    marked = build()
    marked.set_defaults(**{name: _NOT_GIVEN for name in names})
    flags = {
        name: values[name]
        for name, value in vars(marked.parse_args(argv)).items()
        if name in names and value is not _NOT_GIVEN
    }
    given = recipe | flags
    for pair in EXCLUSIVE:
        if all(name in given for name in pair):
            if (pair[0] in flags) == (pair[1] in flags):
                raise ValueError(f"{pair[0]}: give --{_dashed(pair[0])} or --{_dashed(pair[1])}, not both")
            given.pop(pair[1] if pair[0] in flags else pair[0])  # the flag beats the recipe
    if "max_steps" in given and "num_train_epochs" in given:
        # --max-steps wins over --num-train-epochs, as in transformers; a flag beats a recipe.
        epochs_win = "num_train_epochs" in flags and "max_steps" not in flags
        loser, winner = ("max_steps", "num_train_epochs") if epochs_win else ("num_train_epochs", "max_steps")
        logger.warning("--%s %s is ignored: --%s is given", _dashed(loser), given.pop(loser), _dashed(winner))
    defaults = dict(preset_defaults(given)) if preset_defaults else {}
    field_defaults = {f.name: f.default for f in dataclasses.fields(kind) if f.init}
    written_for = {**field_defaults, **defaults, **recipe}  # the schedule without the flags
    if "warmup_ratio" in given:  # the warm-up follows the length already
        written_for.pop("warmup_steps", None)
    resumed = {**written_for, **given}
    recorded = _recorded_schedule(written_for, resumed["output_dir"]) if resumed.get("resume_from_checkpoint") else {}
    scaled: dict[str, Any] = {}
    if "max_steps" in flags:
        check_count("max_steps", flags["max_steps"])  # the length the schedule is scaled to
        scaled = scale_schedule(written_for, flags["max_steps"], keep=set(flags) | set(recorded))
        if scaled:  # debug: a refusal further on stays one line; run.json records the values
            logger.debug(
                "--max-steps %d: the schedule written for %d steps is scaled to it: %s",
                flags["max_steps"],
                written_for["max_steps"],
                ", ".join(f"--{_dashed(name)} {value}" for name, value in scaled.items()),
            )
    scaled |= {name: value for name, value in recorded.items() if name not in flags}
    extra_values = {k: v for k, v in values.items() if k not in names}
    extra_values["given_fields"] = set(given)
    return kind(**{**defaults, **given, **scaled}), extra_values


# How often a run evaluates and saves: scaled with the schedule's steps (SCHEDULE_STEPS; at
# least every step; 0, no checkpoints, stays 0), but free to change when a run is resumed.
INTERVAL_STEPS = ("eval_steps", "save_steps")


def _recorded_schedule(written_for: Mapping[str, Any], output_dir: str) -> dict[str, Any]:
    """The :data:`SCHEDULE_STEPS` that the run being resumed in ``output_dir`` recorded
    (scaled or not when it started), for those ``written_for`` sets: a resumed run, extended
    or not, keeps the steps it was planned with (a default the length derives, the
    cool-down's None, follows the new length)."""
    identity = read_identity(output_dir)
    recorded = identity["arguments"] if identity else {}
    schedule = {
        name: recorded[name] for name in SCHEDULE_STEPS if name in recorded and written_for.get(name) is not None
    }
    if isinstance(schedule.get("refine_steps"), list):  # JSON's list of the recorded tuple
        schedule["refine_steps"] = ",".join(map(str, schedule["refine_steps"])) or "none"
    return schedule


def scale_schedule(written_for: Mapping[str, Any], max_steps: int, keep: set[str] = frozenset()) -> dict[str, Any]:
    """The :data:`SCHEDULE_STEPS` of ``written_for`` (values of a run of
    ``written_for["max_steps"]`` steps) scaled to a run of ``max_steps``, those in ``keep``
    and those absent or None left out: each keeps its share of the run (rounded;
    refinements stay distinct steps >= 1). ``{}`` when the length is unchanged."""
    length = written_for.get("max_steps")
    if not isinstance(length, int) or length < 1 or length == max_steps:
        return {}  # no length to scale from (a recipe's bad max_steps is replaced by the flag)
    ratio = max_steps / length
    scaled: dict[str, Any] = {}
    for name in SCHEDULE_STEPS + INTERVAL_STEPS:
        value = written_for.get(name)
        if name in keep or value is None:
            continue
        if name == "refine_steps":
            steps = scale_steps(parse_steps(value), ratio)
            if steps:
                scaled[name] = ",".join(map(str, steps))
        elif name in INTERVAL_STEPS:
            if isinstance(value, int) and value > 0:
                scaled[name] = min(max(round(value * ratio), 1), max_steps)
        else:
            scaled[name] = min(round(value * ratio), max_steps)
    return scaled
