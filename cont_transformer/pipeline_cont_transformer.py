"""The whole tagger as a transformers pipeline that travels with the model folder.

A tagger's ``save_pretrained`` folder names this pipeline in ``config.json``
(``custom_pipelines``, task :data:`TASK`) and holds a copy of this file and of the files it
imports (the tagger's processor, ``processing_cont_transformer.py``, and what it imports:
``column_decoding.py``, ``lemmas.py``, ``word_encoding.py``, ``sentence_windows.py``,
``text_segmentation.py``, ``learned_segmentation.py`` and the configuration), so where this
package is not installed::

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

Between text and tensors and back, the pipeline is the tagger's processor
(``processing_cont_transformer.py``), the one the package's ``Tagger`` and dev scoring use:
its segmentation, its encoding, its one inference step (``predict_batch``) and its decoding
(UPOS, XPOS and FEATS jointly over the triples seen in training, a lemma by applying the
predicted edit script to the word, one of the likeliest that makes a word of the
tokenizer's vocabulary where the likeliest does not, or from the lemma lexicon for a form
seen in training with the predicted tag). So, given the same text, the pipeline's words and
columns are the ``Tagger``'s (``tests/test_one_inference_path.py``,
``tests/test_remote_pipeline.py``).

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
holds one (``segmenter.json`` and ``segmenter.safetensors``, read by ``learned_segmentation.py``),
else the rules of the model's ``language`` in ``text_segmentation.py`` (no spaCy, which
remote code cannot count on; :func:`split_sentences` gives their spans): paragraphs at blank
lines, sentences after ``.``, ``!``, ``?`` or ``…`` with the closing punctuation attached
to it, UD-like words (clitics split, abbreviations such as ``Mr.`` and ``U.S.`` whole).

Remote code copies a file and every module it imports as ``from .module import name``,
flat: this module imports only transformers and its siblings (torch and ``tokenizers``
through them).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from transformers import Pipeline

from .configuration_cont_transformer import OUTPUT_COLUMNS
from .pretrained import inference_dtype
from .processing_cont_transformer import SCORE, TOKENS_PER_BATCH, ContTransformerTaggerProcessor, folder_segmenter
from .text_segmentation import split_text

# The custom task a tagger's folder names in config.json's custom_pipelines.
TASK = "pos-tagging"
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


def _empty(value: str | None, word: str) -> str | None:
    """A column's value as the ``Tagger`` gives it: None for CoNLL-U's empty ``_`` (a ``_``
    of the word ``_`` stays)."""
    return None if value is None or (value == "_" and word != "_") else value


@dataclass
class _Document:
    """One input: its text (None for words given already split), its sentences (words, spans,
    multiword tokens) and, once predicted, per sentence each column's label ids and the
    primary column's scores (kept out of transformers' way: the pipeline moves dicts and
    lists of tensors between devices, not this)."""

    text: str | None
    words: list[list[str]]
    spans: list[list[tuple[int, int]]] | None
    multiword: list[dict[int, int]]
    predicted: list[dict[str, list]] = field(default_factory=list)


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
        # Everything between text and tensors and back, and the one inference step.
        self.processor = ContTransformerTaggerProcessor.for_model(
            self.tokenizer, self.model.config, folder_segmenter(self.model.name_or_path)
        )
        self.column = self.processor.column
        self.columns = tuple(c for c in OUTPUT_COLUMNS if c in self.processor.column_labels)

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
            return {"documents": [_Document(None, words, None, [{} for _ in words])]}
        if not isinstance(inputs, str):
            raise TypeError(
                f"the {TASK} pipeline takes raw text (a string, or a list of them), not {type(inputs).__name__}; "
                "for words already split, pass is_split_into_words=True"
            )
        sentences = list(self.processor.split_text(inputs))
        words = [sentence.words(inputs) for sentence in sentences]
        spans = [sentence.spans for sentence in sentences]
        multiword = [sentence.multiword for sentence in sentences]
        return {"documents": [_Document(inputs, words, spans, multiword)]}

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

    def _forward(self, model_inputs: dict[str, list[_Document]], tokens_per_batch: int = TOKENS_PER_BATCH) -> dict:
        documents = model_inputs["documents"]
        predicted = iter(
            self.processor.predict(
                self.model,
                [words for document in documents for words in document.words],
                tokens_per_batch,
                self.columns,
                scores=True,
            )
        )
        for document in documents:
            document.predicted = list(itertools.islice(predicted, len(document.words)))
        return {"documents": documents}

    def postprocess(self, model_outputs: dict, aggregation_strategy: str = "none") -> list[dict]:
        (document,) = model_outputs["documents"]
        entries = []
        for index, (words, sentence_ids) in enumerate(zip(document.words, document.predicted)):
            values = self.processor.decode(words, sentence_ids)
            spans = document.spans[index] if document.spans is not None else [(None, None)] * len(words)
            tokens = self.multiword_tokens(document, index)
            for k, (word, (start, end)) in enumerate(zip(words, spans)):
                entry = {
                    "entity": _empty(values[self.column][k], word),
                    "score": sentence_ids[SCORE][k],
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
