"""The continuous-in-depth transformer encoder (docs/design.md §6) as a Hugging Face model.

One vector per word (the word embedding, and with ``"word+chars"`` a character CNN over
the spelling: ``word_representation.py``) plus a position encoding feed one
:class:`OdeBlock` whose rate is a pre-LayerNorm encoder unit,
``dx/dt = a + MLP(LayerNorm(x + a))`` with ``a = SelfAttention(LayerNorm(x))``; a final
LayerNorm closes the encoder, whose output is mapped back onto the tokens (every piece
of a word gets the word's vector), and a Linear layer over the tags makes the token
classifier: one per predicted column (UPOS, XPOS, features, lemma scripts; see
``ContTransformerConfig``), all reading the same final encoding.

Every import of this package's own modules is a relative ``from .module import name``:
``save_pretrained`` copies exactly the files found that way, so a saved folder loads
with ``trust_remote_code=True`` where this package is not installed.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn
from transformers.activations import ACT2FN
from transformers.modeling_outputs import BaseModelOutput, MaskedLMOutput, TokenClassifierOutput
from transformers.utils import cached_file, can_return_tuple

from .configuration_cont_transformer import AUXILIARY_COLUMNS, ContTransformerConfig, feature_groups
from .model_card import CardText
from .ode_block import Coefficients, OdeBlock
from .pretrained import ContinuousPreTrainedModel
from .word_representation import WordRepresentation, WordVectors


def sinusoidal_positions(seq_len: int, dim: int, device=None, dtype=None) -> torch.Tensor:
    """The fixed encoding of "Attention is all you need": sin on even, cos on odd features.

    Returns ``(seq_len, dim)``.
    """
    position = torch.arange(seq_len, device=device, dtype=torch.float32)[:, None]  # (seq, 1)
    frequency = torch.exp(
        torch.arange(0, dim, 2, device=device, dtype=torch.float32) * (-math.log(10000.0) / dim)
    )  # (ceil(dim / 2),)
    angle = position * frequency  # (seq, ceil(dim / 2))
    encoding = torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)[:, :dim]  # (seq, dim)
    return encoding.to(dtype)


class ContTransformerEmbeddings(WordRepresentation):
    """The input representation (one vector per word, see :class:`WordRepresentation`) plus
    a sinusoidal or learned encoding of the word positions, then dropout."""

    def __init__(self, config: ContTransformerConfig):
        super().__init__(config)
        if config.position_encoding == "learned":
            self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.max_positions = config.max_position_embeddings

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> WordVectors:
        """``input_ids``, ``attention_mask`` ``(batch, seq)`` -> :class:`WordVectors` whose
        ``vectors`` ``(batch, words, hidden)`` are the encoder's input.

        Sinusoidal positions take any length; learned ones exist only up to
        ``max_position_embeddings`` words (longer text: tag it in windows, as ``tag()`` does).
        """
        words = super().forward(input_ids, attention_mask)
        vectors = words.vectors  # (batch, words, hidden)
        num_words = vectors.shape[1]
        if hasattr(self, "position_embeddings") and num_words > self.max_positions:
            raise ValueError(
                f"sequence of {num_words} words (root included) is longer than the "
                f"{self.max_positions} learned positions (max_position_embeddings); tag longer "
                "text in windows, e.g. with cont_transformer.tag(), or train with sinusoidal positions"
            )
        if hasattr(self, "position_embeddings"):
            positions = self.position_embeddings.weight[:num_words]  # (words, hidden)
        else:
            positions = sinusoidal_positions(num_words, vectors.shape[-1], vectors.device, vectors.dtype)
        return WordVectors(self.dropout(vectors + positions), words.mask, words.token_words)


class ContTransformerSelfAttention(nn.Module):
    """Multi-head scaled dot-product self-attention (PyTorch SDPA) with an output projection."""

    def __init__(self, config: ContTransformerConfig):
        super().__init__()
        hidden = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.output = nn.Linear(hidden, hidden)
        self.dropout_prob = config.attention_probs_dropout_prob

    def forward(
        self, x: torch.Tensor, attention_mask: torch.Tensor | None = None, attentions: list | None = None
    ) -> torch.Tensor:
        """``x`` ``(batch, seq, hidden)``; ``attention_mask`` boolean ``(batch, 1, 1, seq)``,
        True at the keys to attend to, or None. Returns ``(batch, seq, hidden)``. A list
        ``attentions`` gets the attention weights ``(batch, heads, seq, seq)`` appended (as
        SDPA computes them, before dropout; the output is SDPA's either way)."""
        batch, seq_len, hidden = x.shape
        heads = (batch, seq_len, self.num_heads, hidden // self.num_heads)
        q = self.query(x).view(heads).transpose(1, 2)  # (batch, heads, seq, head_dim)
        k = self.key(x).view(heads).transpose(1, 2)
        v = self.value(x).view(heads).transpose(1, 2)
        if attentions is not None:
            scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (batch, heads, seq, seq)
            if attention_mask is not None:
                scores = scores.masked_fill(~attention_mask, float("-inf"))
            attentions.append(scores.softmax(-1))
        context = F.scaled_dot_product_attention(
            q, k, v, attn_mask=attention_mask, dropout_p=self.dropout_prob if self.training else 0.0
        )  # (batch, heads, seq, head_dim)
        return self.output(context.transpose(1, 2).reshape(batch, seq_len, hidden))


class ContTransformerMLP(nn.Module):
    """Linear -> activation -> Linear."""

    def __init__(self, config: ContTransformerConfig):
        super().__init__()
        self.fc1 = nn.Linear(config.hidden_size, config.intermediate_size)
        self.activation = ACT2FN[config.hidden_act]
        self.fc2 = nn.Linear(config.intermediate_size, config.hidden_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(batch, seq, hidden)`` -> ``(batch, seq, hidden)``."""
        return self.fc2(self.activation(self.fc1(x)))


class ContTransformerRate(nn.Module):
    """The encoder's rate dx/dt (paper eq. for the continuous transformer).

    ``a = SelfAttention(LayerNorm(x))``, ``dx/dt = a + MLP(LayerNorm(x + a))``: one
    Euler step of size 1 is one pre-LayerNorm transformer layer. This module is the
    template of the OdeBlock; its weights are θ(t), supplied by the block.
    """

    def __init__(self, config: ContTransformerConfig):
        super().__init__()
        self.attention_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.attention = ContTransformerSelfAttention(config)
        self.mlp_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.mlp = ContTransformerMLP(config)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(
        self, x: torch.Tensor, attention_mask: torch.Tensor | None = None, attentions: list | None = None
    ) -> torch.Tensor:
        """``x`` ``(batch, seq, hidden)`` -> ``dx/dt`` ``(batch, seq, hidden)``; a list
        ``attentions`` collects the attention weights of this evaluation."""
        a = self.dropout(self.attention(self.attention_norm(x), attention_mask, attentions))
        return a + self.dropout(self.mlp(self.mlp_norm(x + a)))


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
        "One entry per word (`word`, `start`, `end`, `sentence`, `token`: the multiword token it belongs to or\n"
        "None, every column the model predicts, None for one it does not and for an empty value, and `score`: the\n"
        "probability of the primary column's tag), decoded as the `cont-transformer` package decodes them: UPOS, XPOS and\n"
        "FEATS jointly over the combinations seen in training, a lemma by applying the predicted\n"
        "edit script to the word (or, for a word seen in training with the predicted tag, the lemma\n"
        "seen with them). Raw text is split into sentences and words by this folder's\n"
        "`text_segmentation.py`, with the rules of the model's language (the table's \"raw text split by\"; the\n"
        "package's `Tagger` uses the same); a sentence longer than the model's\n"
        '`max_position_embeddings` is tagged in overlapping windows. `pipeline("token-classification",\n'
        "...)` gives the primary column's tag per token piece. A list of texts gives one list of entries per\n"
        'text (`batch_size=8` tags 8 at a time); words already split: `tagger(["The", "dog"],\n'
        "is_split_into_words=True)`. The tokenizer runs no code:\n"
        '`AutoTokenizer.from_pretrained("<this repo>", trust_remote_code=False)`.\n\n'
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


# A tagger's lemma lexicon (``config.lemma_lexicon``: the training treebank's lemma per form
# and tag) travels beside config.json, in a file of its own.
LEMMA_LEXICON_FILE = "lemma_lexicon.json"
HUB_OPTIONS = ("cache_dir", "force_download", "local_files_only", "token", "revision", "subfolder")


def read_lemma_lexicon(path: str | os.PathLike, config: ContTransformerConfig) -> dict:
    """The lemma lexicon saved in ``path`` (:data:`LEMMA_LEXICON_FILE`), checked against
    ``config`` as a config checks its own; a ``ValueError`` naming the file if it is not one."""
    try:
        lexicon = json.loads(Path(path).read_text(encoding="utf-8"))
        config.lemma_lexicon = lexicon
        config.validate_columns()
    except (OSError, UnicodeDecodeError, ValueError) as err:
        config.lemma_lexicon = None
        raise ValueError(f"{path}: not this model's lemma lexicon ({err})") from err
    return lexicon


class ContTransformerPreTrainedModel(ContinuousPreTrainedModel):
    """Weight initialisation; parameter counts, complete save folders with a model card and
    activation checkpointing come from :class:`ContinuousPreTrainedModel`; a tagger's lemma
    lexicon is saved and read as its own file (:data:`LEMMA_LEXICON_FILE`)."""

    config_class = ContTransformerConfig
    base_model_prefix = "cont_transformer"
    _supports_sdpa = True
    # Word-only models saved before word dropout moved into the model have no such buffer.
    _keys_to_ignore_on_load_missing = (r"embeddings\.word_dropout$",)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *args, **kwargs):
        """``PreTrainedModel.from_pretrained``, and the folder's lemma lexicon into
        ``config.lemma_lexicon`` (a folder whose config.json holds the lexicon keeps it)."""
        loaded = super().from_pretrained(pretrained_model_name_or_path, *args, **kwargs)
        model = loaded[0] if isinstance(loaded, tuple) else loaded
        if not getattr(model.config, "lemma_lexicon", None):
            options = {name: kwargs[name] for name in HUB_OPTIONS if name in kwargs}
            path = cached_file(
                pretrained_model_name_or_path,
                LEMMA_LEXICON_FILE,
                _raise_exceptions_for_missing_entries=False,
                _raise_exceptions_for_connection_errors=False,
                **options,
            )
            if path is not None:
                model.config.lemma_lexicon = read_lemma_lexicon(path, model.config)
        return loaded

    def save_pretrained(self, save_directory: str | os.PathLike, *args, **kwargs) -> None:
        """Save as :class:`ContinuousPreTrainedModel` does, the lemma lexicon in
        :data:`LEMMA_LEXICON_FILE` rather than in ``config.json`` (and no stale one)."""
        lexicon = getattr(self.config, "lemma_lexicon", None)
        self.config.lemma_lexicon = None
        try:
            super().save_pretrained(save_directory, *args, **kwargs)
        finally:
            self.config.lemma_lexicon = lexicon
        if not kwargs.get("is_main_process", True):
            return
        path = Path(save_directory) / LEMMA_LEXICON_FILE
        if lexicon:
            staging = path.with_name(f".{LEMMA_LEXICON_FILE}.tmp")
            staging.write_text(json.dumps(lexicon, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
            os.replace(staging, path)
        elif path.exists():
            path.unlink()  # another model's, from an earlier save into this folder

    def num_parameters_split(self) -> dict[str, int]:
        """Parameter counts: ``embedding`` (the input representation: word embeddings, the
        character CNN, learned position embeddings), ``non_embedding`` (the ODE block's
        coefficients, LayerNorms, classifier: the part compression acts on) and ``total``."""
        total = self.num_parameters()
        embeddings = next(m for m in self.modules() if isinstance(m, ContTransformerEmbeddings))
        embedding = sum(p.numel() for p in embeddings.parameters())
        return {"embedding": embedding, "non_embedding": total - embedding, "total": total}

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """Normal(0, initializer_range) for Linear weights and embeddings, zero biases,
        unit LayerNorms. The ODE block's coefficient containers are initialised like
        the template module they mirror, every K slice with its own draw."""
        std = self.config.initializer_range
        if isinstance(module, WordRepresentation) and not getattr(module.word_dropout, "_is_hf_initialized", False):
            module.word_dropout.zero_()  # no word dropout unless training sets it
        kind = module.template_cls if isinstance(module, Coefficients) else type(module)
        if issubclass(kind, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif issubclass(kind, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
        elif issubclass(kind, nn.Conv1d):
            module.reset_parameters()  # PyTorch's fan-in scaling: the character CNN's input
        elif issubclass(kind, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=std)
            # A loaded weight is flagged; its slice would not be, so check here.
            if module.padding_idx is not None and not getattr(module.weight, "_is_hf_initialized", False):
                module.weight[module.padding_idx].zero_()


class ContTransformerModel(ContTransformerPreTrainedModel):
    """Embeddings -> one OdeBlock over :class:`ContTransformerRate` -> final LayerNorm."""

    def __init__(self, config: ContTransformerConfig):
        super().__init__(config)
        self.embeddings = ContTransformerEmbeddings(config)
        self.encoder = OdeBlock(
            ContTransformerRate(config),
            basis=config.basis,
            num_basis=config.num_basis,
            num_steps=config.num_steps,
            scheme=config.scheme,
            time_horizon=config.time_horizon,
        )
        self.final_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embeddings.word_embeddings = value

    @can_return_tuple
    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        output_hidden_states: bool | None = None,
        output_attentions: bool | None = None,
    ) -> BaseModelOutput:
        """``input_ids`` ``(batch, seq)``; ``attention_mask`` ``(batch, seq)``, 1 at real tokens
        and 0 at padding (padded keys get no attention). Returns ``last_hidden_state``
        ``(batch, seq, hidden)``: per token, its word's encoding (the encoder runs over
        words, one vector each, however many tokens a word has; docs/design.md §6).

        Hidden states of a continuous model: there are no layers, but a trajectory. With
        ``output_hidden_states`` (default ``config.output_hidden_states``),
        ``hidden_states`` is the state x(t) of the ODE at the N_T step boundaries
        t_n = n·T/N_T: N_T + 1 tensors ``(batch, seq, hidden)`` (per token, its word's
        state), the embedding output x(0) first and x(T) last (before the final
        LayerNorm). It follows N_T, not K: a model shortened with ``set_num_steps`` returns
        fewer. ``return_dict=False`` (or ``config.return_dict``) returns the plain tuple.

        Attentions likewise: with ``output_attentions`` (default
        ``config.output_attentions``), ``attentions`` holds the attention weights of every
        evaluation of the rate, in the order the integrator makes them (N_T steps × the
        scheme's stages: N_T tensors for Euler, 4 N_T for RK4), each ``(batch, heads,
        words, words)`` over the encoder's words (the tokens, for a word-level tokenizer).
        """
        if output_hidden_states is None:
            output_hidden_states = self.config.output_hidden_states
        if output_attentions is None:
            output_attentions = self.config.output_attentions
        words = self.embeddings(input_ids, attention_mask)
        mask = words.mask
        if mask is not None:
            mask = mask.bool()[:, None, None, :]  # (batch, 1, 1, words)
        attentions = [] if output_attentions else None
        extra = {"attentions": attentions} if output_attentions else {}
        states = self.encoder(words.vectors, attention_mask=mask, return_trajectory=output_hidden_states, **extra)
        x = states[-1] if output_hidden_states else states  # (batch, words, hidden)
        return BaseModelOutput(
            last_hidden_state=words.to_tokens(self.final_norm(x)),
            hidden_states=tuple(words.to_tokens(state) for state in states) if output_hidden_states else None,
            attentions=tuple(attentions) if output_attentions else None,
        )


@dataclass
class ContTransformerTaggerOutput(TokenClassifierOutput):
    """:class:`TokenClassifierOutput` (``logits``: the primary column) plus the scores of
    the other predicted columns, None for a column the model does not predict besides
    its primary one: ``upos_logits``, ``xpos_logits``, ``lemma_logits``, ``deprel_logits``
    ``(batch, seq, labels of the column)``; ``feats_logits`` likewise, with factored
    features the groups' scores side by side (``(batch, seq, labels)``, split by
    ``feature_groups(config.column_labels["feats"])``)."""

    upos_logits: torch.FloatTensor | None = None
    xpos_logits: torch.FloatTensor | None = None
    feats_logits: torch.FloatTensor | None = None
    lemma_logits: torch.FloatTensor | None = None
    deprel_logits: torch.FloatTensor | None = None


def _mean_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the targets >= 0 (-100: not scored; -1: a label the model
    does not have, scored as an error by the metrics, never a training target); 0 when none."""
    targets = targets.flatten()
    scored = targets >= 0
    losses = F.cross_entropy(
        logits.flatten(0, -2), targets.masked_fill(~scored, -100), ignore_index=-100, reduction="sum"
    )
    return losses / scored.sum().clamp(min=1)


class ContTransformerForTokenClassification(ContTransformerPreTrainedModel):
    """:class:`ContTransformerModel` with dropout and a Linear layer over the tags of each
    predicted column (``classifier`` for the primary one, ``column_classifiers[column]``
    for the others).

    Which positions each output covers (the model card says the same):

    * ``logits``, every ``{column}_logits`` and each of ``hidden_states``: the tokens,
      ``(batch, seq, ...)`` over ``input_ids``. Position 0 is the root token ``[ROOT]``
      the tokenizer prepends: its logits are no tag (their argmax means nothing; the
      tokenizer's ``word_ids()`` is None there, as at padding). A word split into several
      pieces has its word's values on each piece; the tagger reads the first.
    * ``attentions``: the encoder's words, ``(batch, heads, words, words)``: the root as
      word 0, then each word once however many pieces it has, a shorter row's padding
      last. So "The old dog blorped" (root + 4 words, ``blorped`` in two pieces) gives
      logits over 6 positions and attentions of 5 × 5; with a word-level tokenizer (or
      when every word is one token) both cover the same positions.

    ``pipeline(model=folder, trust_remote_code=True)`` and ``Tagger`` do this bookkeeping:
    one entry per word, the root left out.
    """

    card_text = TAGGER_CARD

    def saved_pipeline(self) -> tuple[str, type]:
        """The tagger's pipeline (task ``"pos-tagging"``), which every save names and carries.

        Imported here, when a folder is saved: the pipeline needs transformers' ``Pipeline``
        (a second of imports) that the model does not. The import line still makes remote
        code copy the pipeline's files with this one, so a folder saved by a copy of this file
        (transformers' ``Trainer`` where the package is not installed) carries them too."""
        from .pipeline_cont_transformer import TASK, ContTransformerTaggingPipeline

        return TASK, ContTransformerTaggingPipeline

    def __init__(self, config: ContTransformerConfig):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.cont_transformer = ContTransformerModel(config)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        column_labels = config.column_labels or {}
        if column_labels:
            self.column_classifiers = nn.ModuleDict(
                {column: nn.Linear(config.hidden_size, len(labels)) for column, labels in column_labels.items()}
            )
        self.post_init()

    def feature_group_sizes(self) -> list[int] | None:
        """Labels per feature of a factored features head, in order; None without one."""
        labels = (self.config.column_labels or {}).get("feats")
        if labels is None or self.config.feats_mode != "factored":
            return None
        return [len(values) for _, values in feature_groups(labels)]

    def _column_loss(self, column: str, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        sizes = self.feature_group_sizes() if column == "feats" else None
        if sizes is None:
            return _mean_cross_entropy(logits, labels)
        # Factored features: labels (batch, seq, groups), each group's id among its values;
        # the column's loss is the mean over the groups.
        groups = logits.split(sizes, dim=-1)
        return sum(_mean_cross_entropy(g, labels[..., i]) for i, g in enumerate(groups)) / len(groups)

    @can_return_tuple
    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_hidden_states: bool | None = None,
        output_attentions: bool | None = None,
        upos_labels: torch.Tensor | None = None,
        xpos_labels: torch.Tensor | None = None,
        feats_labels: torch.Tensor | None = None,
        lemma_labels: torch.Tensor | None = None,
        deprel_labels: torch.Tensor | None = None,
    ) -> ContTransformerTaggerOutput:
        """``input_ids``, ``attention_mask`` ``(batch, seq)`` as in :class:`ContTransformerModel`;
        ``labels`` ``(batch, seq)`` ids of the primary column's tags, -100 where no tag is
        scored (padding, the root token, a word's further tokens), -1 for a tag the model
        does not have (not trained on). ``{column}_labels`` likewise for the other
        predicted columns (factored ``feats_labels``: ``(batch, seq, features)``, each
        feature's value id). Returns ``logits`` ``(batch, seq, num_labels)``, the other
        columns' ``{column}_logits`` and, with labels, ``loss``: the sum over the columns
        given of each column's mean cross-entropy over its scored words;
        ``hidden_states`` (the depth trajectory), ``attentions`` (per evaluation of the
        rate) and ``return_dict`` as in :class:`ContTransformerModel`."""
        encoded = self.cont_transformer(
            input_ids, attention_mask, output_hidden_states, output_attentions, return_dict=True
        )
        features = self.dropout(encoded.last_hidden_state)  # (batch, seq, hidden)
        logits = self.classifier(features)  # (batch, seq, num_labels)
        given = {
            "upos": upos_labels,
            "xpos": xpos_labels,
            "feats": feats_labels,
            "lemma": lemma_labels,
            "deprel": deprel_labels,
        }
        column_logits = {}
        losses = [] if labels is None else [_mean_cross_entropy(logits, labels)]
        for column, classifier in getattr(self, "column_classifiers", {}).items():
            column_logits[column] = classifier(features)  # (batch, seq, labels of the column)
            if given[column] is not None:
                losses.append(self._column_loss(column, column_logits[column], given[column]))
        unused = [c for c, value in given.items() if value is not None and c not in column_logits]
        if unused:
            raise ValueError(f"{unused[0]}_labels: the model has no {unused[0]} head besides its primary column")
        return ContTransformerTaggerOutput(
            loss=sum(losses) if losses else None,
            logits=logits,
            hidden_states=encoded.hidden_states,
            attentions=encoded.attentions,
            **{f"{column}_logits": value for column, value in column_logits.items()},
        )


class ContTransformerLMHead(nn.Module):
    """Dense -> activation -> LayerNorm -> a decoder over the vocabulary (BERT's masked-LM
    head). The decoder's weight is the word embedding matrix (tied), its bias its own."""

    def __init__(self, config: ContTransformerConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = ACT2FN[config.hidden_act]
        self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(..., hidden)`` -> ``(..., vocab_size)``."""
        return self.decoder(self.norm(self.activation(self.dense(x))))


class ContTransformerForMaskedLM(ContTransformerPreTrainedModel):
    """:class:`ContTransformerModel` under a masked-word head: the continuous encoder
    pretrained on unlabelled text, then fine-tuned into a tagger (docs/design.md §6).

    The vocabulary's words are the tokenizer's whole-word entries; a masked word is one
    ``[MASK]`` token (a word outside the vocabulary is read from its spelling and never
    masked), and the head scores every vocabulary entry, its weights tied to the word
    embeddings, so ``pipeline("fill-mask")`` works as for BERT.
    """

    card_text = LANGUAGE_MODEL_CARD
    _tied_weights_keys: ClassVar[dict[str, str]] = {
        "lm_head.decoder.weight": "cont_transformer.embeddings.word_embeddings.weight"
    }

    def __init__(self, config: ContTransformerConfig):
        super().__init__(config)
        if config.word_representation == "chars":
            raise ValueError("word_representation: a masked language model needs word embeddings, not 'chars'")
        if config.word_embedding_rows != config.vocab_size:
            raise ValueError(
                f"num_word_embeddings: a masked language model scores every id with its word embeddings "
                f"(0 or vocab_size={config.vocab_size}), got {config.num_word_embeddings}"
            )
        self.cont_transformer = ContTransformerModel(config)
        self.lm_head = ContTransformerLMHead(config)
        self.post_init()

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head.decoder

    def set_output_embeddings(self, value: nn.Linear) -> None:
        self.lm_head.decoder = value

    @can_return_tuple
    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_hidden_states: bool | None = None,
        output_attentions: bool | None = None,
    ) -> MaskedLMOutput:
        """``input_ids``, ``attention_mask`` ``(batch, seq)`` as in :class:`ContTransformerModel`;
        ``labels`` ``(batch, seq)`` the vocabulary id of each masked word, -100 elsewhere.

        Returns ``logits`` ``(batch, seq, vocab_size)``; with ``labels``, ``loss`` (the mean
        cross-entropy over the masked words) and, to spare the decoder the unmasked
        positions, ``logits`` of the masked words only, ``(masked words, vocab_size)`` in
        reading order. ``hidden_states`` and ``attentions`` as in :class:`ContTransformerModel`.
        """
        encoded = self.cont_transformer(
            input_ids, attention_mask, output_hidden_states, output_attentions, return_dict=True
        )
        hidden = encoded.last_hidden_state  # (batch, seq, hidden)
        loss = None
        if labels is None:
            logits = self.lm_head(hidden)  # (batch, seq, vocab)
        else:
            scored = labels >= 0
            logits = self.lm_head(hidden[scored])  # (masked, vocab)
            loss = F.cross_entropy(logits.float(), labels[scored]) if logits.shape[0] else logits.sum() * 0.0
        return MaskedLMOutput(
            loss=loss, logits=logits, hidden_states=encoded.hidden_states, attentions=encoded.attentions
        )


__all__ = [
    "ContTransformerForMaskedLM",
    "ContTransformerForTokenClassification",
    "ContTransformerLMHead",
    "ContTransformerModel",
    "ContTransformerPreTrainedModel",
    "ContTransformerTaggerOutput",
]
