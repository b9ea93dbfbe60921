"""Token accuracy over words, as a local `evaluate` metric module.

`evaluate.load("accuracy")` needs the Hugging Face Hub; this module is loaded by
path instead (`evaluate.load(".../metrics/token_accuracy")`) and works offline.
It must stay self-contained: `evaluate` copies this one file into its module
cache, so it can import nothing from the package.

Accuracy is the fraction of scored words whose predicted tag id equals the
reference id. References equal to -100 (padding, truncated positions,
sub-word continuations) are not scored. Any other reference id is scored, so a
negative id such as -1, which the data module uses for dev/test tags unseen in
train, always counts as an error.
"""

import datasets
import evaluate

IGNORE_INDEX = -100

_DESCRIPTION = "Token-level accuracy of tag predictions over words, ignoring references of -100."

_KWARGS_DESCRIPTION = """
Args:
    predictions: predicted tag ids, either one flat list of ints or one list per sentence.
    references: reference tag ids in the same layout; -100 marks positions not scored.
Returns:
    accuracy: correct / scored words (0.0 when nothing is scored).
    num_words: number of scored words.
Example:
    >>> metric = evaluate.load("cont_transformer/metrics/token_accuracy")
    >>> metric.compute(predictions=[[1, 2, 0]], references=[[1, 0, -100]])
    {'accuracy': 0.5, 'num_words': 2}
"""


class TokenAccuracy(evaluate.Metric):
    """Accuracy over words with -100 references ignored."""

    def _info(self) -> evaluate.MetricInfo:
        per_sentence = datasets.Features(
            {
                "predictions": datasets.Sequence(datasets.Value("int64")),
                "references": datasets.Sequence(datasets.Value("int64")),
            }
        )
        flat = datasets.Features(
            {"predictions": datasets.Value("int64"), "references": datasets.Value("int64")}
        )
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS_DESCRIPTION,
            features=[per_sentence, flat],
        )

    def _compute(self, predictions: list, references: list) -> dict[str, float | int]:
        correct = 0
        scored = 0
        for prediction, reference in zip(predictions, references):
            if isinstance(reference, int):
                prediction, reference = [prediction], [reference]
            if len(prediction) != len(reference):
                raise ValueError(
                    f"a prediction has {len(prediction)} tags but its reference has "
                    f"{len(reference)}"
                )
            for predicted, gold in zip(prediction, reference):
                if gold != IGNORE_INDEX:
                    scored += 1
                    correct += predicted == gold
        return {"accuracy": correct / scored if scored else 0.0, "num_words": scored}
