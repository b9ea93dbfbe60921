"""Train and evaluate part-of-speech taggers with Accelerate (``scripts/train_pos.py``).

:func:`train` runs the paper's recipe on a CoNLL-U treebank: AdamW with β = (0.9, 0.98),
ε = 1e-9 and decoupled weight decay (not on biases and LayerNorm scales), batch 64, a
linear warm-up then inverse-square-root learning rate, and multi-level refinement of
the ODE block (K and N_T grow at ``refine_steps``). It evaluates on dev every
``eval_steps``, keeps the best-dev model in ``output_dir`` (``save_pretrained`` with the
tokenizer, the tag names in ``config.id2label`` and ``metrics.json``) and checkpoints
the training state in ``output_dir/checkpoints/step-N`` every ``save_steps``.
:func:`evaluate_saved_model` scores a saved model on any split or file.

Decisions worth knowing:

* Batches. ``batch_size`` is the total over processes (Accelerate's ``split_batches``),
  so the recipe and the step counts mean the same on 1 or n processes.
* Refinement. After optimiser step ``s`` in ``refine_steps`` every ODE block is refined
  (exactly: the weight function is unchanged), which replaces its coefficient
  parameters. The optimiser is rebuilt over the new parameters and re-prepared with
  the model. Adam's moments of a refined coefficient tensor are projected with the same
  change of basis (for piecewise constant: each new cell inherits its parent's
  moments) and its step count is kept, so the first updates after a refinement move
  each new coefficient like its parent instead of restarting Adam's noisy, full-size
  first steps. The learning rate is a pure function of the step, so its schedule
  carries on where it was.
* Unknown words. The default representation, ``"word+chars"``, reads every word's
  spelling (a spelling tokenizer, and the model's character CNN; ``"word"`` is the
  paper's word-only model). Word dropout replaces the word channel of a training word
  seen ``c`` times by ``[UNK]`` with probability ``α / (α + c)`` (``word_dropout`` is α;
  the model applies it in training mode, from per-id probabilities set here), so
  ``[UNK]`` learns to stand for rare words, which is what unknown dev/test words are. On
  English-GUM a uniform rate taught ``[UNK]`` the average word's tags (determiners,
  prepositions) and scored worse on the 7.4% of dev words unseen in train.
* Exact resumption. The data order of an epoch depends only on ``(seed, epoch)``, and
  before every optimiser step torch's RNG is seeded from ``(seed, step, process)``
  (dropout, word dropout). A run resumed from a checkpoint therefore replays the
  uninterrupted run exactly: same batches (the epoch's first batches are skipped),
  same dropout masks, same metrics. A checkpoint records K and N_T; resuming rebuilds
  those shapes (by replaying the refinements) before ``load_state``.
* Metrics. Dev predictions are gathered across processes with ``gather_for_metrics``,
  so every dev word and sentence counts exactly once; accuracy is over words, and a
  gold tag unseen in train counts as an error (see ``data.UNSEEN_TAG``). It is also
  split over the words seen in train and those not (``accuracy_seen``,
  ``accuracy_unseen``).
* Long sentences: truncated for training, scored in full in windows for evaluation
  (see :mod:`.batching`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import shutil
import sys
import time
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from accelerate import Accelerator, DataLoaderConfiguration
from huggingface_hub import HfApi
from torch import nn
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import AutoTokenizer

from ..basis import apply_matrix, change_of_basis_matrix
from ..configuration_cont_transformer import WORD_REPRESENTATIONS, ContTransformerConfig
from ..model_card import write_model_card
from ..modeling_cont_transformer import ContTransformerForTokenClassification
from ..ode_block import Coefficients, OdeBlock
from ..training.schedules import (
    RefinementSchedule,
    cooldown_factor,
    inverse_sqrt_learning_rate,
)
from ..transform import refine
from .batching import (
    IGNORE_INDEX,
    LengthGroupedBatchSampler,
    PaddingCollator,
    encode_for_evaluation,
    encode_for_training,
    word_dropout_probabilities,
)
from .data import (
    SPLIT_ALIASES,
    TAG_COLUMNS,
    TREEBANKS,
    build_vocab,
    load_treebank,
    most_frequent_tag_baseline,
)
from .metrics import load_token_accuracy
from .tokenization import build_tokenizer, spelling_tables, training_words

logger = logging.getLogger(__name__)

ADAM_BETAS = (0.9, 0.98)
ADAM_EPSILON = 1e-9
CHECKPOINTS_DIR = "checkpoints"
CHECKPOINT_PREFIX = "step-"
TRAINER_STATE = "trainer_state.json"  # written last: its presence marks a complete checkpoint
METRICS_FILE = "metrics.json"


@dataclass
class TrainingArguments:
    """Everything :func:`train` needs; the defaults are the paper's recipe (English-GUM,
    35,000 steps). Names match ``ContTransformerConfig`` and the CLI flags
    (``num_basis`` is ``--num-basis``).

    Attributes:
        treebank: ``"sample"`` (generated, no data needed), a known UD name (``en_gum``,
            ``de_hdt``) under ``data_dir``, a UD release folder, or a Hub dataset name.
        data_dir: folder of UD release folders; None means ``$UD_DIR``.
        train_file, dev_file: CoNLL-U files or globs that replace the treebank's split.
        tag_column: ``"xpos"`` (the paper) or ``"upos"``.
        output_dir: the best model, ``metrics.json`` and ``checkpoints/``.
        max_steps: optimiser steps to train for.
        batch_size: sentences per optimiser step, summed over processes.
        learning_rate: peak learning rate, reached at the end of the warm-up.
        warmup_steps: steps of linear warm-up before the ``1/sqrt(step)`` decay.
        cooldown_steps: the learning rate falls linearly to (almost) zero over the last
            this many steps (0: no cool-down); resuming with another ``max_steps`` moves it.
        weight_decay: decoupled (AdamW) weight decay of weight matrices and embeddings.
        basis, num_basis, num_steps, scheme, time_horizon: the ODE block's continuous
            choices at the end of training (``num_steps`` None means ``num_basis``).
        refine_steps: steps after which K and N_T are refined; the initial K is the one
            that reaches ``num_basis`` after all of them.
        hidden_size, num_attention_heads, intermediate_size, hidden_act,
        hidden_dropout_prob, attention_probs_dropout_prob, position_encoding: the
            encoder, as in ``ContTransformerConfig``.
        word_representation: ``"word+chars"`` (word embeddings plus a character CNN over
            the spelling, with a spelling tokenizer), ``"word"`` (the paper's word-only
            model) or ``"chars"`` (the character CNN alone); see ``ContTransformerConfig``.
        char_embedding_size, char_hidden_size, char_kernel_size, max_word_length: the
            character CNN, as in ``ContTransformerConfig``.
        max_length: longest training sentence in words (root included); also the
            model's ``max_position_embeddings`` and its evaluation window.
        word_dropout: α of the frequency-aware word dropout: the word channel of a training
            word seen ``c`` times in train becomes ``[UNK]`` with probability
            ``α / (α + c)`` (α = 1: half
            the singletons, 9% of words seen 10 times; best of 0.25, 1 and 2 on
            English-GUM); 0 turns it off.
        eval_steps: evaluate on dev every this many steps (and at the end).
        save_steps: checkpoint every this many steps (and at the end).
        save_total_limit: checkpoints kept (the oldest are deleted).
        seed: model initialisation, data order and dropout.
        resume_from_checkpoint: a checkpoint folder, or ``"latest"`` for the newest
            complete one in ``output_dir/checkpoints``.
        push_to_hub: a Hub repository id to upload the best model to at the end.
    """

    treebank: str = "sample"
    data_dir: str | None = None
    train_file: tuple[str, ...] = ()
    dev_file: tuple[str, ...] = ()
    tag_column: str = "xpos"
    output_dir: str = "runs/pos"
    max_steps: int = 35000
    batch_size: int = 64
    learning_rate: float = 1e-3
    warmup_steps: int = 8000
    cooldown_steps: int = 0
    weight_decay: float = 0.1
    basis: str = "piecewise_constant"
    num_basis: int = 64
    num_steps: int | None = None
    scheme: str = "euler"
    time_horizon: float = 1.0
    refine_steps: tuple[int, ...] = (1000, 2000, 3000, 4000, 5000, 6000)
    hidden_size: int = 128
    num_attention_heads: int = 1
    intermediate_size: int = 128
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    position_encoding: str = "sinusoidal"
    word_representation: str = "word+chars"
    char_embedding_size: int = 32
    char_hidden_size: int = 128
    char_kernel_size: int = 3
    max_word_length: int = 20
    context_kernel_size: int = 0
    max_length: int = 128
    word_dropout: float = 1.0
    eval_steps: int = 1000
    save_steps: int = 1000
    save_total_limit: int = 2
    seed: int = 42
    resume_from_checkpoint: str | None = None
    push_to_hub: str | None = None

    def __post_init__(self):
        self.train_file, self.dev_file = tuple(self.train_file), tuple(self.dev_file)
        self.refine_steps = tuple(self.refine_steps)
        if self.num_steps is None:
            self.num_steps = self.num_basis
        if self.tag_column not in TAG_COLUMNS:
            raise ValueError(f"tag_column must be one of {TAG_COLUMNS}, got {self.tag_column!r}")
        for name in ("max_steps", "batch_size", "eval_steps", "save_steps", "save_total_limit"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0 <= self.cooldown_steps <= self.max_steps:
            raise ValueError(f"cooldown_steps must lie in [0, max_steps], got {self.cooldown_steps}")
        if self.word_dropout < 0:
            raise ValueError(f"word_dropout must be >= 0, got {self.word_dropout}")
        if self.word_representation not in WORD_REPRESENTATIONS:
            raise ValueError(
                f"word_representation must be one of {WORD_REPRESENTATIONS}, "
                f"got {self.word_representation!r}"
            )
        if self.refine_steps and self.refine_steps[-1] >= self.max_steps:
            logger.warning(
                "refine_steps %s reach past max_steps=%d: this run ends below num_basis=%d "
                "(resume it with a larger --max-steps to go on)",
                list(self.refine_steps),
                self.max_steps,
                self.num_basis,
            )
        self.refinement_schedule  # noqa: B018 (validates K and N_T against the refinements)

    @property
    def refinement_schedule(self) -> RefinementSchedule:
        return RefinementSchedule(self.basis, self.num_basis, self.num_steps, self.refine_steps)


# The generated sample is small (2,000 short sentences): a short run with a small
# final K trains in well under a minute on a CPU and beats the most-frequent-tag baseline.
SAMPLE_DEFAULTS: dict[str, object] = {
    "max_steps": 300,
    "warmup_steps": 50,
    "learning_rate": 2e-3,
    "num_basis": 8,
    "refine_steps": (50, 100, 150),
    "eval_steps": 100,
    "save_steps": 100,
}


def resolve_arguments(given: Mapping[str, object]) -> TrainingArguments:
    """:class:`TrainingArguments` from the values a user gave (None = not given).

    With ``treebank="sample"``, :data:`SAMPLE_DEFAULTS` replace the recipe's defaults
    for what was not given.
    """
    given = {key: value for key, value in given.items() if value is not None}
    preset = (
        SAMPLE_DEFAULTS if given.get("treebank", TrainingArguments.treebank) == "sample" else {}
    )
    return TrainingArguments(**{**preset, **given})


# --- data ---------------------------------------------------------------------------


def load_splits(
    treebank: str,
    data_dir: str | None = None,
    train_file: Sequence[str] = (),
    dev_file: Sequence[str] = (),
    label_names: Mapping[str, Sequence[str]] | None = None,
):
    """The treebank as a ``DatasetDict``, with ``train_file`` / ``dev_file`` replacing splits.

    Replacing one split of a known UD treebank keeps its other files; otherwise give both.
    """
    if not train_file and not dev_file:
        return load_treebank(treebank, data_dir, label_names=label_names)
    files: dict[str, Sequence[str]] = {}
    if treebank in TREEBANKS and not (train_file and dev_file):
        root = data_dir if data_dir is not None else os.environ.get("UD_DIR")
        if root is None:
            raise ValueError(
                f"treebank {treebank!r} needs --data-dir or the UD_DIR environment variable"
            )
        files = {
            split: [str(Path(root) / f) for f in TREEBANKS[treebank][split]]
            for split in ("train", "validation")
        }
    elif not (train_file and dev_file):
        raise ValueError(f"give both --train-file and --dev-file for treebank {treebank!r}")
    files.update({k: list(v) for k, v in (("train", train_file), ("validation", dev_file)) if v})
    return load_treebank(files, label_names=label_names)


def _vocabulary(train) -> list[str]:
    # Some treebanks have words with spaces; the tokenizer splits those, so they are no entries.
    return [word for word in build_vocab(train) if not any(c.isspace() for c in word)]


def _eval_loader(rows: list[dict], batch_size: int, pad_token_id: int) -> DataLoader:
    # Longest first: similar lengths share a batch, and the largest batch comes first.
    rows = sorted(rows, key=lambda row: -len(row["input_ids"]))
    return DataLoader(
        rows, batch_size=batch_size, shuffle=False, collate_fn=PaddingCollator(pad_token_id)
    )


# --- optimiser and refinement ---------------------------------------------------------


def _no_decay_parameters(model: nn.Module) -> set[str]:
    """Names of biases and LayerNorm parameters (the ODE block's mirrors of them included)."""
    names = set()
    for module_name, module in model.named_modules():
        kind = module.template_cls if isinstance(module, Coefficients) else type(module)
        for name, _ in module.named_parameters(recurse=False):
            if name == "bias" or issubclass(kind, nn.LayerNorm):
                names.add(f"{module_name}.{name}" if module_name else name)
    return names


def build_optimizer(
    model: nn.Module, learning_rate: float, weight_decay: float
) -> torch.optim.AdamW:
    """AdamW with the paper's β and ε; biases and LayerNorm parameters get no weight decay.

    The fused kernel: at K = 64 the coefficients are 64 copies of the rate's weights, and
    the per-tensor loop of the default AdamW costs about ten times as long on a CPU.
    """
    no_decay = _no_decay_parameters(model)
    parameters = list(model.named_parameters())
    groups = [
        {"params": [p for n, p in parameters if n not in no_decay], "weight_decay": weight_decay},
        {"params": [p for n, p in parameters if n in no_decay], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=learning_rate, betas=ADAM_BETAS, eps=ADAM_EPSILON, fused=True)


@torch.no_grad()
def refine_with_optimizer(
    model: nn.Module, optimizer: torch.optim.Optimizer, learning_rate: float, weight_decay: float
) -> torch.optim.AdamW:
    """Refine every ODE block of ``model`` and return a new optimiser over its parameters.

    Optimiser state carries over: unchanged parameters keep theirs, and the moments of
    a refined coefficient tensor are projected onto the new basis like the coefficients
    themselves (second moments clamped at 0), with Adam's step count kept.
    """
    names = {p: n for n, p in model.named_parameters()}
    old_state = {names[p]: state for p, state in optimizer.state.items() if p in names}
    blocks = {name: block for name, block in model.named_modules() if isinstance(block, OdeBlock)}
    old_bases = {name: block.basis for name, block in blocks.items()}
    old_shapes = {n: p.shape for n, p in model.named_parameters()}
    refine(model)
    matrices = {
        name: change_of_basis_matrix(old_bases[name], block.basis, "projection")
        for name, block in blocks.items()
    }
    new_optimizer = build_optimizer(model, learning_rate, weight_decay)
    for name, parameter in model.named_parameters():
        if name not in old_state:
            continue
        owner = next((b for b in blocks if name.startswith(f"{b}.")), None)
        state = {}
        for key, value in old_state[name].items():
            if owner is not None and torch.is_tensor(value) and value.shape == old_shapes[name]:
                value = apply_matrix(matrices[owner], value)
                if "sq" in key:  # exp_avg_sq, max_exp_avg_sq: must stay >= 0
                    value.clamp_(min=0)
            state[key] = value
        new_optimizer.state[parameter] = state
    return new_optimizer


def _refine_prepared(accelerator: Accelerator, model, optimizer, args: TrainingArguments):
    """Refine the prepared model, then prepare the model and the new optimiser again."""
    unwrapped = accelerator.unwrap_model(model)
    new_optimizer = refine_with_optimizer(
        unwrapped, optimizer.optimizer, args.learning_rate, args.weight_decay
    )
    # Drop Accelerate's references to the old model and optimiser (and to the data
    # loaders, which only stateful loaders would need for save_state; ours are not).
    accelerator.free_memory()
    return accelerator.prepare(unwrapped, new_optimizer)


# --- randomness -------------------------------------------------------------------------


def seed_step(seed: int, step: int, process_index: int) -> None:
    """Seed torch's global RNG (all devices) for optimiser step ``step`` of a process.

    Every step's randomness (dropout, word dropout) is then a function of
    ``(seed, step, process)``, so a resumed run draws exactly what the uninterrupted
    run drew, whatever else consumed random numbers in between.
    """
    state = np.random.SeedSequence([seed, 1, step, process_index]).generate_state(1, np.uint64)[0]
    torch.manual_seed(int(state >> 1))


# --- evaluation -------------------------------------------------------------------------


@torch.no_grad()
def evaluate(
    model, dataloader: DataLoader, accelerator: Accelerator, metric
) -> dict[str, float | int]:
    """Token accuracy over words of ``model`` on a prepared evaluation loader.

    Predictions are gathered from all processes (``gather_for_metrics`` drops the rows
    Accelerate repeats to even out the last batch), so every word counts once.
    Returns ``accuracy``, ``num_words`` and ``num_sentences``; with batches that carry
    ``unseen`` (see ``encode_for_evaluation``), also ``accuracy_seen``,
    ``accuracy_unseen`` and ``num_unseen_words``.
    """
    was_training = model.training
    model.eval()
    num_sentences = 0
    split = torch.zeros(4, dtype=torch.long)  # correct seen, seen, correct unseen, unseen
    has_split = False
    for batch in dataloader:
        has_split |= "unseen" in batch
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        predictions, labels, unseen = (
            accelerator.pad_across_processes(tensor, dim=1, pad_index=pad)
            for tensor, pad in (
                (logits.argmax(-1), IGNORE_INDEX),
                (batch["labels"], IGNORE_INDEX),
                (batch.get("unseen", torch.zeros_like(batch["labels"])), 0),
            )
        )
        predictions, labels, unseen, starts = accelerator.gather_for_metrics(
            (predictions, labels, unseen, batch["sentence_start"])
        )
        scored = labels != IGNORE_INDEX
        metric.add_batch(
            predictions=predictions[scored].tolist(), references=labels[scored].tolist()
        )
        num_sentences += int(starts.sum())
        split += _seen_unseen_counts(predictions, labels, unseen.bool())
    model.train(was_training)
    result = {**metric.compute(), "num_sentences": num_sentences}
    correct_seen, seen, correct_unseen, num_unseen = split.tolist()
    if has_split:
        result.update(
            accuracy_seen=correct_seen / seen if seen else None,
            accuracy_unseen=correct_unseen / num_unseen if num_unseen else None,
            num_unseen_words=num_unseen,
        )
    return result


def _seen_unseen_counts(
    predictions: torch.Tensor, labels: torch.Tensor, unseen: torch.Tensor
) -> torch.Tensor:
    """``[correct seen, seen, correct unseen, unseen]`` scored words of a batch ``(batch, seq)``."""
    scored = labels != IGNORE_INDEX
    correct = scored & (predictions == labels)
    return torch.stack(
        [(correct & ~unseen).sum(), (scored & ~unseen).sum(), (correct & unseen).sum(),
         (scored & unseen).sum()]
    ).cpu()


def make_accelerator() -> Accelerator:
    """An Accelerator that splits each batch over the processes; CPU processes (gloo)
    when there is no GPU (needed for ``accelerate launch --multi_gpu`` on CPUs)."""
    return Accelerator(
        cpu=not torch.cuda.is_available(),
        dataloader_config=DataLoaderConfiguration(split_batches=True),
    )


def _load_metric(accelerator: Accelerator):
    with accelerator.main_process_first():  # evaluate copies the module into its cache
        return load_token_accuracy(keep_in_memory=True)


def end_distributed(accelerator: Accelerator) -> None:
    """Wait for every process, then end training; this destroys the process group, so
    gloo does not abort at interpreter exit."""
    accelerator.wait_for_everyone()
    accelerator.end_training()


# --- checkpoints --------------------------------------------------------------------------


def complete_checkpoints(output_dir: str | os.PathLike) -> list[Path]:
    """Complete checkpoints of a run (those with ``trainer_state.json``), oldest first."""
    folder = Path(output_dir) / CHECKPOINTS_DIR
    found = [p for p in folder.glob(f"{CHECKPOINT_PREFIX}*") if (p / TRAINER_STATE).is_file()]
    return sorted(found, key=lambda p: int(p.name[len(CHECKPOINT_PREFIX) :]))


def _resolve_checkpoint(path: str, output_dir: str) -> Path:
    if path == "latest":
        found = complete_checkpoints(output_dir)
        if not found:
            raise FileNotFoundError(
                f"no complete checkpoint in {Path(output_dir) / CHECKPOINTS_DIR}"
            )
        return found[-1]
    if not (Path(path) / TRAINER_STATE).is_file():
        raise FileNotFoundError(f"{path} is not a complete checkpoint (no {TRAINER_STATE})")
    return Path(path)


def _save_model(accelerator: Accelerator, model, tokenizer, output_dir: str, facts: dict) -> None:
    accelerator.wait_for_everyone()
    unwrapped = accelerator.unwrap_model(model)
    unwrapped.save_pretrained(output_dir, is_main_process=accelerator.is_main_process)
    if accelerator.is_main_process:
        tokenizer.save_pretrained(output_dir)
        write_model_card(unwrapped, output_dir, extra=facts)


def push_folder_to_hub(folder: str | os.PathLike, repo_id: str) -> str:
    """Upload a saved model folder (not its checkpoints) to the Hub model repo ``repo_id``;
    returns the commit's URL."""
    api = HfApi()
    api.create_repo(repo_id, exist_ok=True)
    commit = api.upload_folder(
        repo_id=repo_id, folder_path=str(folder), ignore_patterns=[f"{CHECKPOINTS_DIR}/*"]
    )
    return commit.commit_url


# --- training -----------------------------------------------------------------------------


def _spelling(
    args: TrainingArguments, tokenizer, words: Collection[str]
) -> tuple[dict[str, torch.Tensor] | None, int]:
    """The spelling tables a spelling representation needs (None for ``"word"``) and the
    size of its character alphabet."""
    if args.word_representation == "word":
        return None, ContTransformerConfig.char_vocab_size
    return spelling_tables(tokenizer, words, args.max_word_length)


def _set_input_representation(
    model, spelling: dict | None, tokenizer, counts: Mapping[str, int], alpha: float
) -> None:
    """Give a new model its spelling tables and its word-dropout probabilities."""
    embeddings = model.cont_transformer.embeddings
    if spelling is not None:
        embeddings.set_spelling(**spelling)
    embeddings.set_word_dropout(word_dropout_probabilities(tokenizer, counts, alpha))


def _model_config(
    args: TrainingArguments, tokenizer, label_names: Sequence[str], char_vocab_size: int
) -> ContTransformerConfig:
    schedule = args.refinement_schedule
    return ContTransformerConfig(
        vocab_size=len(tokenizer),
        hidden_size=args.hidden_size,
        num_attention_heads=args.num_attention_heads,
        intermediate_size=args.intermediate_size,
        hidden_act=args.hidden_act,
        hidden_dropout_prob=args.hidden_dropout_prob,
        attention_probs_dropout_prob=args.attention_probs_dropout_prob,
        max_position_embeddings=args.max_length,
        position_encoding=args.position_encoding,
        basis=args.basis,
        num_basis=schedule.initial_num_basis,
        num_steps=schedule.initial_num_steps,
        scheme=args.scheme,
        time_horizon=args.time_horizon,
        pad_token_id=tokenizer.pad_token_id,
        unk_token_id=tokenizer.unk_token_id,
        word_representation=args.word_representation,
        char_vocab_size=char_vocab_size,
        char_embedding_size=args.char_embedding_size,
        char_hidden_size=args.char_hidden_size,
        char_kernel_size=args.char_kernel_size,
        max_word_length=args.max_word_length,
        context_kernel_size=args.context_kernel_size,
        id2label=dict(enumerate(label_names)),
        label2id={name: i for i, name in enumerate(label_names)},
    )


def _sizes(model) -> tuple[int, int]:
    """``(K, N_T)`` of an (unwrapped) model."""
    return model.config.num_basis, model.config.num_steps


@dataclass
class TrainerState:
    """What a checkpoint holds besides Accelerate's state, as ``trainer_state.json``.

    ``num_basis`` and ``num_steps`` are K and N_T after ``step``: resuming rebuilds those
    shapes before ``load_state``. The loss sums cover the steps since the last evaluation;
    times and tokens add up over resumed runs.
    """

    step: int = 0
    num_basis: int = 0
    num_steps: int = 0
    best: dict | None = None
    history: list[dict] = dataclasses.field(default_factory=list)
    loss_sum: float = 0.0
    loss_count: int = 0
    train_seconds: float = 0.0
    train_tokens: int = 0
    total_seconds: float = 0.0


class PosTrainer:
    """One training run of :func:`train`: data, model, optimiser and state under Accelerate."""

    def __init__(self, args: TrainingArguments):
        self.args = args
        self.started = time.perf_counter()
        self.accelerator = accelerator = make_accelerator()
        if args.batch_size % accelerator.num_processes:
            raise ValueError(
                f"batch_size={args.batch_size} must be divisible by the "
                f"{accelerator.num_processes} processes"
            )
        self.schedule = args.refinement_schedule
        data = load_splits(args.treebank, args.data_dir, args.train_file, args.dev_file)
        for split in ("train", "validation"):
            if split not in data:
                raise ValueError(
                    f"treebank {args.treebank!r} has no {split!r} split (found {sorted(data)})"
                )
        train_split, dev_split = data["train"], data["validation"]
        counts = Counter(word for words in train_split["tokens"] for word in words)
        self.tokenizer = tokenizer = build_tokenizer(
            _vocabulary(train_split),
            model_max_length=args.max_length,
            spelling=args.word_representation != "word",
        )
        train_rows, num_cut = encode_for_training(
            tokenizer, train_split["tokens"], train_split[args.tag_column], args.max_length
        )
        if num_cut:
            logger.warning(
                "training truncates sentences to %d tokens: %d words not trained on",
                args.max_length,
                num_cut,
            )
        dev_rows = encode_for_evaluation(
            tokenizer, dev_split["tokens"], dev_split[args.tag_column], args.max_length, counts
        )
        self.summary = {
            "treebank": args.treebank,
            "tag_column": args.tag_column,
            "num_train_sentences": len(train_split),
            "num_dev_sentences": len(dev_split),
            "baseline_accuracy": most_frequent_tag_baseline(
                train_split, dev_split, args.tag_column
            ),
            "num_processes": accelerator.num_processes,
            "arguments": dataclasses.asdict(args),
        }

        torch.manual_seed(args.seed)
        label_names = train_split.features[args.tag_column].feature.names
        spelling, char_vocab_size = _spelling(args, tokenizer, counts)
        model = ContTransformerForTokenClassification(
            _model_config(args, tokenizer, label_names, char_vocab_size)
        )
        _set_input_representation(model, spelling, tokenizer, counts, args.word_dropout)
        checkpoint = None
        num_basis, num_steps = _sizes(model)
        self.state = TrainerState(num_basis=num_basis, num_steps=num_steps)
        if args.resume_from_checkpoint:
            checkpoint = _resolve_checkpoint(args.resume_from_checkpoint, args.output_dir)
            self.state = TrainerState(**json.loads((checkpoint / TRAINER_STATE).read_text()))
            for _ in range(self.schedule.num_refinements(self.state.step)):
                refine(model)
            if _sizes(model) != (self.state.num_basis, self.state.num_steps):
                raise ValueError(
                    f"{checkpoint} holds K, N_T = {self.state.num_basis}, {self.state.num_steps} "
                    "but the "
                    f"refinement schedule gives {_sizes(model)} at step {self.state.step}: "
                    "resume with the same settings"
                )
        self.sampler = LengthGroupedBatchSampler(
            [len(r["input_ids"]) for r in train_rows], args.batch_size, args.seed
        )
        train_loader = DataLoader(
            train_rows,
            batch_sampler=self.sampler,
            collate_fn=PaddingCollator(tokenizer.pad_token_id),
        )
        self.model, self.optimizer, self.train_loader, self.eval_loader = accelerator.prepare(
            model,
            build_optimizer(model, args.learning_rate, args.weight_decay),
            train_loader,
            _eval_loader(dev_rows, args.batch_size, tokenizer.pad_token_id),
        )
        if checkpoint is not None:
            accelerator.load_state(str(checkpoint))
            logger.info("resumed from %s at step %d", checkpoint, self.state.step)
        self.metric = _load_metric(accelerator)
        self.local_tokens = torch.zeros((), dtype=torch.long, device=accelerator.device)

    def run(self) -> dict:
        """Train from the current step to ``max_steps``; returns the final metrics."""
        args, accelerator, state = self.args, self.accelerator, self.state
        if accelerator.is_main_process:
            Path(args.output_dir).mkdir(parents=True, exist_ok=True)
        progress = tqdm(
            total=args.max_steps,
            initial=state.step,
            disable=not accelerator.is_local_main_process,
            desc="training",
            dynamic_ncols=True,
            mininterval=1 if sys.stderr.isatty() else 30,  # a log file gets a line every 30 s
        )
        self.model.train()
        tick = time.perf_counter()
        while state.step < args.max_steps:
            epoch, skip = divmod(state.step, len(self.train_loader))
            loader = (
                accelerator.skip_first_batches(self.train_loader, skip)
                if skip
                else self.train_loader
            )
            # Accelerate's loader re-sets the sampler's epoch to its own pass counter at every
            # pass, which a resumed run starts at 0: set both to the true epoch.
            loader.set_epoch(epoch)
            self.sampler.set_epoch(epoch)
            for batch in loader:
                loss, learning_rate = self.train_step(batch)
                progress.set_postfix(
                    loss=f"{loss:.4f}",
                    lr=f"{learning_rate:.2e}",
                    K=state.num_basis,
                    N_T=state.num_steps,
                    refresh=False,  # update() redraws, at most every mininterval
                )
                progress.update(1)
                evaluate_now = state.step % args.eval_steps == 0 or state.step == args.max_steps
                save_now = state.step % args.save_steps == 0 or state.step == args.max_steps
                if evaluate_now or save_now:
                    state.train_seconds += time.perf_counter() - tick
                    state.train_tokens += int(accelerator.reduce(self.local_tokens, "sum"))
                    self.local_tokens.zero_()
                if evaluate_now:
                    entry = self.evaluate_and_keep_best(learning_rate)
                    if accelerator.is_main_process:
                        progress.write(
                            f"step {state.step}: dev {args.tag_column} accuracy "
                            f"{entry['accuracy']:.4f} "
                            f"({entry['num_words']} words, {entry['num_sentences']} sentences), "
                            f"train loss {entry['train_loss']:.4f}, "
                            f"K={state.num_basis}, N_T={state.num_steps}"
                        )
                if save_now:
                    self.save_checkpoint()
                if evaluate_now or save_now:
                    tick = time.perf_counter()
                if state.step >= args.max_steps:
                    break
        progress.close()
        metrics = self.write_metrics()
        if args.push_to_hub and accelerator.is_main_process:
            logger.info("pushed to %s", push_folder_to_hub(args.output_dir, args.push_to_hub))
        end_distributed(accelerator)
        return metrics

    def train_step(self, batch: dict[str, torch.Tensor]) -> tuple[float, float]:
        """One optimiser step (then a refinement if one is due); returns loss and learning rate."""
        args, state = self.args, self.state
        state.step += 1
        seed_step(args.seed, state.step, self.accelerator.process_index)
        learning_rate = inverse_sqrt_learning_rate(
            state.step, args.learning_rate, args.warmup_steps
        ) * cooldown_factor(state.step, args.max_steps, args.cooldown_steps)
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate
        loss = self.model(
            input_ids=batch["input_ids"],
            attention_mask=batch["attention_mask"],
            labels=batch["labels"],
        ).loss
        self.accelerator.backward(loss)
        self.optimizer.step()
        self.optimizer.zero_grad()
        self.local_tokens += batch["attention_mask"].sum()
        loss_value = loss.item()
        state.loss_sum += loss_value
        state.loss_count += 1
        if state.step in self.schedule.refine_steps:
            self.model, self.optimizer = _refine_prepared(
                self.accelerator, self.model, self.optimizer, args
            )
            state.num_basis, state.num_steps = _sizes(self.accelerator.unwrap_model(self.model))
        return loss_value, learning_rate

    def evaluate_and_keep_best(self, learning_rate: float) -> dict:
        """Evaluate on dev, record it, save the model if it is the best so far."""
        accelerator, state = self.accelerator, self.state
        result = evaluate(self.model, self.eval_loader, accelerator, self.metric)
        mean_loss = torch.tensor(state.loss_sum / state.loss_count, device=accelerator.device)
        entry = {
            "step": state.step,
            **result,
            "train_loss": accelerator.reduce(mean_loss, "mean").item(),
            "num_basis": state.num_basis,
            "num_steps": state.num_steps,
            "learning_rate": learning_rate,
        }
        state.history.append(entry)
        state.loss_sum, state.loss_count = 0.0, 0
        if state.best is None or entry["accuracy"] > state.best["accuracy"]:
            state.best = entry
            facts = {
                "dataset": f"{self.args.treebank} ({self.args.tag_column})",
                "dev accuracy": f"{entry['accuracy']:.2%} (step {state.step})",
            }
            _save_model(accelerator, self.model, self.tokenizer, self.args.output_dir, facts)
        self.write_metrics()
        return entry

    def save_checkpoint(self) -> None:
        """Accelerate's state and ``trainer_state.json`` in ``checkpoints/step-N``; deletes
        all but the newest ``save_total_limit`` checkpoints."""
        accelerator, output_dir = self.accelerator, self.args.output_dir
        folder = Path(output_dir) / CHECKPOINTS_DIR / f"{CHECKPOINT_PREFIX}{self.state.step}"
        accelerator.save_state(str(folder))
        accelerator.wait_for_everyone()
        if accelerator.is_main_process:
            state = dataclasses.replace(self.state, total_seconds=self._total_seconds())
            (folder / TRAINER_STATE).write_text(json.dumps(dataclasses.asdict(state), indent=2))
            for old in complete_checkpoints(output_dir)[: -self.args.save_total_limit]:
                shutil.rmtree(old)

    def _total_seconds(self) -> float:
        return self.state.total_seconds + time.perf_counter() - self.started

    def write_metrics(self) -> dict:
        """``metrics.json`` in ``output_dir``: best and all dev evaluations, baseline, speed."""
        state = self.state
        metrics = {
            **self.summary,
            "best": state.best,
            "history": state.history,
            "step": state.step,
            "train_runtime_s": state.train_seconds,
            "total_runtime_s": self._total_seconds(),
            "train_tokens": state.train_tokens,
            "train_tokens_per_second": state.train_tokens / state.train_seconds
            if state.train_seconds
            else 0.0,
        }
        if self.accelerator.is_main_process:
            (Path(self.args.output_dir) / METRICS_FILE).write_text(json.dumps(metrics, indent=2))
        return metrics


def train(args: TrainingArguments) -> dict:
    """Train a tagger as ``args`` says; returns the contents of ``metrics.json``.

    Works unchanged on one or several processes (``accelerate launch``), CPU or GPU.
    """
    return PosTrainer(args).run()


def evaluate_saved_model(
    model_dir: str | os.PathLike,
    treebank: str = "sample",
    data_dir: str | None = None,
    split: str = "validation",
    eval_file: Sequence[str] = (),
    tag_column: str | None = None,
    batch_size: int = 64,
) -> dict:
    """Token accuracy of a saved tagger on a treebank split or on CoNLL-U file(s), also over
    the words seen and unseen in its training data (see ``tokenization.training_words``).

    ``tag_column`` None reads it from the model folder's ``metrics.json`` (``xpos`` if
    absent). Tags the model does not know count as errors. Sentences longer than the
    model's ``max_position_embeddings`` are scored in full, in windows.
    """
    accelerator = make_accelerator()
    model = ContTransformerForTokenClassification.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if tag_column is None:
        metrics_file = Path(model_dir) / METRICS_FILE
        tag_column = (
            json.loads(metrics_file.read_text())["tag_column"] if metrics_file.is_file() else "xpos"
        )
    config = model.config
    label_names = {tag_column: [config.id2label[i] for i in range(config.num_labels)]}
    if eval_file:
        dataset = load_treebank({"eval": list(eval_file)}, label_names=label_names)["eval"]
    else:
        splits = load_treebank(treebank, data_dir, label_names=label_names)
        split = SPLIT_ALIASES.get(split, split)
        if split not in splits:
            raise ValueError(
                f"treebank {treebank!r} has no split {split!r} (found {sorted(splits)})"
            )
        dataset = splits[split]
    rows = encode_for_evaluation(
        tokenizer,
        dataset["tokens"],
        dataset[tag_column],
        config.max_position_embeddings,
        training_words(tokenizer, model),
    )
    batch_size = math.ceil(batch_size / accelerator.num_processes) * accelerator.num_processes
    model, loader = accelerator.prepare(
        model, _eval_loader(rows, batch_size, tokenizer.pad_token_id)
    )
    result = evaluate(model, loader, accelerator, _load_metric(accelerator))
    result.update(
        model_dir=str(model_dir),
        tag_column=tag_column,
        split=split if not eval_file else list(eval_file),
        num_basis=config.num_basis,
        num_steps=config.num_steps,
    )
    end_distributed(accelerator)
    return result
