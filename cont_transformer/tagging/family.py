"""The tagger as a model family for the tools (compression, sweeps) and its model card: see
``families.py``."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

import torch

from ..configuration_cont_transformer import AUXILIARY_COLUMNS
from ..families import CardText, EvalSet, ModelFamily, forward_batches, register_family
from ..runtime.model_folders import METRICS_FILE
from ..runtime.safe_files import write_json
from ..text.batching import PaddingCollator
from ..text.pretrained_encoder import LANGUAGE_MODEL_CARD
from ..text.tokenization import load_tokenizer
from ..training.accelerator import make_accelerator
from .data import load_treebank
from .evaluation import evaluate, reported_rows, scoring_rows
from .sample_treebank import write_sample_treebank
from .tag import model_column_labels, saved_tag_column


def load_preprocessor(folder: Path):
    if not (folder / "tokenizer_config.json").is_file():
        return None
    return load_tokenizer(folder)


def eval_set(model, tokenizer, folder: Path, path: Path, batch_size: int) -> EvalSet:
    """Scores (every predicted column, see :mod:`.evaluation`) and times a tagger on a
    CoNLL-U file."""
    config = model.config
    labels = model_column_labels(config, saved_tag_column(folder))
    primary = next(iter(labels))
    dataset = load_treebank({"eval": [path]})["eval"]
    rows, gold = scoring_rows(
        tokenizer,
        dataset,
        labels,
        primary,
        config.max_position_embeddings,
        feats_mode=config.feats_mode,
    )
    rows.sort(key=lambda row: len(row["input_ids"]))  # little padding in a batch
    collate = PaddingCollator(tokenizer.pad_token_id)
    batches = [collate(rows[i : i + batch_size]) for i in range(0, len(rows), batch_size)]
    accelerator = make_accelerator()
    shown = ["accuracy", *reported_rows(gold.columns)]

    def scores(model: torch.nn.Module) -> dict[str, float]:
        with torch.no_grad():
            result = evaluate(model, batches, accelerator, gold)
        return {name: result[name] for name in shown}

    inputs = [{"input_ids": b["input_ids"], "attention_mask": b["attention_mask"]} for b in batches]
    description = f"{path.name} ({', '.join(c.upper() for c in gold.columns)}, {gold.num_words:,} words)"
    return EvalSet(
        lambda model: scores(model)["accuracy"],
        partial(forward_batches, batches=inputs),
        description,
        ud_split(path),
        scores=scores,
    )


def ud_split(path: Path) -> str | None:
    """The split a CoNLL-U file's name gives (UD's ``*-ud-dev.conllu``, or ``dev.conllu``)."""
    match = re.search(r"(?:^|[-_.])(train|dev|test)\.conllu$", path.name)
    return match.group(1) if match else None


def synthetic_inputs(config, count: int, size: int) -> tuple[dict, str]:
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(0, config.vocab_size, (count, size), generator=generator)
    inputs = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}
    return inputs, f"random input ({count} sentences x {size} tokens)"


def write_record(source: Path, folder: Path, accuracy: float | None, description: str) -> None:
    """A compressed tagger's metrics.json: its primary column (for evaluation) and accuracy
    (the selection score: the mean over its columns)."""
    record = {"tag_column": saved_tag_column(source), "accuracy": accuracy, "eval_data": description}
    write_json(folder / METRICS_FILE, record)


AUXILIARY_NOTE = ", learnt as a training signal, not output"


def card_facts(config) -> dict[str, object]:
    """A tagger's rows of its model card's architecture table."""
    return {
        "word representation": representation(config),
        "hidden size / heads / MLP": (
            f"{config.hidden_size} / {config.num_attention_heads} / {config.intermediate_size}"
        ),
        "tags (labels)": len(getattr(config, "id2label", None) or {}),
        **{
            f"{column} head (labels){AUXILIARY_NOTE if column in AUXILIARY_COLUMNS else ''}": len(labels)
            for column, labels in (getattr(config, "column_labels", None) or {}).items()
        },
    }


def representation(config) -> str:
    """The word representation in words (configs without the field are word-only)."""
    kind = getattr(config, "word_representation", "word")
    if kind == "word":
        return "word embeddings (unknown words: [UNK])"
    cnn = (
        f"character CNN over the spelling ({config.char_hidden_size} filters of width "
        f"{config.char_kernel_size}, first/last {config.max_word_length} characters)"
    )
    return {"word+chars": f"word embeddings + {cnn}", "chars": cnn}.get(kind, kind)


# What a tagger's model card says (cont_transformer.model_card).
CARD = CardText(
    title="Continuous-in-depth transformer",
    pipeline_tag="token-classification",
    description=(
        "A part-of-speech tagger whose encoder is one ODE block: the weights are\n"
        "functions of depth-time, θ(t) = Σ_k φ_k(t) θ̂_k, integrated with a Runge–Kutta scheme\n"
        "(Stateful ODE-Nets, Queiruga et al., NeurIPS 2021). Compression (change of basis,\n"
        "fewer steps) acts on the non-embedding parameters; the input representation (the\n"
        "embedding parameters) is left as it is."
    ),
    usage=(
        "```python\n"
        "from transformers import pipeline\n\n"
        'tagger = pipeline(model="<this repo>", trust_remote_code=True)  # the pipeline comes with the model\n'
        'for word in tagger("The old dog saw a bird. Tom didn\'t see it!"):\n'
        '    print(word["word"], word["upos"], word["xpos"], word["feats"], word["lemma"])\n'
        "```\n\n"
        "One entry per word (`word`, `start`, `end` and every column the model predicts; None for\n"
        "one it does not), decoded as the `cont-transformer` package decodes them: UPOS, XPOS and\n"
        "FEATS jointly over the combinations seen in training, a lemma by applying the predicted\n"
        "edit script to the word (or, for a word seen in training with the predicted tag, the lemma\n"
        "seen with them). The text is split into words by the model's tokenizer and into\n"
        "sentences after `.`, `!`, `?` and at blank lines; a sentence longer than the model's\n"
        '`max_position_embeddings` is tagged in overlapping windows. `pipeline("token-classification",\n'
        "...)` gives the primary column's tag per token piece.\n\n"
        'With the `cont-transformer` package installed, `cont_transformer.Tagger.from_pretrained("<this repo>")`\n'
        "tags every column without remote code (the package registers the Auto classes on first\n"
        "use of any of its names), splitting raw text with the same rules as the pipeline."
    ),
    facts=card_facts,
)


def sample_dev_file(arguments, directory: Path) -> Path | None:
    """The dev split of the generated sample treebank, for a run trained on it (``treebank``
    ``sample``): the sample is the same at every generation."""
    if arguments.get("treebank") != "sample" or arguments.get("train_file") or arguments.get("dev_file"):
        return None
    return write_sample_treebank(directory)["validation"]


FAMILY = ModelFamily(
    "cont_transformer",
    load_preprocessor,
    eval_set,
    synthetic_inputs,
    write_record,
    card=CARD,
    head_cards={"ForMaskedLM": LANGUAGE_MODEL_CARD},
    run_eval_file=sample_dev_file,
)
register_family(FAMILY)
