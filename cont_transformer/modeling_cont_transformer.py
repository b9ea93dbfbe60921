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

import math
from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn
from transformers.activations import ACT2FN
from transformers.modeling_outputs import BaseModelOutput, MaskedLMOutput, TokenClassifierOutput
from transformers.utils import can_return_tuple

from .card_texts import LANGUAGE_MODEL_CARD, TAGGER_CARD
from .configuration_cont_transformer import ContTransformerConfig, feature_groups
from .ode_block import Coefficients, OdeBlock
from .pretrained import ContinuousPreTrainedModel
from .tagger_files import read_tagger_files
from .transformer_rate import ContTransformerRate
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


class ContTransformerPreTrainedModel(ContinuousPreTrainedModel):
    """Weight initialisation; parameter counts, complete save folders with a model card and
    activation checkpointing come from :class:`ContinuousPreTrainedModel`; a tagger's data
    (labels, tag combinations, lemma lexicon) travel in files of their own beside
    ``config.json`` (``tagger_files.py``): the config writes them, loading reads them."""

    config_class = ContTransformerConfig
    base_model_prefix = "cont_transformer"
    _supports_sdpa = True
    # A word-only model's weights may lack the word-dropout buffer (it holds no learnt value).
    _keys_to_ignore_on_load_missing = (r"embeddings\.word_dropout$",)

    @classmethod
    def _load_pretrained_model(cls, model, state_dict, checkpoint_files, load_config):
        """Read the folder's data files into ``model.config`` (``tagger_files.read_tagger_files``:
        a tagger's labels, tag combinations and lemma lexicon), then the weights, checked
        against the whole config (``pretrained.py``)."""
        source = load_config.pretrained_model_name_or_path
        if source is not None:
            read_tagger_files(model.config, source, **(load_config.download_kwargs or {}))
        return super()._load_pretrained_model(model, state_dict, checkpoint_files, load_config)

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

    def saved_processor(self) -> type:
        """The tagger's processor, which every save names in ``processor_config.json`` for
        ``AutoProcessor`` and carries (imported here, when a folder is saved, as the pipeline)."""
        from .processing_cont_transformer import ContTransformerTaggerProcessor

        return ContTransformerTaggerProcessor

    def __init__(self, config: ContTransformerConfig):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.cont_transformer = ContTransformerModel(config)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        if config.column_sizes:
            self.column_classifiers = nn.ModuleDict(
                {column: nn.Linear(config.hidden_size, size) for column, size in config.column_sizes.items()}
            )
        self.post_init()

    def feature_group_sizes(self) -> list[int] | None:
        """Labels per feature of a factored features head, in order; None without one."""
        if "feats" not in (self.config.column_sizes or {}) or self.config.feats_mode != "factored":
            return None
        labels = (self.config.column_labels or {}).get("feats")
        if labels is None:
            raise ValueError("column_labels: the factored features head's groups need its labels (columns.json)")
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
        upos_targets: torch.Tensor | None = None,
        xpos_targets: torch.Tensor | None = None,
        feats_targets: torch.Tensor | None = None,
        lemma_targets: torch.Tensor | None = None,
        deprel_targets: torch.Tensor | None = None,
    ) -> ContTransformerTaggerOutput:
        """``input_ids``, ``attention_mask`` ``(batch, seq)`` as in :class:`ContTransformerModel`;
        ``labels`` ``(batch, seq)`` ids of the primary column's tags, -100 where no tag is
        scored (padding, the root token, a word's further tokens), -1 for a tag the model
        does not have (not trained on). ``{column}_targets`` likewise for the other
        predicted columns (factored ``feats_targets``: ``(batch, seq, features)``, each
        feature's value id): named so that ``labels`` is the one parameter named like labels,
        which transformers' ``Trainer`` then takes as its label names (it computes
        ``eval_loss`` only for batches holding every one). Returns ``logits`` ``(batch, seq, num_labels)``, the other
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
            "upos": upos_targets,
            "xpos": xpos_targets,
            "feats": feats_targets,
            "lemma": lemma_targets,
            "deprel": deprel_targets,
        }
        column_logits = {}
        losses = [] if labels is None else [_mean_cross_entropy(logits, labels)]
        for column, classifier in getattr(self, "column_classifiers", {}).items():
            column_logits[column] = classifier(features)  # (batch, seq, labels of the column)
            if given[column] is not None:
                losses.append(self._column_loss(column, column_logits[column], given[column]))
        unused = [c for c, value in given.items() if value is not None and c not in column_logits]
        if unused:
            raise ValueError(f"{unused[0]}_targets: the model has no {unused[0]} head besides its primary column")
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
