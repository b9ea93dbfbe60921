"""Local `evaluate` metric modules, loaded by path so that no Hub access is needed."""

from pathlib import Path
from typing import Any

import evaluate

METRICS_DIR = Path(__file__).resolve().parent


def load_conll18(**kwargs: Any) -> evaluate.EvaluationModule:
    """Load the CoNLL 2018 UD scorer (see `conll18/conll18.py`):
    ``compute(predictions=[system CoNLL-U text], references=[gold CoNLL-U text])``.

    Keyword arguments go to `evaluate.load`.
    """
    return evaluate.load(str(METRICS_DIR / "conll18"), **kwargs)
