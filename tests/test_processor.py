"""The tagger's processor: saved with every tagger, loaded by AutoProcessor, and refusing in
one line what it cannot take."""

from __future__ import annotations

import json
import re

import pytest
import torch
from hostile import save_tagger
from transformers import AutoProcessor

import cont_transformer  # noqa: F401 (registers AutoProcessor)
from cont_transformer.pretrained import CustomCodeError
from cont_transformer.processing_cont_transformer import ContTransformerTaggerProcessor
from cont_transformer.tagging.tag import Tagger


@pytest.fixture(scope="module")
def folder(tmp_path_factory, tiny_tagger):
    return save_tagger(tmp_path_factory.mktemp("tagger"), tiny_tagger)


def test_every_saved_tagger_names_its_processor_and_auto_processor_loads_it(folder):
    saved = json.loads((folder / "processor_config.json").read_text())
    assert saved == {
        "processor_class": "ContTransformerTaggerProcessor",
        "auto_map": {"AutoProcessor": "processing_cont_transformer.ContTransformerTaggerProcessor"},
    }
    assert (folder / "processing_cont_transformer.py").is_file()  # carried for remote code
    processor = AutoProcessor.from_pretrained(folder)
    tagger = Tagger.from_pretrained(folder, dtype=torch.float32)
    assert type(processor) is ContTransformerTaggerProcessor
    assert (processor.column, processor.columns, processor.language) == (
        tagger.processor.column,
        tagger.processor.columns,
        tagger.language,
    )
    words = [["the", "dog", "saw", "a", "bird", "."], ["I", "do", "n't", "know", "!"]]
    ids = processor.predict(tagger.model, words)
    assert [processor.decode(w, i)["xpos"] for w, i in zip(words, ids)] == tagger.predict(words)


def test_the_model_inputs_a_processor_gives_tag_as_the_tagger_does(folder):
    tagger = Tagger.from_pretrained(folder, dtype=torch.float32)
    processor = tagger.processor
    text = "the dog saw a bird. I don't know!"
    inputs = processor(text=text)
    assert inputs["input_ids"].shape == inputs["attention_mask"].shape and inputs["sentence"].tolist() == [0, 1]
    with torch.no_grad():
        ids = processor.predict_batch(tagger.model, inputs["input_ids"], inputs["attention_mask"], ["xpos"])
    words = [sentence.words(text) for sentence in processor.split_text(text)]
    tags = [
        processor.decode(w, {"xpos": ids["xpos"][row][positions[positions >= 0]].tolist()})["xpos"]
        for row, (w, positions) in enumerate(zip(words, inputs["word_positions"]))
    ]
    assert tags == tagger.predict(words)


def test_what_the_processor_cannot_take_is_refused_in_one_line(folder, tmp_path):
    processor = ContTransformerTaggerProcessor.from_pretrained(folder)
    for call, message in (
        (lambda: processor(), "takes text= (raw text) or words="),
        (lambda: processor(text="a", words=[["a"]]), "takes text= (raw text) or words="),
        (lambda: processor(text=123), "text: raw text (a str), not int"),
        (lambda: processor(txt="a"), "txt: the tagger's processor takes text= or words="),
    ):
        with pytest.raises(TypeError, match=re.escape(message)):
            call()
    with pytest.raises(ValueError, match="nope: no such model folder$"):
        ContTransformerTaggerProcessor.from_pretrained(tmp_path / "nope")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    for path in folder.iterdir():
        (foreign / path.name).write_bytes(path.read_bytes())
    (foreign / "processor_config.json").write_text('{"auto_map": {"AutoProcessor": "evil.Processor"}}')
    with pytest.raises(CustomCodeError, match="processor_config.json: auto_map names custom code"):
        ContTransformerTaggerProcessor.from_pretrained(foreign)
    (foreign / "processor_config.json").unlink()
    (foreign / "tokenizer.json").unlink()
    with pytest.raises(ValueError, match="foreign: no tokenizer of the tagger loads from it"):
        ContTransformerTaggerProcessor.from_pretrained(foreign)
