"""Model cards (``README.md`` with Hub metadata) for saved continuous models.

``ContTransformerPreTrainedModel.save_pretrained`` writes one; training and
compression scripts call :func:`write_model_card` again with ``extra`` facts (data
set, accuracy, source model) after saving.

Sharing: ``model.push_to_hub(repo)`` uploads through transformers, which replaces the
card by the Hub repository's existing one or a generic template. To publish the
folder as saved, card included, upload it whole:
``huggingface_hub.HfApi().upload_folder(repo_id=repo, folder_path=folder)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from huggingface_hub import ModelCard, ModelCardData

TAGS = ["cont-transformer", "continuous-depth", "ode-net", "token-classification"]


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


def write_model_card(model, folder: str | Path, extra: Mapping[str, object] | None = None) -> Path:
    """Write ``folder/README.md`` describing ``model`` and return its path.

    Args:
        model: a model with a ``config`` holding the continuous choices (``basis``,
            ``num_basis``, ``num_steps``, ``scheme``, ``time_horizon``) and a
            ``num_parameters_split()`` method.
        folder: the ``save_pretrained`` folder.
        extra: further facts listed after the architecture, e.g.
            ``{"dataset": "UD English-GUM (XPOS)", "test accuracy": "95.1%"}``.
    """
    config = model.config
    counts = model.num_parameters_split()
    labels = getattr(config, "id2label", None) or {}
    metadata = ModelCardData(
        library_name="transformers", tags=TAGS, pipeline_tag="token-classification"
    )
    facts = {
        "architecture": type(model).__name__,
        "basis": config.basis,
        "K (num_basis)": config.num_basis,
        "N_T (num_steps)": config.num_steps,
        "scheme": config.scheme,
        "T (time_horizon)": config.time_horizon,
        "word representation": _representation(config),
        "hidden size / heads / MLP": (
            f"{config.hidden_size} / {config.num_attention_heads} / {config.intermediate_size}"
        ),
        "tags (labels)": len(labels),
        "parameters, embedding": counts["embedding"],
        "parameters, non-embedding": counts["non_embedding"],
        "parameters, total": counts["total"],
        **(extra or {}),
    }
    table = "\n".join(["| | |", "|---|---|", *(_row(k, v) for k, v in facts.items())])
    usage = (
        "```python\n"
        "from transformers import AutoModelForTokenClassification, AutoTokenizer\n\n"
        'model = AutoModelForTokenClassification.from_pretrained("<this repo>", trust_remote_code=True)\n'
        'tokenizer = AutoTokenizer.from_pretrained("<this repo>")\n'
        "```\n\n"
        "With the `cont-transformer` package installed, `import cont_transformer` registers the\n"
        "Auto classes (no remote code needed) and `cont_transformer.tag(sentence, model, tokenizer)`\n"
        "returns `(word, tag)` pairs."
    )
    content = (
        f"---\n{metadata.to_yaml()}\n---\n\n"
        f"# Continuous-in-depth transformer ({config.basis}, K = {config.num_basis}, "
        f"N_T = {config.num_steps})\n\n"
        "A part-of-speech tagger whose encoder is one ODE block: the weights are\n"
        "functions of depth-time, θ(t) = Σ_k φ_k(t) θ̂_k, integrated with a Runge–Kutta scheme\n"
        "(Stateful ODE-Nets, Queiruga et al., NeurIPS 2021). Compression (change of basis,\n"
        "fewer steps) acts on the non-embedding parameters; the input representation (the\n"
        "embedding parameters) is left as it is.\n\n"
        f"{table}\n\n## Usage\n\n{usage}\n"
    )
    path = Path(folder) / "README.md"
    ModelCard(content).save(path)
    return path
