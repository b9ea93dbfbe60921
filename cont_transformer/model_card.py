"""Model cards (``README.md`` with Hub metadata) for saved continuous models.

``save_pretrained`` of this package's models writes a card describing the architecture
(basis, K, N_T, scheme, parameter counts); what it says about a kind of model (title,
task, description, usage, its own facts) is the model class's :attr:`card_text`
(a :class:`CardText`, defined beside the class in its modeling file), so writing a card
needs nothing above the package root and a folder's copy of the code (remote code, where
the package is not installed) writes the same card.

What a model was trained on and how it scored (language, licence, data sets, measured
results, further facts; :data:`CARD_FACTS`) travels in its config, as ``config.model_card``
(:func:`record_card_facts`; JSON in ``config.json``), so every save of the model, by this
package, by transformers' ``Trainer`` or by remote code, writes the same card.
:func:`write_model_card` adds what a caller measured on top: training (sections such as
the compression table), compression (:func:`cont_transformer.tools.compression.
write_compression_card`: the source model as ``base_model``, the method, before/after
figures). A card without a language gets the config's ``language``, the language whose rules
split raw text (``text_segmentation.py``).

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from huggingface_hub import EvalResult, ModelCard, ModelCardData

TAGS = ["cont-transformer", "continuous-depth", "ode-net"]
CARD_NAME = "README.md"
_MARKER = "<!-- cont-transformer model card, sha256:{} -->\n"
_MARKER_PATTERN = re.compile(r"<!-- cont-transformer model card, sha256:([0-9a-f]{64}) -->\n?\Z")
# The Hub's relations of a model to its base_model (adapter, merge, quantized, finetune).
BASE_MODEL_RELATIONS = ("adapter", "merge", "quantized", "finetune")
# The largest magnitude a weight of a loaded model may have (pretrained.check_finite;
# every card states it). Trained models of this package hold far smaller ones; the largest
# |weight| measured: 1.05 in the sample recipe's tagger (60 steps, a LayerNorm gain), 2.31
# in a UD English-GUM tagger fine-tuned from the pretrained language model (its final
# LayerNorm), 6.54 in that English masked language model (lm_head.decoder.bias);
# embeddings and coefficients stay below 1, and the image models' running variances are
# those of normalised activations. 1e4 leaves three orders of magnitude above all of them
# (a longer run, another treebank), while a value edited into the file (3e38: finite, and
# UPOS falls to 6.24) is refused. A BatchNorm running variance is in squared units of its
# activations, so it may reach the square (pretrained.py's MAX_RUNNING_VARIANCE; a tiny
# CIFAR run with the whitening stem, on 36 images, ended with 1.56e4 in a stitch's
# BatchNorm).
MAX_ABS_WEIGHT = 1e4
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
# A tagger's card says which positions each raw output covers (the root's
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
class CardText:
    """What a model card says about the models of a class (its :attr:`card_text`).

    Attributes:
        title: the card's heading (the basis, K and N_T follow it).
        pipeline_tag: the Hub task (``"token-classification"``), None for none.
        description: one paragraph on what the model is.
        usage: Markdown showing how to load and run it.
        facts: ``config -> {name: value}``, the class's rows of the architecture table
            (after basis, K, N_T, scheme and T; before the parameter counts).
    """

    title: str
    pipeline_tag: str | None
    description: str
    usage: str
    facts: Callable[[object], dict[str, object]] = lambda config: {}


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


# A model whose class has no card text of its own (a base model) gets this one.
GENERIC_CARD = CardText(
    title="Stateful ODE-Net",
    pipeline_tag=None,
    description=(
        "A network whose weights are functions of depth-time, θ(t) = Σ_k φ_k(t) θ̂_k, integrated\n"
        "with a Runge–Kutta scheme (Stateful ODE-Nets, Queiruga et al., NeurIPS 2021)."
    ),
    usage="Load it with the Auto class of its architecture and `trust_remote_code=True`.",
)


def card_text(model) -> CardText:
    """What the card of ``model`` says: its class's ``card_text``, else :data:`GENERIC_CARD`."""
    return getattr(model, "card_text", None) or GENERIC_CARD


# What a model was trained on and how it scored: write_model_card's arguments that travel in
# the config (config.model_card), so that every save writes them again.
CARD_FACTS = ("language", "license", "datasets", "results", "model_name", "base_model", "base_model_relation", "extra")
CONFIG_KEY = "model_card"


def record_card_facts(config, **facts) -> None:
    """Keep ``facts`` (keyword arguments of :func:`write_model_card` named in
    :data:`CARD_FACTS`; None leaves a fact as it is) in ``config.model_card``, which
    ``config.json`` carries, so that every later card of the model states them.

    Raises ``ValueError`` naming an argument that is not one of them."""
    unknown = sorted(set(facts) - set(CARD_FACTS))
    if unknown:
        raise ValueError(f"{unknown[0]}: not a fact a model card keeps (choose among {', '.join(CARD_FACTS)})")
    kept = dict(getattr(config, CONFIG_KEY, None) or {})
    for name, value in facts.items():
        if value is None:
            continue
        if name == "results":
            value = [asdict(result) for result in value]
        elif name == "extra":
            value = {
                str(key): item if isinstance(item, (int, float, str, bool)) else str(item)
                for key, item in value.items()
            }
        elif name == "datasets" and not isinstance(value, str):
            value = list(value)
        kept[name] = value
    setattr(config, CONFIG_KEY, kept)


def recorded_card_facts(config) -> dict[str, object]:
    """The facts :func:`record_card_facts` kept in ``config``, as arguments of
    :func:`write_model_card`; a field it does not know (a folder written by hand) is left out."""
    kept = getattr(config, CONFIG_KEY, None)
    facts = {name: value for name, value in (kept if isinstance(kept, dict) else {}).items() if name in CARD_FACTS}
    if "results" in facts:
        facts["results"] = [Evaluation(**result) for result in facts["results"]]
    return facts


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

    The facts of :data:`CARD_FACTS` not given here are those the config keeps
    (:func:`record_card_facts`); those given are stated on this card only (record them to
    keep them). ``language`` defaults to the config's.

    Args:
        model: a model of this package, with the continuous choices in its ``config``, a
            ``num_parameters_split()`` method and its class's ``card_text``.
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
        card: the card's title, description and usage, instead of the model class's.
    """
    path = Path(folder) / CARD_NAME
    if path.is_file() and not overwrite and not is_generated_card(path):
        return None
    if base_model_relation is not None and base_model_relation not in BASE_MODEL_RELATIONS:
        raise ValueError(f"base_model_relation: choose one of {BASE_MODEL_RELATIONS}, got {base_model_relation!r}")
    config = model.config
    given = {
        "language": language,
        "license": license,
        "datasets": datasets,
        "results": list(results) or None,
        "model_name": model_name,
        "base_model": base_model,
        "base_model_relation": base_model_relation,
        "extra": extra,
    }
    recorded = recorded_card_facts(config)
    facts = {**recorded, **{name: value for name, value in given.items() if value is not None}}
    if extra is not None:  # further facts add to those kept
        facts["extra"] = {**(recorded.get("extra") or {}), **extra}
    language, license, datasets = facts.get("language"), facts.get("license"), facts.get("datasets")
    results, model_name, extra = facts.get("results") or [], facts.get("model_name"), facts.get("extra")
    base_model, base_model_relation = facts.get("base_model"), facts.get("base_model_relation")
    language = language or getattr(config, "language", None)
    kind = card or card_text(model)
    lineage = {"base_model": base_model, "base_model_relation": base_model_relation}
    card_data = _card_data(
        model, kind, folder, language, license, datasets, results, model_name, tags, lineage, metadata
    )
    body = _card_body(model, kind, results, extra, sections)
    content = f"---\n{card_data.to_yaml()}\n---\n\n" + "\n\n".join(body) + "\n\n"
    ModelCard(content, ignore_metadata_errors=False)  # refuses metadata the Hub would reject
    path.write_text(content + _MARKER.format(_digest(content)), encoding="utf-8")
    return path


def _card_data(
    model, kind: CardText, folder, language, license, datasets, results, model_name, tags, lineage, metadata
):
    """The card's YAML metadata (``ModelCardData``): task, tags, language, licence, data sets,
    the base model (``lineage``) and the ``model-index`` of ``results``."""
    return ModelCardData(
        library_name="transformers",
        pipeline_tag=kind.pipeline_tag,
        tags=sorted({*TAGS, *([kind.pipeline_tag] if kind.pipeline_tag else []), *tags}),
        language=language,
        license=license,
        datasets=[datasets] if isinstance(datasets, str) else datasets,
        base_model=lineage["base_model"],
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
        **({"base_model_relation": lineage["base_model_relation"]} if lineage["base_model_relation"] else {}),
        **(metadata or {}),
    )


def _card_body(model, kind: CardText, results, extra, sections) -> list[str]:
    """The card's Markdown sections: title, description, the facts' table, the evaluation,
    further sections, what a tagger's outputs cover, what a folder is, usage."""
    config = model.config
    rows = {**_architecture_facts(model, kind), **(extra or {})}
    table = "\n".join(["| | |", "|---|---|", *(_row(k, v) for k, v in rows.items())])
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
    body.append(f"## {UNIT_HEADING}\n\n{UNIT_TEXT.format(bound=MAX_ABS_WEIGHT)}")
    body.append(f"## Usage\n\n{kind.usage}")
    return body


def _data_cell(result: Evaluation) -> str:
    named = result.metric_name != "accuracy"
    return f"{result.dataset_name} ({result.metric_name.removesuffix(' accuracy')})" if named else result.dataset_name
