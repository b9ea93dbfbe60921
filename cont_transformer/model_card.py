"""Model cards (``README.md`` with Hub metadata) for saved continuous models.

``save_pretrained`` of this package's models writes a card describing the architecture
(basis, K, N_T, scheme, parameter counts); what it says about a kind of model (title,
task, description, usage, its own facts) comes from the model's family
(:class:`~.families.CardText` of :mod:`.families`). Callers that know more call
:func:`write_model_card` again with it: training (data set, language, licence, the
measured accuracy as :class:`Evaluation` results), compression
(:func:`cont_transformer.tools.compression.write_compression_card`: the source model as
``base_model``, the method, before/after figures).

Ours or the user's: a generated card ends with a marker line holding the SHA-256 of
the text above it. A ``README.md`` without the marker, or whose text no longer matches
its hash (edited by hand), is the user's and is kept unless ``overwrite=True``.

Sharing: ``model.push_to_hub(repo)`` uploads through transformers, which replaces the
card by the Hub repository's existing one or a generic template. To publish the
folder as saved, card included, upload it whole:
``huggingface_hub.HfApi().upload_folder(repo_id=repo, folder_path=folder)``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from .families import CardText, get_family

TAGS = ["cont-transformer", "continuous-depth", "ode-net"]
CARD_NAME = "README.md"
_MARKER = "<!-- cont-transformer model card, sha256:{} -->\n"
_MARKER_PATTERN = re.compile(r"<!-- cont-transformer model card, sha256:([0-9a-f]{64}) -->\n?\Z")
# The Hub's relations of a model to its base_model (adapter, merge, quantized, finetune).
BASE_MODEL_RELATIONS = ("adapter", "merge", "quantized", "finetune")
# Every card says what loading the folder checks and what it cannot (docs/design.md §11).
UNIT_HEADING = "A model folder is a unit"
UNIT_TEXT = (
    "The weights, `config.json` and the tokenizer (or image processor) of this folder belong together. "
    "Loading it with this package checks what can be checked: every tensor is there and expected, of the "
    "shape the config gives, finite and below {bound:g} in magnitude, and the tokenizer matches the config's "
    "`vocab_size` and `vocab_fingerprint` (and a spelling model's character tables). The weights file records "
    "the config fields that change what the model computes (`basis`, `time_horizon`, `scheme`, "
    "`layer_norm_eps`, `hidden_act`, the label names, ...), so an edit of `config.json` is refused, naming the "
    "fields. Weights, config and tokenizer edited together make another model, which no check can tell. "
    "Change K, N_T or the basis with `scripts/compress.py`, which writes a new, consistent folder; do not "
    "edit the config by hand."
)
# A tagger's card says which positions each raw output covers (issue #37: the root's
# logits look like a tag, and attentions have fewer rows than the logits).
OUTPUTS_HEADING = "Outputs"
OUTPUTS_TEXT = (
    "Called directly, the model's `logits` (every column's `*_logits`) and `hidden_states` cover the tokens of "
    "`input_ids`: position 0 is the root token `[ROOT]` the tokenizer prepends, whose logits are no tag (ignore "
    "them, as the tokenizer's `word_ids()` is None there), and a word split into several pieces has its word's "
    "values on each piece (read the first). `attentions` cover the encoder's words instead, `(batch, heads, "
    "words, words)`: the root as word 0, then each word once however many pieces it has (the same positions as "
    "the logits only when every word is one token). The pipeline above does this bookkeeping: one entry per "
    "word, the root left out."
)


@dataclass(frozen=True)
class Evaluation:
    """One measured result, written to the card's ``model-index``.

    ``dataset_name``: what a reader sees (``"UD English-GUM (XPOS)"``); ``dataset_id``:
    the Hub data set id when there is one (``"universal_dependencies"``), else the
    name is used; ``dataset_config``: its configuration (``"en_gum"``); ``split``:
    ``"dev"``, ``"test"``, …; ``accuracy``: the fraction of correct items;
    ``metric_name``: what was counted (``"UPOS accuracy"``: results on one data set
    with different names become one ``model-index`` entry with a metric each).
    """

    dataset_name: str
    split: str
    accuracy: float
    dataset_id: str | None = None
    dataset_config: str | None = None
    metric_name: str = "accuracy"


# A model whose family is not registered (remote code without this package installed)
# gets a card without the family's text and facts.
GENERIC_CARD = CardText(
    title="Stateful ODE-Net",
    pipeline_tag=None,
    description=(
        "A network whose weights are functions of depth-time, θ(t) = Σ_k φ_k(t) θ̂_k, integrated\n"
        "with a Runge–Kutta scheme (Stateful ODE-Nets, Queiruga et al., NeurIPS 2021)."
    ),
    usage="Load it with the Auto class of its architecture and `trust_remote_code=True`.",
)


def card_text(config) -> CardText:
    """What the card of a ``config.model_type`` model says: its family's
    :class:`~.families.CardText` for its head, or :data:`GENERIC_CARD` when no family is known."""
    try:
        card = get_family(config.model_type).card_for(config)
    except ValueError:
        card = None
    return card or GENERIC_CARD


# The Hub's task of a model-index entry, from the architecture's name, when no family says it.
_TASKS_BY_HEAD = {
    "ForTokenClassification": "token-classification",
    "ForImageClassification": "image-classification",
    "ForMaskedLM": "fill-mask",
}


def task_type(model, card: CardText) -> str:
    """The pipeline task a card's results are filed under: the family's, else the one its
    architecture's name implies (a model-index entry without one is refused), else "other"."""
    if card.pipeline_tag:
        return card.pipeline_tag
    for architecture in [type(model).__name__, *(getattr(model.config, "architectures", None) or [])]:
        for head, task in _TASKS_BY_HEAD.items():
            if architecture.endswith(head):
                return task
    return "other"


def _architecture_facts(model, card: CardText) -> dict[str, object]:
    config = model.config
    facts: dict[str, object] = {
        "architecture": type(model).__name__,
        "basis": config.basis,
        "K (num_basis)": config.num_basis,
        "N_T (num_steps)": config.num_steps,
        "scheme": config.scheme,
        "T (time_horizon)": config.time_horizon,
        **card.facts(config),
    }
    counts = model.num_parameters_split()
    facts["parameters, embedding"] = counts["embedding"]
    facts["parameters, non-embedding"] = counts["non_embedding"]
    facts["parameters, total"] = counts["total"]
    return facts


def _row(name: str, value: object) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        value = f"{value:,}"
    return f"| {name} | {value} |"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def is_generated_card(path: str | Path) -> bool:
    """Whether ``path`` is a card :func:`write_model_card` wrote and nobody edited since."""
    text = Path(path).read_text(encoding="utf-8")
    match = _MARKER_PATTERN.search(text)
    return match is not None and _digest(text[: match.start()]) == match.group(1)


def write_model_card(
    model,
    folder: str | Path,
    extra: Mapping[str, object] | None = None,
    *,
    language: str | Sequence[str] | None = None,
    license: str | None = None,
    datasets: str | Sequence[str] | None = None,
    results: Sequence[Evaluation] = (),
    model_name: str | None = None,
    base_model: str | None = None,
    base_model_relation: str | None = None,
    tags: Sequence[str] = (),
    sections: Mapping[str, str] | None = None,
    metadata: Mapping[str, object] | None = None,
    overwrite: bool = False,
    card: CardText | None = None,
) -> Path | None:
    """Write ``folder/README.md`` describing ``model``; return its path, or None when
    the folder holds a card the user wrote (or edited) and ``overwrite`` is False.

    Args:
        model: a model of this package (a registered family's ``model_type``), with the continuous choices in its ``config`` and a
            ``num_parameters_split()`` method.
        folder: the ``save_pretrained`` folder.
        extra: further facts listed after the architecture in the card's table, e.g.
            ``{"training steps": 7000}``.
        language: ISO 639-1 code(s) of the data (``"en"``).
        license: Hub licence id (``"cc-by-sa-4.0"``, the licence of the training data
            for a tagger trained on a UD treebank).
        datasets: Hub data set id(s) the model was trained on.
        results: measured scores, written to the ``model-index`` (task, data set,
            split, metric ``accuracy`` with its value) and listed in the text.
        model_name: the model's name in the ``model-index`` (default: the folder name).
        base_model: Hub id (or path) of the model this one derives from.
        base_model_relation: how, one of :data:`BASE_MODEL_RELATIONS`.
        tags: tags added to the package's own.
        sections: further Markdown sections, ``{heading: body}``, after the table.
        metadata: further YAML fields (e.g. ``{"compression": {...}}``).
        overwrite: replace a card the user wrote.
        card: the card's title, description and usage, instead of the model family's
            (a family's models with another task, e.g. its masked language model).
    """
    path = Path(folder) / CARD_NAME
    if path.is_file() and not overwrite and not is_generated_card(path):
        return None
    if base_model_relation is not None and base_model_relation not in BASE_MODEL_RELATIONS:
        raise ValueError(f"base_model_relation: choose one of {BASE_MODEL_RELATIONS}, got {base_model_relation!r}")
    config = model.config
    kind = card or card_text(config)
    card_data = ModelCardData(
        library_name="transformers",
        pipeline_tag=kind.pipeline_tag,
        tags=sorted({*TAGS, *([kind.pipeline_tag] if kind.pipeline_tag else []), *tags}),
        language=language,
        license=license,
        datasets=[datasets] if isinstance(datasets, str) else datasets,
        base_model=base_model,
        model_name=(model_name or Path(folder).resolve().name) if results else None,
        eval_results=[
            EvalResult(
                task_type=task_type(model, kind),
                dataset_type=r.dataset_id or r.dataset_name,
                dataset_name=r.dataset_name,
                dataset_config=r.dataset_config,
                dataset_split=r.split,
                metric_type="accuracy",
                metric_name=r.metric_name,
                metric_value=r.accuracy,
            )
            for r in results
        ]
        or None,
        **({"base_model_relation": base_model_relation} if base_model_relation else {}),
        **(metadata or {}),
    )
    facts = {**_architecture_facts(model, kind), **(extra or {})}
    table = "\n".join(["| | |", "|---|---|", *(_row(k, v) for k, v in facts.items())])
    body = [
        f"# {kind.title} ({config.basis}, K = {config.num_basis}, N_T = {config.num_steps})",
        kind.description,
        table,
    ]
    if results:
        body.append(
            "## Evaluation\n\n| data | split | accuracy |\n|---|---|---|\n"
            + "\n".join(f"| {_data_cell(r)} | {r.split} | {100 * r.accuracy:.2f}% |" for r in results)
        )
    body += [f"## {heading}\n\n{text.strip()}" for heading, text in (sections or {}).items()]
    if type(model).__name__.endswith("ForTokenClassification"):
        body.append(f"## {OUTPUTS_HEADING}\n\n{OUTPUTS_TEXT}")
    body.append(f"## {UNIT_HEADING}\n\n{_unit_text()}")
    body.append(f"## Usage\n\n{kind.usage}")
    content = f"---\n{card_data.to_yaml()}\n---\n\n" + "\n\n".join(body) + "\n\n"
    ModelCard(content, ignore_metadata_errors=False)  # refuses metadata the Hub would reject
    path.write_text(content + _MARKER.format(_digest(content)), encoding="utf-8")
    return path


def _unit_text() -> str:
    from .pretrained import MAX_ABS_WEIGHT  # imported here: pretrained imports this module

    return UNIT_TEXT.format(bound=MAX_ABS_WEIGHT)


def _data_cell(result: Evaluation) -> str:
    named = result.metric_name != "accuracy"
    return f"{result.dataset_name} ({result.metric_name.removesuffix(' accuracy')})" if named else result.dataset_name
