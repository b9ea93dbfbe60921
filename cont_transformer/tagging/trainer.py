"""Train and evaluate part-of-speech taggers (``scripts/train_pos.py``) on the scaffold.

:class:`PosTrainer` fills the hooks of :class:`~cont_transformer.training.scaffold.Trainer`
with the paper's recipe on a CoNLL-U treebank: AdamW with β = (0.9, 0.98), ε = 1e-9 and
decoupled weight decay (not on biases and LayerNorm scales), batch 64, a linear warm-up
then inverse-square-root learning rate, and multi-level refinement of the ODE block (K and
N_T grow at ``refine_steps``). The scaffold evaluates on dev every ``eval_steps``, keeps
the best-dev model in ``output_dir/best`` (``save_pretrained`` with the tokenizer, the tag
names in ``config.id2label``, a ``metrics.json`` and a model card) and checkpoints the
training state. :func:`evaluate_saved_model` scores a saved model on any split or file.

Decisions worth knowing:

* Batches. ``batch_size`` is the total over processes (Accelerate's ``split_batches``),
  so the recipe and the step counts mean the same on 1 or n processes.
* Unknown words. The default representation, ``"word+chars"``, reads every word's
  spelling (a spelling tokenizer, and the model's character CNN; ``"word"`` is the
  paper's word-only model). Word dropout replaces the word channel of a training word
  seen ``c`` times by ``[UNK]`` with probability ``α / (α + c)`` (``word_dropout`` is α;
  the model applies it in training mode, from per-id probabilities set here), so
  ``[UNK]`` learns to stand for rare words, which is what unknown dev/test words are. On
  English-GUM a uniform rate taught ``[UNK]`` the average word's tags (determiners,
  prepositions) and scored worse on the 7.4% of dev words unseen in train.
* Metrics. Dev predictions are gathered across processes with ``gather_for_metrics``,
  so every dev word and sentence counts exactly once; accuracy is over words, and a
  gold tag unseen in train counts as an error (see ``data.UNSEEN_TAG``). It is also
  split over the words seen in train and those not (``accuracy_seen``,
  ``accuracy_unseen``).
* Long sentences: truncated for training, scored in full in windows for evaluation
  (see :mod:`.batching`).
* Fine-tuning. ``model_name_or_path`` starts from a saved tagger of this package: its
  tokenizer, K, N_T and tags are kept (tags new in the data get new classifier rows).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import DataLoader
from transformers import AutoConfig, AutoTokenizer

from ..basis import get_basis, refined_num_steps
from ..configuration_cont_transformer import ContTransformerConfig, check_word_representation
from ..model_card import Evaluation
from ..modeling_cont_transformer import ContTransformerForTokenClassification
from ..ode_block import Coefficients
from ..training.arguments import RunArguments, _help
from ..training.outputs import BEST_MODEL_DIR, METRICS_FILE, resolve_model_dir
from ..training.scaffold import Trainer, end_distributed, make_accelerator
from ..training.schedules import cooldown_factor, inverse_sqrt_learning_rate, parse_steps
from .batching import (
    IGNORE_INDEX,
    LengthGroupedBatchSampler,
    PaddingCollator,
    bucket_lengths,
    encode_for_evaluation,
    encode_for_training,
    word_dropout_probabilities,
)
from .data import (
    SPLIT_ALIASES,
    TAG_COLUMNS,
    TREEBANKS,
    TreebankFacts,
    build_vocab,
    check_tag_column,
    load_treebank,
    most_frequent_tag_baseline,
    treebank_facts,
    treebank_files,
    write_sample_treebank,
)
from .metrics import load_token_accuracy
from .tag import Tagger, saved_tag_column
from .tag_files import tag_file
from .tokenization import build_tokenizer, spelling_tables, training_words

logger = logging.getLogger(__name__)

ADAM_BETAS = (0.9, 0.98)
ADAM_EPSILON = 1e-9
MODEL_TYPE = "cont_transformer"
PAPER_REFINE_STEPS = "1000,2000,3000,4000,5000,6000"  # the paper's schedule
# The default: the paper's first five refinements, the last one late (80% of the 35,000
# steps) inside a linear cool-down of the learning rate over the last 20% of the run, so
# that the trained model halves its K and N_T at no cost (README, "Compressible by default").
DEFAULT_REFINE_STEPS = "1000,2000,3000,4000,5000,28000"
DEFAULT_COOLDOWN_FRACTION = 0.2
PREDICTIONS_DIR = "predictions"
COMPILE_LENGTH_BUCKETS = 8  # with --torch-compile: eight padded lengths


@dataclass
class TrainingArguments(RunArguments):
    """Everything :func:`train` needs; the defaults are the paper's recipe (English-GUM,
    35,000 steps, K = N_T = 64). Names match ``ContTransformerConfig`` and the CLI flags
    (``num_basis`` is ``--num-basis`` or ``--num_basis``)."""

    output_dir: str = field(
        default="runs/pos",
        **_help("run folder: best/ (the best model), checkpoints/, metrics.json, run.json"),
    )
    max_steps: int = field(default=35000, **_help("optimiser steps to train for"))
    learning_rate: float = field(
        default=1e-3, **_help("peak learning rate, reached at the end of the warm-up")
    )
    weight_decay: float = field(
        default=0.1, **_help("AdamW weight decay (not on biases and LayerNorms)")
    )
    num_basis: int = field(default=64, **_help("final K, the number of basis functions"))
    refine_steps: str | None = field(
        default=DEFAULT_REFINE_STEPS,
        **_help("comma-separated steps after which K and N_T are refined ('none': never); "
                "the initial K is the one that reaches --num-basis after all of them"),
    )  # fmt: skip
    treebank: str = field(
        default="sample",
        **_help("sample (generated, no data needed) | en_gum | de_hdt (under --data-dir or "
                "$UD_DIR) | a UD release folder | a Hub dataset name"),
    )  # fmt: skip
    data_dir: str | None = field(default=None, **_help("folder of UD release folders ($UD_DIR)"))
    train_file: list[str] = field(
        default_factory=list, **_help("CoNLL-U file(s) or glob(s) replacing the train split")
    )
    dev_file: list[str] = field(
        default_factory=list, **_help("CoNLL-U file(s) or glob(s) replacing the dev split")
    )
    tag_column: str = field(default="xpos", **_help("tags to predict: xpos or upos"))
    model_name_or_path: str | None = field(
        default=None,
        **_help("fine-tune a saved tagger of this package (folder or Hub id): its tokenizer, "
                "K, N_T and tags are kept"),
    )  # fmt: skip
    warmup_steps: int = field(default=8000, **_help("linear warm-up steps, then 1/sqrt decay"))
    cooldown_steps: int | None = field(
        default=None,
        **_help("the learning rate falls linearly to (almost) 0 over the last N steps "
                "(default: the last 20%% of --max-steps; 0: no cool-down)"),
    )  # fmt: skip
    hidden_size: int = field(default=128, **_help("embedding and ODE state width"))
    num_attention_heads: int = field(default=1, **_help("attention heads"))
    intermediate_size: int = field(default=128, **_help("MLP hidden width"))
    hidden_act: str = field(default="gelu", **_help("MLP activation: gelu or relu"))
    hidden_dropout_prob: float = field(
        default=0.1, **_help("dropout on embeddings, rate outputs and before the classifier")
    )
    attention_probs_dropout_prob: float = field(
        default=0.1, **_help("dropout on attention probabilities")
    )
    position_encoding: str = field(default="sinusoidal", **_help("sinusoidal or learned"))
    word_representation: str = field(
        default="word+chars",
        **_help("word+chars: word embeddings plus a character CNN over the spelling (unknown "
                "words are read from their form); word: the paper's word-only model; chars: "
                "the character CNN alone"),
    )  # fmt: skip
    char_embedding_size: int = field(default=32, **_help("character embedding width"))
    char_hidden_size: int = field(
        default=ContTransformerConfig.char_hidden_size,
        **_help("filters of the character CNN (512: words never seen in training are tagged "
                "best; see the README's screening table)"),
    )  # fmt: skip
    char_kernel_size: int = field(default=3, **_help("width (odd) of the character CNN"))
    max_word_length: int = field(
        default=20, **_help("characters of a word the CNN reads (a longer word: first and last)")
    )
    max_length: int = field(
        default=128,
        **_help("longest training sentence in words, root included (longer: truncated; "
                "evaluation scores long sentences in full, in windows)"),
    )  # fmt: skip
    length_buckets: int | None = field(
        default=None,
        **_help("pad every batch to one of N lengths chosen from the training data, so a "
                "compiled model sees few shapes (default: 8 with --torch-compile, else 0: "
                "each batch to its longest row)"),
    )  # fmt: skip
    do_predict: bool = field(
        default=False,
        **_help("after training, tag the dev (and test) CoNLL-U files with the best model into "
                "OUTPUT_DIR/predictions/ (only the predicted column changes)"),
    )  # fmt: skip
    word_dropout: float = field(
        default=1.0,
        **_help("alpha: a training word seen c times becomes [UNK] with probability "
                "alpha/(alpha+c); 0: off"),
    )  # fmt: skip
    eval_steps: int = field(default=1000, **_help("evaluate on dev every N steps"))
    save_steps: int = field(default=1000, **_help("checkpoint every N steps"))

    def __post_init__(self):
        self.train_file, self.dev_file = list(self.train_file), list(self.dev_file)
        if self.tag_column not in TAG_COLUMNS:
            raise ValueError(f"tag_column: choose one of {TAG_COLUMNS}, got {self.tag_column!r}")
        if self.word_dropout < 0:
            raise ValueError(f"word_dropout: must be >= 0, got {self.word_dropout}")
        if self.warmup_steps < 0:
            raise ValueError(f"warmup_steps: must be >= 0, got {self.warmup_steps}")
        if self.cooldown_steps is None:
            self.cooldown_steps = round(DEFAULT_COOLDOWN_FRACTION * self.max_steps)
        if not 0 <= self.cooldown_steps <= self.max_steps:
            raise ValueError(f"cooldown_steps: must lie in [0, max_steps], got {self.cooldown_steps}")
        check_word_representation(self.word_representation)
        if self.model_name_or_path is not None:
            self._adopt_saved_sizes()
        if self.length_buckets is None:
            self.length_buckets = COMPILE_LENGTH_BUCKETS if self.torch_compile else 0
        super().__post_init__()
        refine_steps = self.refine_steps
        if refine_steps and refine_steps[-1] >= self.max_steps:
            logger.warning(
                "refine_steps %s reach past max_steps=%d: this run ends below num_basis=%d "
                "(resume it with a larger --max-steps to go on)",
                list(refine_steps), self.max_steps, self.num_basis,
            )  # fmt: skip

    def _adopt_saved_sizes(self) -> None:
        """Fine-tuning keeps the saved model's continuous choices; refinements (if any)
        grow them from there."""
        config = AutoConfig.from_pretrained(self.model_name_or_path)
        if config.model_type != MODEL_TYPE:
            raise ValueError(
                f"model_name_or_path: {self.model_name_or_path} holds a {config.model_type!r} "
                f"model, not a {MODEL_TYPE!r} tagger"
            )
        current = get_basis(config.basis, config.num_basis, config.time_horizon)
        refinements = len(parse_steps(self.refine_steps))
        for _ in range(refinements):
            current = current.refine()
        self.basis, self.scheme, self.time_horizon = config.basis, config.scheme, config.time_horizon
        self.num_basis, self.num_steps = current.num_basis, refined_num_steps(config.num_steps, refinements)


# The generated sample is small (2,000 short sentences): a short run with a small
# final K trains in well under a minute on a CPU and beats the most-frequent-tag baseline.
SAMPLE_DEFAULTS: dict[str, object] = {
    "max_steps": 300,
    "warmup_steps": 50,
    "learning_rate": 2e-3,
    "num_basis": 8,
    "refine_steps": "50,100,240",
    "eval_steps": 100,
    "save_steps": 100,
}


def preset_defaults(given: Mapping[str, object]) -> Mapping[str, object]:
    """Defaults for what the user did not give: with ``treebank="sample"`` (the default)
    :data:`SAMPLE_DEFAULTS`; when fine-tuning a saved model, no refinement."""
    defaults = dict(SAMPLE_DEFAULTS) if given.get("treebank", TrainingArguments.treebank) == "sample" else {}
    if given.get("model_name_or_path") is not None:
        defaults["refine_steps"] = "none"
    return defaults


def resolve_arguments(given: Mapping[str, object]) -> TrainingArguments:
    """:class:`TrainingArguments` from the values a user gave (None = not given)."""
    given = {key: value for key, value in given.items() if value is not None}
    return TrainingArguments(**{**preset_defaults(given), **given})


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
                f"treebank: {treebank!r} needs --data-dir or the UD_DIR environment variable"
            )
        files = {
            split: [str(Path(root) / f) for f in TREEBANKS[treebank][split]]
            for split in ("train", "validation")
        }
    elif not (train_file and dev_file):
        raise ValueError(f"train_file: give both --train-file and --dev-file for treebank {treebank!r}")
    files.update({k: list(v) for k, v in (("train", train_file), ("validation", dev_file)) if v})
    return load_treebank(files, label_names=label_names)


def _vocabulary(train) -> list[str]:
    # Some treebanks have words with spaces; the tokenizer splits those, so they are no entries.
    return [word for word in build_vocab(train) if not any(c.isspace() for c in word)]


def eval_loader(
    rows: list[dict], batch_size: int, pad_token_id: int, lengths: Sequence[int] = ()
) -> DataLoader:
    """Evaluation batches, longest first: similar lengths share a batch, and the largest
    batch comes first."""
    rows = sorted(rows, key=lambda row: -len(row["input_ids"]))
    collate = PaddingCollator(pad_token_id, lengths)
    return DataLoader(rows, batch_size=batch_size, shuffle=False, collate_fn=collate)


def _content_fingerprint(*datasets_, column: str) -> str:
    digest = hashlib.sha256()
    for dataset in datasets_:
        names = dataset.features[column].feature.names
        rows = dataset[:]
        digest.update(json.dumps([names, rows["tokens"], rows[column]]).encode())
    return digest.hexdigest()


# --- optimiser --------------------------------------------------------------------------


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


# --- evaluation -------------------------------------------------------------------------


@torch.no_grad()
def evaluate(model, dataloader, accelerator, metric) -> dict[str, float | int]:
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
    ).cpu()  # fmt: skip


def load_metric(accelerator):
    """The package's token-accuracy metric (loaded by path, no Hub access)."""
    with accelerator.main_process_first():  # evaluate copies the module into its cache
        return load_token_accuracy(keep_in_memory=True)


# --- the trainer --------------------------------------------------------------------------


def model_config(
    args: TrainingArguments,
    tokenizer,
    label_names: Sequence[str],
    language: str | None = None,
    char_vocab_size: int = ContTransformerConfig.char_vocab_size,
) -> ContTransformerConfig:
    """The tagger's config at the refinement schedule's initial K and N_T."""
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
        bos_token_id=tokenizer.bos_token_id,
        unk_token_id=tokenizer.unk_token_id,
        language=language,
        word_representation=args.word_representation,
        char_vocab_size=char_vocab_size,
        char_embedding_size=args.char_embedding_size,
        char_hidden_size=args.char_hidden_size,
        char_kernel_size=args.char_kernel_size,
        max_word_length=args.max_word_length,
        id2label=dict(enumerate(label_names)),
        label2id={name: i for i, name in enumerate(label_names)},
    )


class PosTrainer(Trainer):
    """A tagger's training run: CoNLL-U data, the continuous transformer, AdamW."""

    item_name = "tokens"

    def load_data(self) -> None:
        args, accelerator = self.args, self.accelerator
        saved_labels = None
        if args.model_name_or_path is not None:
            self.tokenizer = AutoTokenizer.from_pretrained(args.model_name_or_path)
            config = AutoConfig.from_pretrained(args.model_name_or_path)
            saved_labels = [config.id2label[i] for i in range(config.num_labels)]
        data = load_splits(args.treebank, args.data_dir, args.train_file, args.dev_file)
        for split in ("train", "validation"):
            if split not in data:
                raise ValueError(
                    f"treebank: {args.treebank!r} has no {split!r} split (found {sorted(data)})"
                )
        train_split = data["train"]
        check_tag_column(train_split, args.tag_column)
        label_names = train_split.features[args.tag_column].feature.names
        if saved_labels is not None:
            label_names = saved_labels + [name for name in label_names if name not in saved_labels]
            data = load_splits(
                args.treebank, args.data_dir, args.train_file, args.dev_file,
                label_names={args.tag_column: label_names},
            )  # fmt: skip
            train_split = data["train"]
        else:
            self.tokenizer = build_tokenizer(
                _vocabulary(train_split), spelling=args.word_representation != "word"
            )
        self.label_names = list(label_names)
        dev_split = data["validation"]
        tokenizer = self.tokenizer
        train_rows, num_cut = encode_for_training(
            tokenizer, train_split["tokens"], train_split[args.tag_column], args.max_length
        )
        if num_cut:
            logger.warning(
                "training truncates sentences to %d tokens: %d words not trained on",
                args.max_length, num_cut,
            )  # fmt: skip
        self.counts = Counter(word for words in train_split["tokens"] for word in words)
        dev_rows = encode_for_evaluation(
            tokenizer, dev_split["tokens"], dev_split[args.tag_column], args.max_length, self.counts
        )
        self.fingerprint = _content_fingerprint(train_split, dev_split, column=args.tag_column)
        self.files = treebank_files(
            args.treebank, args.data_dir, {"train": args.train_file, "validation": args.dev_file}
        )
        self.facts = treebank_facts(self.files.get("train", []))
        if self.facts is None and args.treebank == "sample" and not args.train_file:
            self.facts = TreebankFacts("sample (generated by cont_transformer)", language="en")
        self.baseline = most_frequent_tag_baseline(train_split, dev_split, args.tag_column)
        self.num_sentences = (len(train_split), len(dev_split))
        self.sampler = LengthGroupedBatchSampler(
            [len(r["input_ids"]) for r in train_rows], args.batch_size, args.seed
        )
        self.buckets = bucket_lengths([len(r["input_ids"]) for r in train_rows], args.length_buckets)
        self.collate = PaddingCollator(tokenizer.pad_token_id, self.buckets)
        self.train_loader, self.eval_loader = accelerator.prepare(
            DataLoader(train_rows, batch_sampler=self.sampler, collate_fn=self.collate),
            eval_loader(dev_rows, args.batch_size, tokenizer.pad_token_id, self.buckets),
        )
        self.metric = load_metric(accelerator)

    @property
    def steps_per_epoch(self) -> int:
        return len(self.train_loader)

    def epoch_batches(self, epoch: int, skip: int):
        loader = self.accelerator.skip_first_batches(self.train_loader, skip) if skip else self.train_loader
        # Accelerate's loader re-sets the sampler's epoch to its own pass counter at every
        # pass, which a resumed run starts at 0: set both to the true epoch.
        loader.set_epoch(epoch)
        self.sampler.set_epoch(epoch)
        return loader

    def build_model(self) -> nn.Module:
        """A new tagger with its spelling tables, or the saved one to fine-tune; either way
        with the word-dropout probabilities of this training data."""
        args, tokenizer = self.args, self.tokenizer
        if args.model_name_or_path is None:
            language = self.facts.language if self.facts else None
            spelling, char_vocab_size = None, ContTransformerConfig.char_vocab_size
            if args.word_representation != "word":
                spelling, char_vocab_size = spelling_tables(tokenizer, self.counts, args.max_word_length)
            model = ContTransformerForTokenClassification(
                model_config(args, tokenizer, self.label_names, language, char_vocab_size)
            )
            if spelling is not None:
                model.cont_transformer.embeddings.set_spelling(**spelling)
        else:
            model = ContTransformerForTokenClassification.from_pretrained(args.model_name_or_path)
            model = _with_labels(model, self.label_names)
        probabilities = word_dropout_probabilities(tokenizer, self.counts, args.word_dropout)
        model.cont_transformer.embeddings.set_word_dropout(probabilities)
        return model

    def build_optimizer(self, model: nn.Module) -> torch.optim.Optimizer:
        return build_optimizer(model, self.args.learning_rate, self.args.weight_decay)

    def learning_rate(self, step: int) -> float:
        args = self.args
        return inverse_sqrt_learning_rate(step, args.learning_rate, args.warmup_steps) * cooldown_factor(
            step, args.max_steps, args.cooldown_steps
        )

    def loss(self, model: nn.Module, batch: dict) -> torch.Tensor:
        # Word dropout happens in the model (training mode), from the probabilities set above.
        return model(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"]
        ).loss

    def batch_items(self, batch: dict) -> torch.Tensor:
        return batch["attention_mask"].sum()

    def evaluate(self, model: nn.Module) -> dict:
        return evaluate(model, self.eval_loader, self.accelerator, self.metric)

    def data_fingerprint(self) -> str:
        return self.fingerprint

    def summary(self) -> dict:
        args = self.args
        return {
            "treebank": args.treebank,
            "tag_column": args.tag_column,
            "num_train_sentences": self.num_sentences[0],
            "num_dev_sentences": self.num_sentences[1],
            "baseline_accuracy": self.baseline,
            "num_processes": self.accelerator.num_processes,
            # Tokens the model processed per real token in this session's training batches.
            "padding_ratio": self.collate.padded_tokens / max(self.collate.real_tokens, 1),
            "length_buckets": self.buckets,
            "arguments": {k: v for k, v in vars(args).items()},
        }

    def save_model(self, model: nn.Module, folder: Path, entry: dict) -> None:
        args = self.args
        model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        record = {"tag_column": args.tag_column, "treebank": args.treebank, "best": entry}
        (folder / METRICS_FILE).write_text(json.dumps(record, indent=2) + "\n")

    def card_facts(self, entry: dict) -> dict:
        args, facts = self.args, self.facts
        name = facts.name if facts else args.treebank
        results = [Evaluation(f"{name} ({args.tag_column.upper()})", "dev", entry["accuracy"],
                              facts and facts.dataset_id, facts and facts.dataset_config)]  # fmt: skip
        return {
            "extra": {"training data": f"{name}, {self.num_sentences[0]:,} sentences",
                      "best dev step": entry["step"]},
            "language": facts and facts.language,
            "license": facts and facts.license,
            "datasets": facts.dataset_id if facts and facts.dataset_id else None,
            "results": results,
        }  # fmt: skip

    def finish(self) -> None:
        if self.args.do_predict and self.accelerator.is_main_process:
            self.extra_metrics["predictions"] = self.predict()

    def predict(self) -> list[str]:
        """Re-tag the dev and test files with the best model into ``predictions/``."""
        folder = self.output_dir / PREDICTIONS_DIR
        folder.mkdir(exist_ok=True)
        tagger = Tagger.from_pretrained(self.output_dir / BEST_MODEL_DIR, device=self.accelerator.device)
        with tempfile.TemporaryDirectory() as generated:
            files = self.files
            if self.args.treebank == "sample" and not files.get("validation"):
                files = {split: [path] for split, path in write_sample_treebank(generated).items()}
            written = []
            for split in ("validation", "test"):
                for path in files.get(split, []):
                    tag_file(tagger, path, folder / path.name, input_format="conllu", progress=False)
                    written.append(str(folder / path.name))
        return written

    def load_best(self) -> nn.Module:
        folder = self.output_dir / BEST_MODEL_DIR
        return ContTransformerForTokenClassification.from_pretrained(folder).to(self.accelerator.device).eval()


def _with_labels(model, label_names: Sequence[str]):
    """``model`` with a classifier over ``label_names`` (its own first, new ones appended with
    freshly initialised rows)."""
    config = model.config
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


def train(args: TrainingArguments) -> dict:
    """Train a tagger as ``args`` says; returns the contents of ``metrics.json``.

    Works unchanged on one or several processes (``accelerate launch``), CPU or GPU.
    """
    return PosTrainer(args).run()


def load_tagger(model_dir: str | os.PathLike):
    """A saved tagger of this package (a model folder or a run folder's ``best/``) and its
    folder; ``ValueError`` naming the folder for any other model type."""
    folder = resolve_model_dir(model_dir)
    config = AutoConfig.from_pretrained(folder)
    if config.model_type != MODEL_TYPE:
        raise ValueError(
            f"{folder} holds a {config.model_type!r} model, not a {MODEL_TYPE!r} tagger"
        )
    return ContTransformerForTokenClassification.from_pretrained(folder), folder


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

    ``model_dir`` is a model folder or a training run's folder (its ``best/`` model).
    ``tag_column`` None reads it from the model folder's ``metrics.json`` (``xpos`` if
    absent). Tags the model does not know count as errors. Sentences longer than the
    model's ``max_position_embeddings`` are scored in full, in windows.
    """
    model, folder = load_tagger(model_dir)
    accelerator = make_accelerator()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tag_column = tag_column or saved_tag_column(folder)
    config = model.config
    label_names = {tag_column: [config.id2label[i] for i in range(config.num_labels)]}
    if eval_file:
        dataset = load_treebank({"eval": list(eval_file)}, label_names=label_names)["eval"]
    else:
        splits = load_treebank(treebank, data_dir, label_names=label_names)
        split = SPLIT_ALIASES.get(split, split)
        if split not in splits:
            raise ValueError(
                f"eval_split: treebank {treebank!r} has no split {split!r} (found {sorted(splits)})"
            )
        dataset = splits[split]
    rows = encode_for_evaluation(
        tokenizer, dataset["tokens"], dataset[tag_column], config.max_position_embeddings,
        training_words(tokenizer, model),
    )  # fmt: skip
    batch_size = math.ceil(batch_size / accelerator.num_processes) * accelerator.num_processes
    model, loader = accelerator.prepare(model, eval_loader(rows, batch_size, tokenizer.pad_token_id))
    result = evaluate(model, loader, accelerator, load_metric(accelerator))
    result.update(
        model_dir=str(folder),
        tag_column=tag_column,
        split=split if not eval_file else list(eval_file),
        num_basis=config.num_basis,
        num_steps=config.num_steps,
    )
    end_distributed(accelerator)
    return result
