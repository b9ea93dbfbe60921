"""The tagger's training arguments: :class:`TrainingArguments`, its presets and defaults.

The defaults are the paper's recipe on a CoNLL-U treebank (English-GUM, 35,000 steps,
K = N_T = 64): batch 64, a linear warm-up then inverse-square-root learning rate, and
multi-level refinement of the ODE block (K and N_T grow at ``refine_steps``). With
``treebank="sample"`` a short run's presets apply (:data:`SAMPLE_DEFAULTS`); fine-tuning
a saved tagger (``model_name_or_path``) keeps its tokenizer, K, N_T and tags.
"""

from __future__ import annotations

import logging
import math
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from ..checks import check_count
from ..configuration_cont_transformer import (
    AUXILIARY_COLUMNS,
    FEATS_MODES,
    OUTPUT_COLUMNS,
    PREDICTED_COLUMNS,
    check_word_representation,
)
from ..runtime.model_folders import VECTORS_FILE, WORDS_FILE
from ..text.arguments import INVERSE_SQRT, INVERSE_SQRT_DESCRIPTION, EncoderArguments
from ..text.pretrained_encoder import is_language_model
from ..training.arguments import FINAL_NUM_BASIS_FLAGS, RunArguments, flag_help
from .data import TAG_COLUMNS, TREEBANKS, count_words, find_ud_treebank, resolve_treebank, treebank_files
from .sample_treebank import write_sample_treebank
from .self_training import check_agreement

logger = logging.getLogger(__name__)

# The default: the paper's first five refinements, the last one late (80% of the 35,000
# steps) inside a linear cool-down of the learning rate over the last 20% of the run, so
# that the trained model halves its K and N_T at no cost (README, "Compressible by default").
DEFAULT_REFINE_STEPS = "1000,2000,3000,4000,5000,28000"
DEFAULT_COOLDOWN_FRACTION = 0.2
COMPILE_LENGTH_BUCKETS = 8  # with --torch-compile: eight padded lengths
# The Hub's Universal Dependencies data set (run_ner.py's --dataset_name), whose
# configurations are the treebanks (en_gum): read here from the UD release files.
UD_DATASET_NAMES = ("universal_dependencies", "universal-dependencies/universal_dependencies")


@dataclass
class TrainingArguments(EncoderArguments, RunArguments):
    """Everything ``trainer.train`` needs; the defaults are the paper's recipe (English-GUM,
    35,000 steps, K = N_T = 64). Names match ``ContTransformerConfig`` and the CLI flags
    (``refine_steps`` is ``--refine-steps`` or ``--refine_steps``); ``final_num_basis`` and
    ``final_num_steps``, the K and N_T the run ends at, are ``--num-basis`` and
    ``--num-steps``, as the config's K and N_T."""

    output_dir: str = field(
        default="runs/pos",
        **flag_help("run folder: best/ (the best model), checkpoints/, metrics.json, run.json"),
    )
    max_steps: int = field(default=35000, **flag_help("optimiser steps to train for"))
    learning_rate: float = field(default=1e-3, **flag_help("peak learning rate, reached at the end of the warm-up"))
    weight_decay: float = field(default=0.1, **flag_help("AdamW weight decay (not on biases and LayerNorms)"))
    final_num_basis: int = field(
        default=64, **flag_help("final K, the number of basis functions", aliases=FINAL_NUM_BASIS_FLAGS)
    )
    refine_steps: str | None = field(
        default=DEFAULT_REFINE_STEPS,
        **flag_help(
            "comma-separated steps after which K and N_T are refined ('none': never); "
            "the initial K is the one that reaches --num-basis after all of them"
        ),
    )
    treebank: str = field(
        default="sample",
        **flag_help(
            "sample (generated, no data needed) | en_gum | de_hdt (under --data-dir or "
            "$UD_DIR) | a UD release folder | a Hub dataset name"
        ),
    )
    dataset_config_name: str | None = field(
        default=None,
        **flag_help(
            "with --dataset-name universal_dependencies (run_ner.py's flags): the treebank, e.g. "
            "en_gum, read from its UD release folder under --data-dir or $UD_DIR"
        ),
    )
    data_dir: str | None = field(default=None, **flag_help("folder of UD release folders ($UD_DIR)"))
    train_file: list[str] = field(
        default_factory=list, **flag_help("CoNLL-U file(s) or glob(s) replacing the train split")
    )
    dev_file: list[str] = field(
        default_factory=list, **flag_help("CoNLL-U file(s) or glob(s) replacing the dev split (--validation-file)")
    )
    tag_column: str = field(
        default="xpos",
        **flag_help(
            "the primary column (the model's logits, what a token-classification pipeline "
            "shows): xpos or upos; if --columns leaves it out, XPOS, else UPOS, else the first"
        ),
    )
    columns: str | None = field(
        default=None,
        **flag_help(
            "comma-separated columns to predict, a head each: upos,xpos,feats,lemma "
            "(default: every one the training treebank annotates; the paper's model: xpos), and "
            "deprel, each word's dependency relation, learnt as a training signal and never output"
        ),
    )
    auxiliary_columns: str | None = field(
        default=None,
        **flag_help(
            "comma-separated columns learnt as a training signal beside the columns the tagger predicts, "
            "whichever the treebank annotates (deprel): what --columns ...,deprel does without naming them"
        ),
    )
    feats_mode: str = field(
        default="whole",
        **flag_help("features as whole FEATS strings (a class each) or factored (a head per feature)"),
    )
    lemma_min_count: int = field(default=1, **flag_help("lemma edit scripts seen fewer times in train are no labels"))
    model_name_or_path: str | None = field(
        default=None,
        **flag_help(
            "fine-tune a saved tagger of this package (folder or Hub id): its tokenizer, K, N_T and tags are kept"
        ),
    )
    word_vectors: str | None = field(
        default=None,
        **flag_help(
            "a folder of static word vectors (scripts/train_word_vectors.py): a new tagger reads them, "
            "fixed, beside its own embeddings, and the vectors' words join its vocabulary"
        ),
    )
    teacher: list[str] = field(
        default_factory=list,
        **flag_help(
            "self-training: a saved tagger of this package whose tags of --silver-text-files join the "
            "train split as silver sentences (it must predict every column the student trains); several "
            "vote, word by word"
        ),
    )
    silver_text_files: list[str] = field(
        default_factory=list,
        **flag_help("self-training: unlabelled text (plain or gzip, globs allowed, one sentence a line) for --teacher"),
    )
    silver_lines: int = field(
        default=30000,
        **flag_help("self-training: how many lines of 3-60 words to draw from --silver-text-files (seeded by --seed)"),
    )
    silver_agreement: str = field(
        default="majority",
        **flag_help(
            "self-training with several teachers: 'majority' (each word's tags by their vote) or 'all' "
            "(only the sentences whose every word they tag alike)"
        ),
    )
    freeze_word_embeddings: bool = field(
        default=False,
        **flag_help(
            "fine-tuning from a language model: keep its pretrained word embeddings as they are "
            "(the treebank's new words still learn theirs)"
        ),
    )
    encoder_learning_rate_scale: float = field(
        default=1.0,
        **flag_help(
            "fine-tuning from a language model: the learning rate of the pretrained parts "
            "(embeddings, character CNN, ODE block) as a multiple of --learning-rate"
        ),
    )
    spelling_learning_rate_scale: float | None = field(
        default=None,
        **flag_help(
            "fine-tuning from a language model: the character CNN's learning rate as a multiple of "
            "--learning-rate (default: --encoder-learning-rate-scale)"
        ),
    )
    warmup_steps: int = field(default=8000, **flag_help("linear warm-up steps, then 1/sqrt decay"))
    cooldown_steps: int | None = field(
        default=None,
        **flag_help(
            "the learning rate falls linearly to (almost) 0 over the last N steps "
            "(default: the last 20%% of --max-steps; 0: no cool-down)"
        ),
    )
    length_buckets: int | None = field(
        default=None,
        **flag_help(
            "pad every batch to one of N lengths chosen from the training data, so a "
            "compiled model sees few shapes (default: 8 with --torch-compile, else 0: "
            "each batch to its longest row)"
        ),
    )
    do_predict: bool = field(
        default=False,
        **flag_help(
            "after training, tag the dev (and test) CoNLL-U files with the best model into "
            "OUTPUT_DIR/predictions/ (only the predicted column changes)"
        ),
    )
    word_dropout: float = field(
        default=1.0,
        **flag_help("alpha: a training word seen c times becomes [UNK] with probability alpha/(alpha+c); 0: off"),
    )
    eval_steps: int = field(default=1000, **flag_help("evaluate on dev every N steps"))
    save_steps: int = field(default=1000, **flag_help("checkpoint every N steps"))
    fit_to_treebank: bool = field(
        default=False,
        **flag_help(
            "the run's length, warm-up, refinements, cool-down, evaluations and saves follow the number of "
            "words of the train split, each unless given (recipes/ud.json)"
        ),
    )

    lr_scheduler_types: ClassVar[tuple[str, ...]] = (INVERSE_SQRT,)
    lr_schedule_description: ClassVar[str] = INVERSE_SQRT_DESCRIPTION
    takes_eval_batch_size: ClassVar[bool] = True

    def __post_init__(self):
        self.train_file, self.dev_file = list(self.train_file), list(self.dev_file)
        self._resolve_hub_dataset()
        if not (self.train_file and self.dev_file):  # else the files replace the treebank
            self.treebank = resolve_treebank(self.treebank, self.data_dir)
        if self.tag_column not in TAG_COLUMNS:
            raise ValueError(f"tag_column: choose one of {TAG_COLUMNS}, got {self.tag_column!r}")
        if self.columns is not None:
            self.columns = ",".join(parse_columns(self.columns))
        if self.auxiliary_columns is not None:
            auxiliary = [part.strip().lower() for part in self.auxiliary_columns.split(",") if part.strip()]
            if not auxiliary or set(auxiliary) - set(AUXILIARY_COLUMNS):
                raise ValueError(
                    f"auxiliary_columns: give columns among {','.join(AUXILIARY_COLUMNS)}, got {self.auxiliary_columns!r}"
                )
            self.auxiliary_columns = ",".join(dict.fromkeys(auxiliary))
        if self.feats_mode not in FEATS_MODES:
            raise ValueError(f"feats_mode: choose one of {FEATS_MODES}, got {self.feats_mode!r}")
        self.silver_text_files = list(self.silver_text_files)
        self.teacher = [self.teacher] if isinstance(self.teacher, str) else list(self.teacher or [])
        if (not self.teacher) != (not self.silver_text_files):
            raise ValueError("teacher: self-training needs both --teacher and --silver-text-files")
        check_count("silver_lines", self.silver_lines)
        check_agreement(self.silver_agreement)
        if self.lemma_min_count < 1:
            raise ValueError(f"lemma_min_count: must be >= 1, got {self.lemma_min_count}")
        if not (math.isfinite(self.word_dropout) and self.word_dropout >= 0):
            raise ValueError(f"word_dropout: must be a finite number >= 0, got {self.word_dropout}")
        if self.warmup_steps < 0:
            raise ValueError(f"warmup_steps: must be >= 0, got {self.warmup_steps}")
        for name in ("encoder_learning_rate_scale", "spelling_learning_rate_scale"):
            scale = getattr(self, name)
            if scale is not None and not (math.isfinite(scale) and scale >= 0):
                raise ValueError(f"{name}: must be a finite number >= 0, got {scale}")
        check_count("max_steps", self.max_steps)  # before the cool-down that derives from it
        if self.cooldown_steps is None and self.num_train_epochs is None:  # else: of the planned steps
            self.cooldown_steps = round(DEFAULT_COOLDOWN_FRACTION * self.max_steps)
        if self.cooldown_steps is not None and not 0 <= self.cooldown_steps <= self.max_steps:
            raise ValueError(f"cooldown_steps: must lie in [0, max_steps], got {self.cooldown_steps}")
        check_word_representation(self.word_representation)
        if self.word_vectors is not None and not self.sizes_pending:  # else once the saved model is read
            self._check_word_vectors(None)
        if self.length_buckets is None:
            self.length_buckets = COMPILE_LENGTH_BUCKETS if self.torch_compile else 0
        super().__post_init__()

    def adopt_saved(self, config) -> None:
        super().adopt_saved(config)
        if self.word_vectors is not None:  # after a language model's representation is adopted
            self._check_word_vectors(config)

    def check_sizes(self) -> None:
        super().check_sizes()
        late = [step for step in self.refine_steps if step >= self.max_steps]
        if late:
            logger.warning(
                "refine_steps %s: at or past max_steps=%d, so this run ends at K = %d, below --num-basis %d "
                "(resume it with a larger --max-steps and the same --refine-steps to go on)",
                ",".join(map(str, late)),
                self.max_steps,
                self.refinement_schedule.sizes(self.max_steps - 1)[0],
                self.final_num_basis,
            )

    def _resolve_hub_dataset(self) -> None:
        """run_ner.py's ``--dataset_name universal_dependencies --dataset_config_name en_gum``
        (``--dataset-name`` is ``--treebank``): the treebank of that configuration, from its UD
        release files; any other Hub data set is read in its default configuration."""
        config = self.dataset_config_name
        if self.treebank in UD_DATASET_NAMES:
            if not config:
                raise ValueError(
                    f"dataset_config_name: {self.treebank} needs the treebank's configuration, e.g. en_gum"
                )
            self.treebank, self.dataset_config_name = ud_treebank(config, self.data_dir), None
        elif config is not None:
            raise ValueError(
                f"dataset_config_name: a configuration is read only with --dataset-name universal_dependencies "
                f"(a UD treebank, e.g. en_gum); {self.treebank!r} is read in its default one, got {config!r}"
            )

    def _check_word_vectors(self, saved) -> None:
        """Static vectors go into a new tagger that spells words (also one started from a
        language model, whose config is ``saved``); the folder holds them."""
        if saved is not None and not is_language_model(saved):
            raise ValueError(
                "word_vectors: only a new tagger takes static vectors (also one started from a language "
                "model); a saved tagger (--model-name-or-path) keeps its own"
            )
        if self.word_representation == "word":
            raise ValueError(
                "word_vectors: needs a spelling representation (--word-representation word+chars): "
                "with 'word' the vectors' new words would get untrained embeddings"
            )
        for name in (VECTORS_FILE, WORDS_FILE):
            if not (Path(self.word_vectors) / name).is_file():
                raise ValueError(
                    f"word_vectors: {self.word_vectors} has no {name} (make it with scripts/train_word_vectors.py)"
                )


def ud_treebank(config: str, data_dir: str | None = None) -> str:
    """The ``--treebank`` of the UD configuration ``config`` (``en_gum``): a treebank this
    package names, else the release folder under ``data_dir`` or ``$UD_DIR`` holding
    ``{config}-ud-train*.conllu``. ValueError naming ``dataset_config_name`` otherwise."""
    if config in TREEBANKS:
        return config
    if not re.fullmatch(r"[A-Za-z0-9_]+", config):
        raise ValueError(f"dataset_config_name: a UD treebank's name (letters, digits, _: en_gum), got {config!r}")
    try:
        return str(find_ud_treebank(config, data_dir))
    except ValueError as err:
        problem = str(err).removeprefix(f"treebank: {config!r} ")
        raise ValueError(
            f"dataset_config_name: {config!r} is none of the treebanks {', '.join(TREEBANKS)} and {problem}"
        ) from None


def check_column_flags(given: Mapping[str, object]) -> None:
    """Refuse, in one line, a ``--tag-column`` that the ``--columns`` given with it leave out:
    the run would train another primary column than the one it records."""
    tag_column, columns = given.get("tag_column"), given.get("columns")
    if tag_column is None or columns is None:
        return
    chosen = parse_columns(str(columns))
    if tag_column not in chosen:
        raise ValueError(
            f"tag_column: --tag-column {tag_column} is not among --columns {','.join(chosen)}; "
            "add it to --columns or leave --tag-column out"
        )


def parse_columns(text: str) -> tuple[str, ...]:
    """``"xpos,upos"`` -> ``("xpos", "upos")``; ``ValueError`` naming ``columns`` for an
    unknown or repeated column, none, or only auxiliary ones (DEPREL is learnt beside a
    column the tagger gives, never alone)."""
    columns = tuple(part.strip().lower() for part in text.split(",") if part.strip())
    unknown = [c for c in columns if c not in PREDICTED_COLUMNS]
    if unknown or not columns or len(set(columns)) != len(columns):
        raise ValueError(f"columns: give distinct columns among {','.join(PREDICTED_COLUMNS)}, got {text!r}")
    if not set(columns) & set(OUTPUT_COLUMNS):
        raise ValueError(f"columns: {text!r} is learnt only beside one of {','.join(OUTPUT_COLUMNS)}; add one")
    return columns


# The generated sample is small (2,000 short sentences): a short run with a small
# final K trains in well under a minute on a CPU and beats the most-frequent-tag baseline.
SAMPLE_DEFAULTS: dict[str, object] = {
    "max_steps": 300,
    "warmup_steps": 50,
    "learning_rate": 2e-3,
    "final_num_basis": 8,
    "refine_steps": "50,100,240",
    "eval_steps": 100,
    "save_steps": 100,
}


def fitted_schedule(words: int) -> dict[str, object]:
    """The schedule of a run on a train split of ``words`` words (``--fit-to-treebank``): a
    step per 20 words, at least 1,500 and at most 8,000 (in batches of 64 sentences, from
    about 250 passes over a 3,000-word treebank to about ten over a million words of
    20-word sentences); English-GUM's shape (a 6% warm-up, three early
    refinements and a late one at 75%, the learning rate cooled over the last 3/8); eight
    evaluations and saves."""
    steps = min(max(round(words / 20), FIT_MIN_STEPS), FIT_MAX_STEPS)
    every = math.ceil(steps / 8)
    return {
        "max_steps": steps,
        "warmup_steps": round(steps / 16),
        "refine_steps": ",".join(str(round(steps * share)) for share in (0.025, 0.05, 0.075, 0.75)),
        "cooldown_steps": round(steps * 3 / 8),
        "eval_steps": every,
        "save_steps": every,
    }


FIT_MIN_STEPS, FIT_MAX_STEPS = 1500, 8000


def preset_defaults(given: Mapping[str, object]) -> Mapping[str, object]:
    """Defaults for what the user did not give: with ``treebank="sample"`` (the default)
    :data:`SAMPLE_DEFAULTS`; with ``fit_to_treebank``, the schedule that fits the train
    split's size (:func:`fitted_schedule`); when fine-tuning a saved model, no refinement.
    Contradictory column flags are refused (:func:`check_column_flags`)."""
    check_column_flags(given)
    treebank = str(given.get("treebank", TrainingArguments.treebank))
    train_file = list(given.get("train_file") or [])
    defaults = dict(SAMPLE_DEFAULTS) if treebank == "sample" and not given.get("fit_to_treebank") else {}
    if given.get("fit_to_treebank"):
        data_dir = given.get("data_dir")
        named = treebank if train_file and given.get("dev_file") else resolve_treebank(treebank, data_dir)
        replace = {"train": train_file, "validation": list(given.get("dev_file") or [])}
        files = treebank_files(named, data_dir, replace).get("train")
        if files:
            words = count_words(files)
        elif named == "sample":
            with tempfile.TemporaryDirectory(prefix="cont_transformer_sample_") as folder:
                words = count_words([write_sample_treebank(folder)["train"]])
        else:
            raise ValueError(f"fit_to_treebank: {treebank!r} has no train files to count (give --train-file)")
        defaults.update(fitted_schedule(words))
    if given.get("model_name_or_path") is not None:
        defaults["refine_steps"] = "none"
    return defaults


def resolve_arguments(given: Mapping[str, object]) -> TrainingArguments:
    """:class:`TrainingArguments` from the values a user gave (None = not given)."""
    given = {key: value for key, value in given.items() if value is not None}
    return TrainingArguments(**{**preset_defaults(given), **given})
