"""The continuous transformer's cases of the benchmark (measured by :mod:`cont_transformer.runtime.measuring`).

Each measure is a ratio to a baseline run in the same process; its target in brackets:

1. training step, Euler, piecewise constant, K = N_T = L, against a plain pre-LayerNorm
   encoder of L layers (:mod:`.discrete_transformer`), L = 8 and 64 [<= 1.10];
2. the same with piecewise linear [<= 1.10], and RK4 against Euler [<= 4.4];
3. training step at N_T = 16 with K = 64 against K = 16 [<= 1.10];
4. inference after ``set_num_steps(32, 16, 8)`` against N_T = 64 [speed-up >= 0.9 x ideal];
5. ``change_basis`` of a K = 64 model to K = 16 by projection [<= 0.25 s];
7. peak memory of the training steps of 1 and 3, and of the inference of 4 [<= 1.10]
   (the image models' step, measure 6, is :mod:`.images`');
8. activation checkpointing at K = N_T = 64: training step time [<= 1.4] and peak memory
   [<= 0.5] against the same step without.

:func:`transformer_cases` builds measures 1 to 5 and 7, :func:`checkpointing_cases`
measure 8, and :func:`compiled_transformer_cases` the compiled variants of measures 1,
2 and 4 (candidate and baseline compiled with the same ``torch.compile`` mode, warmed up
before any timing). Measure 9 is :mod:`.training`'s, 10 (the input representations, on
these workloads) :mod:`.representations`', 11 and 12 :mod:`.text_tagging`'s.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from ..configuration_cont_transformer import ContTransformerConfig
from ..modeling_cont_transformer import ContTransformerForTokenClassification
from ..runtime.measuring import Case, Workload
from ..text.optimization import build_optimizer
from ..transform import change_basis, set_num_steps
from .discrete_transformer import PreLayerNormTagger
from .workloads import compiled, compiled_name, resident_tensors, training_step, warmed

# --- the continuous transformer's cases ------------------------------------------

# Widths of the paper's tagger (docs/design.md §6); a small vocabulary keeps the embedding,
# which both models share, from diluting the encoder's cost. ``layers``: the depths L of
# measures 1 and 2; ``fine_basis`` / ``coarse_basis``: the K of measures 3 to 5.
TRANSFORMER_SIZES = {
    "quick": {
        "batch_size": 2,
        "seq_len": 8,
        "hidden_size": 16,
        "vocab_size": 100,
        "num_labels": 8,
        "layers": [2, 8],
        "fine_basis": 8,
        "coarse_basis": 2,
    },
    "full": {
        "batch_size": 32,
        "seq_len": 32,
        "hidden_size": 128,
        "vocab_size": 1000,
        "num_labels": 46,
        "layers": [8, 64],
        "fine_basis": 64,
        "coarse_basis": 16,
    },
}


def _tagger_config(sizes: dict, **continuous) -> ContTransformerConfig:
    return ContTransformerConfig(
        vocab_size=sizes["vocab_size"],
        hidden_size=sizes["hidden_size"],
        intermediate_size=sizes["hidden_size"],
        num_attention_heads=1,
        id2label={i: f"TAG{i}" for i in range(sizes["num_labels"])},
        **continuous,
    )


def _tagger_batch(sizes: dict, device: torch.device) -> dict[str, torch.Tensor]:
    """Token ids, a padding mask (lengths from half to all of ``seq_len``) and tags."""
    generator = torch.Generator().manual_seed(0)
    batch, seq_len = sizes["batch_size"], sizes["seq_len"]
    lengths = torch.randint(seq_len // 2, seq_len + 1, (batch,), generator=generator)
    mask = (torch.arange(seq_len)[None, :] < lengths[:, None]).long()  # (batch, seq)
    input_ids = torch.randint(1, sizes["vocab_size"], (batch, seq_len), generator=generator) * mask
    labels = torch.randint(0, sizes["num_labels"], (batch, seq_len), generator=generator)
    labels = labels.masked_fill(mask == 0, -100)
    return {
        "input_ids": input_ids.to(device),
        "attention_mask": mask.to(device),
        "labels": labels.to(device),
    }


def recipe_optimizer(model: nn.Module) -> torch.optim.Optimizer:
    """The tagger recipe's optimiser, as training builds it (docs/design.md §6)."""
    return build_optimizer(model, learning_rate=1e-4, weight_decay=0.1)


def _grid(config: ContTransformerConfig) -> str:
    k, n = config.num_basis, config.num_steps
    return f"K=N_T={k}" if k == n else f"K={k} N_T={n}"


def continuous_training(
    config: ContTransformerConfig,
    sizes: dict,
    device: torch.device,
    *,
    checkpointing: bool = False,
    compile_mode: str | None = None,
) -> Workload:
    """A training step of :class:`ContTransformerForTokenClassification`, optionally with
    activation checkpointing or compiled with ``torch.compile(mode=compile_mode)``."""
    torch.manual_seed(0)
    model = ContTransformerForTokenClassification(config).to(device)
    name = f"continuous {config.scheme}/{config.basis} {_grid(config)}"
    if checkpointing:
        # transformers 5 calls it activation_checkpointing_enable (the old name warns).
        getattr(model, "activation_checkpointing_enable", model.gradient_checkpointing_enable)()
        name += ", activation checkpointing"
    forward = compiled(model, compile_mode)
    batch = _tagger_batch(sizes, device)
    return training_step(
        compiled_name(name, compile_mode), model, lambda: forward(**batch).loss, recipe_optimizer(model), batch
    )


def baseline_training(
    config: ContTransformerConfig,
    num_layers: int,
    sizes: dict,
    device: torch.device,
    *,
    compile_mode: str | None = None,
) -> Workload:
    """A training step of the plain pre-LayerNorm tagger with ``num_layers`` layers."""
    torch.manual_seed(0)
    model = PreLayerNormTagger(config, num_layers).to(device)
    forward = compiled(model, compile_mode)
    batch = _tagger_batch(sizes, device)

    def loss() -> torch.Tensor:
        logits = forward(batch["input_ids"], batch["attention_mask"])  # (batch, seq, num_labels)
        return F.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(), ignore_index=-100)

    name = compiled_name(f"discrete pre-LN encoder L={num_layers}", compile_mode)
    return training_step(name, model, loss, recipe_optimizer(model), batch)


def inference(model: ContTransformerForTokenClassification, batch: dict, compile_mode: str | None = None) -> Workload:
    """A forward pass in eval mode without autograd."""
    model.eval()
    forward = compiled(model, compile_mode)
    inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}

    def run() -> None:
        with torch.inference_mode():
            forward(**inputs)

    name = compiled_name(f"inference {_grid(model.config)}", compile_mode)
    return Workload(name, run, resident=lambda: resident_tensors(model, None, inputs))


def shortened_inference(
    config: ContTransformerConfig,
    num_steps: int,
    sizes: dict,
    device: torch.device,
    compile_mode: str | None = None,
) -> tuple[Workload, Workload]:
    """Inference of a model after ``set_num_steps(num_steps)``, and of the model as built."""
    torch.manual_seed(0)
    model = ContTransformerForTokenClassification(config).to(device)
    batch = _tagger_batch(sizes, device)
    short = set_num_steps(copy.deepcopy(model), num_steps)
    return inference(short, batch, compile_mode), inference(model, batch, compile_mode)


def compression(
    config: ContTransformerConfig, num_basis: int, sizes: dict, device: torch.device
) -> tuple[Workload, Workload]:
    """``change_basis`` to ``num_basis`` (projection) on a fresh copy of a model, and a
    training step of that model."""
    torch.manual_seed(0)
    source = ContTransformerForTokenClassification(config).to(device)
    copies: list[nn.Module] = []

    def run() -> None:
        change_basis(copies.pop(), num_basis=num_basis, method="projection")

    name = f"change_basis K={config.num_basis}->{num_basis}"
    transform = Workload(name, run, prepare=lambda: copies.append(copy.deepcopy(source)))
    return transform, continuous_training(config, sizes, device)


def shortening_cases(
    fine: int,
    build: Callable[[int], tuple[Workload, Workload]],
    sizes: dict,
    compiled_as: str | None = None,
) -> list[Case]:
    """Measure 4: inference at N_T = ``fine`` / 2, / 4, / 8 against N_T = ``fine``;
    ``build(num_steps)`` makes the pair. ``compiled_as`` names a compiled variant."""
    cases = []
    for speedup in (2, 4, 8):
        num_steps = fine // speedup
        limit = 1 / (0.9 * speedup)
        cases.append(
            Case(
                f"{'compiled_' if compiled_as else ''}inference_NT{num_steps}_vs_NT{fine}",
                4,
                f"inference after set_num_steps({num_steps}) vs N_T={fine} (K={fine}), ideal speed-up {speedup}x"
                + (f", both {compiled_as}" if compiled_as else ""),
                lambda n=num_steps: build(n),
                limit,
                f"speed-up >= 0.9 x {speedup} (ratio <= {limit:.3f})",
                sizes=sizes,
            )
        )
    return cases


def _layered(
    sizes: dict, num_layers: int, basis: str = "piecewise_constant", scheme: str = "euler"
) -> ContTransformerConfig:
    # T = L makes Euler + piecewise constant exactly the L-layer encoder.
    return _tagger_config(sizes, basis=basis, num_basis=num_layers, scheme=scheme, time_horizon=num_layers)


def _against_encoder(config: ContTransformerConfig, num_layers: int, sizes: dict, device: torch.device) -> Callable:
    return lambda: (
        continuous_training(config, sizes, device),
        baseline_training(config, num_layers, sizes, device),
    )


def _against(
    candidate: ContTransformerConfig, baseline: ContTransformerConfig, sizes: dict, device: torch.device
) -> Callable:
    return lambda: (continuous_training(candidate, sizes, device), continuous_training(baseline, sizes, device))


def _depth_cases(sizes: dict, device: torch.device) -> list[Case]:
    """Measures 1 and 2 at each depth L of ``sizes["layers"]``."""
    cases = []
    for num_layers in sizes["layers"]:
        constant = _layered(sizes, num_layers)
        encoder = f"vs {num_layers}-layer encoder"
        cases += [
            Case(
                f"train_euler_constant_L{num_layers}",
                1,
                f"training step, Euler, piecewise constant, K=N_T={num_layers} {encoder}",
                _against_encoder(constant, num_layers, sizes, device),
                1.10,
                "ratio <= 1.10",
                sizes=sizes,
            ),
            Case(
                f"train_euler_linear_L{num_layers}",
                2,
                f"training step, Euler, piecewise linear, K=N_T={num_layers} {encoder}",
                _against_encoder(_layered(sizes, num_layers, "piecewise_linear"), num_layers, sizes, device),
                1.10,
                "ratio <= 1.10",
                sizes=sizes,
            ),
            Case(
                f"train_rk4_vs_euler_L{num_layers}",
                2,
                f"training step, RK4 vs Euler, piecewise constant, K=N_T={num_layers}",
                _against(_layered(sizes, num_layers, scheme="rk4"), constant, sizes, device),
                4.4,
                "ratio <= 4.4",
                sizes=sizes,
            ),
        ]
    return cases


def _basis_cases(sizes: dict, device: torch.device) -> list[Case]:
    """Measures 3 to 5: K = ``fine_basis`` against ``coarse_basis`` at N_T = ``coarse_basis``,
    shortened inference and ``change_basis``."""
    fine, coarse = sizes["fine_basis"], sizes["coarse_basis"]
    many = _tagger_config(sizes, num_basis=fine, num_steps=coarse)
    few = _tagger_config(sizes, num_basis=coarse, num_steps=coarse)
    full_depth = _tagger_config(sizes, num_basis=fine)
    return [
        Case(
            f"train_K{fine}_vs_K{coarse}_NT{coarse}",
            3,
            f"training step at N_T={coarse}: K={fine} vs K={coarse}",
            _against(many, few, sizes, device),
            1.10,
            "ratio <= 1.10",
            sizes=sizes,
        ),
        *shortening_cases(fine, lambda n: shortened_inference(full_depth, n, sizes, device), sizes),
        Case(
            f"change_basis_K{fine}_to_K{coarse}",
            5,
            f"change_basis(K={fine} -> {coarse}, projection) vs a training step of the K={fine} model",
            lambda: compression(full_depth, coarse, sizes, device),
            0.25,
            "candidate <= 0.25 s",
            quantity="candidate",
            sizes=sizes,
        ),
    ]


def _memory_cases(sizes: dict, device: torch.device) -> list[Case]:
    """The transformer's part of measure 7: peak memory of the training steps of measures
    1 and 3, and of the inference of measure 4."""
    fine, coarse = sizes["fine_basis"], sizes["coarse_basis"]
    many = _tagger_config(sizes, num_basis=fine, num_steps=coarse)
    few = _tagger_config(sizes, num_basis=coarse, num_steps=coarse)
    full_depth = _tagger_config(sizes, num_basis=fine)
    cases = [
        Case(
            f"memory_train_euler_constant_L{num_layers}",
            7,
            f"peak memory, training step of measure 1, L={num_layers}",
            _against_encoder(_layered(sizes, num_layers), num_layers, sizes, device),
            1.10,
            "ratio <= 1.10",
            metric="memory",
            sizes=sizes,
        )
        for num_layers in sizes["layers"]
    ]
    return cases + [
        Case(
            f"memory_train_K{fine}_vs_K{coarse}_NT{coarse}",
            7,
            f"peak memory, training step of measure 3: K={fine} vs K={coarse}",
            _against(many, few, sizes, device),
            1.10,
            "ratio <= 1.10",
            metric="memory",
            sizes=sizes,
        ),
        Case(
            f"memory_inference_NT{fine // 8}_vs_NT{fine}",
            7,
            f"peak memory, inference of measure 4: N_T={fine // 8} vs N_T={fine}",
            lambda: shortened_inference(full_depth, fine // 8, sizes, device),
            1.10,
            "ratio <= 1.10",
            metric="memory",
            sizes=sizes,
        ),
    ]


def transformer_cases(mode: str, device: torch.device) -> list[Case]:
    """Measures 1–5 and the transformer's part of 7 (see the module's doc) at the sizes
    ``TRANSFORMER_SIZES[mode]``."""
    sizes = TRANSFORMER_SIZES[mode]
    return _depth_cases(sizes, device) + _basis_cases(sizes, device) + _memory_cases(sizes, device)


# --- activation checkpointing (measure 8) ------------------------------------------


def checkpointing_cases(mode: str, device: torch.device) -> list[Case]:
    """Measure 8: a training step with activation checkpointing (each integration step
    recomputed in the backward pass) against the same step without, at K = N_T =
    ``fine_basis`` (64 in full mode): time [<= 1.4] and peak memory [<= 0.5]."""
    sizes = TRANSFORMER_SIZES[mode]
    depth = sizes["fine_basis"]
    config = _tagger_config(sizes, num_basis=depth)

    def build() -> tuple[Workload, Workload]:
        return (
            continuous_training(config, sizes, device, checkpointing=True),
            continuous_training(config, sizes, device),
        )

    what = f"Euler, piecewise constant, K=N_T={depth}: activation checkpointing vs none"
    return [
        Case(
            f"train_checkpointing_NT{depth}",
            8,
            f"training step, {what}",
            build,
            1.4,
            "ratio <= 1.4",
            sizes=sizes,
        ),
        Case(
            f"memory_train_checkpointing_NT{depth}",
            8,
            f"peak memory, training step, {what}",
            build,
            0.5,
            "ratio <= 0.5",
            metric="memory",
            sizes=sizes,
        ),
    ]


# --- compiled models (measures 1, 2 and 4 compiled) ------------------------------------


def compiled_transformer_cases(mode: str, device: torch.device, compile_mode: str) -> list[Case]:
    """Measures 1, 2 and 4 with candidate and baseline both compiled with
    ``torch.compile(mode=compile_mode)``, at the first depth of ``sizes["layers"]``
    (compiling a 64-step training graph takes minutes per model on a CPU) and, for
    measure 4, K = ``fine_basis`` (the N_T = K model compiled once for the three)."""
    sizes = TRANSFORMER_SIZES[mode]
    depth, fine = sizes["layers"][0], sizes["fine_basis"]
    compiled_as = f"compiled ({compile_mode})"

    def against_encoder(basis: str) -> Callable[[], tuple[Workload, Workload]]:
        config = _tagger_config(sizes, basis=basis, num_basis=depth, time_horizon=depth)
        return lambda: warmed(
            (
                continuous_training(config, sizes, device, compile_mode=compile_mode),
                baseline_training(config, depth, sizes, device, compile_mode=compile_mode),
            )
        )

    @functools.cache
    def full_depth() -> tuple[nn.Module, dict, Workload]:
        torch.manual_seed(0)
        model = ContTransformerForTokenClassification(_tagger_config(sizes, num_basis=fine)).to(device)
        batch = _tagger_batch(sizes, device)
        return model, batch, warmed((inference(model, batch, compile_mode),))[0]

    def shortened(num_steps: int) -> tuple[Workload, Workload]:
        model, batch, baseline = full_depth()
        short = set_num_steps(copy.deepcopy(model), num_steps)
        return warmed((inference(short, batch, compile_mode),))[0], baseline

    cases = [
        Case(
            f"compiled_train_euler_constant_L{depth}",
            1,
            f"training step, Euler, piecewise constant, K=N_T={depth} vs {depth}-layer encoder, both {compiled_as}",
            against_encoder("piecewise_constant"),
            1.10,
            "ratio <= 1.10",
            sizes=sizes,
        ),
        Case(
            f"compiled_train_euler_linear_L{depth}",
            2,
            f"training step, Euler, piecewise linear, K=N_T={depth} vs {depth}-layer encoder, both {compiled_as}",
            against_encoder("piecewise_linear"),
            1.10,
            "ratio <= 1.10",
            sizes=sizes,
        ),
    ]
    return cases + shortening_cases(fine, shortened, sizes, compiled_as)


__all__ = ["checkpointing_cases", "compiled_transformer_cases", "transformer_cases"]
