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

Its folder's manifest says it holds word vectors (``model_folders.KINDS``):
``--overwrite`` replaces only word vectors, never a run or a model folder. The text is
copied, split into words, into a scratch folder of the temporary folder
(:data:`SCRATCH_PREFIX`, the writer's pid in its name), locked while the vectors are
trained; the next start removes one whose writer was killed (``safe_files.remove_stale``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import torch
from safetensors.torch import save_file

from ..runtime.model_folders import (
    SETTINGS_FILE,
    VECTORS_FILE,
    WORD_VECTORS,
    WORDS_FILE,
    check_replaceable,
    run_folder_owning,
)
from ..runtime.safe_files import (
    LOCK_FILE,
    OutputFolderError,
    hold_lock,
    holding_output_folder,
    read_manifest,
    remove_stale,
    staged_directory,
)
from ..text.reading import open_text
from ..text.tokenization import ud_pre_tokenizer

# The scratch folder's name in the temporary folder: this prefix, the writer's pid, a random part.
SCRATCH_PREFIX = "cont_transformer-word-vectors-"


def _write_corpus(files: Sequence[Path], path: Path) -> Counter:
    """The files' non-blank lines, split into words, one line of space-separated words each
    (gensim's ``corpus_file`` format: read as a stream, every epoch); returns how often
    each word occurs."""
    counts, splitter = Counter(), ud_pre_tokenizer()  # the taggers' raw-text words, as text.split_words reads them
    with path.open("w", encoding="utf-8") as out:
        for file in files:
            with open_text(file) as stream:
                for line in stream:
                    if not line.strip():
                        continue
                    row = [word for word, _ in splitter.pre_tokenize_str(line)]
                    if row:
                        out.write(" ".join(row) + "\n")
                        counts.update(row)
    return counts


@contextlib.contextmanager
def scratch_folder() -> Iterator[Path]:
    """A folder of the temporary folder for the training text, locked while it lives and
    removed after; a start first removes the ones a killed run left (no live writer holds
    their lock)."""
    temporary = Path(tempfile.gettempdir())
    remove_stale(temporary.glob(f"{SCRATCH_PREFIX}*"))
    folder = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
    lock = hold_lock(folder)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if lock is not None:
            os.close(lock)


def _check_min_count(counts: Counter, min_count: int) -> None:
    """Refuse, before gensim trains, a ``min_count`` that leaves no word a vector."""
    if not counts:
        raise ValueError("--text-files: the files hold no words")
    word, most = counts.most_common(1)[0]
    if most < min_count:
        raise ValueError(
            f"--min-count: no word occurs {min_count} times in the text (the most frequent, {word!r}, "
            f"occurs {most} times), so no word would get a vector; lower --min-count"
        )


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
    with holding_output_folder(output_dir), scratch_folder() as scratch:
        check_output_dir(output_dir, overwrite)  # again: another may have written it meanwhile
        corpus = scratch / "corpus.txt"
        counts = _write_corpus(files, corpus)
        _check_min_count(counts, min_count)
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
            "running_words": sum(counts.values()),
            "words": len(words),
            "vector_size": vector_size,
            "epochs": epochs,
            "min_count": min_count,
            "window": window,
            "seed": seed,
            "method": METHODS[method][1],
        }
        with staged_directory(output_dir, WORD_VECTORS) as folder:
            save_file({"vectors": vectors.contiguous()}, str(folder / VECTORS_FILE))
            (folder / WORDS_FILE).write_text("".join(w + "\n" for w in words), encoding="utf-8")
            (folder / SETTINGS_FILE).write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    return settings


def check_output_dir(output_dir: Path, overwrite: bool) -> None:
    """Refuse, before anything is trained, an output folder that holds files unless
    ``overwrite`` and it holds word vectors of this package (``overwrite`` replaces only the
    files a vector run wrote, by its manifest); a folder of another kind (a run, a model) is
    refused naming both kinds, with or without ``overwrite``, and so is a folder inside a
    training run's outputs (which that run's ``--overwrite-output-dir`` would delete)."""
    if output_dir.exists() and not output_dir.is_dir():
        raise OutputFolderError(f"--output-dir: {output_dir} is a file")
    if output_dir.is_dir() and {p.name for p in output_dir.iterdir()} - {LOCK_FILE}:
        if read_manifest(output_dir) is not None:
            check_replaceable(output_dir, WORD_VECTORS, "train_word_vectors.py --overwrite")
        if not overwrite:
            raise OutputFolderError(f"--output-dir: {output_dir} is not empty (--overwrite replaces the vectors)")
        if read_manifest(output_dir) is None:
            raise OutputFolderError(f"--output-dir: {output_dir} holds no vectors of this package; not replacing it")
    run = run_folder_owning(output_dir)
    if run is not None:
        raise OutputFolderError(
            f"--output-dir: {output_dir} lies inside the outputs of the training run {run}; write the vectors elsewhere"
        )
