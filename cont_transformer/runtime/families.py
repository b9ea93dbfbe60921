"""Model families: what the tools need to know about each kind of model of the package.

The tools (compression, sweeps) handle every model family the same way through a
:class:`ModelFamily`: how to load its preprocessor (tokenizer, image processor), how to
read an evaluation file into an :class:`EvalSet`, what random input times it, what
record a compressed folder gets besides the model. (What its model card says is the model
class's ``card_text``: :mod:`.model_card`.) Each application defines its family
and registers it; the tools never import an application. A family not yet registered is
found through the ``cont_transformer.model_families`` entry points (declared in the
package metadata, name = ``model_type``), so compressing an ``ode_resnet`` folder imports
``image_models`` without any generic module naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

import torch

ENTRY_POINT_GROUP = "cont_transformer.model_families"


@dataclass
class EvalSet:
    """An evaluation set, prepared once (read, preprocessed, batched) for every model measured.

    ``accuracy(model)`` scores a model (None for timing-only data); ``forward(model)`` is
    the inference pass that is timed: every batch through the model, nothing else.
    ``scores(model)``, where a family reports several metrics (a tagger: one per
    predicted column), gives them all, ``accuracy`` among them.
    """

    accuracy: Callable[[torch.nn.Module], float | None]
    forward: Callable[[torch.nn.Module], object]
    description: str
    split: str | None = None  # "dev", "test", ... when known (for the model card)
    scores: Callable[[torch.nn.Module], dict[str, float]] | None = None


@dataclass(frozen=True)
class ModelFamily:
    """How the tools treat the models of one ``model_type``.

    Attributes:
        model_type: the config's ``model_type``.
        load_preprocessor: ``folder -> tokenizer / image processor`` (None if the folder has none).
        eval_set: ``(model, preprocessor, folder, eval_file, batch_size) -> EvalSet``; a
            gold label the model does not know counts as an error.
        synthetic_inputs: ``(config, count, size) -> (model inputs, description)``, random
            input for timing when no evaluation data is given.
        write_record: ``(source_folder, folder, accuracy, description)``, files a compressed
            folder needs besides the model and preprocessor (a tagger's metrics.json and
            learned segmenter), written after its card.
        run_eval_file: ``(arguments, directory) -> path or None``: the evaluation file a
            training run of these ``arguments`` (its ``run.json``'s) was selected on, when
            the run made it rather than read it (written into ``directory``).
    """

    model_type: str
    load_preprocessor: Callable[[Path], object | None]
    eval_set: Callable[..., EvalSet]
    synthetic_inputs: Callable[..., tuple[dict, str]]
    write_record: Callable[[Path, Path, float | None, str], None] | None = None
    run_eval_file: Callable[[Mapping, Path], Path | None] | None = None


FAMILIES: dict[str, ModelFamily] = {}


def register_family(family: ModelFamily) -> None:
    """Make ``family`` known to the tools (an application calls this when imported)."""
    FAMILIES[family.model_type] = family


def get_family(model_type: str) -> ModelFamily:
    """The registered family of ``model_type``, importing its entry point if needed.

    Raises ``ValueError`` naming the known model types.
    """
    if model_type not in FAMILIES:
        for entry in entry_points(group=ENTRY_POINT_GROUP):
            if entry.name == model_type:
                entry.load()  # the module registers its family
    if model_type not in FAMILIES:
        known = sorted({*FAMILIES, *(e.name for e in entry_points(group=ENTRY_POINT_GROUP))})
        raise ValueError(f"a {model_type!r} model is not a model of this package (model types: {known})")
    return FAMILIES[model_type]


@torch.no_grad()
def forward_batches(model: torch.nn.Module, batches: list[dict[str, torch.Tensor]]) -> None:
    """Every batch of model inputs through ``model`` in eval mode (an inference pass to time)."""
    model.eval()
    for batch in batches:
        model(**batch)
