"""The whole tagger as a transformers pipeline that travels with the model folder.

A tagger's ``save_pretrained`` folder names this pipeline in ``config.json``
(``custom_pipelines``, task :data:`TASK`) and holds a copy of this file and of the files it
imports (``column_decoding.py``, ``lemma_scripts.py``, ``word_encoding.py``,
``sentence_windows.py``, ``token_batches.py``, ``text_segmentation.py``,
``learned_segmentation.py`` and the configuration), so where this package is not installed::

    from transformers import pipeline

    tagger = pipeline(model="USER/gum", trust_remote_code=True)  # the task comes from the folder
    tagger("The old dog saw a bird. Tom didn't see it!")
    # [{'entity': 'DT', 'score': 0.98, 'index': 1, 'word': 'The', 'start': 0, 'end': 3, 'sentence': 0,
    #   'token': None, 'upos': 'DET', 'xpos': 'DT', 'feats': 'Definite=Def|PronType=Art', 'lemma': 'the'}, ...]

One entry per word of the text, in order: an entry of transformers' ``token-classification``
task (the model card's ``pipeline_tag``), whose keys come first, with the tagger's columns after
them:

* ``entity``: the primary column's tag (``xpos`` for a model trained on XPOS);
* ``score``: the probability the model gives that tag, as ``token-classification`` gives it;
* ``index``: the word's position in its sentence (1-based, its CoNLL-U id);
* ``word``, ``start``, ``end``: the word and its character offsets in the text (None for
  words given already split, which have no text);
* ``sentence``: the index of its sentence in the input (0 for words given already split);
* ``token``: the multiword token the word belongs to, ``{"text", "start", "end", "id"}``
  (``id`` as CoNLL-U writes its range, ``"9-10"`` for ``did`` and ``n't`` of ``didn't`` as the
  9th and 10th words of the sentence), or None when the word is its own token;
* every column the model predicts (``upos``, ``xpos``, ``feats``, ``lemma``), None for a
  column it does not predict and for an empty value (CoNLL-U's ``_``), as the package's
  ``Tagger`` gives them.

``aggregation_strategy`` is ``token-classification``'s: ``"none"`` (the default) gives the
entries above; ``"simple"``, ``"first"``, ``"average"`` and ``"max"`` give transformers' grouped
entries (``entity_group``, mean ``score``, ``word``, ``start``, ``end``), neighbouring words of
a sentence with the same tag in one group, as transformers groups tags without ``B-``/``I-``.

The columns are decoded as the package's ``Tagger`` decodes them (``column_decoding.py``
and ``lemma_scripts.py``, written once for both): UPOS, XPOS and FEATS jointly over the triples seen in training, a
lemma by applying the predicted edit script to the word (one of the likeliest that makes a
word of the tokenizer's vocabulary, where the likeliest does not) or, for a form seen in
training with the predicted tag, from ``config.lemma_lexicon``.

Inputs, as transformers' pipelines take them: a text, or a list of texts (one list of
entries per text, in order); ``batch_size`` texts go through the model together (their
sentences' rows batched by ``tokens_per_batch``, default 2,048 tokens per forward pass, the
``Tagger``'s ``tokens_per_batch``), and the entries do not depend on it. Words already split, as
transformers' ``token-classification`` takes them: ``is_split_into_words=True`` with a list
of words (one sentence, one list of entries) or a list of such lists (one list of entries
each). An argument the pipeline does not take (a typo) is refused in one line naming it
(``ValueError``).

``pipeline(model=..., trust_remote_code=True)`` finds the task in the folder (a folder
names one custom task, so transformers takes it); ``pipeline("pos-tagging", model=...,
trust_remote_code=True)`` says it. ``pipeline("token-classification", ...)`` is transformers'
own pipeline: the primary column's tag per token piece, as that task gives it (``entity``,
``score``, ``index``, ``word``, ``start``, ``end``; ``aggregation_strategy``). With this
package imported, ``pipeline(model=folder)`` needs no ``trust_remote_code``: the package
registers the task with transformers, and the config's ``custom_pipelines``
(``configuration_cont_transformer.CustomPipelines``) then leaves it to the registered class, the
package's code, as transformers does for the config and the model.

Raw text to words and sentences: the segmenter learned from the treebank where the folder
holds one (``segmenter.json`` and ``segmenter.safetensors``, read by ``learned_segmentation.py``:
its tokens, sentences and multiword tokens, a word that is not a piece of the text given
by its form, with its token's offsets), as the ``Tagger`` loads it; else
(:func:`split_sentences`) ``text_segmentation.py``,
the segmenter the package's ``Tagger`` and ``tag.py`` use too (no spaCy, which remote code
cannot count on), with the rules of the model's ``language`` (English when the config
names none), so the pipeline and the ``Tagger`` give the same words and sentences
(``tests/test_one_tokenizer.py``): paragraphs at blank lines, sentences after ``.``,
``!``, ``?`` or ``…`` with the closing punctuation attached to it, UD-like words (clitics
split, abbreviations such as ``Mr.`` and ``U.S.`` whole). Each sentence is encoded as the
``Tagger`` encodes it: a word by its first token, a sentence longer than the model's
``max_position_embeddings`` in overlapping windows, each word tagged in the window where it
has most context (``sentence_windows.evaluation_windows``), so no word is dropped. Given the
same words, the pipeline's columns equal the ``Tagger``'s (``tests/test_remote_pipeline.py``).

Remote code copies a file and every module it imports as ``from .module import name``,
flat: this module imports only torch, transformers and its siblings (``tokenizers``
through ``text_segmentation.py``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import torch
from transformers import Pipeline
from transformers.utils import cached_file

from .column_decoding import combination_index, decode_columns, model_column_labels, parsed_labels, predicted_label_ids
from .configuration_cont_transformer import OUTPUT_COLUMNS
from .learned_segmentation import SEGMENTER_FILE, WEIGHTS_FILE, Segmenter
from .lemma_scripts import vocabulary_words
from .pretrained import inference_dtype
from .sentence_windows import evaluation_windows
from .text_segmentation import check_language, split_text
from .token_batches import token_batches
from .word_encoding import encode_words, word_shortener

# The custom task a tagger's folder names in config.json's custom_pipelines.
TASK = "pos-tagging"
# The tokens of one forward pass, padding included (the Tagger's default tokens_per_batch).
TOKENS_PER_BATCH = 2048
# The arguments the pipeline takes, besides transformers' own (batch_size, num_workers).
ARGUMENTS = ("is_split_into_words", "tokens_per_batch", "aggregation_strategy")
# transformers' token-classification aggregation strategies; every one but "none" groups
# neighbouring words of one entity (the entries are whole words already, each tagged by its
# first token, so "first", "average" and "max" choose nothing more than "simple").
AGGREGATION_STRATEGIES = ("none", "simple", "first", "average", "max")


def split_sentences(text: str, language: str = "en") -> list[list[tuple[int, int]]]:
    """The sentences of raw ``text``, each a list of its words' ``(start, end)``, as
    ``text_segmentation.split_text`` splits them (the ``Tagger``'s segmenter)."""
    return [sentence.spans for sentence in split_text(text, language)]


def folder_segmenter(source: str) -> Segmenter | None:
    """The learned segmenter a model folder (or Hub repository) holds, or None (the rules)."""
    found = (
        [
            cached_file(
                source, name, _raise_exceptions_for_missing_entries=False, _raise_exceptions_for_connection_errors=False
            )
            for name in (SEGMENTER_FILE, WEIGHTS_FILE)
        ]
        if source
        else [None]
    )
    return Segmenter.load(found[0], found[1]) if all(found) else None


def _empty(value: str | None, word: str) -> str | None:
    """A column's value as the ``Tagger`` gives it: None for CoNLL-U's empty ``_`` (a ``_``
    of the word ``_`` stays)."""
    return None if value is None or (value == "_" and word != "_") else value


@dataclass
class _Row:
    """One forward row: the root and a window of a sentence's words; ``first``: the
    positions of the first tokens of the words it tags."""

    sentence: int
    input_ids: list[int]
    first: list[int]
    predicted: dict[str, list] = field(default_factory=dict)  # column -> label ids of its words
    scores: list[float] = field(default_factory=list)  # the primary column's chosen tag's probability


@dataclass
class _Document:
    """One input: its text (None for words given already split), its sentences (words, spans,
    multiword tokens) and its rows (kept out of transformers' way: the pipeline moves dicts
    and lists of tensors between devices, not this)."""

    text: str | None
    words: list[list[str]]
    spans: list[list[tuple[int, int]]] | None
    multiword: list[dict[int, int]]
    rows: list[_Row]


class ContTransformerTaggingPipeline(Pipeline):
    """Raw text (or words) in, one entry per word out, with every column the tagger predicts
    (module docstring). Options: ``tokens_per_batch`` (tokens per forward pass),
    ``is_split_into_words`` (the input is words, not text), and transformers' ``batch_size``."""

    _load_processor = False
    _load_image_processor = False
    _load_video_processor = False
    _load_feature_extractor = False
    _load_tokenizer = True

    def __init__(self, *args, **kwargs):
        dtype = kwargs.get("dtype", "auto")
        super().__init__(*args, **kwargs)
        # The Tagger's default precision (pretrained.inference_dtype), so that every door gives
        # the same columns: bfloat16 on a CPU with bfloat16 arithmetic unless a dtype is given.
        chosen = inference_dtype(self.device) if isinstance(dtype, str) and dtype == "auto" else None
        if chosen is not None and self.model.dtype != chosen:
            self.model.to(chosen)
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
        self.segmenter = folder_segmenter(self.model.name_or_path)

    def _sanitize_parameters(
        self,
        tokens_per_batch: int | None = None,
        is_split_into_words: bool | None = None,
        aggregation_strategy: str | None = None,
        **unknown,
    ):
        if unknown:
            name = next(iter(unknown))
            raise ValueError(
                f"{name}: not an argument of the {TASK} pipeline (it takes {', '.join(ARGUMENTS)}, batch_size)"
            )
        forward, postprocess = {}, {}
        if tokens_per_batch is not None:
            if isinstance(tokens_per_batch, bool) or not isinstance(tokens_per_batch, int) or tokens_per_batch < 1:
                raise ValueError(f"tokens_per_batch must be an integer >= 1, got {tokens_per_batch!r}")
            forward["tokens_per_batch"] = tokens_per_batch
        if aggregation_strategy is not None:
            strategy = str(getattr(aggregation_strategy, "value", aggregation_strategy)).lower()
            if strategy not in AGGREGATION_STRATEGIES:
                raise ValueError(
                    f"aggregation_strategy: {aggregation_strategy!r} is not one of {', '.join(AGGREGATION_STRATEGIES)}"
                )
            postprocess["aggregation_strategy"] = strategy
        preprocess = {} if is_split_into_words is None else {"is_split_into_words": bool(is_split_into_words)}
        return preprocess, forward, postprocess

    def __call__(self, inputs, **kwargs):
        """Tag a text, a list of texts, or with ``is_split_into_words=True`` a list of words
        (one sentence) or a list of such lists (module docstring)."""
        split = kwargs.get("is_split_into_words", self._preprocess_params.get("is_split_into_words"))
        if split and isinstance(inputs, (list, tuple)):
            if all(isinstance(word, str) for word in inputs):  # one sentence of words
                return super().__call__([list(inputs)], **kwargs)[0]
            inputs = [list(words) if isinstance(words, tuple) else words for words in inputs]
        return super().__call__(inputs, **kwargs)

    def preprocess(self, inputs, is_split_into_words: bool = False) -> dict[str, list[_Document]]:
        if is_split_into_words:
            if not isinstance(inputs, list) or not all(isinstance(word, str) for word in inputs):
                raise TypeError(
                    f"is_split_into_words: the {TASK} pipeline then takes a list of words (strings), "
                    f"or a list of such lists, not {type(inputs).__name__}"
                )
            words = [list(inputs)] if inputs else []
            return {"documents": [_Document(None, words, None, [{} for _ in words], self.rows(words))]}
        if not isinstance(inputs, str):
            raise TypeError(
                f"the {TASK} pipeline takes raw text (a string, or a list of them), not {type(inputs).__name__}; "
                "for words already split, pass is_split_into_words=True"
            )
        segments = self.segmenter.split(inputs) if self.segmenter is not None else split_text(inputs, self.language)
        sentences = list(segments)
        words = [sentence.words(inputs) for sentence in sentences]
        spans = [sentence.spans for sentence in sentences]
        multiword = [sentence.multiword for sentence in sentences]
        return {"documents": [_Document(inputs, words, spans, multiword, self.rows(words))]}

    def get_iterator(
        self, inputs, num_workers: int, batch_size: int, preprocess_params, forward_params, postprocess_params
    ):
        """The results of ``inputs``, in order: ``batch_size`` inputs at a time through
        :meth:`forward` together (their rows batched by tokens), one result each."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")

        def results():
            group: list[_Document] = []
            for item in itertools.chain(inputs, [None]):  # None: the end, which runs the last group
                if item is not None:
                    group += self.preprocess(item, **preprocess_params)["documents"]
                if group and (item is None or len(group) == batch_size):
                    for document in self.forward({"documents": group}, **forward_params)["documents"]:
                        yield self.postprocess({"documents": [document]}, **postprocess_params)
                    group = []

        return results()

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

    def _forward(self, model_inputs: dict[str, list[_Document]], tokens_per_batch: int = TOKENS_PER_BATCH) -> dict:
        documents = model_inputs["documents"]
        rows = [row for document in documents for row in document.rows]
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
                # The probability of the primary column's chosen tag (joint decoding may choose
                # another tag than its argmax).
                chosen_tag = columns[self.column]
                scores = torch.softmax(output.logits.float(), -1).gather(-1, chosen_tag.unsqueeze(-1)).squeeze(-1)
                scores = scores.cpu()
                for column, ids in columns.items():
                    ids = ids.cpu()
                    for k, i in enumerate(chosen):
                        rows[i].predicted[column] = ids[k, rows[i].first].tolist()
                for k, i in enumerate(chosen):
                    rows[i].scores = scores[k, rows[i].first].tolist()
        finally:
            self.model.train(was_training)
        return {"documents": documents}

    def postprocess(self, model_outputs: dict, aggregation_strategy: str = "none") -> list[dict]:
        (document,) = model_outputs["documents"]
        ids: list[dict[str, list]] = [{column: [] for column in self.columns} for _ in document.words]
        scores: list[list[float]] = [[] for _ in document.words]
        for row in document.rows:
            for column in self.columns:
                ids[row.sentence][column].extend(row.predicted[column])
            scores[row.sentence].extend(row.scores)
        entries = []
        for index, (words, sentence_ids) in enumerate(zip(document.words, ids)):
            values = decode_columns(
                words, sentence_ids, self.column_labels, self.feats_mode, self.lemma_lexicon, self.vocabulary
            )
            spans = document.spans[index] if document.spans is not None else [(None, None)] * len(words)
            tokens = self.multiword_tokens(document, index)
            for k, (word, (start, end)) in enumerate(zip(words, spans)):
                entry = {
                    "entity": _empty(values[self.column][k], word),
                    "score": scores[index][k],
                    "index": k + 1,
                    "word": word,
                }
                entry |= {"start": start, "end": end, "sentence": index, "token": tokens[k]}
                for column in OUTPUT_COLUMNS:
                    entry[column] = _empty(values[column][k], word) if column in values else None
                entries.append(entry)
        return entries if aggregation_strategy == "none" else self.grouped(entries, document.text)

    @staticmethod
    def grouped(entries: list[dict], text: str | None) -> list[dict]:
        """transformers' aggregated token-classification entries: neighbouring words of one
        sentence with the same ``entity`` as one ``entity_group``, their mean ``score``, and
        the text they cover (their words joined by a space where there is no text)."""
        groups: list[dict] = []
        for entry, previous in zip(entries, [None, *entries]):
            if previous is not None and (previous["sentence"], previous["entity"]) == (
                entry["sentence"],
                entry["entity"],
            ):
                group = groups[-1]
                group["scores"].append(entry["score"])
                group["words"].append(entry["word"])
                group["end"] = entry["end"]
            else:
                groups.append({"entity_group": entry["entity"], "scores": [entry["score"]], "words": [entry["word"]]})
                groups[-1] |= {"start": entry["start"], "end": entry["end"]}
        return [
            {
                "entity_group": group["entity_group"],
                "score": sum(group["scores"]) / len(group["scores"]),
                "word": " ".join(group["words"]) if text is None else text[group["start"] : group["end"]],
                "start": group["start"],
                "end": group["end"],
            }
            for group in groups
        ]

    @staticmethod
    def multiword_tokens(document: _Document, index: int) -> list[dict | None]:
        """For each word of sentence ``index``, the multiword token it belongs to, or None."""
        tokens: list[dict | None] = [None] * len(document.words[index])
        spans = document.spans[index] if document.spans is not None else None
        for first, end in sorted(document.multiword[index].items()):
            start, stop = spans[first][0], spans[end - 1][1]
            token = {"text": document.text[start:stop], "start": start, "end": stop, "id": f"{first + 1}-{end}"}
            for k in range(first, end):
                tokens[k] = token
        return tokens


__all__ = ["TASK", "ContTransformerTaggingPipeline", "split_sentences"]
