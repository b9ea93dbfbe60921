"""Configuration of the continuous-in-depth transformer encoder (docs/design.md §6).

Every continuous choice (basis, K, N_T, scheme, T) lives here, so a model that was
refined, projected onto another basis or shortened saves and reloads as what it is.
"""

from __future__ import annotations

import sys

from huggingface_hub.dataclasses import strict
from transformers import PreTrainedConfig

from .checks import check_count
from .choices import check_continuous_choices
from .tagger_files import read_tagger_files, write_config

POSITION_ENCODINGS = ("sinusoidal", "learned")
# See word_representation.py: the paper's word embeddings, word embeddings plus a
# character CNN over the spelling, and the character CNN alone.
WORD_REPRESENTATIONS = ("word", "word+chars", "chars")
ACTIVATIONS = ("gelu", "relu")
# The CoNLL-U columns a tagger gives, each predicted by a head of its own.
OUTPUT_COLUMNS = ("upos", "xpos", "feats", "lemma")
# Columns a tagger may also learn, as a training signal for the encoder, when asked for
# (--columns): each word's dependency relation (DEPREL), without the head it attaches to,
# so it is never written out (docs/design.md §6).
AUXILIARY_COLUMNS = ("deprel",)
# Every column a tagger can have a head for.
PREDICTED_COLUMNS = OUTPUT_COLUMNS + AUXILIARY_COLUMNS
# UFeats as one class per whole FEATS string, or one class per value of each feature.
FEATS_MODES = ("whole", "factored")
# The columns a lemma lexicon may be keyed by (with the form), the first predicted chosen.
LEXICON_COLUMNS = ("xpos", "upos")
# The columns decoded jointly when the config records their tag_combinations: those of
# them that a tagger predicts, when two or more (joint_columns).
JOINT_COLUMNS = ("upos", "xpos", "feats")


def joint_columns(columns) -> tuple[str, ...]:
    """The :data:`JOINT_COLUMNS` among ``columns``: decoded jointly when there are two or more
    (a treebank without XPOS: UPOS and FEATS). A combination is always an ``[upos, xpos,
    feats]`` triple, ``"_"`` standing for a column the tagger does not predict."""
    return tuple(column for column in JOINT_COLUMNS if column in columns)


ABSENT_FEATURE = "_"  # the value of a feature a word does not have (factored features)


def check_word_representation(name: str) -> None:
    """``name`` is one of :data:`WORD_REPRESENTATIONS` (a ``ValueError`` naming the field if not)."""
    if name not in WORD_REPRESENTATIONS:
        raise ValueError(f"word_representation: choose one of {WORD_REPRESENTATIONS}, got {name!r}")


def feature_groups(labels: list[str]) -> list[tuple[str, list[str]]]:
    """The factored features head's groups: ``["Case=_", "Case=Nom", "Number=_", ...]`` ->
    ``[("Case", ["_", "Nom"]), ("Number", ["_", ...])]``, in label order (labels of one
    feature are contiguous; each group's labels are its values)."""
    groups: list[tuple[str, list[str]]] = []
    for label in labels:
        name, equals, value = label.partition("=")
        if not equals or not name or not value:
            raise ValueError(f"column_labels: factored feature label {label!r} is not Name=Value")
        if groups and groups[-1][0] == name:
            groups[-1][1].append(value)
        elif any(group == name for group, _ in groups):
            raise ValueError(f"column_labels: labels of feature {name!r} are not contiguous")
        else:
            groups.append((name, [value]))
    return groups


class CustomPipelines(dict):
    """A folder's ``custom_pipelines`` (task -> the pipeline class its code files hold), as
    transformers' ``pipeline()`` reads it: ``task in`` answers no for a task whose pipeline
    this file's own package has registered with transformers (importing the package
    registers the tagger's), so ``pipeline(model=folder)`` infers the task from the folder and
    builds the registered class, running no code from the folder and asking for no
    ``trust_remote_code``. Remote code's copy of this file belongs to no such package, so
    there every task stays the folder's own."""

    def __contains__(self, task: object) -> bool:
        return super().__contains__(task) and not _registered_by_this_package(task)


def _registered_by_this_package(task: object) -> bool:
    pipelines = sys.modules.get("transformers.pipelines")  # nothing is registered before it loads
    registered = getattr(pipelines, "PIPELINE_REGISTRY", None)
    entry = registered.supported_tasks.get(task) if registered is not None and isinstance(task, str) else None
    impl = entry.get("impl") if isinstance(entry, dict) else None
    return impl is not None and impl.__module__.rpartition(".")[0] == __name__.rpartition(".")[0]


@strict
class ContTransformerConfig(PreTrainedConfig):
    r"""Configuration of [`ContTransformerModel`] and [`ContTransformerForTokenClassification`].

    The encoder is one ODE block: the hidden state ``x`` of shape
    ``(batch, seq, hidden_size)`` follows ``dx/dt = a + MLP(LayerNorm(x + a))`` with
    ``a = SelfAttention(LayerNorm(x))`` over depth-time ``[0, time_horizon]``, with
    weights ``θ(t) = Σ_k φ_k(t) θ̂_k`` in a basis of ``num_basis`` functions.

    Args:
        vocab_size: number of word types, including the special tokens; set it from
            the tokenizer (``len(tokenizer)``).
        hidden_size: width of the embeddings and of the ODE state.
        num_attention_heads: attention heads; must divide ``hidden_size``.
        intermediate_size: width of the MLP's hidden layer.
        hidden_act: MLP activation, ``"gelu"`` or ``"relu"`` (the Flax reference
            encoder uses ReLU; GELU is the usual choice for transformers today).
        hidden_dropout_prob: dropout on the embeddings, on the attention and MLP
            outputs inside the rate, and before the classifier.
        attention_probs_dropout_prob: dropout on the attention probabilities.
        layer_norm_eps: epsilon of every LayerNorm.
        max_position_embeddings: longest sequence (tokens, root included) the
            position encoding covers.
        position_encoding: ``"sinusoidal"`` (fixed, added to the word embeddings,
            no parameters) or ``"learned"`` (a trained embedding per position).
        initializer_range: standard deviation of the normal initialiser of every
            Linear weight (each of the K coefficient slices) and embedding.
        basis: name of the basis in ``cont_transformer.basis.BASES``:
            ``"piecewise_constant"``, ``"piecewise_linear"``,
            ``"discontinuous_linear"`` or ``"legendre"``.
        num_basis: K, the number of basis functions (even for
            ``"discontinuous_linear"``: two per element).
        num_steps: N_T, the number of integration steps; ``None`` means ``num_basis``.
            N_T < K shortens the graph.
        scheme: Runge–Kutta scheme in ``cont_transformer.integrators.SCHEMES``
            (``"euler"``, ``"midpoint"``, ``"heun"``, ``"rk3"``, ``"rk4"``, ``"rk4_38"``).
        time_horizon: T, the end of depth-time. With Euler, piecewise constant and
            K = N_T = T the model is exactly a pre-LayerNorm encoder of K layers.
        pad_token_id: id of ``[PAD]``; its embedding is kept at zero.
        language: ISO 639-1 code of the training data (``"en"``), or None; tagging raw
            text splits it into words with that language's rules.
        bos_token_id: id of the root token ``[ROOT]`` the tokenizer puts before every
            sentence (its ``bos_token``). Set both ids from the tokenizer
            (``tokenizer.pad_token_id``, ``tokenizer.bos_token_id``): transformers'
            ``Trainer`` compares them with the tokenizer's (the tagger has no EOS token).
        unk_token_id: id of ``[UNK]``: the word channel of unknown words and of dropped
            words (word dropout); needed by the spelling representations and by word
            dropout.
        word_representation: how a word becomes a vector (``word_representation.py``):
            ``"word"`` (the paper: one embedding per vocabulary word, unknown words are
            ``[UNK]``), ``"word+chars"`` (the word embedding plus a character CNN over the
            spelling, read from ``input_ids``) or ``"chars"`` (the character CNN alone).
        char_vocab_size: characters of the character CNN's alphabet, the 3 reserved
            (padding, word start, word end) included; set it from the tokenizer.
        char_embedding_size: width of the character embeddings.
        char_hidden_size: filters of the character convolution.
        char_kernel_size: width (odd) of the character convolution.
        max_word_length: characters of a word the CNN reads; a longer word keeps its
            first and last ones.
        word_vector_size: width of the static word vectors (0: none). When set, every
            vocabulary id has a fixed vector (``static_vectors``, trained on unlabelled
            text, e.g. by ``scripts/train_word_vectors.py``; zeros for pieces and special
            tokens) that a trained projection adds to the word's representation, so a word
            the treebank never shows but the text did brings what the text taught
            (``word_representation.py``).
        num_word_embeddings: rows of the word-embedding table (``word_embeddings``); 0 means
            ``vocab_size``. Fewer rows are for ``"word+chars"`` (``"chars"`` has no table,
            ``"word"`` needs every row): the ids from the last row on are never whole words
            (``whole_word``), so they read ``[UNK]``'s row. A tagger
            trained with static word vectors ends the table at its last whole word, so the
            vectors' extra words, which read ``[UNK]``'s row anyway, cost no rows
            (docs/design.md, "Static word vectors"). A masked language model scores every id
            with its word embeddings and keeps them all.

    Columns. ``id2label`` / ``label2id`` name the tags of the primary column (their size
    sets ``num_labels``; its scores are the output's ``logits``, so transformers'
    token-classification pipeline reads it). A model that predicts more columns has a
    head per column, all after the final LayerNorm (outside the ODE block: compression
    and change of basis never touch them):

        primary_column: the column ``id2label`` names (one of ``OUTPUT_COLUMNS``:
            ``"upos"``, ``"xpos"``, ``"feats"``, ``"lemma"``); None in a config that does
            not record it (the column is then recorded beside the model, in ``metrics.json``).
        column_labels: the other predicted columns -> their labels: UPOS or XPOS tags,
            FEATS strings (``feats_mode="whole"``) or ``Name=Value`` per feature value,
            ``Name=_`` for an absent feature, labels of one feature together
            (``"factored"``), lemma edit scripts as text
            (``cont_transformer.lemmas``), dependency relations (``"deprel"``, an
            auxiliary column: learnt, never given). None or empty: one column only.
        column_sizes: the other predicted columns -> their number of labels, which sizes
            their heads; set from ``column_labels`` when not given (and checked against
            them when both are).
        feats_mode: ``"whole"`` (a class per FEATS string seen in training) or
            ``"factored"`` (a class per value of each feature, "_" for absent).
        tag_combinations: the ``[upos, xpos, feats]`` label triples seen in training
            (whole FEATS, all three columns predicted); when set, the tagger decodes the
            three columns jointly, choosing per word the seen triple of highest summed
            log-probability. None: each column's own argmax.
        lemma_lexicon: ``{column: {tag: {form: lemma}}}``, for each (form, tag) of
            ``column`` (``"xpos"``, else ``"upos"``) seen in training, the lemma seen most
            often with it; a word whose form and predicted tag are in it gets that lemma
            rather than its predicted edit script's (``column_decoding.decode_columns``).
            None: the scripts alone.
        tie_word_embeddings: the masked-LM head's decoder shares the word embedding
            matrix (``ContTransformerForMaskedLM``; the tagger has no such head).
        vocab_fingerprint: SHA-256 of the vocabulary of the tokenizer saved beside the model
            (``text.tokenization.vocabulary_fingerprint``), written when a tagger or
            language model is saved by the package's trainers; loading the folder's tokenizer
            checks it, so a tokenizer of another model is refused. None (a folder that
            does not record it, e.g. one saved by hand): only ``vocab_size`` is checked.

    ``column_labels``, ``tag_combinations`` and ``lemma_lexicon`` are the training
    treebank's data, not the encoder's configuration: ``config.json`` holds none of them.
    Writing the config (``to_json_file``, as ``save_pretrained`` does) saves them beside it
    in files of their own, ``columns.json`` (the labels and combinations) and
    ``lemma_lexicon.json`` (``tagger_files.py``); loading a model or
    ``ContTransformerConfig.from_pretrained`` reads them back (``AutoConfig.from_pretrained``
    reads ``config.json`` alone: ``tagger_files.read_tagger_files`` adds them). ``column_sizes`` stays in
    ``config.json``, so the heads are built before the labels are read. A ``config.json``
    that holds these fields itself loads with them, its files not read.

    Example:

    ```python
    >>> from cont_transformer import ContTransformerConfig, ContTransformerForTokenClassification
    >>> config = ContTransformerConfig(vocab_size=1000, num_basis=8, id2label={0: "NN", 1: "VB"})
    >>> model = ContTransformerForTokenClassification(config)
    ```
    """

    model_type = "cont_transformer"

    vocab_size: int = 16000
    hidden_size: int = 128
    num_attention_heads: int = 1
    intermediate_size: int = 128
    hidden_act: str = "gelu"
    hidden_dropout_prob: float | int = 0.1
    attention_probs_dropout_prob: float | int = 0.1
    layer_norm_eps: float = 1e-6
    max_position_embeddings: int = 512
    position_encoding: str = "sinusoidal"
    initializer_range: float = 0.02
    basis: str = "piecewise_constant"
    num_basis: int = 64
    num_steps: int | None = None
    scheme: str = "euler"
    time_horizon: float | int = 1.0
    pad_token_id: int | None = 0
    bos_token_id: int | None = None
    language: str | None = None
    unk_token_id: int | None = None
    # "word" here: a config without the field is the paper's word-only model; the trainer's
    # default is "word+chars".
    word_representation: str = "word"
    char_vocab_size: int = 256
    char_embedding_size: int = 32
    char_hidden_size: int = 512
    char_kernel_size: int = 3
    max_word_length: int = 20
    word_vector_size: int = 0
    num_word_embeddings: int = 0
    primary_column: str | None = None
    column_labels: dict[str, list[str]] | None = None
    column_sizes: dict[str, int] | None = None
    feats_mode: str = "whole"
    tag_combinations: list[list[str]] | None = None
    lemma_lexicon: dict[str, dict[str, dict[str, str]]] | None = None
    vocab_fingerprint: str | None = None
    tie_word_embeddings: bool = True

    def __post_init__(self, **kwargs):
        if self.num_steps is None:
            self.num_steps = self.num_basis
        if self.column_labels and self.column_sizes is None:
            self.column_sizes = {column: len(labels) for column, labels in self.column_labels.items()}
        super().__post_init__(**kwargs)
        if isinstance(getattr(self, "custom_pipelines", None), dict):
            self.custom_pipelines = CustomPipelines(self.custom_pipelines)
        # Plain ValueErrors at construction; `validate()` (run again by save_pretrained)
        # wraps the same checks in huggingface_hub's validation error.
        self.validate_continuous_choices()
        self.validate_encoder()
        self.validate_word_representation()
        self.validate_word_embedding_rows()
        self.validate_columns()

    def validate_continuous_choices(self):
        """Basis, K, N_T, scheme and T name registered choices with valid sizes."""
        check_continuous_choices(self.basis, self.num_basis, self.num_steps, self.scheme, self.time_horizon)

    def validate_encoder(self):
        """Sizes, dropouts and named options of the encoder are valid."""
        for name in (
            "vocab_size",
            "hidden_size",
            "num_attention_heads",
            "intermediate_size",
            "max_position_embeddings",
        ):
            check_count(name, getattr(self, name))
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size: {self.hidden_size} is not divisible by num_attention_heads={self.num_attention_heads}"
            )
        if self.hidden_act not in ACTIVATIONS:
            raise ValueError(f"hidden_act: choose one of {ACTIVATIONS}, got {self.hidden_act!r}")
        if self.position_encoding not in POSITION_ENCODINGS:
            raise ValueError(f"position_encoding: choose one of {POSITION_ENCODINGS}, got {self.position_encoding!r}")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"{name}: must lie in [0, 1), got {getattr(self, name)}")
        if not self.layer_norm_eps > 0:
            raise ValueError(f"layer_norm_eps: must be positive, got {self.layer_norm_eps}")
        if not self.initializer_range > 0:
            raise ValueError(f"initializer_range: must be positive, got {self.initializer_range}")
        for name in ("pad_token_id", "bos_token_id", "unk_token_id"):
            value = getattr(self, name)
            if value is not None and not 0 <= value < self.vocab_size:
                raise ValueError(f"{name}: must lie in [0, vocab_size), got {value}")

    def validate_word_representation(self):
        """The word representation is known, and the character CNN's sizes are valid."""
        check_word_representation(self.word_representation)
        if self.word_vector_size != 0:  # 0: no static vectors
            check_count("word_vector_size", self.word_vector_size)
        if self.word_representation == "word":
            return
        if self.unk_token_id is None:
            raise ValueError(f"unk_token_id: needed by word_representation={self.word_representation!r}")
        for name in (
            "char_vocab_size",
            "char_embedding_size",
            "char_hidden_size",
            "char_kernel_size",
            "max_word_length",
        ):
            check_count(name, getattr(self, name))
        if self.char_kernel_size % 2 == 0:
            raise ValueError(f"char_kernel_size: must be odd, got {self.char_kernel_size}")

    def validate_word_embedding_rows(self):
        """``num_word_embeddings`` is 0 or a number of rows up to ``vocab_size``, fewer only for
        the spelling representations and never fewer than ``[PAD]`` and ``[UNK]`` need."""
        rows = self.num_word_embeddings
        if not 0 <= rows <= self.vocab_size:
            raise ValueError(f"num_word_embeddings: must lie in [0, vocab_size={self.vocab_size}], got {rows}")
        if rows in (0, self.vocab_size):
            return
        if self.word_representation == "word":
            raise ValueError(
                f"num_word_embeddings: the 'word' representation embeds every id (0 or vocab_size), got {rows}"
            )
        for name in ("pad_token_id", "unk_token_id"):
            value = getattr(self, name)
            if value is not None and value >= rows:
                raise ValueError(f"num_word_embeddings: {rows} rows leave {name}={value} without its row")

    @property
    def word_embedding_rows(self) -> int:
        """The rows of the word-embedding table: ``num_word_embeddings``, or ``vocab_size`` when 0."""
        return self.num_word_embeddings or self.vocab_size

    def validate_columns(self):
        """The predicted columns are known, none twice, and each has labels."""
        if self.feats_mode not in FEATS_MODES:
            raise ValueError(f"feats_mode: choose one of {FEATS_MODES}, got {self.feats_mode!r}")
        if self.primary_column is not None and self.primary_column not in OUTPUT_COLUMNS:
            raise ValueError(f"primary_column: choose one of {OUTPUT_COLUMNS}, got {self.primary_column!r}")
        if self.primary_column == "feats" and self.feats_mode == "factored":
            raise ValueError("primary_column: factored features have several heads; predict them beside a tag column")
        sizes = self.column_sizes or {}
        if self.column_labels is not None:
            given = {column: len(labels) for column, labels in self.column_labels.items()}
            if given != sizes:
                raise ValueError(f"column_labels: {given} labels per column, but column_sizes gives {sizes}")
        named = "column_labels" if self.column_labels is not None else "column_sizes"
        for column, size in sizes.items():
            if column not in PREDICTED_COLUMNS:
                raise ValueError(f"{named}: {column!r} is not one of {PREDICTED_COLUMNS}")
            if column == self.primary_column:
                raise ValueError(f"{named}: {column!r} is the primary column (its labels are id2label)")
            if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                raise ValueError(f"{named}: {column!r} has no labels")
        if "feats" in (self.column_labels or {}) and self.feats_mode == "factored":
            feature_groups(self.column_labels["feats"])
        if sizes and self.primary_column is None:
            raise ValueError("primary_column: needed when column_sizes names other columns")
        if self.tag_combinations:
            if self.feats_mode != "whole":
                raise ValueError("tag_combinations: joint decoding needs feats_mode='whole'")
            if len(joint_columns(self.predicted_columns)) < 2:
                raise ValueError(f"tag_combinations: the model predicts fewer than two of {JOINT_COLUMNS}")
            if any(len(triple) != len(JOINT_COLUMNS) for triple in self.tag_combinations):
                raise ValueError("tag_combinations: every combination is an [upos, xpos, feats] triple")
        if self.lemma_lexicon:
            (column,) = self.lemma_lexicon if len(self.lemma_lexicon) == 1 else (None,)
            if column not in LEXICON_COLUMNS or {column, "lemma"} - set(self.predicted_columns):
                raise ValueError(
                    f"lemma_lexicon: keyed by one of {LEXICON_COLUMNS}, which the model predicts with lemmas"
                )
            lemmas = self.lemma_lexicon[column]
            if not isinstance(lemmas, dict) or not all(
                isinstance(tag, str) and isinstance(forms, dict) and all(isinstance(x, str) for x in _pairs(forms))
                for tag, forms in lemmas.items()
            ):
                raise ValueError(f"lemma_lexicon: {{{column!r}: {{tag: {{form: lemma}}}}}}, all strings")

    @property
    def predicted_columns(self) -> tuple[str, ...]:
        """The columns the model predicts, the primary first, the others in the order of
        ``PREDICTED_COLUMNS`` (() when the primary column is not recorded)."""
        primary = (self.primary_column,) if self.primary_column else ()
        others = tuple(c for c in PREDICTED_COLUMNS if c in (self.column_sizes or {}))
        return primary + others

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, **kwargs):
        """``PreTrainedConfig.from_pretrained``, with the data files beside ``config.json``
        (``tagger_files.read_tagger_files``)."""
        loaded = super().from_pretrained(pretrained_model_name_or_path, **kwargs)
        config = loaded[0] if isinstance(loaded, tuple) else loaded
        read_tagger_files(config, pretrained_model_name_or_path, **kwargs)
        return loaded

    def to_json_file(self, json_file_path, use_diff: bool = True):
        """``config.json`` (``save_pretrained`` writes it here) without the treebank's data,
        which go beside it in files of their own (``tagger_files.write_config``)."""
        write_config(self, json_file_path, use_diff)


def _pairs(mapping: dict):
    """A mapping's keys and values, one after the other."""
    for key, value in mapping.items():
        yield key
        yield value


__all__ = ["ContTransformerConfig"]
