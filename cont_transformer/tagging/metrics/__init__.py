"""Local `evaluate` metric modules, loaded by path so that no Hub access is needed.

`evaluate` is imported by :func:`load_conll18` only: the algorithm itself
(:mod:`.conll18.ud_eval`) needs the standard library alone, so scoring and tagging load
neither `evaluate` nor `datasets`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import evaluate

METRICS_DIR = Path(__file__).resolve().parent


def load_conll18(**kwargs: Any) -> evaluate.EvaluationModule:
    """Load the CoNLL 2018 UD scorer (see `conll18/conll18.py`):
    ``compute(predictions=[system CoNLL-U text], references=[gold CoNLL-U text])``.

    Keyword arguments go to `evaluate.load`.
    """
    import evaluate

    return evaluate.load(str(METRICS_DIR / "conll18"), **kwargs)
