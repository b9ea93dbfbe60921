"""Compiled continuous models: equal to eager, whole graphs, one compilation per (shape, K, N_T).

The backend is ``aot_eager`` (Dynamo's capture and AOT autograd, as Inductor sees them,
without generating kernels): Inductor compiles the four graphs here in over two minutes
on a cold cache on two CPU cores, about 15 s when its cache is warm.
``CONT_TRANSFORMER_COMPILE_BACKEND=inductor pytest tests/test_compile.py`` runs them
through Inductor; ``test_modeling.py::test_torch_compile_matches_eager`` always does.
"""

import copy
import os

import pytest
import torch
from tiny import labels
from torch._dynamo.utils import counters

from cont_transformer import (
    OdeResNetForImageClassification,
    change_basis,
    refine,
    set_num_steps,
)

BACKEND = os.environ.get("CONT_TRANSFORMER_COMPILE_BACKEND", "aot_eager")


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    counters.clear()
    yield
    torch._dynamo.reset()


# The tiny tagger (conftest.py) narrowed to width 8, without dropout.
TAGGER = {
    "vocab_size": 20,
    "hidden_size": 8,
    "intermediate_size": 8,
    "hidden_dropout_prob": 0.0,
    "attention_probs_dropout_prob": 0.0,
    **labels("ABC"),
}


def tagger_batch(seq_len=6, seed=0):
    generator = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(1, 20, (3, seq_len), generator=generator)
    mask = torch.ones_like(input_ids)
    mask[0, seq_len - 2 :] = 0
    return {"input_ids": input_ids, "attention_mask": mask, "labels": input_ids % 3}


def training_step(model, batch):
    """Output of a forward and backward pass, and every gradient."""
    model.zero_grad()
    out = model(**batch)
    out.loss.backward()
    # A compiled module's names start with "_orig_mod."
    return out.logits, {name.removeprefix("_orig_mod."): p.grad for name, p in model.named_parameters()}


def assert_same_step(compiled, eager, batch):
    logits, grads = training_step(compiled, batch)
    expected_logits, expected_grads = training_step(eager, batch)
    torch.testing.assert_close(logits, expected_logits, atol=1e-5, rtol=0)
    for name, grad in expected_grads.items():
        torch.testing.assert_close(grads[name], grad, atol=1e-5, rtol=0, msg=name)


@pytest.mark.slow
def test_compiled_tagger_equals_eager_in_training_and_evaluation(tiny_tagger):
    # Piecewise linear (mixed stage weights), RK4, N_T < K (the used slices selected).
    model = tiny_tagger(**TAGGER, basis="piecewise_linear", num_basis=4, num_steps=2, scheme="rk4")
    compiled = torch.compile(copy.deepcopy(model), backend=BACKEND, fullgraph=True)
    batch = tagger_batch()
    assert_same_step(compiled.train(), model.train(), batch)
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    with torch.no_grad():
        torch.testing.assert_close(compiled.eval()(**inputs).logits, model.eval()(**inputs).logits, atol=1e-5, rtol=0)


@pytest.mark.slow
def test_compiled_ode_resnet_equals_eager_and_updates_the_same_running_statistics(tiny_ode_resnet_config):
    torch.manual_seed(0)
    config = tiny_ode_resnet_config(basis="piecewise_linear", num_steps=2, scheme="midpoint")
    model = OdeResNetForImageClassification(config)
    compiled = torch.compile(copy.deepcopy(model), backend=BACKEND, fullgraph=True)
    batch = {"pixel_values": torch.randn(4, 1, 8, 8), "labels": torch.tensor([0, 1, 2, 1])}
    assert_same_step(compiled.train(), model.train(), batch)
    for (name, expected), actual in zip(model.named_buffers(), compiled.buffers()):
        torch.testing.assert_close(actual, expected, atol=1e-5, rtol=0, msg=name)
    with torch.no_grad():
        pixels = batch["pixel_values"]
        torch.testing.assert_close(compiled.eval()(pixels).logits, model.eval()(pixels).logits, atol=1e-5, rtol=0)


@pytest.mark.slow
def test_compiled_once_per_shape_and_schedule_not_per_batch(tiny_tagger):
    model = tiny_tagger(**TAGGER, num_basis=4, num_steps=2).train()
    # Recompilations are Dynamo's (its guards): the "eager" backend counts them at no cost.
    compiled = torch.compile(model, backend="eager", dynamic=False, fullgraph=True)

    def compilations_after(*seq_lens):
        for seed, seq_len in enumerate(seq_lens):
            training_step(compiled, tagger_batch(seq_len, seed))
        return counters["stats"]["unique_graphs"]

    assert compilations_after(6, 6, 6) == 1  # three batches, one shape
    assert compilations_after(8, 6, 8) == 2  # a second shape, then both cached
    set_num_steps(model, 4)
    assert compilations_after(6, 6) == 3
    change_basis(model, num_basis=2)
    assert compilations_after(6, 6) == 4
    refine(model)  # K and N_T double
    assert compilations_after(6, 8, 6, 8) == 6
