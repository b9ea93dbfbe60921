"""Model cards (``README.md`` with Hub metadata) for saved continuous models.

``save_pretrained`` of this package's models writes a card describing the architecture
(basis, K, N_T, scheme, parameter counts). Callers that know more call
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

TAGS = ["cont-transformer", "continuous-depth", "ode-net"]
CARD_NAME = "README.md"
_MARKER = "<!-- cont-transformer model card, sha256:{} -->\n"
_MARKER_PATTERN = re.compile(r"<!-- cont-transformer model card, sha256:([0-9a-f]{64}) -->\n?\Z")
# The Hub's relations of a model to its base_model (adapter, merge, quantized, finetune).
BASE_MODEL_RELATIONS = ("adapter", "merge", "quantized", "finetune")


@dataclass(frozen=True)
class Evaluation:
    """One measured result, written to the card's ``model-index``.

    ``dataset_name``: what a reader sees (``"UD English-GUM (XPOS)"``); ``dataset_id``:
    the Hub data set id when there is one (``"universal_dependencies"``), else the
    name is used; ``dataset_config``: its configuration (``"en_gum"``); ``split``:
    ``"dev"``, ``"test"``, …; ``accuracy``: the fraction of correct items.
    """

    dataset_name: str
    split: str
    accuracy: float
    dataset_id: str | None = None
    dataset_config: str | None = None


# What a card says about each model type of this package: title, one paragraph, the
# Hub task and how to load it.
_KINDS = {
    "cont_transformer": {
        "title": "Continuous-in-depth transformer",
        "pipeline_tag": "token-classification",
        "description": (
            "A part-of-speech tagger whose encoder is one ODE block: the weights are\n"
            "functions of depth-time, θ(t) = Σ_k φ_k(t) θ̂_k, integrated with a Runge–Kutta scheme\n"
            "(Stateful ODE-Nets, Queiruga et al., NeurIPS 2021). Compression (change of basis,\n"
            "fewer steps) acts on the non-embedding parameters; the input representation (the\n"
            "embedding parameters) is left as it is."
        ),
        "usage": (
            "```python\n"
            "from transformers import AutoModelForTokenClassification, AutoTokenizer, pipeline\n\n"
            'model = AutoModelForTokenClassification.from_pretrained("<this repo>", trust_remote_code=True)\n'
            'tokenizer = AutoTokenizer.from_pretrained("<this repo>")\n'
            'tagger = pipeline("token-classification", model="<this repo>", trust_remote_code=True,\n'
            '                  aggregation_strategy="first")  # one entry per word\n'
            "```\n\n"
            "With the `cont-transformer` package installed, `import cont_transformer` registers the\n"
            "Auto classes (no remote code needed) and `cont_transformer.tag(sentence, model, tokenizer)`\n"
            "returns `(word, tag)` pairs."
        ),
    },
    "ode_resnet": {
        "title": "Stateful ODE-ResNet",
        "pipeline_tag": "image-classification",
        "description": (
            "An image classifier whose residual stages are ODE blocks: the convolution weights and\n"
            "the BatchNorm running statistics are functions of depth-time, θ(t) = Σ_k φ_k(t) θ̂_k,\n"
            "integrated with a Runge–Kutta scheme (Stateful ODE-Nets, Queiruga et al., NeurIPS\n"
            "2021). Compression (change of basis, fewer steps) needs no retraining and no data."
        ),
        "usage": (
            "```python\n"
            "from transformers import pipeline\n\n"
            'classifier = pipeline("image-classification", model="<this repo>", trust_remote_code=True)\n'
            "```\n\n"
            "With the `cont-transformer` package installed, `import cont_transformer` registers the\n"
            "Auto classes and the image processor (no remote code needed)."
        ),
    },
}


def _architecture_facts(model) -> dict[str, object]:
    config = model.config
    facts: dict[str, object] = {
        "architecture": type(model).__name__,
        "basis": config.basis,
        "K (num_basis)": config.num_basis,
        "N_T (num_steps)": config.num_steps,
        "scheme": config.scheme,
        "T (time_horizon)": config.time_horizon,
    }
    if config.model_type == "ode_resnet":
        facts["K of the running statistics"] = config.state_num_basis or config.num_basis
        facts["stages (channels / strides)"] = (
            f"{list(config.stage_channels)} / {list(config.stage_strides)}"
        )
        facts["input channels"] = config.num_channels
        facts["classes (labels)"] = config.num_labels
    else:
        facts["word representation"] = _representation(config)
        facts["hidden size / heads / MLP"] = (
            f"{config.hidden_size} / {config.num_attention_heads} / {config.intermediate_size}"
        )
        facts["tags (labels)"] = len(getattr(config, "id2label", None) or {})
    counts = model.num_parameters_split()
    facts["parameters, embedding"] = counts["embedding"]
    facts["parameters, non-embedding"] = counts["non_embedding"]
    facts["parameters, total"] = counts["total"]
    return facts


def _row(name: str, value: object) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        value = f"{value:,}"
    return f"| {name} | {value} |"


def _representation(config) -> str:
    """The word representation in words (configs without the field are word-only)."""
    kind = getattr(config, "word_representation", "word")
    if kind == "word":
        return "word embeddings (unknown words: [UNK])"
    cnn = (
        f"character CNN over the spelling ({config.char_hidden_size} filters of width "
        f"{config.char_kernel_size}, first/last {config.max_word_length} characters)"
    )
    return {"word+chars": f"word embeddings + {cnn}", "chars": cnn}.get(kind, kind)


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
) -> Path | None:
    """Write ``folder/README.md`` describing ``model``; return its path, or None when
    the folder holds a card the user wrote (or edited) and ``overwrite`` is False.

    Args:
        model: a model of this package (``model_type`` ``cont_transformer`` or
            ``ode_resnet``), with the continuous choices in its ``config`` and a
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
    """
    path = Path(folder) / CARD_NAME
    if path.is_file() and not overwrite and not is_generated_card(path):
        return None
    if base_model_relation is not None and base_model_relation not in BASE_MODEL_RELATIONS:
        raise ValueError(
            f"base_model_relation: choose one of {BASE_MODEL_RELATIONS}, got {base_model_relation!r}"
        )
    config = model.config
    kind = _KINDS[config.model_type]
    card_data = ModelCardData(
        library_name="transformers",
        pipeline_tag=kind["pipeline_tag"],
        tags=sorted({*TAGS, kind["pipeline_tag"], *tags}),
        language=language,
        license=license,
        datasets=[datasets] if isinstance(datasets, str) else datasets,
        base_model=base_model,
        model_name=(model_name or Path(folder).resolve().name) if results else None,
        eval_results=[
            EvalResult(
                task_type=kind["pipeline_tag"],
                dataset_type=r.dataset_id or r.dataset_name,
                dataset_name=r.dataset_name,
                dataset_config=r.dataset_config,
                dataset_split=r.split,
                metric_type="accuracy",
                metric_name="accuracy",
                metric_value=r.accuracy,
            )
            for r in results
        ]
        or None,
        **({"base_model_relation": base_model_relation} if base_model_relation else {}),
        **(metadata or {}),
    )
    facts = {**_architecture_facts(model), **(extra or {})}
    table = "\n".join(["| | |", "|---|---|", *(_row(k, v) for k, v in facts.items())])
    body = [
        f"# {kind['title']} ({config.basis}, K = {config.num_basis}, N_T = {config.num_steps})",
        kind["description"],
        table,
    ]
    if results:
        body.append(
            "## Evaluation\n\n| data | split | accuracy |\n|---|---|---|\n"
            + "\n".join(f"| {r.dataset_name} | {r.split} | {100 * r.accuracy:.2f}% |" for r in results)
        )
    body += [f"## {heading}\n\n{text.strip()}" for heading, text in (sections or {}).items()]
    body.append(f"## Usage\n\n{kind['usage']}")
    content = f"---\n{card_data.to_yaml()}\n---\n\n" + "\n\n".join(body) + "\n\n"
    ModelCard(content, ignore_metadata_errors=False)  # refuses metadata the Hub would reject
    path.write_text(content + _MARKER.format(_digest(content)), encoding="utf-8")
    return path
