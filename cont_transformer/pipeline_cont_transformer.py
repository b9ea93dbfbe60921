"""The whole tagger as a transformers pipeline that travels with the model folder.

A tagger's ``save_pretrained`` folder names this pipeline in ``config.json``
(``custom_pipelines``, task :data:`TASK`) and holds a copy of this file and of the files it
imports (``word_tagging.py`` and the configuration), so where this package is not
installed::

    from transformers import pipeline

    tagger = pipeline(model="USER/gum", trust_remote_code=True)  # the task comes from the folder
    tagger("The old dog saw a bird. Tom didn't see it!")
    # [{'word': 'The', 'start': 0, 'end': 3, 'upos': 'DET', 'xpos': 'DT', 'feats': 'Definite=Def|PronType=Art',
    #   'lemma': 'the'}, {'word': 'old', ...}, ...]

One entry per word of the text, in order, with ``word``, ``start``, ``end`` (character
offsets in the text) and every column the model predicts (``upos``, ``xpos``, ``feats``,
``lemma``; None for a column it does not predict), decoded as the package's ``Tagger``
decodes them (``word_tagging.py``, written once for both): UPOS, XPOS and FEATS jointly
over the triples seen in training, a lemma by applying the predicted edit script to the
word (one of the likeliest that makes a word of the tokenizer's vocabulary, where the
likeliest does not) or, for a form seen in training with the predicted tag, from
``config.lemma_lexicon``.
``pipeline(model=..., trust_remote_code=True)`` finds the task in the folder (a folder
names one custom task, so transformers takes it); ``pipeline("pos-tagging", model=...,
trust_remote_code=True)`` says it. ``pipeline("token-classification", ...)`` is transformers'
own pipeline as before: the primary column's tag per token piece. With this package
installed, ``pipeline(model=folder, pipeline_class=ContTransformerTaggingPipeline)`` runs the
package's code instead of the folder's copies.

Raw text to words and sentences (:func:`split_sentences`): ``text_segmentation.py``,
the segmenter the package's ``Tagger`` and ``tag.py`` use too (no spaCy, which remote code
cannot count on), with the rules of the model's ``language`` (English when the config
names none), so the pipeline and the ``Tagger`` give the same words and sentences
(``tests/test_one_tokenizer.py``): paragraphs at blank lines, sentences after ``.``,
``!``, ``?`` or ``…`` with the closing punctuation attached to it, UD-like words (clitics
split, abbreviations such as ``Mr.`` and ``U.S.`` whole). Each sentence is encoded as the
``Tagger`` encodes it: a word by its first token, a sentence longer than the model's
``max_position_embeddings`` in overlapping windows, each word tagged in the window where it
has most context (``word_tagging.evaluation_windows``), so no word is dropped; rows are
sorted by length and batched by a token budget (``tokens_per_batch``, default 2,048, the
``Tagger``'s ``batch_size``). Given the same words, the pipeline's columns equal the
``Tagger``'s (``tests/test_remote_pipeline.py``).

Remote code copies a file and every module it imports as ``from .module import name``,
flat: this module imports only torch, transformers and its siblings (``tokenizers``
through ``text_segmentation.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import Pipeline

from .column_decoding import combination_index, decode_columns, model_column_labels, parsed_labels, predicted_label_ids
from .configuration_cont_transformer import OUTPUT_COLUMNS
from .lemma_scripts import vocabulary_words
from .sentence_windows import evaluation_windows
from .text_segmentation import check_language, split_text
from .token_batches import token_batches
from .word_encoding import encode_words, word_shortener

# The custom task a tagger's folder names in config.json's custom_pipelines.
TASK = "pos-tagging"
# The tokens of one forward pass, padding included (the Tagger's default batch_size).
TOKENS_PER_BATCH = 2048


def split_sentences(text: str, language: str = "en") -> list[list[tuple[int, int]]]:
    """The sentences of raw ``text``, each a list of its words' ``(start, end)``, as
    ``text_segmentation.split_text`` splits them (the ``Tagger``'s segmenter)."""
    return [sentence.spans for sentence in split_text(text, language)]


@dataclass
class _Row:
    """One forward row: the root and a window of a sentence's words; ``first``: the
    positions of the first tokens of the words it tags."""

    sentence: int
    input_ids: list[int]
    first: list[int]


@dataclass
class _Document:
    """A text, its sentences (words and spans) and its rows (kept out of transformers' way:
    the pipeline moves dicts and lists of tensors between devices, not this)."""

    spans: list[list[tuple[int, int]]]
    words: list[list[str]]
    rows: list[_Row]
    predicted: list[dict[str, list]] | None = None  # per row, column -> label ids of its words


class ContTransformerTaggingPipeline(Pipeline):
    """Raw text in, one entry per word out, with every column the tagger predicts (module
    docstring). Call options: ``tokens_per_batch`` (tokens per forward pass)."""

    _load_processor = False
    _load_image_processor = False
    _load_video_processor = False
    _load_feature_extractor = False
    _load_tokenizer = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        config = self.model.config
        self.column = getattr(config, "primary_column", None) or "xpos"
        # Column -> its labels (lemma scripts parsed once), the primary column's from id2label.
        self.column_labels = parsed_labels(model_column_labels(config, self.column))
        self.columns = tuple(c for c in OUTPUT_COLUMNS if c in self.column_labels)
        self.feats_mode = getattr(config, "feats_mode", "whole")
        # The seen (UPOS, XPOS, FEATS) triples, decoded jointly; None: each column alone.
        self.combinations = combination_index(config, self.column_labels)
        self.lemma_lexicon = getattr(config, "lemma_lexicon", None)  # (form, tag) -> lemma
        self.vocabulary = vocabulary_words(self.tokenizer)  # the words a lemma may be (choose_lemma)
        self.max_length = getattr(config, "max_position_embeddings", None) or 2**62
        self.shorten = word_shortener(self.tokenizer, getattr(config, "max_word_length", 0) or 0)
        self.language = check_language(getattr(config, "language", None) or "en")

    def _sanitize_parameters(self, tokens_per_batch: int | None = None, **kwargs):
        forward = {}
        if tokens_per_batch is not None:
            if tokens_per_batch < 1:
                raise ValueError(f"tokens_per_batch must be >= 1, got {tokens_per_batch}")
            forward["tokens_per_batch"] = tokens_per_batch
        return {}, forward, {}

    def preprocess(self, inputs: str) -> dict[str, _Document]:
        if not isinstance(inputs, str):
            raise TypeError(f"the {TASK} pipeline takes raw text (a string, or a list of them), not {type(inputs)}")
        spans = split_sentences(inputs, self.language)
        words = [[inputs[start:end] for start, end in sentence] for sentence in spans]
        return {"document": _Document(spans, words, self.rows(words))}

    def rows(self, sentences: list[list[str]]) -> list[_Row]:
        """The rows of ``sentences`` (lists of words), as the package's evaluation and
        ``Tagger`` encode them: the root token, then each word's tokens; a sentence longer
        than ``max_position_embeddings`` (root included) in windows."""
        if self.max_length < 2:
            raise ValueError(
                f"max_position_embeddings must leave room for the root token and a word: {self.max_length}"
            )
        if not sentences:
            return []
        read = [[self.shorten(word) for word in words] for words in sentences] if self.shorten else sentences
        encoding = encode_words(self.tokenizer, read, verbose=False)
        rows = []
        for index, words in enumerate(read):
            input_ids, word_of = encoding["input_ids"][index], encoding.word_ids(index)
            if word_of[0] is not None or any(w is None for w in word_of[1:]):
                raise ValueError("the tokenizer must prepend exactly one special (root) token")
            pieces: list[list[int]] = [[] for _ in words]
            for token, word in zip(input_ids[1:], word_of[1:]):
                pieces[word].append(token)
            if not all(pieces):
                raise ValueError(f"the tokenizer drops a word of sentence {index + 1}: {words}")
            for start, owned_start, owned_end in evaluation_windows(len(words), self.max_length - 1):
                row = _Row(index, [input_ids[0]], [])
                for word in range(start, min(start + self.max_length - 1, len(words))):
                    if owned_start <= word < owned_end:
                        row.first.append(len(row.input_ids))
                    row.input_ids += pieces[word]
                rows.append(row)
        return rows

    def _forward(self, model_inputs: dict[str, _Document], tokens_per_batch: int = TOKENS_PER_BATCH) -> dict:
        document = model_inputs["document"]
        rows = document.rows
        predicted: list[dict[str, list]] = [{} for _ in rows]
        pad = self.tokenizer.pad_token_id or 0
        was_training = self.model.training
        self.model.eval()
        try:
            for chosen in token_batches([len(row.input_ids) for row in rows], tokens_per_batch):
                length = max(len(rows[i].input_ids) for i in chosen)
                input_ids = torch.full((len(chosen), length), pad, dtype=torch.long)
                mask = torch.zeros((len(chosen), length), dtype=torch.long)
                for k, i in enumerate(chosen):
                    input_ids[k, : len(rows[i].input_ids)] = torch.tensor(rows[i].input_ids)
                    mask[k, : len(rows[i].input_ids)] = 1
                output = self.model(
                    input_ids=input_ids.to(self.device),
                    attention_mask=None if bool(mask.all()) else mask.to(self.device),
                )
                columns = predicted_label_ids(
                    output, self.columns, self.column, self.column_labels, self.feats_mode, self.combinations
                )
                for column, ids in columns.items():
                    ids = ids.cpu()
                    for k, i in enumerate(chosen):
                        predicted[i][column] = ids[k, rows[i].first].tolist()
        finally:
            self.model.train(was_training)
        document.predicted = predicted
        return {"document": document}

    def postprocess(self, model_outputs: dict) -> list[dict]:
        document = model_outputs["document"]
        ids: list[dict[str, list]] = [{column: [] for column in self.columns} for _ in document.words]
        for row, row_ids in zip(document.rows, document.predicted):
            for column in self.columns:
                ids[row.sentence][column].extend(row_ids[column])
        entries = []
        for words, spans, sentence_ids in zip(document.words, document.spans, ids):
            values = decode_columns(
                words, sentence_ids, self.column_labels, self.feats_mode, self.lemma_lexicon, self.vocabulary
            )
            for k, (word, (start, end)) in enumerate(zip(words, spans)):
                entry = {"word": word, "start": start, "end": end}
                entry.update({column: values[column][k] if column in values else None for column in OUTPUT_COLUMNS})
                entries.append(entry)
        return entries


__all__ = ["TASK", "ContTransformerTaggingPipeline", "split_sentences"]
