"""The scripts' error handling: a bad argument or file is one line and exit status 2.

:func:`run_cli` runs a script's ``main(argv)``; the package's errors (``ValueError`` for
bad values, ``OSError`` for missing or unreadable files, each naming the argument, file
or line) become ``error: <message>`` on stderr and exit status 2. ``--debug`` anywhere on
the command line shows the traceback instead.

The inference scripts (``tag.py``, ``compress.py``) take the flags a transformers user
brings as the trainers do: every ``--dashed-flag`` also as ``--underscore_flag``
(:func:`both_spellings`), and ``--bf16`` / ``--fp16`` autocast (:func:`add_precision_flags`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

DEBUG_FLAG = "--debug"
EXIT_USAGE = 2


def one_line(error: BaseException) -> str:
    """The error's message on one line."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text


def run_cli(main: Callable[[list[str]], object], argv: Sequence[str] | None = None) -> None:
    """Run ``main(argv)`` (default ``sys.argv[1:]``) with one-line errors (see module doc)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = DEBUG_FLAG in argv
    argv = [arg for arg in argv if arg != DEBUG_FLAG]
    try:
        main(argv)
    except (ValueError, OSError) as err:
        if debug:
            raise
        print(f"error: {one_line(err)}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def both_spellings(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Give every ``--dashed-flag`` of ``parser`` (its groups included) the spelling
    ``--dashed_flag`` too, as ``HfArgumentParser`` does for the trainers' flags."""
    for action in list(parser._actions):
        for option in list(action.option_strings):
            alias = "--" + option[2:].replace("-", "_")
            if option.startswith("--") and alias not in parser._option_string_actions:
                action.option_strings.append(alias)
                parser._option_string_actions[alias] = action
    return parser


def add_precision_flags(parser: argparse.ArgumentParser) -> None:
    """``--bf16`` / ``--fp16``: run the model under ``torch.autocast`` in that precision
    (:func:`cont_transformer.training.accelerator.inference_autocast`; fp16 needs a GPU)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--bf16", action="store_true", help="bfloat16 autocast (CPU or GPU)")
    group.add_argument("--fp16", action="store_true", help="float16 autocast (a GPU only)")
