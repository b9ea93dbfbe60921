"""What makes tagging fast keeps it exact: attention outside training, the precision a
tagger loads in, and the cycle collector paused while tagging."""

import gc
import json
import os

import pytest
import torch
import torch.nn.functional as F
from tiny import labels

from cont_transformer import build_tokenizer
from cont_transformer.pretrained import inference_dtype, native_bfloat16
from cont_transformer.runtime.collection import paused_cycle_collection
from cont_transformer.tagging.tag import Tagger
from cont_transformer.tagging.tag_files import tag_file
from cont_transformer.transformer_rate import attend

WORDS = ["the", "dog", "saw", "a", "cat", ".", "it", "ran"]
TAGS = ["DT", "NN", "VBD", "."]
TEXT = "the dog saw a cat . it ran .\n\nthe cat ran .\n"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, tiny_tagger):
    tokenizer = build_tokenizer(WORDS)
    model = tiny_tagger(vocab_size=len(tokenizer), num_basis=2, **labels(TAGS))
    folder = tmp_path_factory.mktemp("tagger")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    (folder / "metrics.json").write_text(json.dumps({"tag_column": "xpos"}))
    return folder


@pytest.mark.parametrize("masked", [False, True])
def test_attend_is_sdpa(masked):
    torch.manual_seed(0)
    q, k, v = (torch.randn(3, 2, 7, 8) for _ in range(3))  # (batch, heads, seq, head_dim)
    mask = None
    if masked:
        mask = torch.ones(3, 1, 1, 7, dtype=torch.bool)
        mask[0, ..., 5:] = False
        mask[2, ..., 1:] = False
    context, weights = attend(q, k, v, mask)
    torch.testing.assert_close(context, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 2, 7))
    if masked:
        assert bool((weights[0, ..., 5:] == 0).all()) and bool((weights[2, ..., 0] == 1).all())


def test_the_precision_a_tagger_loads_in(model_dir):
    cpu = torch.device("cpu")
    assert inference_dtype(cpu, torch.float32) is torch.float32  # asked for: kept
    assert inference_dtype(cpu) is (torch.bfloat16 if native_bfloat16(cpu) else None)
    assert inference_dtype(torch.device("meta")) is None  # not a CPU: as saved
    default = Tagger.from_pretrained(model_dir, device="cpu")
    exact = Tagger.from_pretrained(model_dir, device="cpu", dtype=torch.float32)
    wanted = torch.bfloat16 if native_bfloat16(cpu) else torch.float32
    assert {p.dtype for p in default.model.parameters()} == {wanted}
    assert {p.dtype for p in exact.model.parameters()} == {torch.float32}
    words = [w.text for s in exact("the dog saw a cat .").sentences for w in s.words]
    assert words == [w.text for s in default("the dog saw a cat .").sentences for w in s.words]


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_paused_inside_and_as_it_was_after(enabled):
    (gc.enable if enabled else gc.disable)()
    try:
        with paused_cycle_collection():
            assert not gc.isenabled()
            with paused_cycle_collection():
                assert not gc.isenabled()
            assert not gc.isenabled()  # the outermost use restores it
        assert gc.isenabled() is enabled
        with pytest.raises(RuntimeError), paused_cycle_collection():
            raise RuntimeError("an error inside")
        assert gc.isenabled() is enabled
    finally:
        gc.enable()


def test_tagging_leaves_the_collector_on_and_tag_file_makes_no_cycles(model_dir, tmp_path):
    tagger = Tagger.from_pretrained(model_dir, device="cpu")
    assert gc.isenabled()
    tagger("the dog saw a cat . it ran .")
    for _ in tagger.pipe(["the dog ran .", "a cat ."], batch_size=1):
        assert gc.isenabled()  # never paused while the caller's code runs
    assert gc.isenabled()
    sources = {"text": tmp_path / "in.txt", "lines": tmp_path / "in.txt", "conllu": tmp_path / "in.conllu"}
    sources["text"].write_text(TEXT, encoding="utf-8")
    tag_file(tagger, sources["text"], sources["conllu"], input_format="text", progress=False)
    for input_format, source in sources.items():
        tag_file(tagger, source, os.devnull, input_format=input_format, progress=False)  # warm caches
        gc.collect()
        gc.disable()
        try:
            tag_file(tagger, source, os.devnull, input_format=input_format, progress=False)
            assert gc.collect() == 0  # nothing left for the collector: pausing it for a stream is safe
        finally:
            gc.enable()
    (tmp_path / "bad.conllu").write_text("1\tthe\n", encoding="utf-8")
    with pytest.raises(ValueError):
        tag_file(tagger, tmp_path / "bad.conllu", os.devnull, input_format="conllu", progress=False)
    assert gc.isenabled()
