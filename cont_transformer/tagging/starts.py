"""The three ways a tagger's training starts, each an object that gives the run its
tokenizer, the labels it keeps, its model and its optimiser's parameter groups.

* :class:`NewTagger`: a tagger from the treebank's words (and, with ``--word-vectors``,
  the vectors' words after them, which read a fixed vector each).
* :class:`FromLanguageModel`: a new tagger whose encoder, character CNN and word rows
  are a language model's (``--model-name-or-path`` on a language model's folder): the
  vocabulary is the language model's words, with their ids, then the treebank's (and the
  vectors') new words; the pretrained parts train at their own rate, and the word
  embeddings get no weight decay.
* :class:`FineTuned`: a saved tagger of this package, whose tokenizer, K, N_T, columns
  and labels are kept; tags of the primary column new in the data get new classifier rows.

:func:`tagger_start` reads ``args.model_name_or_path`` (nothing for a new tagger) and picks
one. The trainer (:class:`~.trainer.PosTrainer`) only loads and encodes data around it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import torch
from torch import nn
from transformers import AutoTokenizer

from ..column_decoding import model_column_labels
from ..configuration_cont_transformer import ContTransformerConfig
from ..modeling_cont_transformer import ContTransformerForTokenClassification
from ..tagger_files import read_tagger_files
from ..text.arguments import encoder_config
from ..text.optimization import build_optimizer
from ..text.pretrained_encoder import (
    extended_tokenizer,
    freeze_rows,
    is_language_model,
    load_language_model,
    read_saved_config,
    tagger_from_language_model,
)
from ..text.tokenization import build_tokenizer, check_tokenizer, spelling_tables, training_words
from ..text.word_vectors import load_word_vectors, vector_table
from ..word_encoding import joined
from .arguments import TrainingArguments
from .tag import saved_tag_column

logger = logging.getLogger(__name__)

# The character CNN: its parameters' names (``--spelling-learning-rate-scale``).
SPELLING_PARAMETERS = "cont_transformer.embeddings.characters."


def model_config(
    args: TrainingArguments,
    tokenizer,
    labels: Mapping[str, Sequence[str]],
    language: str | None = None,
    char_vocab_size: int = ContTransformerConfig.char_vocab_size,
    combinations: list[list[str]] | None = None,
    word_vector_size: int = 0,
    num_word_embeddings: int = 0,
    lemma_lexicon: dict | None = None,
) -> ContTransformerConfig:
    """The tagger's config at the refinement schedule's initial K and N_T; ``labels``: per
    predicted column its labels, the primary column first; ``combinations``: the
    (UPOS, XPOS, FEATS) triples seen in training (``combinations.tag_combinations``);
    ``word_vector_size``: of the static word vectors (0: none); ``num_word_embeddings``:
    rows of the word embeddings (0: one per id; see :func:`whole_word_rows`);
    ``lemma_lexicon``: see ``columns.treebank_lemma_lexicon``."""
    primary, *others = labels
    label_names = labels[primary]
    return ContTransformerConfig(
        **encoder_config(args, tokenizer, language, char_vocab_size),
        id2label=dict(enumerate(label_names)),
        label2id={name: i for i, name in enumerate(label_names)},
        primary_column=primary,
        column_labels={column: list(labels[column]) for column in others} or None,
        feats_mode=args.feats_mode,
        tag_combinations=combinations,
        word_vector_size=word_vector_size,
        num_word_embeddings=num_word_embeddings,
        lemma_lexicon=lemma_lexicon,
    )


def whole_word_rows(whole_word: torch.Tensor) -> int:
    """The word-embedding rows of a tagger whose vocabulary has ``whole_word`` ``(vocab,)``
    (``spelling_tables``): one per id up to the last whole word. The whole words (special
    tokens, training words, a language model's words) come first in the vocabulary and the
    vectors' other words and the pieces after them, which read ``[UNK]``'s row and need
    none; a ``ValueError`` if the vocabulary is not laid out so."""
    rows = int(whole_word.nonzero().max()) + 1
    if not bool(whole_word[:rows].all()):
        gap = int((~whole_word[:rows]).nonzero()[0])
        raise ValueError(
            f"vocabulary: id {gap} is not a whole word but comes before the last one ({rows - 1}); "
            "the whole words must come first for the word embeddings to end there"
        )
    return rows


class TaggerStart:
    """How a run's tagger starts (see the module docstring); ``saved_labels``: the labels a
    saved tagger keeps (None: chosen from the data); ``word_vectors``: ``(words, vectors)``
    of ``--word-vectors``, once :meth:`tokenizer` has read them."""

    saved_labels: dict[str, list] | None = None
    word_vectors: tuple[list[str], torch.Tensor] | None = None

    def __init__(self, args: TrainingArguments):
        self.args = args

    @property
    def feats_mode(self) -> str:
        return self.args.feats_mode

    def tokenizer(self, words: list[str]):
        """The run's tokenizer, given the treebank's words (train split, in order)."""
        raise NotImplementedError

    def model(self, labels, combinations, lemma_lexicon, counts: Mapping[str, int], language: str | None) -> nn.Module:
        """The model to train: ``labels`` per predicted column (the primary first), the
        (UPOS, XPOS, FEATS) ``combinations`` and the ``lemma_lexicon`` of the training data,
        ``counts`` of its words, the treebank's ``language``."""
        raise NotImplementedError

    def optimizer(self, model: nn.Module) -> torch.optim.Optimizer:
        return build_optimizer(model, self.args.learning_rate, self.args.weight_decay)


class NewTagger(TaggerStart):
    """A tagger from the treebank's words (and the word vectors' words, if given)."""

    pretrained_words: frozenset[str] = frozenset()

    def _words(self, words: list[str]) -> list[str]:
        if self.args.word_vectors is not None:  # the vectors' words join the vocabulary
            self.word_vectors = load_word_vectors(self.args.word_vectors)
            # The continuation prefix is chosen over all of them: no vector word is taken for a piece.
            words = words + self.word_vectors[0]
        return words

    def tokenizer(self, words: list[str]):
        spelling = self.args.word_representation != "word"
        self._tokenizer = build_tokenizer(list(dict.fromkeys(self._words(words))), spelling=spelling)
        return self._tokenizer

    def _config(self, labels, combinations, lemma_lexicon, counts, language):
        """The new tagger's config and spelling tables (None for the word-only model)."""
        args, tokenizer = self.args, self._tokenizer
        spelling, char_vocab_size = None, ContTransformerConfig.char_vocab_size
        if args.word_representation != "word":
            whole_words = {joined(word) for word in counts} | set(self.pretrained_words)
            spelling, char_vocab_size = spelling_tables(tokenizer, whole_words, args.max_word_length)
        vector_size, rows = 0, 0
        if self.word_vectors is not None:  # the vectors' extra words get no rows
            vector_size = self.word_vectors[1].shape[1]
            if args.word_representation == "word+chars":
                rows = whole_word_rows(spelling["whole_word"])
        config = model_config(
            args,
            tokenizer,
            labels,
            language,
            char_vocab_size,
            combinations,
            vector_size,
            rows,
            lemma_lexicon=lemma_lexicon,
        )
        return config, spelling

    def _with_vectors(self, model: nn.Module) -> nn.Module:
        if self.word_vectors is not None:
            tokenizer = self._tokenizer
            table, found = vector_table(tokenizer.get_vocab(), len(tokenizer), *self.word_vectors)
            model.cont_transformer.embeddings.set_static_vectors(table)
            logger.info("static word vectors for %d of %d vocabulary ids", found, len(tokenizer))
        return model

    def model(self, labels, combinations, lemma_lexicon, counts, language) -> nn.Module:
        config, spelling = self._config(labels, combinations, lemma_lexicon, counts, language)
        model = ContTransformerForTokenClassification(config)
        if spelling is not None:
            model.cont_transformer.embeddings.set_spelling(**spelling)
        return self._with_vectors(model)


class FromLanguageModel(NewTagger):
    """A new tagger on a language model's encoder, spelling and word rows."""

    def __init__(self, args: TrainingArguments, tokenizer, language_model):
        super().__init__(args)
        self.language_model, self.language_model_tokenizer = language_model, tokenizer
        self.pretrained_words = training_words(tokenizer, language_model)

    def tokenizer(self, words: list[str]):
        # The language model's words first, with their ids; then the new ones.
        self._tokenizer = extended_tokenizer(self.language_model, self.language_model_tokenizer, self._words(words))
        return self._tokenizer

    def model(self, labels, combinations, lemma_lexicon, counts, language) -> nn.Module:
        config, spelling = self._config(labels, combinations, lemma_lexicon, counts, language)
        tokenizer = self._tokenizer
        model = tagger_from_language_model(
            self.language_model, self.language_model_tokenizer, config, tokenizer, spelling
        )
        if self.args.freeze_word_embeddings:
            rows = tokenizer.convert_tokens_to_ids(sorted(self.pretrained_words))
            freeze_rows(model.cont_transformer.embeddings.word_embeddings.weight, rows)
        return self._with_vectors(model)

    def optimizer(self, model: nn.Module) -> torch.optim.Optimizer:
        # The pretrained parts at their own rate, and no weight decay on the word embeddings,
        # whose rows of words absent from the treebank get no gradient and would otherwise
        # only shrink.
        args = self.args
        names = [name for name, _ in model.named_parameters()]
        embeddings = [n for n in names if n.endswith("embeddings.word_embeddings.weight")]
        spelling_scale = args.spelling_learning_rate_scale
        if spelling_scale is None:
            spelling_scale = args.encoder_learning_rate_scale
        scales = {
            n: spelling_scale if n.startswith(SPELLING_PARAMETERS) else args.encoder_learning_rate_scale
            for n in names
            if n.startswith(("cont_transformer.embeddings.", "cont_transformer.encoder."))
        }
        return build_optimizer(model, args.learning_rate, args.weight_decay, scales, embeddings)


class FineTuned(TaggerStart):
    """A saved tagger of this package, trained further."""

    def __init__(self, args: TrainingArguments, tokenizer, config):
        super().__init__(args)
        self._tokenizer, self.config = tokenizer, config
        self.saved_labels = model_column_labels(config, saved_tag_column(args.model_name_or_path))

    @property
    def feats_mode(self) -> str:
        return getattr(self.config, "feats_mode", "whole")

    def tokenizer(self, words: list[str]):
        return self._tokenizer

    def model(self, labels, combinations, lemma_lexicon, counts, language) -> nn.Module:
        # The folder's code files were checked when the start was chosen (tagger_start).
        model = ContTransformerForTokenClassification.from_pretrained(
            self.args.model_name_or_path, trust_remote_code=False
        )
        primary = next(iter(labels))
        return _with_labels(model, primary, labels[primary])


def _with_labels(model, primary: str, label_names: Sequence[str]):
    """``model`` with a classifier of its ``primary`` column over ``label_names`` (its own
    first, new ones appended with freshly initialised rows)."""
    config = model.config
    config.primary_column = config.primary_column or primary
    old = config.num_labels
    if len(label_names) == old:
        return model
    classifier = nn.Linear(config.hidden_size, len(label_names))
    model._init_weights(classifier)
    with torch.no_grad():
        classifier.weight[:old] = model.classifier.weight
        classifier.bias[:old] = model.classifier.bias
    model.classifier = classifier
    config.id2label = dict(enumerate(label_names))
    config.label2id = {name: i for i, name in enumerate(label_names)}
    config.num_labels = len(label_names)
    model.num_labels = len(label_names)
    return model


def tagger_start(args: TrainingArguments) -> TaggerStart:
    """The start ``args`` ask for: a new tagger, or one from the folder
    ``args.model_name_or_path`` (a language model's, or a saved tagger's), whose tokenizer
    and config are read and checked against each other now, and whose continuous choices
    ``args`` then adopt (:meth:`~..text.arguments.EncoderArguments.adopt_saved`)."""
    if args.model_name_or_path is None:
        return NewTagger(args)
    folder = args.model_name_or_path
    config = read_saved_config(folder)
    args.adopt_saved(config)
    tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=False)
    check_tokenizer(tokenizer, config, folder)
    if is_language_model(config):
        return FromLanguageModel(args, tokenizer, load_language_model(folder))
    return FineTuned(args, tokenizer, read_tagger_files(config, folder))
