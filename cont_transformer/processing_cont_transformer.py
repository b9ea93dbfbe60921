"""The tagger's processor: everything between text and the model's tensors, and back.

:class:`ContTransformerTaggerProcessor` is a transformers processor (``ProcessorMixin``,
registered for ``AutoProcessor``): it holds the tokenizer, the segmenter and what decoding
needs (each column's labels, the tag combinations seen in training, the lemma lexicon,
from the tagger's folder), and owns every step a tagger's words take:

* :meth:`~ContTransformerTaggerProcessor.split_text` and
  :meth:`~ContTransformerTaggerProcessor.tokenize_sentences`: raw text to sentences and UD
  words, by the segmenter learned from the treebank where the folder holds one
  (``learned_segmentation.py``), else by the rules of the tagger's language
  (``text_segmentation.py``);
* :meth:`~ContTransformerTaggerProcessor.encode`: words to rows of token ids, a word read by
  its first token, a sentence longer than the model's ``max_position_embeddings`` in
  overlapping windows, each word tagged in the window where it has most context
  (``sentence_windows.evaluation_windows``), so no word is dropped and time stays linear;
* :meth:`~ContTransformerTaggerProcessor.batches`: rows sorted by length into forward
  passes of at most ``tokens_per_batch`` tokens, padding included;
* :meth:`~ContTransformerTaggerProcessor.predict_batch`: **the one inference step** of a
  tagger: a forward pass and each column's label ids (UPOS, XPOS and FEATS decoded jointly
  over the combinations seen in training, ``column_decoding.py``). The package's ``Tagger``
  (so ``tag_file`` and ``tag.py``), dev scoring during training and
  ``evaluate_saved_model``, and the folder's pipeline all call it; no door feeds the model
  placeholder labels;
* :meth:`~ContTransformerTaggerProcessor.predict`: encode, batch and predict the label ids
  of whole sentences, in their order;
* :meth:`~ContTransformerTaggerProcessor.decode`: label ids to each column's values (a lemma
  by its edit script, or from the lexicon for a form seen with the predicted tag).

``AutoProcessor.from_pretrained(folder)`` loads it from a saved tagger: its tokenizer, its
config (with the labels files beside it) and its segmenter; every tagger folder names it in
``processor_config.json``, and carries this file for remote code.

Remote code (``trust_remote_code=True``) copies a saved folder's model and pipeline files
and every file they reach through one-level relative imports, flat; this module is one of
them, so it imports only the standard library, torch, transformers, ``tokenizers`` and the
package root's own carried modules (docs/design.md §10).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import SimpleNamespace

import torch
from transformers import ProcessorMixin
from transformers.utils import cached_file

from .column_decoding import combination_index, decode_columns, model_column_labels, parsed_labels, predicted_label_ids
from .configuration_cont_transformer import AUXILIARY_COLUMNS, ContTransformerConfig
from .learned_segmentation import SEGMENTER_FILE, WEIGHTS_FILE, Segmenter
from .lemmas import vocabulary_words
from .pretrained import check_no_custom_code
from .sentence_windows import evaluation_windows
from .text_segmentation import Sentence, check_language, split_text, tokenize_sentences
from .word_encoding import encode_words, word_shortener

# The columns a tagger writes, in CoNLL-U order (LEMMA, UPOS, XPOS, FEATS).
WRITTEN_COLUMNS = ("lemma", "upos", "xpos", "feats")
# The tokens of one forward pass, padding included, by default: fastest on one CPU thread
# for a hidden size of 128 (a GPU is faster with more).
TOKENS_PER_BATCH = 2048
# The key of predict_batch's result that holds the primary column's chosen tag's probability.
SCORE = "score"


@dataclass
class Row:
    """One forward row: the root token and a window of sentence ``sentence``'s words;
    ``first``: the positions of the first tokens of the words it tags (its own words)."""

    sentence: int
    input_ids: list[int]
    first: list[int]


def folder_segmenter(source: str | None, **options) -> Segmenter | None:
    """The learned segmenter a model folder (or Hub repository) holds, or None (the rules)."""
    if not source:
        return None
    found = [
        cached_file(
            source,
            name,
            _raise_exceptions_for_missing_entries=False,
            _raise_exceptions_for_connection_errors=False,
            **options,
        )
        for name in (SEGMENTER_FILE, WEIGHTS_FILE)
    ]
    return Segmenter.load(found[0], found[1]) if all(found) else None


class ContTransformerTaggerProcessor(ProcessorMixin):
    """A tagger's processor (module docstring).

    Args:
        tokenizer: the tagger's tokenizer (one or more tokens per word, a root token first).
        column_labels: each predicted column -> its labels (lemma scripts as text), the
            primary column (that of the model's ``logits``) first; auxiliary columns (DEPREL)
            too, predicted only when asked.
        feats_mode: ``"whole"`` or ``"factored"`` (one head per feature).
        tag_combinations: the (UPOS, XPOS, FEATS) triples seen in training, decoded jointly.
        lemma_lexicon: ``{tag column: {tag: {form: lemma}}}``, a seen form's lemma.
        language: the language whose rules split raw text without a learned segmenter.
        max_length: the length the model was trained on (root included); longer sentences
            go in windows.
        max_word_length: the characters of a word the model reads (0: all).
        segmenter: a learned segmenter, or None (the rules of ``language``).
    """

    def __init__(
        self,
        tokenizer,
        column_labels: dict[str, list[str]] | None = None,
        feats_mode: str = "whole",
        tag_combinations: Sequence[Sequence[str]] | None = None,
        lemma_lexicon: dict | None = None,
        language: str = "en",
        max_length: int | None = None,
        max_word_length: int = 0,
        segmenter: Segmenter | None = None,
    ):
        super().__init__(tokenizer)
        labels = parsed_labels(dict(column_labels or {}))
        self.column = next(iter(labels), None)
        self.column_labels = labels
        self.columns = tuple(c for c in WRITTEN_COLUMNS if c in labels)
        self.auxiliary_columns = tuple(c for c in AUXILIARY_COLUMNS if c in labels)
        self.feats_mode = feats_mode
        self.language = check_language(language or "en")
        self.lemma_lexicon = lemma_lexicon or None
        self.max_length = max_length or 2**62
        if self.max_length < 2:
            raise ValueError(f"max_position_embeddings must leave room for the root token and a word: {max_length}")
        self.segmenter = segmenter
        self.vocabulary = vocabulary_words(tokenizer)  # the words a lemma may be (choose_lemma)
        # Long words cut to what the model reads: time linear in the input (word_encoding.py).
        self.shorten = word_shortener(tokenizer, max_word_length or 0)
        # (n, joint columns) label ids of the seen combinations, or None: each column alone.
        self.combinations = combination_index(
            SimpleNamespace(tag_combinations=tag_combinations, feats_mode=feats_mode), labels
        )
        self._placed: dict[torch.device, torch.Tensor] = {}

    @classmethod
    def for_model(
        cls,
        tokenizer,
        config,
        segmenter: Segmenter | None = None,
        column: str = "xpos",
        language: str | None = None,
    ) -> ContTransformerTaggerProcessor:
        """The processor of a tagger whose config is ``config`` (its labels read from the
        folder's files), with ``tokenizer`` and ``segmenter``; ``column``: the primary column
        of a config that does not record it; ``language``: another than the config's."""
        return cls(
            tokenizer,
            column_labels=model_column_labels(config, column),
            feats_mode=getattr(config, "feats_mode", "whole"),
            tag_combinations=getattr(config, "tag_combinations", None),
            lemma_lexicon=getattr(config, "lemma_lexicon", None),
            language=language or getattr(config, "language", None) or "en",
            max_length=getattr(config, "max_position_embeddings", None),
            max_word_length=getattr(config, "max_word_length", 0) or 0,
            segmenter=segmenter,
        )

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, **kwargs) -> ContTransformerTaggerProcessor:
        """The processor of a saved tagger (a folder or a Hub repository): its tokenizer
        (``tokenizer=`` one already loaded), its config with the labels files beside it
        (``config=``), its learned segmenter if it holds one. Hub options (``revision``,
        ``token``, ...) are passed on."""
        from transformers import AutoTokenizer

        source = str(pretrained_model_name_or_path)
        if os.path.isdir(source):
            if __name__.startswith("cont_transformer."):  # the package's class (remote code's copy is trusted)
                check_no_custom_code(source)  # nothing of the folder runs, and it says why in one line
        elif source.startswith(("/", ".", "~")) or source.count("/") > 1:  # a path, not a Hub id
            raise ValueError(f"{source}: no such model folder")
        tokenizer = kwargs.pop("tokenizer", None)
        config = kwargs.pop("config", None)
        kwargs.pop("trust_remote_code", None)  # nothing of the folder's code runs here
        kwargs.pop("_from_auto", None)
        options = {k: v for k, v in kwargs.items() if v is not None}
        config = config or ContTransformerConfig.from_pretrained(source, **options)
        if tokenizer is None:
            try:
                tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=False, **options)
            except (OSError, ValueError) as err:
                reason = (str(err).strip().splitlines() or [type(err).__name__])[0]
                raise ValueError(f"{source}: no tokenizer of the tagger loads from it ({reason})") from err
        hub = {k: options[k] for k in ("revision", "token", "cache_dir", "local_files_only") if k in options}
        return cls.for_model(tokenizer, config, folder_segmenter(source, **hub))

    def to_dict(self) -> dict:
        """What ``processor_config.json`` holds: the class (its ``auto_map`` for remote code
        where registered); the data it decodes with live in the tagger's own files."""
        saved = {"processor_class": type(self).__name__}
        if self._auto_class is not None:
            saved["auto_map"] = {self._auto_class: f"{type(self).__module__.rsplit('.', 1)[-1]}.{type(self).__name__}"}
        return saved

    # Raw text to sentences of words. ------------------------------------------------------

    def split_text(self, text: str) -> Iterator[Sentence]:
        """The sentences of raw ``text``: by the learned segmenter, or else by the rules of
        the tagger's language."""
        return self.segmenter.split(text) if self.segmenter is not None else split_text(text, self.language)

    def tokenize_sentences(self, sentences: Sequence[str], offsets: Sequence[int] | None = None) -> Iterator[Sentence]:
        """Each string as one sentence, split into words (as :meth:`split_text` splits them);
        ``offsets``: where each starts in a larger text."""
        if self.segmenter is None:
            return tokenize_sentences(sentences, self.language, offsets)
        offsets = [0] * len(sentences) if offsets is None else offsets
        return (self.segmenter.tokenize(sentence, offset) for sentence, offset in zip(sentences, offsets))

    # Words to tensors. --------------------------------------------------------------------

    def encode(self, sentences: Sequence[Sequence[str]]) -> list[Row]:
        """The rows of ``sentences`` (lists of words): the root token, then each word's
        tokens; a sentence longer than ``max_length`` (root included) in windows."""
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
                row = Row(index, [input_ids[0]], [])
                for word in range(start, min(start + self.max_length - 1, len(words))):
                    if owned_start <= word < owned_end:
                        row.first.append(len(row.input_ids))
                    row.input_ids += pieces[word]
                rows.append(row)
        return rows

    def batches(
        self, rows: Sequence[Row], tokens_per_batch: int = TOKENS_PER_BATCH
    ) -> Iterator[tuple[list[int], torch.Tensor, torch.Tensor | None]]:
        """``(indices of rows, input_ids, attention_mask)`` of each forward pass over
        ``rows``: longest first, each batch as many rows as fit in ``tokens_per_batch``
        tokens, padding included (a longer row alone); the mask None where nothing is padded."""
        order = sorted(range(len(rows)), key=lambda i: -len(rows[i].input_ids))
        pad = self.tokenizer.pad_token_id or 0
        start = 0
        while start < len(order):
            length = len(rows[order[start]].input_ids)
            end = start + max(1, tokens_per_batch // max(length, 1))
            chosen = order[start:end]
            ids = [rows[i].input_ids for i in chosen]
            input_ids = torch.tensor([row + [pad] * (length - len(row)) for row in ids], dtype=torch.long)
            mask = None
            if len(ids[-1]) < length:
                mask = torch.tensor([[1] * len(row) + [0] * (length - len(row)) for row in ids], dtype=torch.long)
            yield chosen, input_ids, mask
            start = end

    def __call__(self, text: str | None = None, words: Sequence[Sequence[str]] | None = None, **unknown):
        """The model's inputs for raw ``text`` (split by :meth:`split_text`) or for
        ``words`` (sentences already split), as transformers' processors give them: a
        ``BatchFeature`` of ``input_ids`` and ``attention_mask`` ``(rows, length)``, one row per
        sentence (or window of a long one), and per row its ``sentence`` and the positions of
        the first tokens of the words it tags (``word_positions``, -1 after them). So
        ``model(input_ids=..., attention_mask=...)`` and :meth:`predict_batch` take it."""
        from transformers import BatchFeature

        if unknown:
            raise TypeError(f"{next(iter(unknown))}: the tagger's processor takes text= or words=")
        if (text is None) == (words is None):
            raise TypeError("the tagger's processor takes text= (raw text) or words= (sentences of words), one")
        if words is None:
            if not isinstance(text, str):
                raise TypeError(f"text: raw text (a str), not {type(text).__name__}; words= takes sentences of words")
            words = [sentence.words(text) for sentence in self.split_text(text)]
        rows = self.encode([list(sentence) for sentence in words])
        length = max((len(row.input_ids) for row in rows), default=1)
        most = max((len(row.first) for row in rows), default=0)
        pad = self.tokenizer.pad_token_id or 0
        return BatchFeature(
            {
                "input_ids": [row.input_ids + [pad] * (length - len(row.input_ids)) for row in rows],
                "attention_mask": [[1] * len(row.input_ids) + [0] * (length - len(row.input_ids)) for row in rows],
                "sentence": [row.sentence for row in rows],
                "word_positions": [row.first + [-1] * (most - len(row.first)) for row in rows],
            },
            tensor_type="pt",
        )

    # The one inference step. --------------------------------------------------------------

    def predict_batch(
        self,
        model,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        columns: Sequence[str] | None = None,
        scores: bool = False,
        forward: Callable | None = None,
    ) -> dict[str, torch.Tensor]:
        """Each of ``columns`` (default :attr:`columns`) -> its ``(batch, seq)`` label ids for
        one batch of rows, from one forward pass of ``model`` (through ``forward``, a
        compiled ``model``, where given); with ``scores``, also :data:`SCORE`: the
        probability of the primary column's chosen tag (joint decoding may choose another
        than its argmax)."""
        columns = self.columns if columns is None else tuple(columns)
        device = input_ids.device
        output = (model if forward is None else forward)(input_ids=input_ids, attention_mask=attention_mask)
        combinations = None
        if self.combinations is not None:
            if device not in self._placed:
                self._placed[device] = self.combinations.to(device)
            combinations = self._placed[device]
        wanted = columns if not scores or self.column in columns else (*columns, self.column)
        ids = predicted_label_ids(output, wanted, self.column, self.column_labels, self.feats_mode, combinations)
        if scores:
            probabilities = torch.softmax(output.logits.float(), -1)
            ids[SCORE] = probabilities.gather(-1, ids[self.column].unsqueeze(-1)).squeeze(-1)
        return {column: ids[column] for column in (*columns, *((SCORE,) if scores else ()))}

    def predict(
        self,
        model,
        sentences: Sequence[Sequence[str]],
        tokens_per_batch: int = TOKENS_PER_BATCH,
        columns: Sequence[str] | None = None,
        scores: bool = False,
        progress: Callable[[int], object] | None = None,
        forward: Callable | None = None,
    ) -> list[dict[str, list]]:
        """Per sentence of ``sentences`` (lists of words), in their order, each of
        ``columns``' label ids, one per word (and :data:`SCORE` s with ``scores``):
        :meth:`encode`, :meth:`batches`, :meth:`predict_batch` under ``inference_mode``,
        ``model`` in eval mode meanwhile. ``progress`` is called with the number of words
        tagged after each batch."""
        columns = self.columns if columns is None else tuple(columns)
        keys = (*columns, *((SCORE,) if scores else ()))
        result: list[dict[str, list]] = [{key: [] for key in keys} for _ in sentences]
        rows = self.encode(sentences)
        if not rows:
            return result
        predicted: list[dict[str, list] | None] = [None] * len(rows)
        device = next(model.parameters()).device
        was_training = model.training
        model.eval()
        try:
            with torch.inference_mode():
                for chosen, input_ids, mask in self.batches(rows, tokens_per_batch):
                    mask = None if mask is None else mask.to(device)
                    ids = self.predict_batch(model, input_ids.to(device), mask, columns, scores, forward)
                    counts = [len(rows[i].first) for i in chosen]
                    # Each row's own words, in order: one gather per column.
                    at = (
                        torch.arange(len(chosen)).repeat_interleave(torch.tensor(counts)),
                        torch.tensor([position for i in chosen for position in rows[i].first]),
                    )
                    for i in chosen:
                        predicted[i] = {}
                    for key, value in ids.items():
                        for i, part in zip(chosen, value.cpu()[at].split(counts)):
                            predicted[i][key] = part.tolist()
                    if progress is not None:
                        progress(sum(counts))
        finally:
            model.train(was_training)
        for row, row_ids in zip(rows, predicted):
            for key in keys:
                result[row.sentence][key].extend(row_ids[key])
        return result

    # Label ids back to values. ------------------------------------------------------------

    def decode(self, words: Sequence[str], ids: dict[str, Sequence]) -> dict[str, list[str]]:
        """Each column of ``ids`` (one sentence's label ids) as values for its ``words``
        (``column_decoding.decode_columns``: lemma scripts applied, the lexicon's lemma for
        a form seen with the predicted tag)."""
        return decode_columns(
            words,
            {column: ids[column] for column in ids if column != SCORE},
            self.column_labels,
            self.feats_mode,
            self.lemma_lexicon,
            self.vocabulary,
        )


__all__ = [
    "SCORE",
    "TOKENS_PER_BATCH",
    "WRITTEN_COLUMNS",
    "ContTransformerTaggerProcessor",
    "Row",
    "folder_segmenter",
]
