"""The words, tags and label maps of the tests' tiny models: plain data, imported where a test
file needs them at import time (module constants, parametrize lists). The models themselves
are fixtures of conftest.py."""

TAGS = ["DT", "NN", "VB", "IN", "."]
WORDS = ["the", "cat", "dog", "sat", "ran", "on", "a", "mat", "."]


def labels(tags) -> dict:
    """``id2label`` and ``label2id`` of a config over ``tags``."""
    return {"id2label": dict(enumerate(tags)), "label2id": {tag: i for i, tag in enumerate(tags)}}


def save_tagger(tagger, folder):
    """``folder`` made a tagger's folder, as ``Tagger.from_pretrained`` reads it: the model, its
    tokenizer and ``metrics.json`` naming the column it predicts (xpos)."""
    tagger.model.save_pretrained(folder)
    tagger.tokenizer.save_pretrained(folder)
    (folder / "metrics.json").write_text('{"tag_column": "xpos"}')
    return folder
