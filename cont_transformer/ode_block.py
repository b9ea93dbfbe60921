"""The continuous-in-depth copy of any module: an ODE block over a template.

:class:`OdeBlock` owns, for every parameter ``p`` of a template module, a coefficient
tensor ``[K, *p.shape]``, and for every floating-point buffer (BatchNorm running
statistics) a state coefficient tensor of the same form, by default over the same
basis (``state_num_basis`` gives the states their own K). The forward pass integrates
``dx/dt = template(x; θ(t))`` from 0 to T, evaluating θ(t) = Σ_k φ_k(t) θ̂_k at every
Runge–Kutta stage and calling the template with those tensors through
``torch.func.functional_call``. Stateful layers get continuous running statistics
(paper Algorithm 1): in training, each stage updates its buffers as usual, and the
cloud of updated stage states is fitted back onto the basis after the integration.

Each integration step mixes the weights of all its stages at once, in a few
multi-tensor kernels, and can run under activation checkpointing. The forward pass
reads only Python constants and tensors made per schedule (no host synchronisation,
no data-dependent branching), so ``torch.compile`` captures it whole and compiles it
once per input shape, K and N_T (docs/design.md).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from functools import partial

import torch
from torch import nn
from torch.func import functional_call
from torch.utils.checkpoint import checkpoint

from .basis import (
    Basis,
    apply_matrix,
    change_of_basis_matrix,
    combine_stages,
    get_basis,
    point_fit_operators,
    refined_num_steps,
)
from .integrators import check_num_steps, get_scheme, odeint_stepwise, stage_times, step_stage_times

# What _refresh_schedule computes for one (N_T, K read, scheme), kept per key.
_SCHEDULE_FIELDS = (
    "_step_stages",
    "_step_keys",
    "_stage_terms",
    "_state_terms",
    "_used_index",
    "_param_terms",
    "_fit_operators",
)
# State buffers that must stay positive after a change of basis.
POSITIVE_STATES = ("running_var",)
_MIN_VARIANCE = 1e-8


def _state_basis_for(basis: Basis, state_num_basis: int | None) -> Basis:
    """The states' basis: ``basis`` itself (shared) unless ``state_num_basis`` names
    another K, then the same family with that K."""
    if state_num_basis is None or state_num_basis == basis.num_basis:
        return basis
    return get_basis(basis.name, state_num_basis, basis.time_horizon)


class Coefficients(nn.Module):
    """Mirror of one template submodule: its parameters and buffers with a leading K axis.

    ``template_cls`` records the mirrored module's class, so initialisers can treat
    the coefficients of a ``Linear`` like a ``Linear``'s weights.
    """

    def __init__(self, template_cls: type[nn.Module]):
        super().__init__()
        self.template_cls = template_cls

    def extra_repr(self) -> str:
        return self.template_cls.__name__


def _mirror(module: nn.Module) -> Coefficients:
    mirror = Coefficients(type(module))
    for name, child in module.named_children():
        mirror.add_module(name, _mirror(child))
    return mirror


def _reset(template: nn.Module) -> None:
    for module in template.modules():
        reset = getattr(module, "reset_parameters", None)
        if callable(reset):
            reset()


class OdeBlock(nn.Module):
    """Integrates ``dx/dt = template(x, *args; θ(t))`` over depth-time ``[0, time_horizon]``.

    Args:
        template: the rate function R as an ordinary module; it must map ``x`` to a
            tensor of the same shape. Its own parameters are not used (nor
            registered): the block works on a copy of it and owns coefficients named
            after its parameters and buffers.
        basis: name of the basis in :data:`cont_transformer.basis.BASES`.
        num_basis: K, the number of basis functions.
        num_steps: N_T, the number of integration steps (default: K).
        scheme: name of the Runge–Kutta scheme in
            :data:`cont_transformer.integrators.SCHEMES`.
        time_horizon: T.
        state_num_basis: K of the state coefficients (running statistics), default K.
            States are buffers, not parameters: keeping them finer than the weights
            after a compression costs no parameters, and the statistics of a state
            x(t) often vary with depth faster than the weights do.

    Shapes: ``forward(x, *args, return_trajectory=False, **kwargs)`` takes ``x`` of
    any shape the template accepts and returns the same shape (with
    ``return_trajectory``, the N_T + 1 states at the step boundaries); extra arguments
    (an attention mask) pass through to every template call.

    Activation checkpointing: set ``gradient_checkpointing = True`` (transformers'
    ``gradient_checkpointing_enable()`` does it for every block of a model) and, in
    training, each integration step is recomputed in the backward pass instead of
    keeping its activations; ``_gradient_checkpointing_func`` is the checkpoint
    function (non-reentrant ``torch.utils.checkpoint.checkpoint`` by default).
    """

    def __init__(
        self,
        template: nn.Module,
        basis: str = "piecewise_constant",
        num_basis: int = 1,
        num_steps: int | None = None,
        scheme: str = "euler",
        time_horizon: float = 1.0,
        state_num_basis: int | None = None,
    ):
        super().__init__()
        template = copy.deepcopy(template)
        self._basis = get_basis(basis, num_basis, time_horizon)
        self._state_basis = _state_basis_for(self._basis, state_num_basis)
        get_scheme(scheme)
        self.scheme = scheme
        self._num_steps = check_num_steps(num_basis if num_steps is None else num_steps)
        self._read_basis: Basis | None = None  # see set_num_steps
        self._schedules: dict[tuple[int, int | None, str], dict] = {}  # see _refresh_schedule
        self.rate = _mirror(template)
        self._init_coefficients(template)
        # Kept outside the module tree, on the meta device: every tensor it uses comes
        # from the block's coefficients through functional_call.
        self.__dict__["template"] = template.to("meta")
        # transformers' gradient_checkpointing_enable() sets both on every module that has them.
        self.gradient_checkpointing = False
        self._gradient_checkpointing_func = partial(checkpoint, use_reentrant=False)
        self._refresh_schedule()

    def _init_coefficients(self, template: nn.Module) -> None:
        """Slice k of every coefficient gets its own draw of the template's initialiser."""
        num_basis = self.num_basis
        params = dict(template.named_parameters())
        floats = {n: b for n, b in template.named_buffers() if b.is_floating_point()}
        coefficients = {
            name: torch.empty(num_basis, *p.shape, dtype=p.dtype, device=p.device) for name, p in params.items()
        }
        for k in range(num_basis):
            if k > 0:
                _reset(template)
            with torch.no_grad():
                for name, p in params.items():
                    coefficients[name][k].copy_(p)
        for name, value in coefficients.items():
            container, leaf = self._container(name)
            container.register_parameter(leaf, nn.Parameter(value, requires_grad=params[name].requires_grad))
        for name, buffer in template.named_buffers():
            container, leaf = self._container(name)
            if name in floats:
                # The first slice's initial state (BatchNorm: mean 0, variance 1) for all K.
                buffer = buffer.detach().unsqueeze(0).repeat(self.state_num_basis, *[1] * buffer.dim())
            container.register_buffer(leaf, buffer.detach().clone())

    def _container(self, name: str) -> tuple[nn.Module, str]:
        *path, leaf = name.split(".")
        module = self.rate
        for part in path:
            module = getattr(module, part)
        return module, leaf

    # --- the continuous choices --------------------------------------------------
    @property
    def basis(self) -> Basis:
        return self._basis

    @property
    def basis_name(self) -> str:
        return self._basis.name

    @property
    def num_basis(self) -> int:
        return self._basis.num_basis

    @property
    def state_basis(self) -> Basis:
        return self._state_basis

    @property
    def state_num_basis(self) -> int:
        return self._state_basis.num_basis

    @property
    def time_horizon(self) -> float:
        return self._basis.time_horizon

    @property
    def num_steps(self) -> int:
        return self._num_steps

    def set_num_steps(self, num_steps: int, read_num_basis: int | None = None) -> None:
        """Integrate with ``num_steps`` steps from now on (graph shortening or lengthening).

        ``read_num_basis`` (a K of the same basis family) reads the weights as their
        projection onto that basis, the weights of the model compressed to that K, with
        gradients flowing to every coefficient of this one (training a coarse step,
        :mod:`cont_transformer.training.schedules`); the running statistics are read as
        they are. None (the default) reads the coefficients themselves.
        """
        self._num_steps = check_num_steps(num_steps)
        self._read_basis = (
            None
            if read_num_basis in (None, self.num_basis)
            else get_basis(self.basis_name, read_num_basis, self.time_horizon)
        )
        self._refresh_schedule()

    def _refresh_schedule(self) -> None:
        """Precompute, for every stage, its basis terms, and the state-fitting operators.

        The forward pass then only looks up Python constants (friendly to torch.compile:
        a compiled block is specialised to its K and N_T, and recompiles once when
        they change). Schedules are kept per (N_T, K read, scheme), so switching back and forth
        (coarse steps in training) computes each once per basis.
        """
        key = (self._num_steps, None if self._read_basis is None else self._read_basis.num_basis, self.scheme)
        if key in self._schedules:
            for name, value in self._schedules[key].items():
                setattr(self, name, value)
        else:
            self._compute_schedule()
        self._place_schedule(self._device())
        self._schedules[key] = {name: getattr(self, name) for name in _SCHEDULE_FIELDS}

    def _compute_schedule(self) -> None:
        stages = stage_times(self._num_steps, self.time_horizon, self.scheme)
        # Per step: the (t, side) of each stage call, and the distinct ones (RK4 reads
        # its midpoint twice; the weights there are mixed once).
        self._step_stages = [
            tuple(step_stage_times(n, self._num_steps, self.time_horizon, self.scheme)) for n in range(self._num_steps)
        ]
        self._step_keys = [tuple(dict.fromkeys(keys)) for keys in self._step_stages]
        self._stage_terms = self._weight_terms(stages)
        # The running statistics are read as they are, whatever the weights are read as.
        self._state_terms = {(t, side): self._state_basis.terms(t, side) for t, side in stages}
        # Graph shortening (N_T < K) leaves coefficients unused; see _coefficient_views.
        used = sorted({k for terms in self._stage_terms.values() for k, _ in terms})
        self._used_index = None if len(used) == self.num_basis else torch.tensor(used, device="cpu")
        position = {k: i for i, k in enumerate(used)}
        self._param_terms = {key: [(position[k], w) for k, w in terms] for key, terms in self._stage_terms.items()}
        self._fit_operators = None
        if self._has_states():
            times, sides = zip(*stages)
            self._fit_operators = point_fit_operators(times, sides, self._state_basis)  # float64

    def _weight_terms(self, stages) -> dict[tuple[float, str], list[tuple[int, float]]]:
        """Per stage ``(t, side)``, the ``(k, weight)`` whose sum over this block's
        coefficients is the weights there: the basis functions at t, or those of the read
        basis composed with the projection onto it."""
        if self._read_basis is None:
            return {(t, side): self._basis.terms(t, side) for t, side in stages}
        projection = change_of_basis_matrix(self._basis, self._read_basis).double()  # [K_read, K]
        terms = {}
        for t, side in stages:
            weights = sum(value * projection[j] for j, value in self._read_basis.terms(t, side))
            terms[(t, side)] = [(k, float(w)) for k, w in enumerate(weights.tolist()) if abs(w) > 1e-12]
        return terms

    def _device(self) -> torch.device:
        """Where the coefficients live (the CPU while they are still on the meta device)."""
        for p in self.parameters():
            return torch.device("cpu") if p.device.type == "meta" else p.device
        return torch.device("cpu")

    def _place_schedule(self, device: torch.device) -> None:
        """Put the index of the used coefficients and the fitting operators on ``device``.

        They are tensors the forward pass reads: made once per schedule and moved with the
        module (``_apply``), never in the forward pass, where a host-to-device copy would
        stall a GPU and a cache filled on the first call would make torch.compile compile
        twice.
        """
        if self._used_index is not None:
            self._used_index = self._used_index.to(device)
        if self._fit_operators is not None:
            self._fit_operators = tuple(m.to(device) for m in self._fit_operators)

    def _apply(self, fn, recurse: bool = True):
        # .to(), .cuda(), .half(), …: the schedule's tensors follow the coefficients' device
        # (the fitting operators stay float64).
        super()._apply(fn, recurse)
        self._place_schedule(self._device())
        return self

    def _has_states(self) -> bool:
        return any(True for _ in self.named_states())

    # --- tensors -----------------------------------------------------------------
    def named_coefficients(self) -> Iterator[tuple[str, nn.Parameter]]:
        """``(template parameter name, coefficients [K, *shape])``."""
        return self.rate.named_parameters()

    def named_states(self) -> Iterator[tuple[str, torch.Tensor]]:
        """``(template buffer name, state coefficients [K_s, *shape])`` of floating buffers."""
        return ((n, b) for n, b in self.rate.named_buffers() if b.is_floating_point())

    def _named_counters(self) -> Iterator[tuple[str, torch.Tensor]]:
        return ((n, b) for n, b in self.rate.named_buffers() if not b.is_floating_point())

    def train(self, mode: bool = True) -> OdeBlock:
        # The template sits outside the module tree: pass the mode on by hand.
        self.template.train(mode)
        return super().train(mode)

    # --- forward -----------------------------------------------------------------
    def forward(
        self, x: torch.Tensor, *args, return_trajectory: bool = False, **kwargs
    ) -> torch.Tensor | tuple[torch.Tensor, ...]:
        """Integrate from ``x`` = x(0) to x(T); with ``return_trajectory``, return the
        states at the N_T step boundaries, ``(x(t_0), ..., x(t_{N_T}))`` (N_T + 1
        tensors, ``x`` first, x(T) last).

        Each step mixes the weights of all its stages at its start, in a few multi-tensor
        kernels (:func:`~cont_transformer.basis.combine_stages`). With
        ``gradient_checkpointing`` set and in training, each step runs under
        ``_gradient_checkpointing_func`` (default: non-reentrant
        ``torch.utils.checkpoint.checkpoint``): the backward pass recomputes a step's
        stages, weights mixing included, instead of keeping their activations.
        """
        views, param_terms = self._coefficient_views()
        states = dict(self.named_states())
        counters = dict(self._named_counters())
        update_states = self.training and bool(states)
        # The stage states for the fit (paper Algorithm 1), made when the integration
        # ends. A recomputation in the backward pass (activation checkpointing) comes
        # after the fit and updates copies only; `records = None` stops it recording too.
        records: list[dict[str, torch.Tensor]] | None = [] if update_states else None
        stage_counters: dict[str, torch.Tensor] = counters

        def step_rate(n: int) -> Callable[[float, torch.Tensor, str], torch.Tensor]:
            keys = self._step_keys[n]
            tensors = dict(zip(keys, combine_stages(views, [param_terms[key] for key in keys])))
            # The template updates states in place in training: on copies, never on the coefficients.
            step_states = iter(
                combine_stages(states, [self._state_terms[key] for key in self._step_stages[n]], copy=update_states)
            )

            def rate(t: float, x: torch.Tensor, side: str) -> torch.Tensor:
                nonlocal stage_counters
                buffers = {**next(step_states), **counters}
                if update_states:
                    buffers.update({name: c.clone() for name, c in counters.items()})
                    if records is not None:
                        records.append(buffers)
                        stage_counters = buffers
                return functional_call(self.template, {**tensors[(t, side)], **buffers}, (x, *args), kwargs)

            return rate

        step_checkpoint = (
            self._gradient_checkpointing_func
            if self.gradient_checkpointing and self.training and torch.is_grad_enabled()
            else None
        )
        out = odeint_stepwise(
            step_rate,
            x,
            num_steps=self._num_steps,
            time_horizon=self.time_horizon,
            scheme=self.scheme,
            checkpoint=step_checkpoint,
            return_trajectory=return_trajectory,
        )
        if update_states:
            self._store_states(records)
            records = None
            with torch.no_grad():
                for name, counter in counters.items():
                    counter.copy_(stage_counters[name])
        return out

    def _coefficient_views(self) -> tuple[dict, dict]:
        """What the stages read coefficients from, and the terms that address it.

        With autograd, each coefficient tensor is split into views once per forward: a
        stage then touches only its own slices, and the backward assembles one
        ``[K, ...]`` gradient per tensor. Under N_T < K one ``index_select`` of the used
        slices comes first (unbinding all K would cost K views and, in the backward, a
        zero tensor per unused slice), and stages address them by position. Without
        autograd, stages select their slices directly: no copy, no unused views.
        """
        coefficients = dict(self.named_coefficients())
        if not torch.is_grad_enabled():
            return coefficients, self._stage_terms
        if self._used_index is None:
            return {name: p.unbind(0) for name, p in coefficients.items()}, self._stage_terms
        if self._used_index.device != self._device():  # weights loaded straight onto another device
            self._place_schedule(self._device())
        return {name: p.index_select(0, self._used_index).unbind(0) for name, p in coefficients.items()}, (
            self._param_terms
        )

    @torch.no_grad()
    def _store_states(self, records: list[dict[str, torch.Tensor]]) -> None:
        """Fit the recorded stage states back onto the basis (paper Algorithm 1)."""
        if self._fit_operators[0].device != self._device():
            self._place_schedule(self._device())
        fit, keep = self._fit_operators
        for name, state in self.named_states():
            values = torch.stack([record[name] for record in records])
            state.copy_(apply_matrix(fit, values) + apply_matrix(keep, state))

    # --- change of basis ---------------------------------------------------------
    @torch.no_grad()
    def change_basis(
        self,
        basis: str | None = None,
        num_basis: int | None = None,
        method: str = "projection",
        state_num_basis: int | None = None,
    ) -> None:
        """Re-express every coefficient and state in another basis (default: same name / K).

        The states move to ``basis`` with ``state_num_basis`` functions (default: the new
        K, so weights and states share one basis again). Parameters are replaced by new
        ``nn.Parameter`` objects of the new shape, so an optimiser must be rebuilt
        afterwards.
        """
        target = get_basis(
            self.basis_name if basis is None else basis,
            self.num_basis if num_basis is None else num_basis,
            self.time_horizon,
        )
        state_target = _state_basis_for(target, state_num_basis)
        matrix = change_of_basis_matrix(self._basis, target, method)
        state_matrix = change_of_basis_matrix(self._state_basis, state_target, method)
        for name, p in list(self.named_coefficients()):
            container, leaf = self._container(name)
            container.register_parameter(
                leaf, nn.Parameter(apply_matrix(matrix, p.detach()), requires_grad=p.requires_grad)
            )
        for name, state in list(self.named_states()):
            container, leaf = self._container(name)
            new_state = apply_matrix(state_matrix, state)
            if leaf in POSITIVE_STATES:
                new_state.clamp_(min=_MIN_VARIANCE)
            container.register_buffer(leaf, new_state)
        self._basis, self._state_basis = target, state_target
        self._read_basis, self._schedules = None, {}
        self._refresh_schedule()

    def refine(self) -> None:
        """Refine the basis (K→2K, or 2K−1 for piecewise linear) and double N_T, exactly.

        States finer than the weights are refined too.
        """
        refined = self._basis.refine()
        self.change_basis(refined.name, refined.num_basis, "projection", self._state_basis.refine().num_basis)
        self.set_num_steps(refined_num_steps(self._num_steps))

    def extra_repr(self) -> str:
        return (
            f"basis={self.basis_name!r}, num_basis={self.num_basis}, num_steps={self._num_steps}, "
            f"scheme={self.scheme!r}, time_horizon={self.time_horizon}"
            + (f", state_num_basis={self.state_num_basis}" if self.state_num_basis != self.num_basis else "")
        )
