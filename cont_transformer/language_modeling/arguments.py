"""The language model's training arguments: :class:`PretrainingArguments`.

The encoder's fields are the tagger's (:class:`~..tagging.arguments.EncoderArguments`), so
a tagger fine-tuned from the model has the sizes it was pretrained with. The defaults are
``recipes/en_text_lm.json``'s model on a CPU: K = N_T = 16, 128 wide.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ..checks import check_count
from ..text.arguments import INVERSE_SQRT, INVERSE_SQRT_DESCRIPTION, EncoderArguments
from ..text.pretrained_encoder import is_language_model
from ..training.arguments import FINAL_NUM_BASIS_FLAGS, RunArguments, flag_help


@dataclass
class PretrainingArguments(EncoderArguments, RunArguments):
    """Everything ``trainer.train`` needs (names match ``ContTransformerConfig`` and the flags)."""

    output_dir: str = field(
        default="runs/en-lm", **flag_help("run folder: best/, checkpoints/, metrics.json, run.json")
    )
    text_files: list[str] = field(
        default_factory=list,
        **flag_help("plain or gzip text file(s) or glob(s), one sentence or paragraph a line"),
    )
    dataset_name: str | None = field(
        default=None, **flag_help("a datasets name or local dataset folder instead of --text-files")
    )
    dataset_config_name: str | None = field(
        default=None, **flag_help("its configuration", aliases=["--dataset-config"])
    )
    model_name_or_path: str | None = field(
        default=None,
        **flag_help(
            "a language model saved by this script to pretrain further (on new text: domain-adaptive "
            "pretraining): its vocabulary, sizes, K and N_T and weights are kept; --vocabulary-size, "
            "--min-word-count and the encoder's sizes are then not read"
        ),
    )
    language: str | None = field(default=None, **flag_help("ISO 639-1 code of the text, for the model card"))
    text_column: str = field(default="text", **flag_help("the column of --dataset-name holding the text"))
    vocabulary_size: int = field(
        default=50000,
        **flag_help(
            "words of the vocabulary (input and output): the most frequent words of the "
            "training text; other words are read from their spelling and never predicted"
        ),
    )
    min_word_count: int = field(default=2, **flag_help("words seen fewer times in the training text are left out"))
    heldout_lines: int = field(
        default=2000, **flag_help("lines of the text held out for masked-word accuracy and perplexity")
    )
    mask_probability: float = field(default=0.15, **flag_help("share of the vocabulary's words masked in a sentence"))
    max_steps: int = field(default=20000, **flag_help("optimiser steps to train for"))
    learning_rate: float = field(default=2e-3, **flag_help("peak learning rate, reached at the end of the warm-up"))
    weight_decay: float = field(default=0.01, **flag_help("AdamW weight decay (not on biases and LayerNorms)"))
    warmup_steps: int = field(default=1000, **flag_help("linear warm-up steps, then 1/sqrt decay"))
    cooldown_steps: int | None = field(
        default=None,
        **flag_help("the learning rate falls linearly to 0 over the last N steps (default: the last 20%%)"),
    )
    final_num_basis: int = field(
        default=16, **flag_help("final K, the number of basis functions", aliases=FINAL_NUM_BASIS_FLAGS)
    )
    refine_steps: str | None = field(
        default=None, **flag_help("comma-separated steps after which K and N_T are refined ('none': never)")
    )
    eval_steps: int = field(default=2000, **flag_help("evaluate on the held-out text every N steps"))
    save_steps: int = field(default=2000, **flag_help("checkpoint every N steps"))

    lr_scheduler_types: ClassVar[tuple[str, ...]] = (INVERSE_SQRT,)  # as the tagger's
    lr_schedule_description: ClassVar[str] = INVERSE_SQRT_DESCRIPTION

    def __post_init__(self):
        self.text_files = list(self.text_files)
        if bool(self.text_files) == bool(self.dataset_name):
            raise ValueError("text_files: give either --text-files or --dataset-name")
        if self.word_representation == "chars":
            raise ValueError("word_representation: a masked language model needs word embeddings, not 'chars'")
        for name in ("vocabulary_size", "min_word_count", "heldout_lines"):
            check_count(name, getattr(self, name))
        if not 0 < self.mask_probability < 1:
            raise ValueError(f"mask_probability: must lie between 0 and 1, got {self.mask_probability}")
        if self.warmup_steps < 0:
            raise ValueError(f"warmup_steps: must be >= 0, got {self.warmup_steps}")
        if self.cooldown_steps is None:
            self.cooldown_steps = round(0.2 * self.max_steps)
        if not 0 <= self.cooldown_steps <= self.max_steps:
            raise ValueError(f"cooldown_steps: must lie in [0, max_steps], got {self.cooldown_steps}")
        super().__post_init__()

    def adopt_saved(self, config) -> None:
        if not is_language_model(config):
            raise ValueError(
                f"model_name_or_path: {self.model_name_or_path} holds a tagger; pretraining goes on only "
                "from a language model (scripts/pretrain.py's best/)"
            )
        super().adopt_saved(config)
