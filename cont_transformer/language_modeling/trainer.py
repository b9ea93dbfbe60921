"""Pretrain the continuous transformer as a masked language model (``scripts/pretrain.py``).

:class:`MaskedLmTrainer` fills the scaffold's hooks (:class:`~..training.scaffold.Trainer`):
the text (:mod:`.text`), a vocabulary of its most frequent words and a spelling tokenizer
with ``[MASK]`` over them (``text.tokenization.build_tokenizer``), the encoder under a
masked-word head (``ContTransformerForMaskedLM``), the tagger's AdamW and learning-rate
schedule, masks drawn in each step (:mod:`.masking`). Selection and the compression
report use the masked-word accuracy on the held-out lines; ``metrics.json`` and the card
give their perplexity too. Everything else (refinement of K, ``--bf16``, checkpoints and
resume, trackers, the progress bar) is the scaffold's, as for the taggers.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from functools import partial
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import DataLoader
from transformers import AutoTokenizer

from ..configuration_cont_transformer import ContTransformerConfig
from ..model_card import Evaluation
from ..modeling_cont_transformer import ContTransformerForMaskedLM
from ..runtime.model_folders import LANGUAGE_MODEL_RUN, METRICS_FILE
from ..text.arguments import encoder_config
from ..text.batching import LengthGroupedBatchSampler, LengthGroupedEpochs, PaddingCollator, eval_loader
from ..text.optimization import build_optimizer
from ..text.pretrained_encoder import language_model_words, load_language_model, read_saved_config
from ..text.reading import load_text, split_words, text_files, vocabulary, word_counts
from ..text.tokenization import (
    build_tokenizer,
    check_tokenizer,
    spelling_tables,
    vocabulary_fingerprint,
)
from ..training.scaffold import Trainer
from ..training.schedules import cooldown_factor, inverse_sqrt_learning_rate
from ..word_encoding import encode_words
from .arguments import PretrainingArguments
from .masking import IGNORE_INDEX, mask_words, masked_rows

logger = logging.getLogger(__name__)


def _words(batch: dict, max_words: int) -> dict:
    return {"words": split_words(batch["text"], max_words)}


def _encode(batch: dict, tokenizer, first_word: int, end_word: int) -> dict:
    ids = encode_words(tokenizer, batch["words"])["input_ids"]
    return {
        "input_ids": ids,
        "maskable": [[first_word <= i < end_word for i in row] for row in ids],
        "length": [len(row) for row in ids],
    }


class MaskedLmTrainer(LengthGroupedEpochs, Trainer):
    """A language model's pretraining run: text files or a data set, the encoder, AdamW."""

    item_name = "tokens"
    run_kind = LANGUAGE_MODEL_RUN
    overwrite_command = "pretrain.py --overwrite-output-dir"

    def load_data(self) -> None:
        args, accelerator = self.args, self.accelerator
        if args.model_name_or_path is not None:  # pretraining goes on: the saved model's choices
            args.adopt_saved(read_saved_config(args.model_name_or_path))
        self.files = text_files(args.text_files) if args.text_files else []
        with accelerator.main_process_first():
            data = load_text(
                self.files, args.dataset_name, args.dataset_config_name, args.text_column, args.heldout_lines, args.seed
            )
            data = data.map(partial(_words, max_words=args.max_length - 1), batched=True, remove_columns=["text"])
            counts = word_counts(data["train"])
            if args.model_name_or_path is None:
                words = vocabulary(counts, args.vocabulary_size, args.min_word_count)
                spelling = args.word_representation != "word"
                self.tokenizer = tokenizer = build_tokenizer(words, spelling=spelling, mask=True)
            else:  # pretraining goes on: the saved model's vocabulary
                words = self._saved_vocabulary(args.model_name_or_path)
                tokenizer = self.tokenizer
            first = tokenizer.convert_tokens_to_ids(words[0]) if words else 0
            encode = partial(_encode, tokenizer=tokenizer, first_word=first, end_word=first + len(words))
            data = data.map(encode, batched=True, remove_columns=["words"])
        self.words = words
        total = sum(counts.values())
        self.facts = {
            "train_lines": len(data["train"]),
            "train_words": total,
            "heldout_rows": len(data["heldout"]),
            "word_types": len(counts),
            "vocabulary_words": len(words),
            "vocabulary_coverage": sum(counts[w] for w in words) / max(total, 1),
        }
        if len(data["train"]) < args.batch_size:
            files = [str(path) for path in self.files]
            source = (
                files[0] + (f" and {len(files) - 1} more" if len(files) > 1 else "") if files else args.dataset_name
            )
            raise ValueError(
                f"--batch-size {args.batch_size}: {source} gives {len(data['train'])} training rows (lines, "
                f"after {len(data['heldout'])} held out), fewer than one batch; give more text or a smaller --batch-size"
            )
        self.train_rows = data["train"].select_columns(["input_ids", "maskable"])
        self.sampler = LengthGroupedBatchSampler(data["train"]["length"], args.batch_size, args.seed)
        heldout = masked_rows(data["heldout"], args.mask_probability, tokenizer.mask_token_id, args.seed)
        self.train_loader, self.eval_loader = accelerator.prepare(
            DataLoader(self.train_rows, batch_sampler=self.sampler, collate_fn=PaddingCollator(tokenizer.pad_token_id)),
            eval_loader(heldout, args.batch_size, tokenizer.pad_token_id),
        )
        self.fingerprint = hashlib.sha256(
            json.dumps([words, self.facts, data["heldout"]._fingerprint]).encode()
        ).hexdigest()

    def _saved_vocabulary(self, folder: str) -> list[str]:
        """Load the language model in ``folder`` and its tokenizer; returns its words in id
        order, which must be consecutive ids (the masks are drawn over that range)."""
        self.language_model = load_language_model(folder)  # refuses a folder asking for code of its own
        self.tokenizer = tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=False)
        check_tokenizer(tokenizer, self.language_model.config, folder)
        words = language_model_words(self.language_model, tokenizer)
        vocab = tokenizer.get_vocab()
        if not words or vocab[words[-1]] - vocab[words[0]] != len(words) - 1:
            raise ValueError(f"model_name_or_path: {folder}'s words are not consecutive ids of its tokenizer")
        return words

    def build_model(self) -> nn.Module:
        args, tokenizer = self.args, self.tokenizer
        if args.model_name_or_path is not None:
            return self.language_model
        spelling, char_vocab_size = None, ContTransformerConfig.char_vocab_size
        if args.word_representation != "word":
            spelling, char_vocab_size = spelling_tables(tokenizer, set(self.words), args.max_word_length)
        config = ContTransformerConfig(**encoder_config(args, tokenizer, args.language, char_vocab_size))
        model = ContTransformerForMaskedLM(config)
        if spelling is not None:
            model.cont_transformer.embeddings.set_spelling(**spelling)
        return model

    def build_optimizer(self, model: nn.Module) -> torch.optim.Optimizer:
        return build_optimizer(model, self.args.learning_rate, self.args.weight_decay)

    def learning_rate(self, step: int) -> float:
        args = self.args
        return inverse_sqrt_learning_rate(step, args.learning_rate, args.warmup_steps) * cooldown_factor(
            step, self.plan.max_steps, args.cooldown_steps
        )

    def loss(self, model: nn.Module, batch: dict) -> torch.Tensor:
        input_ids, labels = mask_words(
            batch["input_ids"], batch["maskable"].bool(), self.args.mask_probability, self.tokenizer.mask_token_id
        )
        return model(input_ids=input_ids, attention_mask=batch["attention_mask"], labels=labels).loss

    def batch_items(self, batch: dict) -> torch.Tensor:
        return batch["attention_mask"].sum()

    @torch.no_grad()
    def evaluate(self, model: nn.Module) -> dict:
        """Masked-word accuracy and perplexity on the held-out lines, in float32 whatever the
        run's mixed precision (the encoder and head are called directly: under bf16 autocast
        the ranking of 50,000 words loses several points), so that the figures during
        training equal those of the saved model in the compression report and the card."""
        model = self.accelerator.unwrap_model(model)
        was_training = model.training
        model.eval()
        totals = torch.zeros(3, dtype=torch.float64, device=self.accelerator.device)  # correct, loss, words
        for batch in self.eval_loader:
            labels = batch["labels"]
            scored = labels != IGNORE_INDEX
            hidden = model.cont_transformer(batch["input_ids"], batch["attention_mask"]).last_hidden_state
            logits = model.lm_head(hidden[scored]).float()  # (masked words, vocab)
            targets = labels[scored]
            totals[0] += (logits.argmax(-1) == targets).sum()
            totals[1] += nn.functional.cross_entropy(logits, targets, reduction="sum")
            totals[2] += targets.numel()
        model.train(was_training)
        correct, loss, words = self.accelerator.reduce(totals, reduction="sum").tolist()
        words = max(words, 1)
        return {"accuracy": correct / words, "perplexity": math.exp(loss / words), "num_masked_words": int(words)}

    def data_fingerprint(self) -> str:
        return self.fingerprint

    def data_files(self) -> list[Path]:
        return list(self.files)

    def summary(self) -> dict:
        args = self.args
        source = [str(p) for p in self.files] or [f"{args.dataset_name} ({args.dataset_config_name or 'default'})"]
        return {
            "text": source,
            **self.facts,
            "selection_metric": "accuracy: masked-word accuracy on the held-out lines",
            "num_processes": self.accelerator.num_processes,
            "arguments": dict(vars(args)),
        }

    def save_model(self, model: nn.Module, folder: Path, entry: dict) -> None:
        model.config.vocab_fingerprint = vocabulary_fingerprint(self.tokenizer)  # the tokenizer beside it
        model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        (folder / METRICS_FILE).write_text(json.dumps({"best": entry, **self.facts}, indent=2) + "\n")

    def card_facts(self, entry: dict) -> dict:
        name = ", ".join(p.name for p in self.files) or str(self.args.dataset_name)
        return {
            "extra": {
                "training text": f"{name}: {self.facts['train_words']:,} words in {self.facts['train_lines']:,} lines",
                "vocabulary": f"{len(self.words):,} words ({100 * self.facts['vocabulary_coverage']:.1f}% of the text)",
                "held-out perplexity (masked words)": f"{entry['perplexity']:.2f}",
                "best step": entry["step"],
            },
            "language": self.args.language,
            "results": [
                Evaluation(f"{name} (held-out lines)", "heldout", entry["accuracy"], metric_name="masked-word accuracy")
            ],
        }

    def load_model(self, folder: Path) -> nn.Module:
        return ContTransformerForMaskedLM.from_pretrained(folder).to(self.accelerator.device).eval()


def train(args: PretrainingArguments) -> dict:
    """Pretrain as ``args`` says; returns the contents of ``metrics.json``."""
    return MaskedLmTrainer(args).run()
