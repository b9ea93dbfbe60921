"""Train and evaluate part-of-speech taggers (``scripts/train_pos.py``) on the scaffold.

:class:`PosTrainer` fills the hooks of :class:`~cont_transformer.training.scaffold.Trainer`
with the paper's recipe on a CoNLL-U treebank: AdamW with β = (0.9, 0.98), ε = 1e-9 and
decoupled weight decay (not on biases and LayerNorm scales), batch 64, a linear warm-up
then inverse-square-root learning rate, and multi-level refinement of the ODE block (K and
N_T grow at ``refine_steps``). The scaffold evaluates on dev every ``eval_steps``, keeps
the best-dev model in ``output_dir/best`` (``save_pretrained`` with the tokenizer, the tag
names in ``config.id2label``, a ``metrics.json`` and a model card) and checkpoints the
training state. :func:`.evaluation.evaluate_saved_model` scores a saved model on any split or file.

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
  prepositions) and scored worse on the dev words unseen in train (docs/experiments.md).
* Columns. A head per predicted column (``columns``, default every column the train
  split annotates: a treebank without lemmas gets no lemma head), trained jointly (the
  loss is the sum of each column's mean cross-entropy); ``tag_column`` is the primary
  one (the model's ``logits``). Labels come from train (:func:`.columns.column_labels`).
* Metrics and model selection. Dev is scored per column as the CoNLL 2018 shared task
  does on gold tokens (``upos``, ``xpos``, ``ufeats``, ``alltags``, ``lemmas``; see
  :mod:`.evaluation`); a gold value unseen in train counts as an error. The best model
  is the one with the highest ``accuracy``: the mean of the predicted columns' rows
  (UPOS, XPOS, UFeats, Lemmas), for a one-column model its accuracy. The primary
  column is also split over the words seen in train and those not (``accuracy_seen``,
  ``accuracy_unseen``).
* Long sentences: truncated for training, scored in full in windows for evaluation
  (see :mod:`.batching`).
* How a tagger starts (:mod:`.starts`): new, fine-tuned from a saved tagger of this
  package (its tokenizer, K, N_T, columns and labels kept; primary-column tags new in the
  data get new classifier rows; new values of the other columns map to no label (-1):
  not trained on, and scored as errors), or new on a language model's encoder, spelling
  and word rows; ``word_vectors`` may be given to a new tagger either way.
"""

from __future__ import annotations

import hashlib
import json
import logging
import tempfile
from collections import Counter
from collections.abc import Sequence
from itertools import islice
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import DataLoader

from ..model_card import Evaluation
from ..modeling_cont_transformer import ContTransformerForTokenClassification
from ..runtime.model_folders import BEST_MODEL_DIR, METRICS_FILE, PREDICTIONS_DIR, SETTINGS_FILE, TAGGER_RUN
from ..runtime.safe_files import record_outputs
from ..text.batching import (
    LengthGroupedBatchSampler,
    LengthGroupedEpochs,
    PaddingCollator,
    bucket_lengths,
    encode_for_training,
    eval_loader,
    word_dropout_probabilities,
)
from ..text.tokenization import (
    vocabulary_fingerprint,
)
from ..training.scaffold import Trainer
from ..training.schedules import cooldown_factor, inverse_sqrt_learning_rate
from ..word_encoding import joined
from . import family  # noqa: F401  registers the family (card, tools), entry points or not
from .arguments import DEFAULT_COOLDOWN_FRACTION, TrainingArguments
from .columns import (
    PREDICTED_COLUMNS,
    annotated_columns,
    column_labels,
    column_values,
    encode_column,
    label_field,
    primary_column,
    treebank_lemma_lexicon,
)
from .combinations import tag_combinations
from .data import (
    TAG_COLUMNS,
    TreebankFacts,
    build_vocab,
    check_tag_column,
    load_splits,
    most_frequent_tag_baseline,
    treebank_facts,
    treebank_files,
)
from .evaluation import (
    ROW_TITLES,
    SELECTION_ROWS,
    evaluate,
    reported_rows,
    scoring_rows,
)
from .sample_treebank import write_sample_treebank
from .segmenter_training import SEGMENTER_ROW
from .self_training import silver_sentences
from .starts import tagger_start
from .tag import Tagger
from .tag_files import tag_file

logger = logging.getLogger(__name__)


# --- data ---------------------------------------------------------------------------


def _vocabulary(train) -> list[str]:
    # Some treebanks have words with spaces (Vietnamese): entries with them joined.
    return list(dict.fromkeys(joined(word) for word in build_vocab(train)))


def _content_fingerprint(*datasets_, columns: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for dataset in datasets_:
        values = [[list(v) for v in column_values(dataset, column)] for column in columns]
        digest.update(json.dumps([[list(w) for w in dataset["tokens"]], *values]).encode())
    return digest.hexdigest()


def choose_columns(args: TrainingArguments, train, saved=None) -> tuple[str, dict[str, list[str]]]:
    """The primary column and every predicted column's labels (the primary first): from
    ``train`` as ``args`` says, or (fine-tuning) the ``saved`` labels, the primary
    column's extended by the tags new in ``train``."""
    if saved is not None:
        primary = next(iter(saved))
        if args.columns is not None and set(args.columns.split(",")) != set(saved):
            raise ValueError(f"columns: the model to fine-tune predicts {','.join(saved)}, not {args.columns}")
        if primary in TAG_COLUMNS:
            check_tag_column(train, primary)
        new = column_labels(train, [primary], lemma_min_count=args.lemma_min_count)[primary]
        return primary, {**saved, primary: saved[primary] + [t for t in new if t not in saved[primary]]}
    columns = args.columns.split(",") if args.columns else list(annotated_columns(train))
    columns += [c for c in (args.auxiliary_columns or "").split(",") if c and c not in columns]
    if not columns:
        raise ValueError(f"treebank: the train split of {args.treebank!r} annotates none of {PREDICTED_COLUMNS}")
    primary = args.tag_column if args.tag_column in columns else primary_column(columns)
    if primary in TAG_COLUMNS:
        check_tag_column(train, primary)
    ordered = [primary, *(c for c in columns if c != primary)]
    labels = column_labels(train, ordered, feats_mode=args.feats_mode, lemma_min_count=args.lemma_min_count)
    return primary, {column: labels[column] for column in ordered}


def _licence_note(facts: TreebankFacts) -> str:
    """The card's licence row: the licence and where it was read, or why it is unknown."""
    return f"{facts.license}, from {facts.license_source}" if facts.license else facts.license_source


# --- the trainer --------------------------------------------------------------------------


class PosTrainer(LengthGroupedEpochs, Trainer):
    """A tagger's training run: CoNLL-U data, the continuous transformer, AdamW."""

    item_name = "tokens"
    run_kind = TAGGER_RUN
    overwrite_command = "train_pos.py --overwrite-output-dir"
    num_silver_sentences = 0  # the teacher's sentences after the treebank's (--teacher)

    def sources(self) -> dict[str, str | list[str] | None]:
        args = self.args
        return {**super().sources(), "--teacher": args.teacher, "--word-vectors": args.word_vectors}

    def load_data(self) -> None:
        args, accelerator = self.args, self.accelerator
        start = self.start = tagger_start(args)
        silver, silver_columns = [], ()
        if args.teacher:
            silver, silver_columns = silver_sentences(
                args.teacher,
                args.silver_text_files,
                args.silver_lines,
                args.seed,
                accelerator.device,
                args.silver_agreement,
            )
        data = load_splits(args.treebank, args.data_dir, args.train_file, args.dev_file, extra_train=silver)
        for split in ("train", "validation"):
            if split not in data:
                raise ValueError(f"treebank: {args.treebank!r} has no {split!r} split (found {sorted(data)})")
        train_split, dev_split = data["train"], data["validation"]
        self.num_silver_sentences = len(silver)
        self.primary, self.labels = choose_columns(args, train_split, start.saved_labels)
        if self.primary in TAG_COLUMNS:  # run.json records the column trained, not the default asked for
            args.tag_column = self.primary
        if silver and set(self.labels) - set(silver_columns):
            raise ValueError(
                f"teacher: {', '.join(args.teacher)} predict(s) {', '.join(silver_columns)}; the student "
                f"trains {', '.join(self.labels)}: a teacher must predict every column"
            )
        self.tokenizer = start.tokenizer(_vocabulary(train_split))
        tokenizer, primary, words = self.tokenizer, self.primary, train_split["tokens"]
        feats_mode = self.feats_mode = start.feats_mode
        self.combinations = tag_combinations(train_split, self.labels, feats_mode)
        self.lemma_lexicon = treebank_lemma_lexicon(train_split, len(train_split) - len(silver), self.labels)
        fields = {
            label_field(column, primary): encode_column(
                column, words, column_values(train_split, column), labels, feats_mode
            )
            for column, labels in self.labels.items()
        }
        tags = fields.pop("labels")
        train_rows, num_cut = encode_for_training(tokenizer, words, tags, args.max_length, columns=fields)
        if num_cut:
            logger.warning(
                "training truncates sentences to %d tokens: %d words not trained on",
                args.max_length,
                num_cut,
            )
        self.counts = Counter(word for sentence in words for word in sentence)
        # Unseen words are those the treebank's train split lacks, with silver sentences or without.
        known = {word for sentence in islice(words, len(train_split) - len(silver)) for word in sentence}
        dev_rows, self.gold = scoring_rows(
            tokenizer, dev_split, self.labels, primary, args.max_length, known, feats_mode
        )
        self.fingerprint = _content_fingerprint(train_split, dev_split, columns=list(self.labels))
        self.files = treebank_files(
            args.treebank, args.data_dir, {"train": args.train_file, "validation": args.dev_file}
        )
        self.facts = treebank_facts(self.files.get("train", []))
        if self.facts is None and args.treebank == "sample" and not args.train_file:
            self.facts = TreebankFacts("sample (generated by cont_transformer)", language="en")
        self.baseline = most_frequent_tag_baseline(train_split, dev_split, primary) if primary in TAG_COLUMNS else None
        self.num_sentences = (len(train_split) - len(silver), len(dev_split))
        self.sampler = LengthGroupedBatchSampler([len(r["input_ids"]) for r in train_rows], args.batch_size, args.seed)
        self.buckets = bucket_lengths([len(r["input_ids"]) for r in train_rows], args.length_buckets)
        self.collate = PaddingCollator(tokenizer.pad_token_id, self.buckets)
        self.train_loader, self.eval_loader = accelerator.prepare(
            DataLoader(train_rows, batch_sampler=self.sampler, collate_fn=self.collate),
            eval_loader(dev_rows, self.eval_batch_size, tokenizer.pad_token_id, self.buckets),
        )

    def build_model(self) -> nn.Module:
        """The model its start gives (see :mod:`.starts`), with the word-dropout probabilities
        of this training data."""
        language = self.facts.language if self.facts else None
        model = self.start.model(self.labels, self.combinations, self.lemma_lexicon, self.counts, language)
        probabilities = word_dropout_probabilities(self.tokenizer, self.counts, self.args.word_dropout)
        model.cont_transformer.embeddings.set_word_dropout(probabilities)
        return model

    def build_optimizer(self, model: nn.Module) -> torch.optim.Optimizer:
        return self.start.optimizer(model)

    def learning_rate(self, step: int) -> float:
        args, max_steps = self.args, self.plan.max_steps
        cooldown = args.cooldown_steps
        if cooldown is None:  # --num-train-epochs: the default share of the planned steps
            cooldown = round(DEFAULT_COOLDOWN_FRACTION * max_steps)
        return inverse_sqrt_learning_rate(step, args.learning_rate, args.warmup_steps) * cooldown_factor(
            step, max_steps, cooldown
        )

    def loss(self, model: nn.Module, batch: dict) -> torch.Tensor:
        # Word dropout happens in the model (training mode), from the probabilities set above.
        labels = {key: value for key, value in batch.items() if key == "labels" or key.endswith("_targets")}
        return model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], **labels).loss

    def batch_items(self, batch: dict) -> torch.Tensor:
        return batch["attention_mask"].sum()

    def evaluate(self, model: nn.Module) -> dict:
        return evaluate(model, self.eval_loader, self.accelerator, self.gold)

    def reported_metrics(self) -> list[str]:
        return ["accuracy", *reported_rows(self.gold.columns)]

    def data_fingerprint(self) -> str:
        return self.fingerprint

    def data_files(self) -> list[Path]:
        return [path for split in ("train", "validation") for path in self.files.get(split, [])]

    def summary(self) -> dict:
        args = self.args
        return {
            "treebank": args.treebank,
            "tag_column": self.primary,
            "columns": list(self.labels),
            "selection_metric": "accuracy: the mean of "
            + ", ".join(r for r in reported_rows(self.labels) if r in SELECTION_ROWS),
            "num_train_sentences": self.num_sentences[0],
            "num_silver_sentences": self.num_silver_sentences,
            "num_dev_sentences": self.num_sentences[1],
            "baseline_accuracy": self.baseline,
            "num_processes": self.accelerator.num_processes,
            "length_buckets": self.buckets,
            "arguments": {k: v for k, v in vars(args).items()},
        }

    def save_model(self, model: nn.Module, folder: Path, entry: dict) -> None:
        args = self.args
        model.config.vocab_fingerprint = vocabulary_fingerprint(self.tokenizer)  # the tokenizer beside it
        model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        record = {"tag_column": self.primary, "columns": list(self.labels), "treebank": args.treebank, "best": entry}
        (folder / METRICS_FILE).write_text(json.dumps(record, indent=2) + "\n")

    def vector_note(self) -> str:
        """What the card says of the static word vectors: their words, width and source."""
        words, vectors = self.start.word_vectors
        settings = Path(self.args.word_vectors) / SETTINGS_FILE
        try:
            made = json.loads(settings.read_text(encoding="utf-8"))
            source = f", {made['method']} on {made['running_words']:,} running words of unlabelled text"
        except (OSError, ValueError, KeyError, TypeError):
            source = ""
        return f"{len(words):,} words of width {vectors.shape[1]}{source}, fixed in the model"

    def silver_note(self) -> str:
        """What the card says of the silver sentences (self-training), if any."""
        if not self.num_silver_sentences:
            return ""
        teachers = self.args.teacher
        by = teachers[0] if len(teachers) == 1 else f"the vote of {', '.join(teachers)}"
        if len(teachers) > 1 and self.args.silver_agreement == "all":
            by = f"{', '.join(teachers)}, kept where they all agree"
        return f"; and {self.num_silver_sentences:,} sentences of unlabelled text tagged by {by}"

    def card_facts(self, entry: dict) -> dict:
        args, facts = self.args, self.facts
        language = (facts and facts.language) or "en"  # what Tagger and tag.py split its text by
        name = facts.name if facts else args.treebank
        dev = treebank_facts(self.files.get("validation", [])) or facts  # the dev score's data set
        dev_name = dev.name if dev else name
        results = [
            Evaluation(
                dev_name,
                "dev",
                entry[row],
                dev and dev.dataset_id,
                dev and dev.dataset_config,
                metric_name=f"{ROW_TITLES[row]} accuracy",
            )
            for row in reported_rows(self.labels)
        ]
        return {
            "extra": {
                "training data": f"{name}, {self.num_sentences[0]:,} sentences" + self.silver_note(),
                "dev data": f"{dev_name}, {self.num_sentences[1]:,} sentences",
                "best dev step": entry["step"],
                **({"language": facts.language} if facts and facts.language else {}),
                **({"licence": _licence_note(facts)} if facts and facts.license_source else {}),
                SEGMENTER_ROW: f"the package's rules for {language!r} (text_segmentation.py)",
                **({"static word vectors": self.vector_note()} if self.start.word_vectors is not None else {}),
            },
            "language": facts and facts.language,
            "license": facts and facts.license,
            "datasets": facts.dataset_id if facts and facts.dataset_id else None,
            "results": results,
        }

    def finish(self) -> None:
        if self.args.do_predict and self.accelerator.is_main_process:
            self.extra_metrics["predictions"] = self.predict()

    def predict(self) -> list[str]:
        """Re-tag the dev and test files with the best model into ``predictions/``."""
        folder = self.output_dir / PREDICTIONS_DIR
        record_outputs(self.output_dir, PREDICTIONS_DIR)  # the run's, with its own manifest
        folder.mkdir(exist_ok=True)
        # float32, as the dev figures were scored: the predictions give them exactly
        tagger = Tagger.from_pretrained(
            self.output_dir / BEST_MODEL_DIR, device=self.accelerator.device, dtype=torch.float32
        )
        with tempfile.TemporaryDirectory() as generated:
            files = self.files
            if self.args.treebank == "sample" and not files.get("validation"):
                files = {split: [path] for split, path in write_sample_treebank(generated).items()}
            written = []
            for split in ("validation", "test"):
                for path in files.get(split, []):
                    record_outputs(folder, path.name, kind=PREDICTIONS_DIR)
                    tag_file(tagger, path, folder / path.name, input_format="conllu", progress=False)
                    written.append(str(folder / path.name))
        return written

    def load_model(self, folder: Path) -> nn.Module:
        model = ContTransformerForTokenClassification.from_pretrained(folder, trust_remote_code=False)
        return model.to(self.accelerator.device).eval()


def train(args: TrainingArguments) -> dict:
    """Train a tagger as ``args`` says; returns the contents of ``metrics.json``.

    Works unchanged on one or several processes (``accelerate launch``), CPU or GPU.
    """
    return PosTrainer(args).run()
