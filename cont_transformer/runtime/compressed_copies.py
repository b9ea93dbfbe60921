"""Compression without retraining, written once for the training scaffold and the tools.

Paper §5: the weights of a trained model are functions θ(t) = Σ_k φ_k(t) θ̂_k, so a
smaller model follows, without retraining or data, by re-expressing them in a basis with
fewer functions (change of basis), and a faster one by integrating with fewer steps N_T.

This module holds what every user of that shares: the checks of a target
(:func:`check_arguments`, :func:`check_choices`), the transformed copy
(:func:`compressed_copy`), the variants a training run's report scores
(:func:`compression_variants`), the one table of compressed models
(:func:`compression_table`) and the compression section of a model card
(:func:`compression_section`). The training scaffold's report, ``compress.py``
(:mod:`cont_transformer.tools.compression`) and the sweep (:mod:`cont_transformer.tools.sweep`)
all write their tables through it, so a training run's card and ``compress.py``'s agree.
It stands on the core only (bases, transforms).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence

from torch import nn

from ..basis import CHANGE_OF_BASIS_METHODS, get_basis, initial_num_basis
from ..checks import check_count
from ..choices import check_basis_name
from ..transform import change_basis, set_num_steps

# The heading of the compression section of a model card.
SECTION_HEADING = "Compression without retraining"
SECTION_INTRO = (
    "Compressed after training, without retraining or data (Stateful ODE-Nets, §5): a change "
    "of basis of the depth-dependent weights to fewer functions K and/or fewer integration "
    "steps N_T. The drop is in points below the first row."
)


# --- checks ----------------------------------------------------------------------------
# A target K or N_T at most this many times the source's: beyond it, no compression.
MAX_GROWTH = 16


def check_arguments(
    basis: str | None,
    num_basis: int | None,
    num_steps: int | None,
    method: str,
    state_num_basis: int | None = None,
) -> None:
    """The checks of a compression's arguments that need no source model (run before loading);
    :func:`check_reachable` adds those that need its config."""
    if method not in CHANGE_OF_BASIS_METHODS:
        raise ValueError(f"method: unknown method {method!r}; choose one of {sorted(CHANGE_OF_BASIS_METHODS)}")
    check_basis_name("basis", basis, optional=True)
    check_count("num_basis", num_basis, optional=True)
    check_count("num_steps", num_steps, optional=True)
    check_count("state_num_basis", state_num_basis, optional=True)


def check_choices(
    config,
    basis: str | None = None,
    num_basis: int | None = None,
    num_steps: int | None = None,
    method: str = "projection",
    state_num_basis: int | None = None,
) -> None:
    """Raise ``ValueError`` naming the argument if the arguments are bad
    (:func:`check_arguments`) or the target cannot be reached from ``config``
    (:func:`check_reachable`)."""
    check_arguments(basis, num_basis, num_steps, method, state_num_basis)
    check_reachable(config, basis, num_basis, method, state_num_basis, num_steps)


def check_reachable(
    config,
    basis: str | None = None,
    num_basis: int | None = None,
    method: str = "projection",
    state_num_basis: int | None = None,
    num_steps: int | None = None,
) -> None:
    """Raise ``ValueError`` naming the argument if the target of arguments that passed
    :func:`check_arguments` cannot be reached from ``config``.

    ``None`` keeps the source's basis or K. Interpolation needs control points in both the
    source and the target basis (``legendre`` has none). ``state_num_basis`` needs a model
    with running statistics in its ODE blocks.
    """
    for name, target, source_size in (("num_basis", num_basis, config.num_basis), ("num_steps", num_steps, None)):
        source_size = getattr(config, name) if source_size is None else source_size
        if target is not None and target > MAX_GROWTH * source_size:
            raise ValueError(
                f"{name}: {target} is more than {MAX_GROWTH} times the model's {source_size}; a compression "
                "makes a model smaller (its memory and time grow with both)"
            )
    if state_num_basis is not None and not hasattr(config, "state_num_basis"):
        raise ValueError(f"state_num_basis: a {config.model_type} model has no running statistics in its ODE blocks")
    source = get_basis(config.basis, config.num_basis, config.time_horizon)
    try:
        target = get_basis(
            config.basis if basis is None else basis,
            config.num_basis if num_basis is None else num_basis,
            config.time_horizon,
        )
    except ValueError as err:
        raise ValueError(f"num_basis: {err}") from err
    if method == "interpolation":
        for argument, role, space in (("method", "source", source), ("basis", "target", target)):
            if space.control_points() is None:
                raise ValueError(
                    f"{argument}: interpolation needs control points, but the {role} basis "
                    f"{space.name!r} has none; use method='projection'"
                )


# --- the transformed copy --------------------------------------------------------------
def statistics_num_basis(config) -> int | None:
    """K of the running statistics of a model's ODE blocks; None if it has none (taggers)."""
    if not hasattr(config, "state_num_basis"):
        return None
    return config.num_basis if config.state_num_basis is None else config.state_num_basis


def kept_statistics_num_basis(config, basis: str | None, num_basis: int | None, num_steps: int | None) -> int | None:
    """The running statistics' K a compression keeps when none is asked for.

    When only the weights' K shrinks (same basis, same N_T), the statistics keep theirs:
    the integration still reads them at the points they were fitted at, along a
    trajectory the compressed weights barely move, and they are buffers, not parameters.
    Averaging them instead gives one mean and variance to depths whose states differ
    (docs/cifar.md, "Why the statistics keep their K"; docs/experiments.md, MNIST). When
    the basis or N_T changes, the stages sit elsewhere and the statistics follow the
    weights' K (``None``).
    """
    source = statistics_num_basis(config)
    same_basis = basis is None or basis == config.basis
    same_steps = num_steps is None or num_steps == config.num_steps
    if source is None or num_basis is None or not (same_basis and same_steps) or num_basis >= source:
        return None
    return source


def compressed_copy(
    model: nn.Module,
    basis: str | None = None,
    num_basis: int | None = None,
    num_steps: int | None = None,
    method: str = "projection",
    state_num_basis: int | None = None,
) -> nn.Module:
    """A transformed copy of ``model`` (left unchanged) in eval mode, its arguments checked
    first (:func:`check_choices`); see :func:`transformed_copy`."""
    check_choices(model.config, basis, num_basis, num_steps, method, state_num_basis)
    return transformed_copy(model, basis, num_basis, num_steps, method, state_num_basis)


def transformed_copy(
    model: nn.Module,
    basis: str | None = None,
    num_basis: int | None = None,
    num_steps: int | None = None,
    method: str = "projection",
    state_num_basis: int | None = None,
) -> nn.Module:
    """A transformed copy of ``model`` (left unchanged) in eval mode: change of basis, then
    N_T, for arguments already checked (:func:`check_choices`).

    ``None`` keeps the current basis, K or N_T. The running statistics get
    ``state_num_basis`` functions; by default they keep their K when only the weights'
    K shrinks (:func:`kept_statistics_num_basis`) and follow the new K otherwise.
    """
    if state_num_basis is None:
        state_num_basis = kept_statistics_num_basis(model.config, basis, num_basis, num_steps)
    model = copy.deepcopy(model)
    if basis is not None or num_basis is not None or state_num_basis is not None:
        change_basis(model, basis, num_basis, method, state_num_basis)
    if num_steps is not None:
        set_num_steps(model, num_steps)
    return model.eval()


# --- the variants of a training run's report -------------------------------------------
def coarser_num_basis(basis: str, num_basis: int) -> int:
    """The K one refinement below ``num_basis`` (K/2 for piecewise constant, (K+1)/2 for
    piecewise linear); ``num_basis // 2`` when no basis refines to it."""
    try:
        return initial_num_basis(basis, num_basis, 1)
    except ValueError:
        return max(num_basis // 2, 1)


def compression_variants(config) -> list[tuple[str, dict]]:
    """The compressions of the report: K/2, K/4, N_T/2, N_T/4 and K, N_T both halved, as
    ``(name, keyword arguments of compressed_copy)``; sizes equal to the source's or to
    an earlier variant's are left out."""
    k, n = config.num_basis, config.num_steps
    k2 = coarser_num_basis(config.basis, k)
    k4 = coarser_num_basis(config.basis, k2)
    variants = [
        ("K/2", {"num_basis": k2}),
        ("K/4", {"num_basis": k4}),
        ("N_T/2", {"num_steps": max(n // 2, 1)}),
        ("N_T/4", {"num_steps": max(n // 4, 1)}),
        ("K/2, N_T/2", {"num_basis": k2, "num_steps": max(n // 2, 1)}),
    ]
    seen, unique = {(k, n)}, []
    for name, change in variants:
        sizes = (change.get("num_basis", k), change.get("num_steps", n))
        if sizes not in seen:
            seen.add(sizes)
            unique.append((name, change))
    return unique


def score_variants(model, score, metrics: Sequence[str], selection: str) -> list[dict]:
    """Rows of a compression report: ``model`` and each of its
    :func:`compression_variants` (compressed copies), scored by ``score(model) -> {metric:
    value}`` on every name of ``metrics``, with the drop in points of ``selection`` from the
    source."""
    source = score(model)
    config = model.config
    rows = [
        {
            "model": "trained",
            "num_basis": config.num_basis,
            **_statistics_column(config),
            "num_steps": config.num_steps,
            **{m: source[m] for m in metrics},
            "drop_points": 0.0,
        }
    ]
    for name, change in compression_variants(config):
        variant = compressed_copy(model, **change)
        values = score(variant)
        rows.append(
            {
                "model": name,
                "num_basis": variant.config.num_basis,
                **_statistics_column(variant.config),
                "num_steps": variant.config.num_steps,
                **{m: values[m] for m in metrics},
                "drop_points": 100 * (source[selection] - values[selection]),
            }
        )
    return rows


def _statistics_column(config) -> dict:
    """``{"state_num_basis": K}`` for a model with running statistics, else nothing."""
    k = statistics_num_basis(config)
    return {} if k is None else {"state_num_basis": k}


# --- the table and the card section ----------------------------------------------------
def _count(value) -> str:
    return f"{value:,}"


def _percent(value) -> str:
    return f"{100 * value:.2f}%"


# (heading, row key, format) of the columns around the metrics, in table order; a column
# is shown when some row has a value for its key.
_LEADING = (
    ("model", "model", str),
    ("basis", "basis", str),
    ("K", "num_basis", str),
    ("statistics K", "state_num_basis", str),
    ("N_T", "num_steps", str),
    ("params, embedding", "embedding_parameters", _count),
    ("params, non-embedding", "non_embedding_parameters", _count),
    ("params, total", "total_parameters", _count),
    ("ratio", "compression_ratio", "{:.2f}x".format),
)
_TRAILING = (
    ("time (s)", "inference_seconds", "{:.3f}".format),
    ("speed-up", "speedup", "{:.2f}x".format),
)
_RIGHT = {
    "num_basis",
    "state_num_basis",
    "num_steps",
    "embedding_parameters",
    "non_embedding_parameters",
    "total_parameters",
    "compression_ratio",
    "inference_seconds",
    "speedup",
}


def compression_table(
    rows: Sequence[Mapping[str, object]],
    metrics: Sequence[str] = ("accuracy",),
    columns: Sequence[str] | None = None,
    name: str = "model",
) -> str:
    """Compressed models as one Markdown table; the first row is the reference (the source).

    Each row is a dict: ``model`` (its name), ``basis``, ``num_basis``,
    ``state_num_basis`` (K of running statistics), ``num_steps``, parameter counts
    (``embedding_parameters``, ``non_embedding_parameters``, ``total_parameters``),
    ``compression_ratio``, ``inference_seconds``, ``speedup`` and a value (a fraction)
    for each name in ``metrics``. Every metric gets a column in percent and a column of
    its drop in points below the first row. A column is shown when some row has a value
    for it, and only the keys in ``columns`` when given; a missing value reads "–".
    ``name`` heads the first column (``model``: the row's name).
    """
    reference = rows[0] if rows else {}

    def drop(metric: str):
        def value(row):
            if row.get(metric) is None or reference.get(metric) is None:
                return None
            return 100 * (reference[metric] - row[metric])

        return value

    spec = [(name if k == "model" else h, k, f, lambda row, k=k: row.get(k)) for h, k, f in _LEADING]
    for metric in metrics:
        suffix = "" if len(metrics) == 1 else f" {metric}"
        spec += [
            (metric, metric, _percent, lambda row, m=metric: row.get(m)),
            (f"drop{suffix} (pts)", metric, "{:+.2f}".format, drop(metric)),
        ]
    spec += [(h, k, f, lambda row, k=k: row.get(k)) for h, k, f in _TRAILING]
    shown = [
        (heading, key, form, get)
        for heading, key, form, get in spec
        if (columns is None or key in columns or key in metrics) and any(get(row) is not None for row in rows)
    ]
    lines = [
        "| " + " | ".join(heading for heading, *_ in shown) + " |",
        "|" + "|".join("---:" if key in _RIGHT or key in metrics else "---" for _, key, *_ in shown) + "|",
    ]
    for row in rows:
        cells = ["–" if get(row) is None else form(get(row)) for _, _, form, get in shown]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def compression_section(
    rows: Sequence[Mapping[str, object]],
    metrics: Sequence[str] = ("accuracy",),
    notes: Sequence[str] = (),
    scored_on: str | None = None,
    columns: Sequence[str] | None = None,
) -> str:
    """The compression section of a model card (heading :data:`SECTION_HEADING`): what
    compression is, :func:`compression_table` of ``rows``, then ``notes`` as a list.
    ``scored_on`` names the data the metrics come from."""
    intro = SECTION_INTRO + (f" Scored on {scored_on}." if scored_on else "")
    parts = [intro, compression_table(rows, metrics, columns)]
    if notes:
        parts.append("\n".join(f"- {note}" for note in notes))
    return "\n\n".join(parts)


__all__ = [
    "SECTION_HEADING",
    "check_arguments",
    "check_choices",
    "check_reachable",
    "coarser_num_basis",
    "compressed_copy",
    "compression_section",
    "compression_table",
    "compression_variants",
    "kept_statistics_num_basis",
    "score_variants",
    "statistics_num_basis",
    "transformed_copy",
]
