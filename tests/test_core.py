"""The core: bases, change of basis, integrators, OdeBlock and model transforms."""

import copy
import math
from functools import partial

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint as torch_checkpoint

from cont_transformer import (
    OdeBlock,
    change_basis,
    fit_points,
    get_basis,
    interpolation_matrix,
    odeint,
    projection_matrix,
    refine,
    set_num_steps,
)
from cont_transformer.basis import apply_matrix, combine, combine_stages
from cont_transformer.basis import refine as refine_basis
from cont_transformer.integrators import SCHEMES, stage_times

PIECEWISE = ["piecewise_constant", "piecewise_linear", "discontinuous_linear"]
GRID = np.linspace(0.0, 2.0, 2001)


def _values(basis, coefficients, times=GRID):
    """θ(t) on a grid, from float64 coefficients [K, D]."""
    return basis.functions(times) @ coefficients


def _random(basis, dim=3, seed=0):
    return torch.randn(basis.num_basis, dim, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# --- bases ---------------------------------------------------------------------


@pytest.mark.parametrize("name", PIECEWISE)
@pytest.mark.parametrize("num_basis", [1, 2, 4, 7])
def test_partition_of_unity(name, num_basis):
    if name == "discontinuous_linear" and num_basis % 2:
        num_basis += 1
    basis = get_basis(name, num_basis, time_horizon=2.0)
    for side in ("right", "left"):
        phi = basis.functions(GRID, side)
        assert torch.allclose(phi.sum(1), torch.ones(len(GRID), dtype=torch.float64), atol=1e-12)
        assert (phi != 0).sum(1).max() <= 2


def test_compact_support_terms_and_sides():
    basis = get_basis("piecewise_constant", 4)
    assert basis.terms(0.5, "right") == [(2, 1.0)]
    assert basis.terms(0.5, "left") == [(1, 1.0)]
    assert basis.terms(1.0, "right") == [(3, 1.0)]  # t = T belongs to the last element
    assert basis.terms(0.0, "left") == [(0, 1.0)]
    linear = get_basis("piecewise_linear", 5)
    (k0, w0), (k1, w1) = linear.terms(0.3)
    assert (k0, k1) == (1, 2) and (w0, w1) == pytest.approx((0.8, 0.2))
    assert len(get_basis("discontinuous_linear", 64).terms(0.37)) == 2


def test_evaluate_matches_dense_functions():
    basis = get_basis("discontinuous_linear", 6, time_horizon=2.0)
    coefficients = _random(basis)
    for t in (0.0, 0.3, 2 / 3, 1.999, 2.0):
        for side in ("right", "left"):
            dense = basis.functions([t], side) @ coefficients
            assert torch.allclose(basis.evaluate(coefficients, t, side), dense[0])


def test_single_term_evaluation_is_a_view():
    coefficients = torch.randn(8, 3)
    out = get_basis("piecewise_constant", 8).evaluate(coefficients, 0.4)
    assert out.data_ptr() == coefficients[3].data_ptr()


# (source, target) pairs where the target space contains the source space.
NESTED = [
    (("piecewise_constant", 4), ("piecewise_constant", 8)),
    (("piecewise_constant", 3), ("piecewise_constant", 9)),
    (("piecewise_linear", 4), ("piecewise_linear", 7)),
    (("piecewise_linear", 1), ("piecewise_linear", 2)),
    (("piecewise_linear", 3), ("discontinuous_linear", 4)),
    (("piecewise_constant", 4), ("discontinuous_linear", 8)),
    (("discontinuous_linear", 4), ("discontinuous_linear", 8)),
    (("legendre", 3), ("legendre", 5)),
    (("piecewise_linear", 2), ("legendre", 2)),
]
SELF = [
    (b, b) for b in [("piecewise_constant", 5), ("piecewise_linear", 4), ("discontinuous_linear", 6), ("legendre", 4)]
]


@pytest.mark.parametrize("src_spec,dst_spec", NESTED + SELF)
def test_projection_exact_when_target_contains_source(src_spec, dst_spec):
    src, dst = get_basis(*src_spec, time_horizon=2.0), get_basis(*dst_spec, time_horizon=2.0)
    coefficients = _random(src)
    projected = projection_matrix(src, dst) @ coefficients
    assert torch.allclose(_values(dst, projected), _values(src, coefficients), atol=1e-10)


@pytest.mark.parametrize("src_spec,dst_spec", [p for p in NESTED + SELF if "legendre" not in p[0][0] + p[1][0]])
def test_interpolation_exact_when_target_contains_source(src_spec, dst_spec):
    src, dst = get_basis(*src_spec, time_horizon=2.0), get_basis(*dst_spec, time_horizon=2.0)
    coefficients = _random(src)
    interpolated = interpolation_matrix(src, dst) @ coefficients
    assert torch.allclose(_values(dst, interpolated), _values(src, coefficients), atol=1e-12)


@pytest.mark.parametrize(
    "src_spec,dst_spec",
    [
        (("piecewise_constant", 8), ("piecewise_linear", 5)),
        (("piecewise_linear", 9), ("piecewise_constant", 3)),
        (("discontinuous_linear", 10), ("piecewise_linear", 4)),
        (("piecewise_constant", 7), ("discontinuous_linear", 4)),
        (("piecewise_linear", 6), ("legendre", 3)),
    ],
)
def test_projection_matches_brute_force_least_squares_and_is_idempotent(src_spec, dst_spec):
    src, dst = get_basis(*src_spec), get_basis(*dst_spec)
    coefficients = _random(src)
    operator = projection_matrix(src, dst)
    fine = (np.arange(200_000) + 0.5) / 200_000  # midpoint rule on a fine grid
    target = src.functions(fine) @ coefficients
    brute = torch.linalg.lstsq(dst.functions(fine), target).solution
    assert torch.allclose(operator @ coefficients, brute, atol=1e-4)  # the grid errs by O(1/n) at jumps
    once = operator @ coefficients
    assert torch.allclose(projection_matrix(dst, dst) @ once, once, atol=1e-12)


@pytest.mark.parametrize(
    "name,num_basis",
    [
        ("piecewise_constant", 3),
        ("piecewise_linear", 1),
        ("piecewise_linear", 4),
        ("discontinuous_linear", 4),
        ("legendre", 3),
    ],
)
def test_refine_preserves_the_function(name, num_basis):
    basis = get_basis(name, num_basis, time_horizon=2.0)
    refined = refine_basis(basis)
    expected_k = {"piecewise_linear": 2 if num_basis == 1 else 2 * num_basis - 1}.get(name, 2 * num_basis)
    assert refined.num_basis == expected_k
    coefficients = _random(basis)
    assert torch.allclose(
        _values(refined, projection_matrix(basis, refined) @ coefficients), _values(basis, coefficients), atol=1e-10
    )


def test_fit_points_recovers_a_function_in_the_space():
    basis = get_basis("piecewise_linear", 5)
    truth = _random(basis)
    times = np.linspace(0, 1, 17)
    values = basis.functions(times) @ truth
    fitted = fit_points(times, values, basis, previous=torch.zeros_like(truth))
    assert torch.allclose(fitted, truth, atol=1e-10)


def test_fit_points_keeps_previous_without_points():
    basis = get_basis("piecewise_constant", 8)
    previous = _random(basis, seed=1)
    times = [0.05, 0.55]  # N_T = 2 < K: only cells 0 and 4 see points
    values = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=torch.float64)
    fitted = fit_points(times, values, basis, previous)
    assert torch.equal(fitted[0], values[0]) and torch.equal(fitted[4], values[1])
    untouched = [k for k in range(8) if k not in (0, 4)]
    assert torch.equal(fitted[untouched], previous[untouched])
    # A hat function sharing its only point with a neighbour: the fit moves previous least.
    linear = get_basis("piecewise_linear", 3)
    fitted = fit_points([0.0], torch.ones(1, 1, dtype=torch.float64), linear, torch.zeros(3, 1, dtype=torch.float64))
    assert torch.allclose(fitted[:, 0], torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64))


def test_apply_matrix_keeps_dtype_and_shape():
    coefficients = torch.randn(4, 2, 3)
    out = apply_matrix(torch.eye(4, dtype=torch.float64)[:2], coefficients)
    assert out.shape == (2, 2, 3) and out.dtype == torch.float32


# --- integrators ---------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_convergence_order(name):
    # dx/dt = cos(t) x + t, non-autonomous; reference from a fine RK4 run.
    def f(t, x, side):
        return math.cos(t) * x + t

    def solve(num_steps):
        return odeint(f, torch.tensor([1.0], dtype=torch.float64), num_steps=num_steps, time_horizon=2.0, scheme=name)

    exact = solve(4096)
    errors = [(solve(n) - exact).abs().item() for n in (16, 32)]
    order = math.log2(errors[0] / errors[1])
    assert abs(order - SCHEMES[name].order) < 0.3, (name, order)


def test_stage_times_read_the_end_of_a_step_from_inside():
    assert stage_times(2, 1.0, "heun") == [(0.0, "right"), (0.5, "left"), (0.5, "right"), (1.0, "left")]


def test_trajectory_holds_the_state_at_every_step_boundary():
    # dx/dt = x with Euler: x_n = (1 + Δt)^n exactly.
    x0 = torch.tensor([1.0], dtype=torch.float64)
    trajectory = odeint(lambda t, x, side: x, x0, num_steps=4, time_horizon=2.0, return_trajectory=True)
    assert len(trajectory) == 5 and trajectory[0] is x0
    torch.testing.assert_close(torch.cat(trajectory), 1.5 ** torch.arange(5, dtype=torch.float64))
    end = odeint(lambda t, x, side: x, x0, num_steps=4, time_horizon=2.0)
    assert torch.equal(end, trajectory[-1])


def test_checkpointed_steps_give_the_same_values_and_gradients():
    # A non-autonomous rate; every step is recomputed in the backward pass.
    weight = torch.randn(3, 3, dtype=torch.float64, requires_grad=True)
    x0 = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    calls = []

    def f(t, x, side):
        calls.append(t)
        return torch.tanh(x @ weight) * math.cos(t)

    def run(checkpoint):
        calls.clear()
        out = odeint(f, x0, num_steps=3, scheme="rk4", checkpoint=checkpoint)
        grads = torch.autograd.grad(out.square().sum(), (weight, x0))
        return out, grads, len(calls)

    out, grads, evaluations = run(None)
    checkpointed, checkpointed_grads, recomputed = run(partial(torch_checkpoint, use_reentrant=False))
    torch.testing.assert_close(checkpointed, out, atol=0, rtol=0)
    torch.testing.assert_close(checkpointed_grads, grads, atol=1e-14, rtol=0)
    assert evaluations == 12 and recomputed == 24  # 3 steps x 4 stages, then again in the backward


@pytest.mark.parametrize("copy", [False, True])
def test_combine_stages_is_combine_for_every_stage_and_tensor(copy):
    generator = torch.Generator().manual_seed(0)
    coefficients = {"a": torch.randn(5, 3, generator=generator), "b": torch.randn(5, 2, 2, generator=generator)}
    stage_terms = [
        [(1, 1.0)],
        [(0, 0.25), (1, 0.75)],
        [(2, 0.5)],
        [(3, 0.25), (4, 0.75)],
        [(0, 0.2), (3, 0.3), (4, 0.5)],
    ]
    mixed = combine_stages(coefficients, stage_terms, copy=copy)
    for terms, stage in zip(stage_terms, mixed):
        for name, value in coefficients.items():
            torch.testing.assert_close(stage[name], combine(value, terms), atol=1e-6, rtol=0)
    # A single term of weight one is the coefficient itself, unless copied.
    assert (mixed[0]["a"].data_ptr() == coefficients["a"][1].data_ptr()) is not copy
    assert mixed[1]["a"].data_ptr() != coefficients["a"][1].data_ptr()


# --- OdeBlock --------------------------------------------------------------------


class Unit(nn.Module):
    """A small rate with a stateful layer."""

    def __init__(self, width=6, norm=True):
        super().__init__()
        self.norm = nn.BatchNorm1d(width) if norm else nn.Identity()
        self.linear = nn.Linear(width, width)

    def forward(self, x):
        return self.linear(torch.tanh(self.norm(x)))


def _layers_from_block(block: OdeBlock, width=6):
    """Discrete per-layer modules holding coefficient slice n of the block."""
    layers = []
    for n in range(block.num_basis):
        layer = Unit(width)
        layer.load_state_dict(
            {name: (value if value.dim() == 0 else value[n]) for name, value in block.rate.state_dict().items()}
        )
        layers.append(layer)
    return layers


def test_euler_piecewise_constant_is_a_resnet_with_batchnorm():
    torch.manual_seed(0)
    depth = 5
    block = OdeBlock(Unit(), "piecewise_constant", depth, depth, "euler", time_horizon=float(depth))
    layers = _layers_from_block(block)
    x = torch.randn(16, 6)

    def resnet(x):
        for layer in layers:
            x = x + layer(x)
        return x

    block.train()
    [layer.train() for layer in layers]
    assert torch.allclose(block(x), resnet(x), atol=1e-6)
    # Running statistics after the training step.
    for n, layer in enumerate(layers):
        assert torch.allclose(block.rate.norm.running_mean[n], layer.norm.running_mean, atol=1e-6)
        assert torch.allclose(block.rate.norm.running_var[n], layer.norm.running_var, atol=1e-6)
    assert block.rate.norm.num_batches_tracked.item() == layers[0].norm.num_batches_tracked.item() == 1
    block.eval()
    [layer.eval() for layer in layers]
    assert torch.allclose(block(x), resnet(x), atol=1e-6)


def test_states_finer_than_the_weights_give_a_weight_tied_resnet_with_batchnorm_per_layer():
    # One set of weights (K = 1), one BatchNorm state per layer (K_s = N_T = depth).
    torch.manual_seed(0)
    depth = 4
    block = OdeBlock(Unit(), "piecewise_constant", 1, depth, "euler", float(depth), state_num_basis=depth)
    assert block.rate.linear.weight.shape[0] == 1 and block.rate.norm.running_var.shape[0] == depth
    assert "state_num_basis=4" in repr(block)
    layers = []
    for n in range(depth):
        layer = Unit()
        layer.load_state_dict(
            {
                name: value if value.dim() == 0 else value[n if name.startswith("norm.running") else 0]
                for name, value in block.rate.state_dict().items()
            }
        )
        layers.append(layer)
    x = torch.randn(16, 6)

    def resnet(x):
        for layer in layers:
            x = x + layer(x)
        return x

    for _ in range(2):  # two training steps: the states of every layer move on their own
        torch.testing.assert_close(block(x), resnet(x), atol=1e-6, rtol=0)
        x = x * 1.5 + 0.5
    for n, layer in enumerate(layers):
        torch.testing.assert_close(block.rate.norm.running_var[n], layer.norm.running_var, atol=1e-6, rtol=0)
    assert not torch.allclose(block.rate.norm.running_var[0], block.rate.norm.running_var[-1])
    block.eval()
    [layer.eval() for layer in layers]
    torch.testing.assert_close(block(x), resnet(x), atol=1e-6, rtol=0)


def test_change_basis_can_keep_the_states_and_refine_keeps_them_finer():
    torch.manual_seed(0)
    block = OdeBlock(Unit(), "piecewise_constant", 8, 8, "rk4")
    block.train()
    for shift in range(3):
        block(torch.randn(32, 6) * (1 + shift) + shift)
    states = {name: s.clone() for name, s in block.named_states()}
    weights = block.rate.linear.weight.detach().clone()

    block.change_basis(num_basis=4, state_num_basis=8)
    assert block.num_basis == 4 and block.state_num_basis == 8
    for name, state in block.named_states():
        torch.testing.assert_close(state, states[name], atol=0, rtol=0)
    torch.testing.assert_close(block.rate.linear.weight, (weights[0::2] + weights[1::2]) / 2)

    block.refine()  # exact for both: K 4 -> 8, K_s 8 -> 16
    assert (block.num_basis, block.state_num_basis, block.num_steps) == (8, 16, 16)
    torch.testing.assert_close(block.rate.norm.running_var[0::2], states["norm.running_var"], atol=0, rtol=0)
    block.change_basis(num_basis=2)  # the states follow the new K again
    assert block.state_num_basis == 2 and block.rate.norm.running_mean.shape[0] == 2
    torch.testing.assert_close(
        block.rate.norm.running_mean[0], states["norm.running_mean"][:4].mean(0), atol=1e-6, rtol=0
    )


def test_coefficient_slices_are_initialised_independently():
    block = OdeBlock(Unit(), "piecewise_constant", 4)
    weights = block.rate.linear.weight
    assert not torch.equal(weights[0], weights[1])
    assert isinstance(weights, nn.Parameter)
    assert not any(name.startswith("template") for name, _ in block.named_parameters())


def test_gradcheck_through_an_ode_block():
    torch.manual_seed(0)
    block = OdeBlock(Unit(3, norm=False), "piecewise_linear", 3, 4, "rk4").double()
    names = [name for name, _ in block.named_parameters()]
    x = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)

    def run(x, *coefficients):
        return torch.func.functional_call(block, dict(zip(names, coefficients)), (x,))

    params = tuple(p.detach().clone().requires_grad_() for p in block.parameters())
    assert torch.autograd.gradcheck(run, (x, *params))


def test_gradient_reaches_only_used_slices():
    block = OdeBlock(Unit(norm=False), "piecewise_constant", 8, 2, "euler")  # N_T < K
    block(torch.randn(4, 6)).sum().backward()
    used = block.rate.linear.weight.grad.abs().sum((1, 2)) > 0
    assert used.tolist() == [True, False, False, False, True, False, False, False]


@pytest.mark.parametrize("basis, num_basis, num_steps", [("piecewise_linear", 3, 3), ("piecewise_constant", 6, 2)])
def test_checkpointed_block_matches_and_counts_running_statistics_once(basis, num_basis, num_steps):
    torch.manual_seed(0)
    block = OdeBlock(Unit(), basis, num_basis, num_steps, "rk4").train()
    checkpointed = copy.deepcopy(block)
    checkpointed.gradient_checkpointing = True
    template_calls = []
    checkpointed.template.register_forward_pre_hook(lambda *_: template_calls.append(1))
    x = torch.randn(16, 6) + 1.0
    outputs = []
    for model in (block, checkpointed):
        out = model(x)
        out.square().sum().backward()
        outputs.append(out)
    assert len(template_calls) == 2 * 4 * num_steps  # every stage recomputed once
    torch.testing.assert_close(outputs[1], outputs[0], atol=0, rtol=0)
    for (name, p), q in zip(block.named_parameters(), checkpointed.parameters()):
        torch.testing.assert_close(q.grad, p.grad, atol=1e-6, rtol=0, msg=name)
    # The recomputation in the backward pass does not feed the running statistics again.
    for (name, b), c in zip(block.rate.named_buffers(), checkpointed.rate.buffers()):
        torch.testing.assert_close(c, b, atol=0, rtol=0, msg=name)
    assert checkpointed.rate.norm.num_batches_tracked.item() == 1


def test_checkpointing_keeps_only_the_step_boundaries():
    saved = []

    def saved_elements(block):
        saved.clear()
        with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t.numel()) or t, lambda t: t):
            block(torch.randn(64, 6, requires_grad=True)).sum().backward()
        return sum(saved)

    block = OdeBlock(Unit(norm=False), "piecewise_linear", 8, 8, "rk4").train()
    plain = saved_elements(block)
    block.gradient_checkpointing = True
    assert saved_elements(block) <= 8 * 64 * 6 < plain / 5  # one state per step, nothing inside


def test_schedule_tensors_follow_the_module():
    block = OdeBlock(Unit(), "piecewise_constant", 6, 2, "euler").double().train()  # N_T < K
    assert block._used_index.dtype == torch.long and block._fit_operators[0].dtype == torch.float64
    out = copy.deepcopy(block)(torch.randn(8, 6, dtype=torch.float64))
    assert out.dtype == torch.float64 and block.to("meta")._used_index.device.type == "cpu"


def test_stateful_block_with_fewer_steps_than_basis_functions():
    block = OdeBlock(Unit(), "piecewise_linear", 5, 2, "rk4")
    before = block.rate.norm.running_mean.clone()
    block.train()
    block(torch.randn(32, 6) + 3.0)
    after = block.rate.norm.running_mean
    assert torch.isfinite(after).all() and not torch.equal(before, after)
    block.eval()
    set_num_steps(block, 7)
    assert torch.isfinite(block(torch.randn(4, 6))).all()


@pytest.mark.parametrize(
    "src,dst",
    [
        (("piecewise_constant", 4), ("piecewise_constant", 8)),
        (("piecewise_linear", 3), ("discontinuous_linear", 4)),
        (("piecewise_constant", 3), ("piecewise_constant", 3)),
    ],
)
def test_change_basis_of_a_model_keeps_the_output(src, dst):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 6), OdeBlock(Unit(), src[0], src[1], 6, "rk4"), nn.Linear(6, 2))
    model.train()
    model(torch.randn(64, 6))  # give the states some content
    model.eval()
    x = torch.randn(5, 6)
    before = model(x)
    change_basis(model, dst[0], dst[1])
    block = model[1]
    assert block.num_basis == dst[1] and block.basis_name == dst[0]
    assert isinstance(block.rate.linear.weight, nn.Parameter) and block.rate.linear.weight.shape[0] == dst[1]
    assert {id(p) for p in model.parameters()} >= {id(block.rate.linear.weight)}
    assert torch.allclose(model(x), before, atol=1e-5)


def test_refine_model_keeps_the_function_and_doubles_steps():
    torch.manual_seed(0)
    model = OdeBlock(Unit(norm=False), "piecewise_constant", 2, 2, "euler")
    x = torch.randn(3, 6)
    before = model(x)
    refine(model)
    assert (model.num_basis, model.num_steps) == (4, 4)
    set_num_steps(model, 2)  # the old graph on the refined weights
    assert torch.allclose(model(x), before, atol=1e-6)


def test_change_basis_clamps_variances():
    block = OdeBlock(Unit(), "piecewise_constant", 4)
    with torch.no_grad():
        block.rate.norm.running_var.copy_(torch.tensor([1e-3, 10.0, 1e-3, 10.0])[:, None].expand(4, 6))
    change_basis(block, "piecewise_linear", 2)
    assert (block.rate.norm.running_var > 0).all()


def test_change_basis_syncs_config():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.config = type("Config", (), {"basis": "piecewise_constant", "num_basis": 4, "num_steps": 4})()
            self.block = OdeBlock(Unit(), "piecewise_constant", 4)

    model = change_basis(Model(), "piecewise_linear", 3)
    set_num_steps(model, 2)
    assert (model.config.basis, model.config.num_basis, model.config.num_steps) == ("piecewise_linear", 3, 2)


@pytest.mark.parametrize("basis, num_basis, read", [("piecewise_constant", 4, 2), ("piecewise_linear", 5, 3)])
def test_a_block_read_through_a_coarser_basis_is_the_compressed_block(basis, num_basis, read):
    torch.manual_seed(0)
    block = OdeBlock(nn.Sequential(nn.Linear(3, 3), nn.Tanh()), basis, num_basis, scheme="rk4")
    with torch.no_grad():
        for p in block.parameters():
            p.normal_()
    compressed = copy.deepcopy(block)
    compressed.change_basis(num_basis=read)
    compressed.set_num_steps(2)
    block.set_num_steps(2, read_num_basis=read)
    x = torch.randn(5, 3)
    out = block(x)
    torch.testing.assert_close(out, compressed(x))
    out.square().sum().backward()  # the gradient reaches every coefficient of the fine block
    assert all((p.grad.flatten(1).abs().sum(1) > 0).all() for p in block.parameters())
    block.set_num_steps(num_basis)  # the coefficients themselves again
    assert not torch.allclose(block(x), compressed(x))


def test_block_survives_deepcopy_and_passes_extra_arguments():
    import copy

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(2, 2)

        def forward(self, x, scale, *, shift=0.0):
            return self.linear(x) * scale + shift

    block = OdeBlock(Scaled(), "piecewise_constant", 2)
    x = torch.randn(3, 2)
    assert torch.allclose(copy.deepcopy(block)(x, 2.0, shift=1.0), block(x, 2.0, shift=1.0))


# --- bad input -------------------------------------------------------------------


@pytest.mark.parametrize(
    "call,words",
    [
        (lambda: get_basis("cubic", 4), ["basis", "piecewise_constant"]),
        (lambda: get_basis("piecewise_linear", 0), ["num_basis"]),
        (lambda: get_basis("discontinuous_linear", 3), ["num_basis", "even"]),
        (lambda: get_basis("piecewise_linear", 3, time_horizon=0.0), ["time_horizon"]),
        (lambda: OdeBlock(Unit(), num_steps=0), ["num_steps"]),
        (lambda: OdeBlock(Unit(), scheme="rk45"), ["scheme", "rk4"]),
        (
            lambda: interpolation_matrix(get_basis("legendre", 3), get_basis("piecewise_linear", 3)),
            ["control points", "legendre"],
        ),
        (
            lambda: interpolation_matrix(get_basis("piecewise_linear", 3), get_basis("legendre", 3)),
            ["control points", "legendre"],
        ),
        (lambda: change_basis(OdeBlock(Unit()), method="spline"), ["method", "projection"]),
        (lambda: set_num_steps(nn.Linear(2, 2), 3), ["OdeBlock"]),
    ],
)
def test_bad_input_is_named(call, words):
    with pytest.raises(ValueError) as error:
        call()
    for word in words:
        assert word in str(error.value)
