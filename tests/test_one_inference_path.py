"""Every door to a tagger predicts through one function: the processor's ``predict_batch``.

The model's forward is allowed only inside that function, so a door with a path of its own
(placeholder labels, rows built again) fails here, whichever it is."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from test_column_training import TINY  # a tagger trained in seconds

import cont_transformer  # noqa: F401 (registers the pipeline task and AutoProcessor)
from cont_transformer.modeling_cont_transformer import ContTransformerForTokenClassification
from cont_transformer.processing_cont_transformer import ContTransformerTaggerProcessor
from cont_transformer.runtime.model_folders import BEST_MODEL_DIR
from cont_transformer.tagging.arguments import resolve_arguments
from cont_transformer.tagging.evaluation import evaluate_saved_model
from cont_transformer.tagging.sample_treebank import write_sample_treebank
from cont_transformer.tagging.tag import Tagger
from cont_transformer.tagging.tag_files import tag_file
from cont_transformer.tagging.trainer import train

TEXT = "The old dog saw a bird. Tom didn't see it!"


@contextmanager
def counted_steps(monkeypatch):
    """The number of ``predict_batch`` calls in the block; a forward pass of the tagger
    outside one fails the test."""
    calls, inside = [], []
    step, forward = ContTransformerTaggerProcessor.predict_batch, ContTransformerForTokenClassification.forward

    def predict_batch(self, *args, **kwargs):
        calls.append(1)
        inside.append(1)
        try:
            return step(self, *args, **kwargs)
        finally:
            inside.pop()

    def guarded_forward(self, *args, **kwargs):
        if self.training:  # a training step
            return forward(self, *args, **kwargs)
        assert inside, "the tagger ran outside the processor's predict_batch"
        return forward(self, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(ContTransformerTaggerProcessor, "predict_batch", predict_batch)
        patch.setattr(ContTransformerForTokenClassification, "forward", guarded_forward)
        yield calls


@pytest.mark.slow
def test_tagger_tag_file_dev_scoring_and_the_pipeline_share_one_predict_step(tmp_path, monkeypatch):
    from transformers import pipeline

    files = write_sample_treebank(tmp_path / "data", num_train=40, num_dev=10)
    arguments = {
        **TINY,
        "treebank": "sample",
        "train_file": [str(files["train"])],
        "dev_file": [str(files["validation"])],
        "output_dir": str(tmp_path / "run"),
    }
    with counted_steps(monkeypatch) as calls:  # dev scoring during training
        train(resolve_arguments(arguments))
    assert calls
    folder = tmp_path / "run" / BEST_MODEL_DIR
    tagger = Tagger.from_pretrained(folder)
    answers = {}
    for door, run in {
        "Tagger": lambda: tagger(TEXT).to_conllu(),
        "tag_file": lambda: tag_file(tagger, text=TEXT, output=tmp_path / "tagged.conllu"),
        "evaluate_saved_model": lambda: evaluate_saved_model(folder, eval_file=[str(files["validation"])]),
        "pipeline": lambda: pipeline(model=str(folder))(TEXT),
    }.items():
        with counted_steps(monkeypatch) as calls:
            answers[door] = run()
        assert calls, f"{door} never called predict_batch"
    # The doors agree: the pipeline's entries are the Tagger's words and columns.
    words = [line.split("\t") for line in answers["Tagger"].splitlines() if line and line[0].isdigit()]
    words = [fields for fields in words if "-" not in fields[0]]
    assert [(e["word"], e["upos"], e["xpos"]) for e in answers["pipeline"]] == [(w[1], w[3], w[4]) for w in words]
    assert (tmp_path / "tagged.conllu").read_text(encoding="utf-8") == answers["Tagger"]
    # AutoProcessor loads the same processor from the folder (processor_config.json), and its
    # model inputs give the Tagger's tags through the same step.
    from transformers import AutoModelForTokenClassification, AutoProcessor

    processor = AutoProcessor.from_pretrained(folder)
    assert type(processor) is ContTransformerTaggerProcessor
    assert (processor.columns, processor.language) == (tagger.processor.columns, tagger.language)
    inputs = processor(text=TEXT)
    model = AutoModelForTokenClassification.from_pretrained(folder, dtype=tagger.model.dtype).eval()  # one precision
    with counted_steps(monkeypatch) as calls:
        ids = processor.predict_batch(model, inputs["input_ids"], inputs["attention_mask"])
    xpos = [
        processor.decode(words, {"xpos": ids["xpos"][row][positions[positions >= 0]].tolist()})["xpos"]
        for row, (words, positions) in enumerate(
            zip([s.words(TEXT) for s in processor.split_text(TEXT)], inputs["word_positions"])
        )
    ]
    assert calls == [1] and xpos == tagger.predict([s.words(TEXT) for s in processor.split_text(TEXT)])
