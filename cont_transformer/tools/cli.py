"""The scripts' error handling: a bad argument or file is one line and exit status 2.

:func:`run_cli` runs a script's ``main(argv)``; the package's errors (``ValueError`` for
bad values, ``OSError`` for missing or unreadable files, each naming the argument, file
or line) become ``error: <message>`` on stderr and exit status 2. ``--debug`` anywhere on
the command line shows the traceback instead.
"""

from __future__ import annotations

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
