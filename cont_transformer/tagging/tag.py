"""Tag text with a trained token classifier: raw text, sentences or words in, tags per word out.

A model may predict several CoNLL-U columns (UPOS, XPOS, features, lemmas: one head
each, see ``ContTransformerConfig``); every one is filled: a lemma by applying the
predicted edit script to the word (:mod:`.lemmas`), factored features assembled into
one FEATS string (:mod:`.columns`). ``sentence.tags`` and the ``(word, tag)`` pairs a
sentence iterates hold the primary column, as for a model of one column.

:func:`tag` takes raw text (split into sentences and UD words by the folder's learned
segmenter, :mod:`~cont_transformer.learned_segmentation`, or else the rules of
:mod:`~cont_transformer.text_segmentation`), a list of sentences (each tokenized), a list of
already tokenized sentences or a :class:`~cont_transformer.tagging.document.Document` (e.g. read
from CoNLL-U), and returns a ``Document``: ``doc.sentences[i].words[j].upos``, multiword tokens,
character offsets, ``to_conllu()``, in stanza's shape (:mod:`.document`).
:class:`Tagger` holds a model, its tokenizer and the options, and is what
:func:`~cont_transformer.tagging.tag_files.tag_file` and ``scripts/tag.py`` use.

Inference (:meth:`Tagger.predict`) is the tagger's processor's
(:class:`~cont_transformer.processing_cont_transformer.ContTransformerTaggerProcessor`), the
same step dev scoring and the folder's pipeline take: a word is tagged by its first token (a
tokenizer may split a word into several), and a sentence longer than the model's
``max_position_embeddings`` (the length it was trained on) is tagged in overlapping windows
(:func:`~cont_transformer.sentence_windows.evaluation_windows`), each word in the window
where it has most context, at least an eighth of a window on either side (16 words for 128
positions), so tagging scores exactly what evaluation scores, no word is ever dropped, and
time stays linear in the sentence's length (the windows hold 1.34 times its words). Rows
are sorted by length and batched by a token budget (little padding), run under
``torch.inference_mode``, and the tags come back in input order.
"""

from __future__ import annotations

import json
import os
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from itertools import islice
from pathlib import Path

import torch

from ..learned_segmentation import Segmenter
from ..modeling_cont_transformer import ContTransformerForTokenClassification
from ..pretrained import check_model_kind, check_no_custom_code, inference_dtype
from ..processing_cont_transformer import TOKENS_PER_BATCH, ContTransformerTaggerProcessor, folder_segmenter
from ..runtime.collection import paused_cycle_collection
from ..runtime.compiling import compiled
from ..runtime.model_folders import METRICS_FILE, resolve_model_dir
from ..runtime.workers import mapped, worker_count
from ..text.tokenization import load_tokenizer
from ..text_segmentation import Sentence
from .document import Document


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """``--device``: a torch device that works here (default: CUDA when available, else the
    CPU). ValueError in one line naming ``--device`` for a name torch does not know, a build
    of torch without that kind of device (CUDA on a CPU build), or a device this machine lacks."""
    if device is None or device == "":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(f"--device: {str(device)!r} is not a torch device (cpu, cuda, cuda:1, mps, ...)") from None
    if resolved.type == "meta":
        raise ValueError("--device: meta holds no weights to tag with; give cpu or a GPU")
    if resolved.type == "cuda" and torch.version.cuda is None and getattr(torch.version, "hip", None) is None:
        raise ValueError(
            f"--device: {device} needs a build of torch with CUDA; this one ({torch.__version__}) has none: "
            "leave out --device to tag on the CPU"
        )
    try:
        torch.empty(0, device=resolved)
    except Exception as err:  # AssertionError, RuntimeError, NotImplementedError, ...: one line
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0].split(". ")[0]
        raise ValueError(f"--device: {device} is not available here ({reason})") from err
    return resolved


# The sentences Tagger.pipe reads ahead by default (the tokens of a forward pass:
# processing_cont_transformer.TOKENS_PER_BATCH).
SENTENCES_PER_BATCH = 1024


def one_name(name: str, value: int | None, batch_size: int | None, default: int, unit: str) -> int:
    """The batch option ``name`` (a count of ``unit`` s), also given as ``batch_size``, its
    spaCy-like older name with the same meaning (``default`` when neither is). ``ValueError``
    in one line for both at once, or for a count below 1; ``TypeError`` naming the type of one
    that is no whole number."""
    if value is not None and batch_size is not None:
        raise ValueError(f"{name} and batch_size name the same count of {unit}s: give one")
    given, chosen = (name, value) if batch_size is None else ("batch_size", batch_size)
    chosen = default if chosen is None else chosen
    if isinstance(chosen, bool) or not isinstance(chosen, int):
        raise TypeError(f"{given}: a whole number of {unit}s, not a {type(chosen).__name__}")
    if chosen < 1:
        raise ValueError(f"{given} must be an integer >= 1 {unit}, got {chosen!r}")
    return chosen


def saved_tag_column(folder: str | os.PathLike) -> str:
    """The CoNLL-U column a saved tagger predicts, from its ``metrics.json`` (``xpos`` if
    absent)."""
    metrics = Path(folder) / METRICS_FILE
    if not metrics.is_file():
        return "xpos"
    try:
        column = json.loads(metrics.read_text(encoding="utf-8")).get("tag_column", "xpos")
    except (ValueError, AttributeError) as err:
        raise ValueError(f"{metrics}: not the metrics a tagger run writes ({err})") from None
    return column


# What no word may hold: a tab or a line break would cut a CoNLL-U or TSV line.
_LINE_BREAK_OR_TAB = re.compile("[\t\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
# A lone surrogate: half of a UTF-16 pair, no character (no UTF-8 encodes it).
_SURROGATE = re.compile("[\ud800-\udfff]")


def word_problem(word: object) -> str | None:
    """Why ``word`` cannot be a word (None if it can): not a string, empty or blank,
    holding a tab or a line break (a CoNLL-U or TSV line could not hold it) or a lone
    surrogate."""
    if not isinstance(word, str) or not word.strip():
        return f"empty or non-string word {word!r}"
    if _LINE_BREAK_OR_TAB.search(word):
        return f"word {word!r} holds a tab or a line break"
    if _SURROGATE.search(word):
        return f"word {word!r} holds a lone surrogate, which is no character (text decoded wrongly?)"
    return None


def _check_text(text: str) -> None:
    """Refuse, naming its offset, text holding a lone surrogate (no UTF-8 encodes it)."""
    if (found := _SURROGATE.search(text)) is not None:
        raise ValueError(
            f"text: a lone surrogate ({found.group()!r}) at character {found.start()}, which is no character "
            "(text decoded wrongly?)"
        )


def check_words(sentences: Sequence[Sequence[str]]) -> None:
    """Raise ``ValueError`` naming the first word that cannot be one (:func:`word_problem`)."""
    for number, words in enumerate(sentences):
        for position, word in enumerate(words):
            if (problem := word_problem(word)) is not None:
                raise ValueError(f"sentence {number + 1}, word {position + 1}: {problem}")


class SentenceError(ValueError):
    """Tagging failed on a sentence: ``sentence`` is its number in its batch (from 0); the
    message says what failed."""

    def __init__(self, sentence: int, message: str):
        super().__init__(sentence, message)
        self.sentence, self.message = sentence, message

    def __str__(self) -> str:
        return self.message


def _batch_columns(tagger: Tagger, sentences: Sequence[Sequence[str]]) -> list[dict[str, list[str]]]:
    """:meth:`Tagger.predict_columns` of one batch; an error becomes a :class:`SentenceError`
    naming the first sentence that fails alone (the batch's first if none does). The cycle
    collector is paused meanwhile (in a worker, a collection would also copy shared pages)."""
    try:
        with paused_cycle_collection():
            return tagger.predict_columns(sentences)
    except Exception as err:
        failing = 0
        for number, words in enumerate(sentences):
            try:
                tagger.predict_columns([words])
            except Exception:  # noqa: BLE001 (whatever failed the batch)
                failing = number
                break
        raise SentenceError(failing, f"{type(err).__name__}: {err}") from err


@contextmanager
def _no_progress_bars() -> Iterator[None]:
    """transformers' progress bars off inside the block (its "Loading weights" bar), as
    they were after it: the caller's own choice for its own loads is kept."""
    from transformers.utils import logging as transformers_logging

    shown = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        if shown:
            transformers_logging.enable_progress_bar()


class Tagger:
    """A token classifier with its tokenizer, ready to tag.

    Args:
        model: any ``AutoModelForTokenClassification`` of this package (its
            ``config.id2label`` names the tags); it is put in eval mode while tagging.
        tokenizer: its tokenizer (one or more tokens per word, a root token first).
        column: the CoNLL-U column of the model's ``logits`` (its primary column:
            ``config.primary_column``; for a model whose config does not record it, this, default
            ``"xpos"``); the model's other heads (``config.column_labels``) fill theirs.
        language: ``"en"`` or ``"de"`` for raw text; None reads ``model.config.language``
            when the config has one, else English.
        tokens_per_batch: tokens per forward pass, padding included (sentences sorted by
            length fill it: short sentences go many to a batch). 2,048 is fastest on one
            CPU thread for a hidden size of 128; on a GPU more is faster. The folder's
            pipeline takes the same name; ``batch_size``, its older name here, is read the
            same (not both).
        torch_compile: run the model through ``torch.compile`` (dynamic shapes: batches
            vary in size) with ``torch_compile_backend`` and ``torch_compile_mode``.
        segmenter: a learned segmenter (``learned_segmentation.Segmenter``) for raw text;
            None: the rules of ``language`` (``text_segmentation``). :meth:`from_pretrained`
            loads the one a folder holds.
    """

    def __init__(
        self,
        model,
        tokenizer,
        column: str = "xpos",
        language: str | None = None,
        tokens_per_batch: int | None = None,
        torch_compile: bool = False,
        torch_compile_mode: str | None = None,
        torch_compile_backend: str = "inductor",
        batch_size: int | None = None,
        segmenter: Segmenter | None = None,
    ):
        tokens_per_batch = one_name("tokens_per_batch", tokens_per_batch, batch_size, TOKENS_PER_BATCH, "token")
        self.model = model
        self.tokenizer = tokenizer
        # Everything between text and tensors and back, and the one inference step.
        self.processor = ContTransformerTaggerProcessor.for_model(
            tokenizer, model.config, segmenter, column, language=language
        )
        self.column = self.processor.column
        self.columns = self.processor.columns  # what it gives, in CoNLL-U order
        # What it learnt besides, as a training signal (DEPREL): predicted only when asked.
        self.auxiliary_columns = self.processor.auxiliary_columns
        self.tokens_per_batch = tokens_per_batch
        device = next(model.parameters()).device
        self.forward = (
            compiled(model, device, torch_compile_backend, torch_compile_mode, dynamic=True) if torch_compile else model
        )

    @property
    def language(self) -> str:
        """The language whose rules split raw text where the folder has no learned segmenter."""
        return self.processor.language

    @property
    def segmenter(self) -> Segmenter | None:
        """The learned segmenter for raw text, or None (the rules of :attr:`language`)."""
        return self.processor.segmenter

    @property
    def shorten(self) -> Callable[[str], str] | None:
        """What the model reads of a long word (None: every word whole)."""
        return self.processor.shorten

    @classmethod
    def from_pretrained(
        cls,
        folder: str | os.PathLike,
        device: str | torch.device | None = None,
        dtype: torch.dtype | None = None,
        **options,
    ) -> Tagger:
        """Load a ``save_pretrained`` folder (model, tokenizer, ``metrics.json``; or a training
        run's folder, its ``best/`` model) onto
        ``device`` (default: CUDA when available), in ``dtype`` (default: bfloat16 on a CPU
        with bfloat16 instructions, where it is several times faster at the same accuracy,
        and as saved elsewhere: :func:`inference_dtype`; ``torch.float32`` keeps a float32
        model exact). Prints nothing: transformers' progress bar is off while loading
        (warnings stay)."""
        from transformers import AutoModelForTokenClassification
        from transformers.tokenization_utils_base import VERY_LARGE_INTEGER

        folder = resolve_model_dir(folder)
        check_no_custom_code(folder)  # before any load: no code from the folder, no prompt
        check_model_kind(folder, ContTransformerForTokenClassification)  # not a language or image model
        device = resolve_device(device)  # before any load: a bad --device is one line
        dtype = inference_dtype(device, dtype)
        with _no_progress_bars():  # read in that precision: no second copy of the weights
            model = AutoModelForTokenClassification.from_pretrained(folder, trust_remote_code=False, dtype=dtype)
        model = model.to(device)
        # No length limit: the tagger windows long sentences itself (a folder's tokenizer
        # may hold the training length, and would warn about it).
        tokenizer = load_tokenizer(folder, model, model_max_length=VERY_LARGE_INTEGER)
        if "segmenter" not in options:  # the folder's, as the processor and the pipeline find it
            options["segmenter"] = folder_segmenter(str(folder))
        return cls(model, tokenizer, column=options.pop("column", saved_tag_column(folder)), **options)

    def split_text(self, text: str) -> Iterator[Sentence]:
        """The sentences of raw ``text`` (:meth:`ContTransformerTaggerProcessor.split_text`)."""
        return self.processor.split_text(text)

    def tokenize_sentences(self, sentences: Sequence[str], offsets: Sequence[int] | None = None) -> Iterator[Sentence]:
        """Each string as one sentence, split into words, as :meth:`split_text` splits them."""
        return self.processor.tokenize_sentences(sentences, offsets)

    def predict(
        self, sentences: Sequence[Sequence[str]], progress: Callable[[int], object] | None = None
    ) -> list[list[str]]:
        """Tags of the primary column of ``sentences`` (lists of non-empty words), in their
        order: one list of tags per sentence, one tag per word. ``progress`` is called
        with the number of words tagged after each batch."""
        return [columns[self.column] for columns in self.predict_columns(sentences, progress)]

    def predict_columns(
        self,
        sentences: Sequence[Sequence[str]],
        progress: Callable[[int], object] | None = None,
        auxiliary: bool = False,
    ) -> list[dict[str, list[str]]]:
        """Every predicted column of ``sentences`` (lists of non-empty words), in their
        order: per sentence, ``{column: one value per word}`` (``self.columns``; with
        ``auxiliary``, ``self.auxiliary_columns`` too, as a teacher gives them).
        ``progress`` is called with the number of words tagged after each batch."""
        wanted = self.columns + (self.auxiliary_columns if auxiliary else ())
        ids = self.processor.predict(
            self.model, sentences, self.tokens_per_batch, wanted, progress=progress, forward=self.forward
        )
        return [self.processor.decode(words, sentence_ids) for words, sentence_ids in zip(sentences, ids)]

    def predict_batches(
        self, batches: Iterable[Sequence[Sequence[str]]], processes: int = 1
    ) -> Iterator[list[dict[str, list[str]]]]:
        """:meth:`predict_columns` of each batch of sentences, in order, lazily: in this process
        (``processes=1``), or in that many worker processes forked from it (0: one per core),
        one thread each, sharing this tagger's weights, at most two batches per worker read
        ahead (:func:`~cont_transformer.runtime.workers.mapped`). An error in a batch is a
        :class:`SentenceError` naming the sentence, and stops the workers. Workers tag on the
        CPU: a tagger on another device is refused more than one (a fork cannot share a GPU)."""
        processes = worker_count(processes)
        device = next(self.model.parameters()).device
        if processes > 1 and device.type != "cpu":
            raise ValueError(f"--processes: worker processes tag on the CPU; the tagger is on {device}: give 1")
        return mapped(partial(_batch_columns, self), batches, processes)

    @paused_cycle_collection()
    def __call__(
        self, inputs: str | Sequence[str] | Sequence[Sequence[str]] | Document | Sequence[Document]
    ) -> Document | list[Document]:
        """Tag raw text, sentences, tokenized sentences or a document into one
        :class:`Document`; a list of documents into a list of them (stanza's rule, by
        :meth:`pipe`). See :func:`tag`."""
        if isinstance(inputs, (str, Document)):
            return self._tagged([self.untagged(inputs)])[0]
        if isinstance(inputs, (bytes, bytearray, Mapping)) or not isinstance(inputs, Iterable):
            raise TypeError(
                f"tag() takes text (a str, not {type(inputs).__name__}), words or Documents; see Tagger.pipe"
            )
        inputs = list(inputs)
        if inputs and all(isinstance(item, Document) for item in inputs):
            return list(self.pipe(inputs))
        return self._tagged([self.untagged(inputs)])[0]

    def untagged(self, inputs: str | Sequence[str] | Sequence[Sequence[str]] | Document) -> Document:
        """The :class:`Document` that tagging ``inputs`` fills (segmented and checked, no
        columns yet; a ``Document`` itself); see :func:`tag` for what each input means."""
        if isinstance(inputs, Document):
            check_words([[word.text for word in sentence.words] for sentence in inputs.sentences])
            return inputs
        if isinstance(inputs, str):
            _check_text(inputs)
            return Document.from_text(inputs, list(self.split_text(inputs)))
        inputs = list(inputs)
        if all(isinstance(item, str) for item in inputs):
            for item in inputs:
                _check_text(item)
            # One text of the sentences, one per line (as scripts/tag.py --input-format lines reads them).
            text, offsets = "\n".join(inputs), [0]
            for item in inputs[:-1]:
                offsets.append(offsets[-1] + len(item) + 1)
            segments = list(self.tokenize_sentences(inputs, offsets))
            return Document.from_text(text, segments, paragraphs=False)
        if all(isinstance(item, (list, tuple)) for item in inputs):
            words = [list(item) for item in inputs]
            check_words(words)
            return Document.from_words(words)
        raise TypeError(
            "tag() takes a string, a Document, a list of strings (the sentences of one text), a list of "
            "lists of strings (its words) or a list of Documents, not a mix; for several texts use Tagger.pipe"
        )

    def _tagged(self, documents: list[Document], columns: list[dict[str, list[str]]] | None = None) -> list[Document]:
        """``documents`` (from :meth:`untagged`) filled with ``columns``, one per sentence (None:
        their sentences tagged together now)."""
        if columns is None:
            columns = self.predict_columns(_words(documents))
        columns = iter(columns)
        for document in documents:
            document.fill(list(islice(columns, len(document.sentences))), self.column)
            document.lang = document.lang or self.language
        return documents

    def _untagged_groups(self, inputs: Iterable, batch_size: int) -> Iterator[list[Document]]:
        """:meth:`untagged` documents of ``inputs``, grouped until a group holds ``batch_size``
        sentences (the last group, possibly empty, when the input ends); an item that is no
        text refused naming its type."""
        pending: list[Document] = []
        sentences = 0
        for index, item in enumerate(inputs):
            if isinstance(item, (bytes, bytearray, Mapping)) or not isinstance(item, (str, Document, Iterable)):
                raise TypeError(
                    f"Tagger.pipe: item {index} is a {type(item).__name__}, not a text (a str, a list of "
                    "sentences or of word lists, or a Document)"
                )
            with paused_cycle_collection():  # never across a yield: the caller's code runs there
                pending.append(self.untagged(item))
            sentences += len(pending[-1].sentences)
            if sentences >= batch_size:
                yield pending
                pending, sentences = [], 0
        yield pending

    def pipe(
        self,
        inputs: Iterable[str | Sequence[str] | Sequence[Sequence[str]] | Document],
        sentences_per_batch: int | None = None,
        *,
        batch_size: int | None = None,
        n_process: int = 1,
    ) -> Iterator[Document]:
        """Tag many texts: one :class:`Document` per item of ``inputs`` (each what
        :meth:`__call__` takes for one document: a string, a list of sentence strings, a
        list of word lists, a ``Document``), in input order, lazily.

        Sentences are tagged across documents: items are read until they hold
        ``sentences_per_batch`` sentences (default 1,024; or the input ends), tagged together
        (sorted by length into forward passes of :attr:`tokens_per_batch` tokens), then
        yielded. So it reads ahead at most ``sentences_per_batch`` sentences and one item,
        and works on an endless iterator. With ``n_process`` above 1 (0: one per core) the
        batches are tagged in that many worker processes, one thread each, sharing this
        tagger's weights (:meth:`predict_batches`; this process splits the texts into words),
        and up to two batches per worker are read ahead. spaCy's ``nlp.pipe(texts,
        batch_size=..., n_process=...)`` (its ``batch_size`` is read the same, not with the
        other), stanza's ``bulk_process`` (which returns a list: :meth:`bulk_process`)."""
        sentences_per_batch = one_name(
            "sentences_per_batch", sentences_per_batch, batch_size, SENTENCES_PER_BATCH, "sentence"
        )
        if isinstance(inputs, (str, bytes, bytearray, Document, Mapping)) or not isinstance(inputs, Iterable):
            raise TypeError(
                f"Tagger.pipe takes an iterable of texts, one Document each, not a {type(inputs).__name__}; "
                "tag one text with tagger(text)"
            )
        groups: deque[list[Document]] = deque()  # read and not yet yielded, in order

        def batches() -> Iterator[list[list[str]]]:
            for documents in self._untagged_groups(inputs, sentences_per_batch):
                groups.append(documents)
                yield _words(documents)

        for columns in self.predict_batches(batches(), n_process):
            with paused_cycle_collection():
                tagged = self._tagged(groups.popleft(), columns)
            yield from tagged

    def bulk_process(
        self,
        inputs: Iterable[str | Sequence[str] | Sequence[Sequence[str]] | Document],
        sentences_per_batch: int | None = None,
        *,
        batch_size: int | None = None,
        n_process: int = 1,
    ) -> list[Document]:
        """stanza's name: :meth:`pipe` as a list."""
        return list(self.pipe(inputs, sentences_per_batch, batch_size=batch_size, n_process=n_process))


def _words(documents: list[Document]) -> list[list[str]]:
    """The words of each sentence of ``documents``."""
    return [[word.text for word in sentence.words] for document in documents for sentence in document.sentences]


def tag(
    inputs: str | Sequence[str] | Sequence[Sequence[str]] | Document | Sequence[Document],
    model,
    tokenizer,
    *,
    language: str | None = None,
    tokens_per_batch: int | None = None,
    batch_size: int | None = None,
) -> Document | list[Document]:
    """Tag text; returns a :class:`~cont_transformer.tagging.document.Document` of its sentences, in input order.

    Args:
        inputs: raw text (a string: split into sentences and UD words, multiword tokens
            such as ``didn't`` = ``did`` ``n't``, character offsets into it), a list of
            strings (the sentences of one text, one sentence each, tokenized, as
            ``scripts/tag.py --input-format lines`` reads lines; offsets into them joined
            by newlines, ``doc.text``), a list of lists of words (already tokenized, no
            offsets; a word that is empty or blank or holds a tab or a line break is a
            ``ValueError``), a ``Document`` (e.g. ``Document.read_conllu(path)``: its words
            tagged as they are, in place), or a list of ``Document`` s (a list of them
            back, tagged together: stanza's rule). A list is one document, as in stanza
            (which reads each string as a paragraph and splits it into sentences; join
            them with blank lines for that reading); several texts go through
            :meth:`Tagger.pipe`, one document each.
        model: a token classifier (e.g. ``ContTransformerForTokenClassification``).
        tokenizer: its tokenizer.
        language: ``"en"`` or ``"de"`` for tokenizing; default the model's, else English.
        tokens_per_batch: tokens per forward pass (see :class:`Tagger`; ``batch_size``, its older
            name, is read the same).

    Example::

        model = AutoModelForTokenClassification.from_pretrained(folder)
        tokenizer = AutoTokenizer.from_pretrained(folder)
        doc = tag("The cat didn't sit. It ran.", model, tokenizer)
        for sentence in doc:
            print(list(sentence))  # [("The", "DT"), ("cat", "NN"), ("did", "VBD"), ("n't", "RB"), ...]
        doc.sentences[0].words[2].upos  # "AUX"; doc.sentences[0].tokens[2].text: "didn't"
        doc.to_conllu()  # as scripts/tag.py writes it
    """
    return Tagger(model, tokenizer, language=language, tokens_per_batch=tokens_per_batch, batch_size=batch_size)(inputs)
