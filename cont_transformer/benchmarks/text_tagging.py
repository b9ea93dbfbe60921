"""Tagging raw text into CoNLL-U with every column, against XPOS alone (measure 11 of the
benchmark, words/s >= 0.9 x), and with a pretrained vocabulary and static word vectors
against the treebank's vocabulary alone (measure 12, words/s >= 0.95 x).

A tagger that fills UPOS, XPOS, FEATS and LEMMA runs three more heads than the
single-column XPOS tagger, decodes four columns (a lemma by applying its predicted edit
script to the word) and writes longer CoNLL-U lines. This measure times that whole path,
:func:`~cont_transformer.tagging.tag_files.tag_file` from raw text to a CoNLL-U file
(segmentation, tokenizer, model, decoding, formatting), for a model with every column
against the same weights with the primary XPOS head alone, on the same text.

The models are the tagging recipe's (``recipes/en_gum.json`` at its final K = N_T, built
by the trainer's :func:`~cont_transformer.tagging.trainer.model_config`) with random
weights: time does not depend on them. Their labels are as many as English-GUM has
(17 UPOS, 46 XPOS, whole FEATS strings, lemma edit scripts learnt from generated
English-like ``(form, lemma)`` pairs by :func:`~cont_transformer.lemmas.script_labels`).
The text is generated English-like prose (Zipfian words, commas, clitics, questions,
paragraphs) with ``unseen_rate`` of its words absent from the tokenizer's vocabulary.
"""

from __future__ import annotations

import json
import random
import tempfile
from importlib import resources
from pathlib import Path

import torch

from ..lemmas import script_labels
from ..modeling_cont_transformer import ContTransformerForTokenClassification
from ..runtime.measuring import Case, Workload
from ..tagging.arguments import TrainingArguments
from ..tagging.columns import canonical_feats
from ..tagging.starts import model_config
from ..tagging.tag import Tagger
from ..tagging.tag_files import tag_file
from ..text.tokenization import build_tokenizer, spelling_tables, training_words
from .training import gum_recipe
from .workloads import resident_tensors

# Label counts as English-GUM's; ``words``: the length of the text.
COLUMN_TAGGING_SIZES = {
    "quick": {
        "words": 300,
        "vocab_size": 200,
        "unseen_rate": 0.07,
        "upos": 17,
        "xpos": 46,
        "feats": 20,
        "lemma": 30,
        "hidden_size": 16,
        "char_hidden_size": 16,
        "num_basis": 2,
        "pretrained_vocab_size": 500,
        "word_vector_size": 8,
    },
    "full": {
        "words": 4000,
        "vocab_size": 3000,
        "unseen_rate": 0.07,
        "upos": 17,
        "xpos": 46,
        "feats": 190,
        "lemma": 330,
        # recipes/en_text_lm.json's vocabulary: a tagger fine-tuned from it has these
        # words and then the treebank's (measure 12)
        "pretrained_vocab_size": 50000,
        # recipes/en_gum_vectors.json's static vectors (scripts/train_word_vectors.py)
        "word_vector_size": 100,
    },
}

# English as the generated text and labels speak it, data in english.json beside this module:
# GUM's UPOS and XPOS tag sets, FEATS names and values, function words, inflections as
# (form ending, lemma ending) pairs including spelling changes, (form, lemma) pairs of
# irregular forms and clitics, and whole clitic words.
_ENGLISH = json.loads(resources.files(__package__).joinpath("english.json").read_text(encoding="utf-8"))
UPOS: list[str] = _ENGLISH["upos"]
XPOS: list[str] = _ENGLISH["xpos"]
FEATURES: dict[str, list[str]] = _ENGLISH["features"]
FUNCTION_WORDS: list[str] = _ENGLISH["function_words"]
INFLECTIONS = [(form, lemma) for form, lemma in _ENGLISH["inflections"]]
IRREGULAR = [(form, lemma) for form, lemma in _ENGLISH["irregular"]]
CLITICS = tuple(_ENGLISH["clitics"])


def _syllables(rng: random.Random, low: int, high: int) -> str:
    return "".join(
        rng.choice("bcdfghjklmnprstvwz") + rng.choice("aeiouy") + rng.choice(["", "", "n", "r", "st", "ck"])
        for _ in range(rng.randint(low, high))
    )


def _content_word(rng: random.Random) -> str:
    """A made-up English-looking word: a stem, sometimes inflected or capitalised."""
    word = _syllables(rng, 1, 3)
    if rng.random() < 0.3:
        word += rng.choice(INFLECTIONS)[0]
    return word.capitalize() if rng.random() < 0.1 else word


def english_like_text(rng: random.Random, sizes: dict) -> tuple[str, list[str]]:
    """About ``sizes["words"]`` words of prose and the training vocabulary: Zipfian
    words of ``vocab_size`` types, ``unseen_rate`` of them new, sentences of 3 to 30
    words in paragraphs of up to 8 sentences."""
    vocabulary = list(dict.fromkeys(FUNCTION_WORDS + [_content_word(rng) for _ in range(sizes["vocab_size"])]))
    zipf = [1 / rank for rank in range(1, len(vocabulary) + 1)]
    paragraphs, sentences, count = [], [], 0
    while count < sizes["words"]:
        words = [
            _content_word(rng)
            if rng.random() < sizes["unseen_rate"]
            else rng.choice(CLITICS)
            if rng.random() < 0.02
            else rng.choices(vocabulary, zipf)[0] + ("," if rng.random() < 0.08 else "")
            for _ in range(rng.randint(3, 30))
        ]
        words[0] = words[0][:1].upper() + words[0][1:]
        sentences.append(" ".join(words).rstrip(",") + rng.choice(".....?!"))
        count += len(words)
        if len(sentences) == 8 or rng.random() < 0.2:
            paragraphs.append(" ".join(sentences))
            sentences = []
    paragraphs.append(" ".join(sentences))
    spelled = [*vocabulary, ",", ".", "?", "!", "do", "'s", *(form for form, _ in IRREGULAR)]
    return "\n\n".join(p for p in paragraphs if p), list(dict.fromkeys(spelled))


def column_labels(rng: random.Random, sizes: dict) -> dict[str, list[str]]:
    """Labels of every column, XPOS (the primary column) first: tag sets as GUM's, FEATS
    strings drawn from English features, lemma scripts of inflected, irregular and
    unrelated forms (the most frequent first)."""
    feats = {"_"}
    while len(feats) < sizes["feats"]:
        names = rng.sample(sorted(FEATURES), rng.randint(1, 4))
        feats.add(canonical_feats("|".join(f"{name}={rng.choice(FEATURES[name])}" for name in names)))
    pairs = list(IRREGULAR)
    for _ in range(20 * sizes["lemma"]):
        stem, (form_end, lemma_end) = _syllables(rng, 1, 3), rng.choice(INFLECTIONS)
        form, lemma = stem + form_end, stem + lemma_end
        casing = rng.random()
        if casing < 0.1:  # a capitalised sentence-initial word
            form = form.capitalize()
        elif casing < 0.2:  # a proper noun, lemma as written
            form, lemma = form.capitalize(), form.capitalize()
        pairs.append((form, lemma))
    # Suppletive, foreign and misspelt forms: rare scripts, as a treebank's long tail.
    pairs += [(_syllables(rng, 1, 2), _syllables(rng, 1, 2)) for _ in range(sizes["lemma"])]
    return {
        "xpos": XPOS[: sizes["xpos"]],
        "upos": UPOS[: sizes["upos"]],
        "feats": sorted(feats),
        "lemma": script_labels(pairs)[: sizes["lemma"]],
    }


def recipe_arguments(sizes: dict) -> TrainingArguments:
    """The tagging recipe at its final K = N_T (no refinement), or the quick sizes."""
    if "hidden_size" in sizes:
        values = {key: sizes[key] for key in ("hidden_size", "char_hidden_size")}
        values.update(
            intermediate_size=sizes["hidden_size"],
            final_num_basis=sizes["num_basis"],
            final_num_steps=sizes["num_basis"],
        )
    else:
        values = gum_recipe()
    return TrainingArguments(**{**values, "refine_steps": "none"})


def column_taggers(sizes: dict, device: torch.device) -> tuple[Tagger, Tagger, str]:
    """A :class:`Tagger` predicting every column, one with the same weights and the XPOS
    head alone, and the text to tag."""
    rng = random.Random(0)
    text, vocabulary = english_like_text(rng, sizes)
    labels = column_labels(rng, sizes)
    args = recipe_arguments(sizes)
    tokenizer = build_tokenizer(vocabulary, spelling=True)
    spelling, char_vocab_size = spelling_tables(tokenizer, set(vocabulary), args.max_word_length)
    models = []
    for columns in (labels, {"xpos": labels["xpos"]}):
        torch.manual_seed(0)
        model = ContTransformerForTokenClassification(model_config(args, tokenizer, columns, "en", char_vocab_size))
        model.cont_transformer.embeddings.set_spelling(**spelling)
        models.append(model.to(device))
    every, xpos_only = models
    # The same weights; the other heads' are left out.
    missing, _ = xpos_only.load_state_dict(every.state_dict(), strict=False)
    assert not missing, missing
    return (
        Tagger(every, tokenizer, language="en"),
        Tagger(xpos_only, tokenizer, language="en"),
        text,
    )


def pretrained_vocabulary_taggers(sizes: dict, device: torch.device) -> tuple[Tagger, Tagger, str]:
    """The every-column tagger of :func:`column_taggers` over the treebank's vocabulary, the
    same with a pretrained vocabulary in front (``pretrained_vocab_size`` words, as a tagger
    fine-tuned from ``recipes/en_text_lm.json`` has: ``[MASK]``, the language model's words,
    then the treebank's) and static word vectors (``word_vector_size``, as
    ``recipes/en_gum_vectors.json`` has), and the text."""
    every, _, text = column_taggers(sizes, device)
    rng = random.Random(1)
    vocabulary = sorted(training_words(every.tokenizer, every.model))
    pretrained = list(dict.fromkeys(_content_word(rng) for _ in range(sizes["pretrained_vocab_size"])))
    tokenizer = build_tokenizer([*pretrained, *vocabulary], spelling=True, mask=True)
    args = recipe_arguments(sizes)
    spelling, char_vocab_size = spelling_tables(tokenizer, {*pretrained, *vocabulary}, args.max_word_length)
    columns = {"xpos": every.model.config.id2label.values(), **every.model.config.column_labels}
    torch.manual_seed(0)
    model = ContTransformerForTokenClassification(
        model_config(
            args,
            tokenizer,
            {k: list(v) for k, v in columns.items()},
            "en",
            char_vocab_size,
            word_vector_size=sizes["word_vector_size"],
        )
    )
    model.cont_transformer.embeddings.set_spelling(**spelling)
    model.cont_transformer.embeddings.set_static_vectors(torch.randn(len(tokenizer), sizes["word_vector_size"]))
    return every, Tagger(model.to(device), tokenizer, language="en"), text


def text_to_conllu(name: str, tagger: Tagger, text: str) -> Workload:
    """``tag_file`` from raw ``text`` to a CoNLL-U file; ``run()`` returns the file's text."""
    folder = tempfile.TemporaryDirectory(prefix="column-tagging-")
    output = Path(folder.name) / "tagged.conllu"

    def run(folder: tempfile.TemporaryDirectory = folder) -> str:  # the folder lives as long as run
        tag_file(
            tagger,
            output=output,
            text=text,
            input_format="text",
            output_format="conllu",
            progress=False,
        )
        return output.read_text(encoding="utf-8")

    return Workload(name, run, resident=lambda: resident_tensors(tagger.model, None, {}))


def column_tagging_cases(mode: str, device: torch.device) -> list[Case]:
    """Measure 11: raw text to CoNLL-U with every column against XPOS alone, same weights
    and text; the time ratio is the inverse of the words/s ratio, so words/s >= 0.9 x is
    a ratio <= 1 / 0.9."""
    sizes = COLUMN_TAGGING_SIZES[mode]
    args = recipe_arguments(sizes)
    grid = f"K=N_T={args.final_num_basis}"
    model_sizes = {
        "hidden_size": args.hidden_size,
        "char_hidden_size": args.char_hidden_size,
        "num_basis": args.final_num_basis,
    }

    def build() -> tuple[Workload, Workload]:
        every, xpos_only, text = column_taggers(sizes, device)
        return (
            text_to_conllu(f"every column {grid}", every, text),
            text_to_conllu(f"XPOS only {grid}", xpos_only, text),
        )

    def build_pretrained() -> tuple[Workload, Workload]:
        treebank, pretrained, text = pretrained_vocabulary_taggers(sizes, device)
        return (
            text_to_conllu(f"pretrained vocabulary and static vectors {grid}", pretrained, text),
            text_to_conllu(f"treebank vocabulary {grid}", treebank, text),
        )

    limit = 1 / 0.9
    return [
        Case(
            "column_tagging_every_vs_xpos",
            11,
            f"raw text -> CoNLL-U (tag_file), UPOS+XPOS+FEATS+LEMMA vs XPOS only, same weights, "
            f"{args.word_representation} {grid}",
            build,
            limit,
            f"words/s >= 0.9 x XPOS only (ratio <= {limit:.3f})",
            sizes={**sizes, **model_sizes},
        ),
        Case(
            "pretrained_vocabulary_tagging",
            12,
            f"raw text -> CoNLL-U (tag_file), every column, {sizes['pretrained_vocab_size']:,} pretrained words "
            f"+ the treebank's and {sizes['word_vector_size']}-wide static vectors vs the treebank's vocabulary, "
            f"{args.word_representation} {grid}",
            build_pretrained,
            1 / 0.95,
            f"words/s >= 0.95 x the treebank's vocabulary (ratio <= {1 / 0.95:.3f})",
            sizes={**sizes, **model_sizes},
        ),
    ]


__all__ = ["column_taggers", "column_tagging_cases", "english_like_text"]
