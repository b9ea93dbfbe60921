"""Static word vectors trained on unlabelled text (``scripts/train_word_vectors.py``).

The vectors are fastText's (Bojanowski et al., 2017: skip-gram over words and their
character n-grams), trained by gensim, the maintained library for it; stanza and UDPipe 2
give their taggers such vectors, fixed, beside the embeddings they train. The text is
split into words by the taggers' raw-text pre-tokenizer (``text/reading.py``),
so a vector is looked up by the very word a tagger reads.

The folder it writes, and how a tagger reads it, are ``text/word_vectors.py``'s. The
vectors are divided by the standard deviation of all their entries, so the projection
that reads them starts on the scale of the tagger's other channels. gensim's own files
are pickles and are never written or read: its model lives only while the vectors are
trained.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import torch
from safetensors.torch import save_file

from ..runtime.safe_files import OutputFolderError, lock_output_folder, read_manifest, staged_directory
from ..text.reading import open_text
from ..text.tokenization import ud_pre_tokenizer
from ..text.word_vectors import SETTINGS_FILE, VECTORS_FILE, WORDS_FILE


def _write_corpus(files: Sequence[Path], path: Path) -> int:
    """The files' non-blank lines, split into words, one line of space-separated words each
    (gensim's ``corpus_file`` format: read as a stream, every epoch); returns the words."""
    words, splitter = 0, ud_pre_tokenizer()  # the taggers' raw-text words, as text.split_words reads them
    with path.open("w", encoding="utf-8") as out:
        for file in files:
            with open_text(file) as stream:
                for line in stream:
                    if not line.strip():
                        continue
                    row = [word for word, _ in splitter.pre_tokenize_str(line)]
                    if row:
                        out.write(" ".join(row) + "\n")
                        words += len(row)
    return words


# --method: gensim's class and how the card names it. word2vec (no subwords) only for the
# comparison in docs/experiments.md, "Static word vectors".
METHODS = {
    "fasttext": ("FastText", "fastText skip-gram (gensim)"),
    "word2vec": ("Word2Vec", "word2vec skip-gram (gensim)"),
}


def train_word_vectors(
    files: Sequence[Path],
    output_dir: str | os.PathLike,
    vector_size: int = 100,
    epochs: int = 5,
    min_count: int = 1,
    max_words: int | None = None,
    window: int = 5,
    seed: int = 42,
    workers: int = 1,
    overwrite: bool = False,
    method: str = "fasttext",
) -> dict:
    """Train fastText vectors on ``files`` (checked by ``text.text_files``) and write the
    vectors of the ``max_words`` most frequent words (None: all) seen ``min_count`` times into
    ``output_dir`` (staged and swapped in whole, see ``safe_files``: never half-written).
    Returns the settings saved beside them (``word_vectors.json``)."""
    if method not in METHODS:
        raise ValueError(f"method: choose one of {sorted(METHODS)}, got {method!r}")
    try:
        from gensim import models
    except ImportError:
        raise ImportError('word vectors are trained with gensim: pip install "cont-transformer[vectors]"') from None
    output_dir = Path(output_dir)
    check_output_dir(output_dir, overwrite)
    lock_output_folder(output_dir)
    with tempfile.TemporaryDirectory(prefix="word-vectors-") as scratch:
        corpus = Path(scratch) / "corpus.txt"
        running_words = _write_corpus(files, corpus)
        model = getattr(models, METHODS[method][0])(
            vector_size=vector_size,
            window=window,
            min_count=min_count,
            epochs=epochs,
            sg=1,
            seed=seed,
            workers=workers,
        )
        model.build_vocab(corpus_file=str(corpus))
        model.train(
            corpus_file=str(corpus),
            total_examples=model.corpus_count,
            total_words=model.corpus_total_words,
            epochs=epochs,
        )
    words = list(model.wv.index_to_key[:max_words])  # most frequent first
    vectors = torch.from_numpy(model.wv.vectors[: len(words)].copy()).float()
    vectors = vectors / vectors.std()
    if not bool(torch.isfinite(vectors).all()):
        raise ValueError("word vectors: training produced non-finite values")
    settings = {
        "files": [str(f) for f in files],
        "running_words": running_words,
        "words": len(words),
        "vector_size": vector_size,
        "epochs": epochs,
        "min_count": min_count,
        "window": window,
        "seed": seed,
        "method": METHODS[method][1],
    }
    with staged_directory(output_dir) as folder:
        save_file({"vectors": vectors.contiguous()}, str(folder / VECTORS_FILE))
        (folder / WORDS_FILE).write_text("".join(w + "\n" for w in words), encoding="utf-8")
        (folder / SETTINGS_FILE).write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    return settings


def check_output_dir(output_dir: Path, overwrite: bool) -> None:
    """Refuse, before anything is trained, an output folder that holds files unless
    ``overwrite`` (which replaces only the files a vector run wrote, by its manifest)."""
    if output_dir.exists() and not output_dir.is_dir():
        raise OutputFolderError(f"output_dir: {output_dir} is a file")
    if output_dir.is_dir() and any(p.name != ".lock" for p in output_dir.iterdir()):
        if not overwrite:
            raise OutputFolderError(f"output_dir: {output_dir} is not empty (--overwrite replaces the vectors)")
        if read_manifest(output_dir) is None:
            raise OutputFolderError(f"output_dir: {output_dir} holds no vectors of this package; not replacing it")
