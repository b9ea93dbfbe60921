"""The arguments every training run shares, as a dataclass the scripts parse.

:class:`RunArguments` holds what the scaffold (:mod:`.scaffold`) needs: where to write,
the continuous choices and their refinement, optimisation, evaluation and checkpoint
cadence, resuming, logging. Each trainer's arguments extend it with their own fields.
:func:`parse_arguments` builds the command line from the fields with
``transformers.HfArgumentParser`` (help from each field's ``metadata``), so every field is
a flag in both spellings (``--learning-rate`` and ``--learning_rate``), and a value the
user left out keeps the field's default. Defaults that depend on other flags (a preset)
come from ``preset_defaults``: a mapping from the given arguments to defaults.

A recipe is a JSON file of arguments (``recipes/*.json``), HfArgumentParser's JSON-file
convention with the command line on top: ``train_pos.py recipes/en_gum.json --max-steps
100`` reads the file (:func:`read_recipe`: its keys are flags in either spelling, its
values are checked and converted as the flags' values are) and then the flags, so a flag
beats the file. A recipe's values count as given, like flags.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from transformers import HfArgumentParser

from ..choices import check_basis_name, check_count, check_scheme_name
from .schedules import RefinementSchedule, parse_steps

REPORT_TO = ("none", "tensorboard")
# The recipes of a source checkout (the README's commands): <repository>/recipes/*.json.
RECIPES = Path(__file__).resolve().parents[2] / "recipes"
RECIPE_SUFFIX = ".json"
RECIPE_HELP = (
    "A first argument FILE.json is a recipe: a JSON object of these arguments "
    "(recipes/*.json); the flags after it override it."
)
# Fields a resumed run may change: they do not change what the run computes up to the
# resumed step (max_steps extends a run).
RESUMABLE = frozenset(
    {
        "output_dir", "overwrite_output_dir", "resume_from_checkpoint", "max_steps", "eval_steps",
        "save_steps", "save_total_limit", "push_to_hub", "report_to", "logging_steps",
        "torch_compile", "torch_compile_mode", "torch_compile_backend", "length_buckets", "compression_report", "do_predict", "data_dir",
        "train_file", "dev_file", "dataset", "epochs",
    }
)  # fmt: skip


def _help(text: str, **extra) -> dict:
    return {"metadata": {"help": text, **extra}}


@dataclass
class RunArguments:
    """What every training run needs besides its data and model (see the module docstring)."""

    output_dir: str = field(
        default="runs/run",
        **_help("run folder: best/ (the best model), checkpoints/, metrics.json, run.json"),
    )
    overwrite_output_dir: bool = field(
        default=False, **_help("replace the outputs of an earlier run in --output-dir")
    )
    seed: int = field(default=42, **_help("model initialisation, data order, dropout"))
    batch_size: int = field(
        default=64, **_help("examples per optimiser step, over all processes", aliases=["--train-batch-size"])
    )
    per_device_train_batch_size: int | None = field(
        default=None,
        **_help("examples per process and micro-batch; sets --batch-size to this x processes x "
                "--gradient-accumulation-steps (the transformers convention)"),
    )  # fmt: skip
    gradient_accumulation_steps: int = field(
        default=1, **_help("micro-batches per optimiser step (same gradient, less memory)")
    )
    max_grad_norm: float | None = field(
        default=None, **_help("clip the gradient's global norm to this (default: no clipping)")
    )
    learning_rate: float = field(default=1e-3, **_help("peak learning rate"))
    weight_decay: float = field(default=0.0, **_help("decoupled weight decay"))
    basis: str = field(default="piecewise_constant", **_help("basis of the ODE blocks' weights"))
    num_basis: int = field(default=8, **_help("final K, the number of basis functions"))
    num_steps: int | None = field(
        default=None, **_help("final N_T, integration steps (default: --num-basis)")
    )
    scheme: str = field(default="euler", **_help("Runge-Kutta scheme"))
    time_horizon: float = field(default=1.0, **_help("T, the end of depth-time"))
    max_steps: int = field(default=1000, **_help("optimiser steps to train for"))
    refine_steps: str | None = field(
        default=None,
        **_help("comma-separated steps after which K and N_T are refined ('none': never)"),
    )
    eval_steps: int = field(default=1000, **_help("evaluate every N steps (and at the end)"))
    save_steps: int = field(default=1000, **_help("checkpoint every N steps (and at the end)"))
    save_total_limit: int = field(default=2, **_help("checkpoints kept (the newest)"))
    resume_from_checkpoint: str | None = field(
        default=None, **_help("a checkpoint folder, or 'latest' in --output-dir")
    )
    push_to_hub: str | None = field(
        default=None, **_help("Hub repository id to upload the best model to at the end")
    )
    report_to: str = field(
        default="none",
        **_help("'tensorboard': log losses, dev metrics, learning rate, K and N_T under "
                "--output-dir/logs (pip install 'cont-transformer[tensorboard]')"),
    )  # fmt: skip
    logging_steps: int = field(default=50, **_help("log the training loss every N steps"))
    compression_report: bool = field(
        default=False,
        **_help("after training, score the best model at K/2, K/4, N_T/2, N_T/4 and K, N_T "
                "halved on dev; write compression.md/.json and add the table to its card"),
    )  # fmt: skip
    torch_compile: bool = field(
        default=False, **_help("compile the model with torch.compile (eager where it cannot)")
    )
    torch_compile_mode: str | None = field(
        default=None,
        **_help("torch.compile mode: default, reduce-overhead (CUDA graphs), max-autotune "
                "(default: reduce-overhead on a GPU, default on a CPU)"),
    )  # fmt: skip
    torch_compile_backend: str = field(
        default="inductor", **_help("torch.compile backend (inductor; aot_eager to debug)")
    )

    def __post_init__(self):
        if self.num_steps is None:
            self.num_steps = self.num_basis
        self.refine_steps = parse_steps(self.refine_steps)
        for name in ("batch_size", "gradient_accumulation_steps", "max_steps", "eval_steps",
                     "save_steps", "save_total_limit", "logging_steps"):  # fmt: skip
            check_count(name, getattr(self, name))
        check_count("per_device_train_batch_size", self.per_device_train_batch_size, optional=True)
        check_basis_name("basis", self.basis)
        check_scheme_name("scheme", self.scheme)
        for name in ("learning_rate", "time_horizon"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name}: must be positive, got {getattr(self, name)}")
        if self.weight_decay < 0:
            raise ValueError(f"weight_decay: must be >= 0, got {self.weight_decay}")
        if self.max_grad_norm is not None and not self.max_grad_norm > 0:
            raise ValueError(f"max_grad_norm: must be positive, got {self.max_grad_norm}")
        if self.report_to not in REPORT_TO:
            raise ValueError(f"report_to: choose one of {REPORT_TO}, got {self.report_to!r}")
        self.refinement_schedule  # noqa: B018 (validates K and N_T against the refinements)

    @property
    def refinement_schedule(self) -> RefinementSchedule:
        return RefinementSchedule(self.basis, self.num_basis, self.num_steps, self.refine_steps)

    def identity(self) -> dict[str, Any]:
        """The arguments that determine what the run computes (see :data:`RESUMABLE`)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if k not in RESUMABLE}


Arguments = TypeVar("Arguments", bound=RunArguments)


def _one_line_error(message: str) -> NoReturn:
    """argparse's error without the usage block (dozens of flags): one line, exit 2."""
    print(f"error: {message} (see --help)", file=sys.stderr)
    sys.exit(2)


_NOT_GIVEN = object()


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
    flags = HfArgumentParser(kind)._option_string_actions
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
        parser = HfArgumentParser(kind, description=description, epilog=RECIPE_HELP)
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
    given = recipe | {name: values[name] for name, value in vars(marked.parse_args(argv)).items()
                      if name in names and value is not _NOT_GIVEN}  # fmt: skip
    defaults = dict(preset_defaults(given)) if preset_defaults else {}
    extra_values = {k: v for k, v in values.items() if k not in names}
    extra_values["given_fields"] = set(given)
    return kind(**{**defaults, **given}), extra_values
