"""What a training run keeps of its models and reports (a mixin of
:class:`.scaffold.Trainer`): each evaluation and which one is the best, ``best/`` saved and
loaded, ``metrics.json``, the best model's card, the compression report, and the best model
compressed for use (``--best-num-basis``, ``--best-num-steps``)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import torch
from torch import nn

from ..model_card import record_card_facts, write_model_card
from ..runtime.compressed_copies import SECTION_HEADING, compressed_copy, compression_section, score_variants
from ..runtime.model_folders import BEST_MODEL_DIR, METRICS_FILE, MODEL_FOLDER, UNCOMPRESSED_MODEL_DIR
from ..runtime.safe_files import staged_directory, write_json

COMPRESSION_FILE = "compression.json"
# metrics.json's entry for the compressed best model (its dev scores, K, N_T and source).
COMPRESSED_BEST = "compressed_best"


class RunRecords:
    """``best/``, ``metrics.json``, cards and the compression report, from a trainer's
    ``state``, ``summary()``, ``card_facts()``, ``extra_metrics``, ``evaluate``,
    ``save_model`` and ``load_model``."""

    def save_best(self, entry: dict) -> None:
        """Write the current model to ``best/`` through a staging folder (never half-written)."""
        accelerator = self.accelerator
        accelerator.wait_for_everyone()
        if accelerator.is_main_process:
            with staged_directory(self.output_dir / BEST_MODEL_DIR, MODEL_FOLDER) as staging:
                model = accelerator.unwrap_model(self.model)
                self.record_card(model, entry)  # the card's facts, which save_pretrained writes
                self.save_model(model, staging, entry)
        accelerator.wait_for_everyone()

    def load_model(self, folder: Path) -> nn.Module:
        """The model that :meth:`save_model` wrote into ``folder``, on this process's device,
        in eval mode."""
        raise NotImplementedError

    def load_best(self) -> nn.Module:
        """The best model as saved in ``best/`` (:meth:`load_model`)."""
        return self.load_model(self.output_dir / BEST_MODEL_DIR)

    def _total_seconds(self) -> float:
        return self.state.total_seconds + time.perf_counter() - self.started

    def write_metrics(self) -> dict:
        """``metrics.json`` in the output folder: the summary, best and all evaluations, speed."""
        state = self.state
        per_second = state.train_items / state.train_seconds if state.train_seconds else 0.0
        metrics = {
            **self.summary(),
            "best": state.best,
            "history": state.history,
            "step": state.step,
            "train_runtime_s": state.train_seconds,
            "total_runtime_s": self._total_seconds(),
            f"train_{self.item_name}": state.train_items,
            f"train_{self.item_name}_per_second": per_second,
            **self.extra_metrics,
        }
        if state.train_slots:  # positions processed per real one, over every batch of the run
            metrics["padding_ratio"] = state.train_slots / max(state.train_items, 1)
        metrics["mixed_precision"] = self.accelerator.mixed_precision
        if self.accelerator.is_main_process:
            write_json(self.output_dir / METRICS_FILE, metrics)
        return metrics

    def _describe(self, entry: dict) -> str:
        shown = ", ".join(
            f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}"
            for k, v in entry.items()
            if k not in ("step", "learning_rate")
        )
        return f"step {entry['step']}: {shown}"

    def evaluate_and_keep_best(self, learning_rate: float) -> dict:
        """Evaluate on dev, record it, write the model to ``best/`` if it is the best so far."""
        accelerator, state = self.accelerator, self.state
        result = self.evaluate(self.model)
        mean_loss = torch.tensor(state.loss_sum / max(state.loss_count, 1), device=accelerator.device)
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
        if state.best is None or self._rank(entry) > self._rank(state.best):
            state.best = entry
            self.save_best(entry)
        if self.args.report_to:
            accelerator.log(
                {f"dev/{k}": v for k, v in entry.items() if isinstance(v, (int, float)) and k != "step"},
                step=state.step,
            )
        self.write_metrics()
        return entry

    def _rank(self, entry: dict) -> tuple[bool, float]:
        """How ``entry`` competes for ``best/``: first whether it has the run's final K and
        N_T, then the selection metric. A refined run's coarser models are kept only until
        the first evaluation at the sizes it was asked for: the run delivers those sizes,
        which halve for free (``compression_report``), never a coarser model that happened
        to score as high on dev before the last refinement."""
        schedule = self.schedule
        final = (entry["num_basis"], entry["num_steps"]) == (schedule.final_num_basis, schedule.final_num_steps)
        return final, entry[self.selection_metric]

    # --- after training ------------------------------------------------------------
    def card_arguments(self, entry: dict) -> dict:
        """The card's facts for the best model scored as ``entry``: :meth:`card_facts`, the
        run's mixed precision, and for a compressed best model what it was compressed from
        and what that cost on dev."""
        arguments = {"model_name": self.run_folder.resolve().name, **self.card_facts(entry)}
        extra = dict(arguments.get("extra") or {})
        if self.accelerator.mixed_precision != "no":
            extra["mixed precision"] = self.accelerator.mixed_precision
        source = entry.get("compressed_from")
        if source is not None:
            costs = ", ".join(
                f"{metric} {100 * self.state.best[metric]:.2f} → {100 * entry[metric]:.2f}"
                for metric in self.reported_metrics()
            )
            extra["compressed without retraining"] = (
                f"from K = {source['num_basis']}, N_T = {source['num_steps']}, the model as trained "
                f"(`{UNCOMPRESSED_MODEL_DIR}/` in its run folder); on dev {costs}"
            )
        if extra:
            arguments["extra"] = extra
        return arguments

    def record_card(self, model: nn.Module, entry: dict) -> None:
        """Keep :meth:`card_arguments` of the best model scored as ``entry`` in its config
        (:func:`~cont_transformer.model_card.record_card_facts`), before it is saved: its
        ``save_pretrained`` writes them into the card, and so does every later save."""
        record_card_facts(model.config, **self.card_arguments(entry))

    def write_final_card(self) -> None:
        """The best model's card again, with what was measured after training (the
        compression table; the subclass's facts may include e.g. a test score)."""
        sections = {}
        if "compression" in self.extra_metrics:
            rows = self.extra_metrics["compression"]
            sections[SECTION_HEADING] = compression_section(rows, self.reported_metrics(), scored_on="the dev data")
        entry = self.extra_metrics.get(COMPRESSED_BEST) or self.state.best
        folder = self.output_dir / BEST_MODEL_DIR
        write_model_card(self.load_best(), folder, overwrite=True, sections=sections, **self.card_arguments(entry))

    def trained_model_folder(self) -> Path:
        """Where the best model as trained is: ``best/``, or ``uncompressed/`` once ``best/``
        holds its compressed copy (its ``metrics.json`` entry names what it was compressed
        from), so that a finished run resumed never compresses twice."""
        best = self.output_dir / BEST_MODEL_DIR
        try:
            saved = json.loads((best / METRICS_FILE).read_text(encoding="utf-8")).get("best") or {}
        except (OSError, ValueError, AttributeError):
            saved = {}
        uncompressed = self.output_dir / UNCOMPRESSED_MODEL_DIR
        return uncompressed if "compressed_from" in saved and uncompressed.is_dir() else best

    def compress_best(self) -> dict:
        """Replace ``best/`` by the best model compressed without retraining to
        ``--best-num-basis`` / ``--best-num-steps`` (None: as trained), scored on dev; the
        model as trained moves to ``uncompressed/``. Both folders are written through
        staging folders (never half-written). Returns the compressed model's dev entry
        (``metrics.json``'s :data:`COMPRESSED_BEST`), which its card states beside what
        the compression cost."""
        args, best = self.args, self.state.best
        folder = self.trained_model_folder()
        source = self.load_model(folder)
        model = compressed_copy(source, num_basis=args.best_num_basis, num_steps=args.best_num_steps).eval()
        entry = {
            "step": best["step"],
            **self.evaluate(model),
            "num_basis": model.config.num_basis,
            "num_steps": model.config.num_steps,
            "compressed_from": {"num_basis": source.config.num_basis, "num_steps": source.config.num_steps},
        }
        if self.accelerator.is_main_process:
            if folder.name == BEST_MODEL_DIR:  # else it is in uncompressed/ already (a finished run resumed)
                with staged_directory(self.output_dir / UNCOMPRESSED_MODEL_DIR, MODEL_FOLDER) as staging:
                    self.save_model(source, staging, best)
            with staged_directory(self.output_dir / BEST_MODEL_DIR, MODEL_FOLDER) as staging:
                self.record_card(model, entry)
                self.save_model(model, staging, entry)
        self.accelerator.wait_for_everyone()
        return entry

    def compression_report(self) -> list[dict]:
        """Score the best model as trained, compressed without retraining
        (:func:`~cont_transformer.runtime.compressed_copies.compression_variants`) on dev; writes
        ``compression.json`` beside ``metrics.json`` and returns the rows."""
        model = self.load_model(self.trained_model_folder())
        rows = score_variants(model, self.evaluate, self.reported_metrics(), self.selection_metric)
        if self.accelerator.is_main_process:
            write_json(self.output_dir / COMPRESSION_FILE, rows)
        return rows


__all__ = ["COMPRESSED_BEST", "COMPRESSION_FILE", "RunRecords"]
