"""Basis functions in depth-time and the exact changes of basis between them.

A continuous weight is θ(t) = Σ_k φ_k(t) θ̂_k on t ∈ [0, T], stored as a coefficient
tensor ``[K, *shape]``. Every basis here is piecewise polynomial on ``E`` equal
elements; on element ``e`` with local coordinate ``s ∈ [0, 1]`` only a few functions
are non-zero (at most two for the piecewise bases), which is what makes evaluation
cost O(|θ|) instead of O(K·|θ|).

An element edge belongs to the element on its right (right-continuity), except
``t = T``, which belongs to the last element. ``side="left"`` asks for the limit from
the left instead: a Runge–Kutta stage at the end of a step reads the basis from
inside that step.

Bases are looked up by name in :data:`BASES` (the strings the config and CLI use).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import torch

from .checks import check_count, check_even_num_basis, check_positive

SIDES = ("right", "left")

# Snaps element positions that float arithmetic left a hair off an edge
# (e.g. t = 3 * 0.1 against edges at multiples of 0.1).
_EDGE_TOLERANCE = 1e-9


class Basis:
    """A piecewise polynomial basis of ``num_basis`` functions on ``[0, time_horizon]``.

    Subclasses define the number of elements, which functions live on an element and
    their values at a local coordinate, the interpolation (control) points and the
    refinement rule.
    """

    name: str = ""
    # Highest polynomial degree on an element, for exact Gauss–Legendre quadrature.
    degree: int = 0

    def __init__(self, num_basis: int, time_horizon: float = 1.0):
        check_count("num_basis", num_basis)
        check_positive("time_horizon", time_horizon)
        self.num_basis = num_basis
        self.time_horizon = float(time_horizon)

    # --- what a subclass defines -------------------------------------------------
    @property
    def num_elements(self) -> int:
        raise NotImplementedError

    def local_functions(self, element: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Indices ``[n, m]`` and values ``[n, m]`` of the functions non-zero on ``element``."""
        raise NotImplementedError

    def control_points(self) -> tuple[np.ndarray, list[str]] | None:
        """Times ``[K]`` with ``θ(t_k) = θ̂_k``, and the side each is read from; None if none."""
        return None

    def refine(self) -> Basis:
        """A basis whose space contains this one, with about twice the resolution."""
        raise NotImplementedError

    # --- shared machinery --------------------------------------------------------
    @property
    def edges(self) -> np.ndarray:
        """Element edges ``[E + 1]`` in float64, from 0 to T."""
        return np.linspace(0.0, self.time_horizon, self.num_elements + 1)

    def locate(self, t: np.ndarray | float, side: str = "right") -> tuple[np.ndarray, np.ndarray]:
        """Element index and local coordinate ``s ∈ [0, 1]`` of each time."""
        if side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, got {side!r}")
        t = np.atleast_1d(np.asarray(t, dtype=np.float64))
        if np.any(t < -_EDGE_TOLERANCE * self.time_horizon) or np.any(t > self.time_horizon * (1 + _EDGE_TOLERANCE)):
            raise ValueError(f"times must lie in [0, {self.time_horizon}], got {t.tolist()}")
        num_elements = self.num_elements
        position = t / self.time_horizon * num_elements
        nearest = np.round(position)
        position = np.where(np.abs(position - nearest) < _EDGE_TOLERANCE, nearest, position)
        if side == "right":
            element = np.floor(position)
        else:
            element = np.ceil(position) - 1
        element = np.clip(element, 0, num_elements - 1).astype(np.int64)
        return element, position - element

    def functions(self, t: np.ndarray | torch.Tensor | float, side: str | Sequence[str] = "right") -> torch.Tensor:
        """Dense values φ_k(t): a float64 tensor ``[n, K]`` for ``n`` times.

        ``side`` is one side for all times or one per time.
        """
        t = np.atleast_1d(np.asarray(t, dtype=np.float64))
        sides = [side] * len(t) if isinstance(side, str) else list(side)
        if len(sides) != len(t):
            raise ValueError(f"got {len(sides)} sides for {len(t)} times")
        dense = np.zeros((len(t), self.num_basis))
        for which in SIDES:
            rows = np.array([i for i, s in enumerate(sides) if s == which], dtype=np.int64)
            if len(rows) == 0:
                continue
            element, s = self.locate(t[rows], which)
            index, value = self.local_functions(element, s)
            np.add.at(dense, (rows[:, None].repeat(index.shape[1], 1), index), value)
        return torch.from_numpy(dense)

    def terms(self, t: float, side: str = "right") -> list[tuple[int, float]]:
        """The non-zero ``(k, φ_k(t))`` at one time: at most two for piecewise bases."""
        element, s = self.locate(t, side)
        index, value = self.local_functions(element, s)
        return [(int(k), float(w)) for k, w in zip(index[0], value[0]) if w != 0.0]

    def evaluate(
        self, coefficients: torch.Tensor | Sequence[torch.Tensor], t: float, side: str = "right"
    ) -> torch.Tensor:
        """θ(t) from coefficients ``[K, *shape]`` (or a sequence of K tensors).

        Touches only the non-zero basis functions; a single term of weight one
        returns the coefficient itself (a view, no copy).
        """
        return combine(coefficients, self.terms(t, side))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Basis)
            and self.name == other.name
            and self.num_basis == other.num_basis
            and self.time_horizon == other.time_horizon
        )

    def __hash__(self) -> int:
        return hash((self.name, self.num_basis, self.time_horizon))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_basis={self.num_basis}, time_horizon={self.time_horizon})"


def combine(coefficients: torch.Tensor | Sequence[torch.Tensor], terms: Sequence[tuple[int, float]]) -> torch.Tensor:
    """Σ w·c_k over ``terms``; one term of weight one returns ``c_k`` untouched."""
    (k, w), rest = terms[0], terms[1:]
    out = coefficients[k] if w == 1.0 else coefficients[k] * w
    for k, w in rest:
        out = torch.add(out, coefficients[k], alpha=w)
    return out


def combine_stages(
    coefficients: Mapping[str, torch.Tensor | Sequence[torch.Tensor]],
    stage_terms: Sequence[Sequence[tuple[int, float]]],
    copy: bool = False,
) -> list[dict[str, torch.Tensor]]:
    """:func:`combine` for several term lists (stages) over several coefficient tensors at once.

    ``coefficients`` maps names to ``[K, *shape]`` tensors (or sequences of K tensors);
    returns, for each term list, ``{name: Σ w·c_k}``. The work is done by multi-tensor
    (``torch._foreach_*``) kernels over every tensor of a stage, so mixing costs a few
    launches whatever the number of tensors:

    * a single term of weight one is the coefficient itself (a view, no kernel) unless
      ``copy``;
    * two terms of weights 1 − w and w (piecewise linear bases) are one ``_foreach_lerp``
      for all the stages that share w;
    * anything else takes one ``_foreach_mul`` per term position and one ``_foreach_add``
      per further term, for all such stages together.
    """
    names = list(coefficients)
    out: list[dict[str, torch.Tensor]] = [{} for _ in stage_terms]
    lerps: dict[float, list[int]] = {}
    general = []
    for s, terms in enumerate(stage_terms):
        (k, w), *rest = terms
        if w == 1.0 and not rest and not copy:
            out[s] = {name: coefficients[name][k] for name in names}
        elif len(rest) == 1 and abs(w + rest[0][1] - 1.0) < 1e-12:
            lerps.setdefault(rest[0][1], []).append(s)
        else:
            general.append(s)
    if not names:
        return out
    for weight, stages in lerps.items():
        starts = [coefficients[name][stage_terms[s][0][0]] for s in stages for name in names]
        ends = [coefficients[name][stage_terms[s][1][0]] for s in stages for name in names]
        _scatter(out, stages, names, torch._foreach_lerp(starts, ends, weight))
    if general:
        _scatter(out, general, names, _weighted_sums(coefficients, [stage_terms[s] for s in general]))
    return out


def _weighted_sums(
    coefficients: Mapping[str, torch.Tensor | Sequence[torch.Tensor]],
    stage_terms: Sequence[Sequence[tuple[int, float]]],
) -> list[torch.Tensor]:
    """Σ w·c_k for every (stage, name) pair, stage-major, with foreach kernels."""
    names = list(coefficients)
    width = len(names)
    sums: list[torch.Tensor] = []
    for j in range(max(len(terms) for terms in stage_terms)):
        rows = [i for i, terms in enumerate(stage_terms) if len(terms) > j]
        tensors = [coefficients[name][stage_terms[i][j][0]] for i in rows for name in names]
        weights = [stage_terms[i][j][1] for i in rows for _ in names]
        products = torch._foreach_mul(tensors, weights)
        if j == 0:  # every stage has a first term
            sums = list(products)
            continue
        positions = [i * width + p for i in rows for p in range(width)]
        for position, total in zip(positions, torch._foreach_add([sums[q] for q in positions], products)):
            sums[position] = total
    return sums


def _scatter(out: list[dict], stages: list[int], names: list[str], tensors: Sequence[torch.Tensor]) -> None:
    width = len(names)
    for i, s in enumerate(stages):
        out[s] = dict(zip(names, tensors[i * width : (i + 1) * width]))


class PiecewiseConstant(Basis):
    """K cells of width T/K; θ̂_k is the value on cell k, read at the cell centre."""

    name = "piecewise_constant"
    degree = 0

    @property
    def num_elements(self) -> int:
        return self.num_basis

    def local_functions(self, element, s):
        return element[:, None], np.ones((len(element), 1))

    def control_points(self):
        centres = (np.arange(self.num_basis) + 0.5) * self.time_horizon / self.num_basis
        return centres, ["right"] * self.num_basis

    def refine(self):
        return PiecewiseConstant(2 * self.num_basis, self.time_horizon)


class PiecewiseLinear(Basis):
    """Continuous hat functions on K nodes at ``linspace(0, T, K)``; K = 1 is a constant."""

    name = "piecewise_linear"
    degree = 1

    @property
    def num_elements(self) -> int:
        return max(self.num_basis - 1, 1)

    def local_functions(self, element, s):
        if self.num_basis == 1:
            return element[:, None] * 0, np.ones((len(element), 1))
        return np.stack([element, element + 1], 1), np.stack([1.0 - s, s], 1)

    def control_points(self):
        if self.num_basis == 1:
            return np.array([0.5 * self.time_horizon]), ["right"]
        return np.linspace(0.0, self.time_horizon, self.num_basis), ["right"] * self.num_basis

    def refine(self):
        return PiecewiseLinear(2 if self.num_basis == 1 else 2 * self.num_basis - 1, self.time_horizon)


class DiscontinuousLinear(Basis):
    """E = K/2 elements, each linear between its own left and right end values."""

    name = "discontinuous_linear"
    degree = 1

    def __init__(self, num_basis: int, time_horizon: float = 1.0):
        super().__init__(num_basis, time_horizon)
        check_even_num_basis(self.name, num_basis)

    @property
    def num_elements(self) -> int:
        return self.num_basis // 2

    def local_functions(self, element, s):
        return np.stack([2 * element, 2 * element + 1], 1), np.stack([1.0 - s, s], 1)

    def control_points(self):
        edges = self.edges
        times = np.stack([edges[:-1], edges[1:]], 1).reshape(-1)
        return times, ["right", "left"] * self.num_elements

    def refine(self):
        return DiscontinuousLinear(2 * self.num_basis, self.time_horizon)


class Legendre(Basis):
    """Global Legendre polynomials P_0 … P_{K-1} on [0, T].

    A smooth alternative with no control points (so interpolation does not apply)
    and no compact support: evaluating it touches all K coefficients.
    """

    name = "legendre"

    @property
    def degree(self) -> int:
        return self.num_basis - 1

    @property
    def num_elements(self) -> int:
        return 1

    def local_functions(self, element, s):
        x = 2.0 * s - 1.0
        values = np.polynomial.legendre.legvander(x, self.num_basis - 1)
        index = np.broadcast_to(np.arange(self.num_basis), values.shape)
        return index, values

    def refine(self):
        return Legendre(2 * self.num_basis, self.time_horizon)


BASES: dict[str, type[Basis]] = {
    cls.name: cls for cls in (PiecewiseConstant, PiecewiseLinear, DiscontinuousLinear, Legendre)
}


def get_basis(name: str, num_basis: int, time_horizon: float = 1.0) -> Basis:
    """The basis registered as ``name`` with ``num_basis`` functions on ``[0, time_horizon]``."""
    if name not in BASES:
        raise ValueError(f"unknown basis {name!r}; choose one of {sorted(BASES)}")
    return BASES[name](num_basis, time_horizon)


def refine(basis: Basis) -> Basis:
    """The refined basis: K→2K (piecewise constant, discontinuous linear), K→2K−1 (piecewise linear)."""
    return basis.refine()


def refined_num_steps(num_steps: int, refinements: int = 1) -> int:
    """N_T after ``refinements`` refinements: every refinement doubles N_T, so the finer
    basis is read on as many steps per element as before."""
    return num_steps * 2**refinements


def initial_num_basis(basis: str, num_basis: int, num_refinements: int) -> int:
    """The K from which ``num_refinements`` refinements of ``basis`` end at ``num_basis``.

    Raises ``ValueError`` when no start reaches ``num_basis`` exactly (e.g. an odd K
    for ``piecewise_constant`` after one refinement), naming the nearest reachable K.
    """
    reachable = {}
    for start in range(1, num_basis + 1):
        try:
            current = get_basis(basis, start)
        except ValueError:  # e.g. odd K for discontinuous_linear
            continue
        for _ in range(num_refinements):
            current = current.refine()
        reachable[current.num_basis] = start
        if current.num_basis >= num_basis:
            break
    if num_basis not in reachable:
        raise ValueError(
            f"num_basis={num_basis} is not reachable with {num_refinements} refinements of "
            f"{basis!r}; reachable final K: {sorted(reachable)}"
        )
    return reachable[num_basis]


def _check_same_horizon(src: Basis, dst: Basis) -> None:
    if not math.isclose(src.time_horizon, dst.time_horizon):
        raise ValueError(f"bases must share time_horizon, got {src.time_horizon} and {dst.time_horizon}")


def interpolation_matrix(src: Basis, dst: Basis) -> torch.Tensor:
    """Operator ``[K_dst, K_src]`` (float64) with θ̂_dst_k = θ_src(t_dst_k)."""
    _check_same_horizon(src, dst)
    for role, basis in (("source", src), ("target", dst)):
        if basis.control_points() is None:
            raise ValueError(
                f"interpolation needs control points, but the {role} basis {basis.name!r} has none; "
                "use method='projection'"
            )
    times, sides = dst.control_points()
    return src.functions(times, sides)


def _quadrature(src: Basis, dst: Basis) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre nodes and weights exact for products of the two bases' functions.

    [0, T] is split at the union of both bases' element edges, so the integrand is one
    polynomial on every sub-cell and the rule is exact.
    """
    edges = np.unique(np.concatenate([src.edges, dst.edges]))
    edges = edges[np.concatenate([[True], np.diff(edges) > _EDGE_TOLERANCE * src.time_horizon])]
    edges[-1] = src.time_horizon
    num_points = max(4, math.ceil((src.degree + dst.degree + 1) / 2), math.ceil((2 * dst.degree + 1) / 2))
    x, w = np.polynomial.legendre.leggauss(num_points)
    left, right = edges[:-1, None], edges[1:, None]
    half = (right - left) / 2
    nodes = (left + right) / 2 + half * x[None, :]
    return nodes.reshape(-1), (half * w[None, :]).reshape(-1)


def projection_matrix(src: Basis, dst: Basis) -> torch.Tensor:
    """Operator ``[K_dst, K_src]`` (float64) of the exact L2 projection min ∫(θ_src − θ_dst)²."""
    _check_same_horizon(src, dst)
    nodes, weights = _quadrature(src, dst)
    phi_dst = dst.functions(nodes)
    phi_src = src.functions(nodes)
    weights = torch.from_numpy(weights)
    mass = phi_dst.T @ (weights[:, None] * phi_dst)
    mixed = phi_dst.T @ (weights[:, None] * phi_src)
    return torch.linalg.solve(mass, mixed)


def change_of_basis_matrix(src: Basis, dst: Basis, method: str = "projection") -> torch.Tensor:
    """The ``[K_dst, K_src]`` operator of ``method`` (``projection`` or ``interpolation``)."""
    if method not in CHANGE_OF_BASIS_METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(CHANGE_OF_BASIS_METHODS)}")
    return CHANGE_OF_BASIS_METHODS[method](src, dst)


CHANGE_OF_BASIS_METHODS = {"projection": projection_matrix, "interpolation": interpolation_matrix}


def apply_matrix(matrix: torch.Tensor, coefficients: torch.Tensor) -> torch.Tensor:
    """Apply a ``[K2, K1]`` operator along the K axis of ``[K1, *shape]`` coefficients."""
    flat = coefficients.reshape(coefficients.shape[0], -1)
    out = matrix.to(device=flat.device, dtype=torch.float64) @ flat.to(torch.float64)
    return out.to(coefficients.dtype).reshape(matrix.shape[0], *coefficients.shape[1:])


def point_fit_operators(
    times: Sequence[float], sides: Sequence[str], basis: Basis
) -> tuple[torch.Tensor, torch.Tensor]:
    """Operators ``(A [K, n], B [K, K])`` with ``fit = A @ values + B @ previous``.

    ``fit`` is the least-squares fit of the points closest to ``previous``: among all
    minimisers of Σ_i |θ(t_i) − y_i|² it changes ``previous`` the least, so a basis
    function with no points in its support keeps its coefficient exactly.
    """
    phi = basis.functions(np.asarray(times, dtype=np.float64), list(sides))
    pseudo_inverse = torch.linalg.pinv(phi)
    keep = torch.eye(basis.num_basis, dtype=torch.float64, device="cpu") - pseudo_inverse @ phi
    keep[keep.abs() < 1e-12] = 0.0
    return pseudo_inverse, keep


def fit_points(
    times: Sequence[float] | torch.Tensor,
    values: torch.Tensor,
    basis: Basis,
    previous: torch.Tensor,
    sides: Sequence[str] | None = None,
) -> torch.Tensor:
    """Least-squares coefficients ``[K, *shape]`` of a point cloud ``{t_i, y_i}``.

    ``values`` is ``[n, *shape]`` for ``n`` times; ``previous`` is ``[K, *shape]``.
    Basis functions without points in their support keep ``previous``.
    """
    times = [float(t) for t in times]
    if len(times) != values.shape[0]:
        raise ValueError(f"got {len(times)} times for {values.shape[0]} values")
    if previous.shape[0] != basis.num_basis or previous.shape[1:] != values.shape[1:]:
        raise ValueError(
            f"previous must have shape {(basis.num_basis, *values.shape[1:])}, got {tuple(previous.shape)}"
        )
    sides = ["right"] * len(times) if sides is None else list(sides)
    fit, keep = point_fit_operators(times, sides, basis)
    return apply_matrix(fit, values) + apply_matrix(keep, previous)
