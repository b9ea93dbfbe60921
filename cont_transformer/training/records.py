"""What a training run reports when it ends (a mixin of :class:`.scaffold.Trainer`):
``metrics.json``, the best model's card, and the compression report."""

from __future__ import annotations

import time

from torch import nn

from ..model_card import record_card_facts, write_model_card
from ..runtime.compression import SECTION_HEADING, compression_section, score_variants
from ..runtime.model_folders import BEST_MODEL_DIR, METRICS_FILE
from ..runtime.safe_files import write_json

COMPRESSION_FILE = "compression.json"


class RunRecords:
    """``metrics.json``, cards and the compression report, from a trainer's ``state``,
    ``summary()``, ``card_facts()``, ``extra_metrics``, ``evaluate`` and ``load_best``."""

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

    # --- after training ------------------------------------------------------------
    def record_card(self, model: nn.Module, entry: dict) -> None:
        """Keep :meth:`card_facts` of the best model scored as ``entry`` in its config
        (:func:`~cont_transformer.model_card.record_card_facts`), before it is saved: its
        ``save_pretrained`` writes them into the card, and so does every later save."""
        arguments = {"model_name": self.output_dir.resolve().name, **self.card_facts(entry)}
        if self.accelerator.mixed_precision != "no":
            arguments["extra"] = {**arguments.get("extra", {}), "mixed precision": self.accelerator.mixed_precision}
        record_card_facts(model.config, **arguments)

    def write_final_card(self) -> None:
        """The best model's card again, with what was measured after training (the
        compression table; the subclass's facts may include e.g. a test score)."""
        sections = {}
        if "compression" in self.extra_metrics:
            rows = self.extra_metrics["compression"]
            sections[SECTION_HEADING] = compression_section(rows, self.reported_metrics(), scored_on="the dev data")
        facts = {"model_name": self.output_dir.resolve().name, **self.card_facts(self.state.best)}
        write_model_card(self.load_best(), self.output_dir / BEST_MODEL_DIR, overwrite=True, sections=sections, **facts)

    def compression_report(self) -> list[dict]:
        """Score the best model compressed without retraining
        (:func:`~cont_transformer.runtime.compression.compression_variants`) on dev; writes
        ``compression.json`` beside ``metrics.json`` and returns the rows."""
        rows = score_variants(self.load_best(), self.evaluate, self.reported_metrics(), self.selection_metric)
        if self.accelerator.is_main_process:
            write_json(self.output_dir / COMPRESSION_FILE, rows)
        return rows


__all__ = ["COMPRESSION_FILE", "RunRecords"]
