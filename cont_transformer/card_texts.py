"""What the model cards of the package's models say: each model class's ``card_text``.

A card's title, task, description and usage, and the rows its architecture table adds
(:class:`~.model_card.CardText`), for the tagger, the masked language model and the image
classifier. They live beside the models, not with the applications, so that any
``save_pretrained`` writes the same card, a re-save by transformers' ``Trainer`` where the
package is not installed included (a saved folder carries this file).
"""

from __future__ import annotations

from .configuration_cont_transformer import AUXILIARY_COLUMNS
from .model_card import CardText


def segmentation_language(config) -> str:
    """The language whose rules split raw text for the model (``text_segmentation.py``; the
    pipeline and ``Tagger`` read it the same way): the config's, English when it names none."""
    return getattr(config, "language", None) or "en"


AUXILIARY_NOTE = ", learnt as a training signal, not output"


def tagger_card_facts(config) -> dict[str, object]:
    """A tagger's rows of its model card's architecture table."""
    return {
        "word representation": representation(config),
        "hidden size / heads / MLP": (
            f"{config.hidden_size} / {config.num_attention_heads} / {config.intermediate_size}"
        ),
        "raw text split by": f"`text_segmentation.py`, the rules for language `{segmentation_language(config)}`",
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


# What a tagger's model card says (model_card.py).
TAGGER_CARD = CardText(
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
        "One entry per word: a `token-classification` entry (`entity`: the primary column's tag, `score`: its\n"
        "probability, `index`: the word's position in its sentence, `word`, `start`, `end`), then `sentence`,\n"
        "`token` (the multiword token it belongs to, or None) and every column the model predicts (None for one\n"
        'it does not and for an empty value); `aggregation_strategy="simple"` groups neighbouring words of one\n'
        "tag, as transformers does. The columns are decoded as the `cont-transformer` package decodes them: UPOS, XPOS and\n"
        "FEATS jointly over the combinations seen in training, a lemma by applying the predicted\n"
        "edit script to the word (or, for a word seen in training with the predicted tag, the lemma\n"
        "seen with them). Raw text is split into sentences and words by this folder's\n"
        "`text_segmentation.py`, with the rules of the model's language (the table's \"raw text split by\"; the\n"
        "package's `Tagger` uses the same); a sentence longer than the model's\n"
        '`max_position_embeddings` is tagged in overlapping windows. `pipeline("token-classification",\n'
        "...)` gives the primary column's tag per token piece. A list of texts gives one list of entries per\n"
        'text (`batch_size=8` tags 8 at a time); words already split: `tagger(["The", "dog"],\n'
        "is_split_into_words=True)`. The tokenizer runs no code:\n"
        '`AutoTokenizer.from_pretrained("<this repo>", trust_remote_code=False)` (transformers reads config.json\n'
        "first, which names the config's code, and asks otherwise).\n\n"
        'With the `cont-transformer` package installed, `cont_transformer.Tagger.from_pretrained("<this repo>")`\n'
        "tags every column without remote code (importing the package registers the Auto\n"
        "classes), splitting raw text with the same rules as the pipeline."
    ),
    facts=tagger_card_facts,
)

# What a masked language model's card says (scripts/pretrain.py, and compress.py of one).
LANGUAGE_MODEL_CARD = CardText(
    title="Continuous-in-depth transformer, masked language model",
    pipeline_tag="fill-mask",
    description=(
        "The encoder of a continuous-in-depth tagger, pretrained on unlabelled text to fill in\n"
        "masked words: its weights are functions of depth-time, θ(t) = Σ_k φ_k(t) θ̂_k, integrated\n"
        "with a Runge–Kutta scheme (Stateful ODE-Nets, Queiruga et al., NeurIPS 2021). Fine-tune it\n"
        "into a tagger with `scripts/train_pos.py --model-name-or-path <this folder>`."
    ),
    usage=(
        "```python\n"
        "from transformers import pipeline\n\n"
        'fill = pipeline("fill-mask", model="<this repo>", trust_remote_code=True)\n'
        'fill("The dog [MASK] at the cat .")\n'
        "```"
    ),
)


def image_classifier_card_facts(config) -> dict[str, object]:
    """An image classifier's rows of its model card's architecture table."""
    return {
        "K of the running statistics": config.num_basis if config.state_num_basis is None else config.state_num_basis,
        "stages (channels / strides)": f"{list(config.stage_channels)} / {list(config.stage_strides)}",
        "input channels": config.num_channels,
        "classes (labels)": config.num_labels,
    }


# What an image classifier's model card says (model_card.py).
IMAGE_CLASSIFIER_CARD = CardText(
    title="Stateful ODE-ResNet",
    pipeline_tag="image-classification",
    description=(
        "An image classifier whose residual stages are ODE blocks: the convolution weights and\n"
        "the BatchNorm running statistics are functions of depth-time, θ(t) = Σ_k φ_k(t) θ̂_k,\n"
        "integrated with a Runge–Kutta scheme (Stateful ODE-Nets, Queiruga et al., NeurIPS\n"
        "2021). Compression (change of basis, fewer steps) needs no retraining and no data."
    ),
    usage=(
        "```python\n"
        "from transformers import pipeline\n\n"
        'classifier = pipeline("image-classification", model="<this repo>", trust_remote_code=True)\n'
        "```\n\n"
        "With the `cont-transformer` package installed, `import cont_transformer` registers the\n"
        "Auto classes and the image processor (no remote code needed)."
    ),
    facts=image_classifier_card_facts,
)
