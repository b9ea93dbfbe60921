"""Tagging the rows of a data set: Ray Data's ``map_batches`` across a cluster, and Hugging
Face ``datasets``' ``map(batched=True)``.

:class:`TagTexts` is a callable class that loads a tagger once and then tags a batch of
rows: each row's text (or list of words) becomes one :class:`~.document.Document`, and its
CoNLL-U (what ``scripts/tag.py`` writes for that text as a file of its own) goes into a new
column. Ray Data builds one per actor, so each actor loads the model once::

    import ray
    from cont_transformer.tagging.dataset_tagging import TagTexts

    texts = ray.data.read_text("s3://corpus/books/")  # a row per line: {"text": ...}
    tagged = texts.map_batches(
        TagTexts, fn_constructor_args=("runs/gum",), batch_size=1024, concurrency=16, num_cpus=1
    )
    tagged.write_parquet("s3://corpus/tagged/")  # columns "text" and "conllu"

With ``datasets``, build it once and map it; ``num_proc`` processes each receive a pickled
copy (a :class:`~.tag.Tagger` pickles)::

    tagged = dataset.map(TagTexts("runs/gum"), batched=True, batch_size=1024, num_proc=8)

The package never imports ``ray`` or needs it to run this class (``pip install
"cont-transformer[cluster]"`` brings Ray Data): a batch is a mapping of column names to
lists or NumPy arrays, and the new column comes back of the same kind.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np
import torch

from .tag import Tagger


class TagTexts:
    """Tags the ``text_column`` of a batch of rows into ``output_column`` (CoNLL-U, one
    document per row).

    Args:
        model_dir: a tagger's ``save_pretrained`` folder, or a training run's folder.
        text_column: the column of raw texts (or of lists of words, tagged as they are).
        output_column: the column the CoNLL-U goes into.
        batch_size: sentences tagged together (:meth:`Tagger.pipe`).
        num_threads: torch CPU threads of the process (one per actor or process scales best).
        device, dtype: as :meth:`Tagger.from_pretrained` takes them (default: CUDA when
            available; bfloat16 on a CPU with bfloat16 instructions).
    """

    def __init__(
        self,
        model_dir: str | os.PathLike,
        *,
        text_column: str = "text",
        output_column: str = "conllu",
        batch_size: int = 1024,
        num_threads: int | None = 1,
        device: str | None = None,
        dtype: torch.dtype | None = None,
    ):
        if num_threads is not None:
            torch.set_num_threads(num_threads)
        self.tagger = Tagger.from_pretrained(model_dir, device=device, dtype=dtype)
        self.text_column, self.output_column, self.batch_size = text_column, output_column, batch_size

    def __call__(self, batch: Mapping[str, list | np.ndarray]) -> dict[str, list | np.ndarray]:
        """``batch`` with the CoNLL-U of each row's text in ``output_column``."""
        texts = [text if isinstance(text, str) else list(text) for text in batch[self.text_column]]
        conllu = [document.to_conllu() for document in self.tagger.pipe(texts, self.batch_size)]
        column = np.array(conllu, dtype=object) if isinstance(batch[self.text_column], np.ndarray) else conllu
        return {**batch, self.output_column: column}


__all__ = ["TagTexts"]
