"""What ``scripts/tag.py`` runs: load a tagger, tag a file (or stdin), and score it against gold.

:func:`tag_command` takes the script's flags as keyword arguments. It loads the tagger
(:meth:`~.tag.Tagger.from_pretrained`), tags through :func:`~.tag_files.tag_file`, prints
the words/s summary to stderr and, with ``evaluate``, the CoNLL 2018 scores of the output
against that gold file (:mod:`.scoring`). Bad input raises ``ValueError`` or ``OSError``
in one line naming the file and line, before ``output`` changes.
"""

from __future__ import annotations

import sys

import torch
from transformers.utils import logging as transformers_logging

from ..runtime.compiling import check_compile_mode
from ..runtime.model_folders import check_outside_model_folders
from ..training.accelerator import inference_autocast
from .conllu_document import ConlluDocument
from .scoring import format_scores, score, scored_columns
from .tag import Tagger
from .tag_files import tag_file

# --dtype: the model's precision.
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def tag_command(
    model_dir: str,
    *,
    input: str | None = None,  # the flag's name
    input_format: str = "text",
    output: str | None = None,
    in_place: bool = False,
    format: str = "conllu",  # the flag's name
    language: str | None = None,
    batch_size: int = 2048,
    device: str | None = None,
    dtype: str | None = None,
    bf16: bool = False,
    fp16: bool = False,
    num_threads: int | None = None,
    torch_compile: bool = False,
    torch_compile_mode: str | None = None,
    no_progress: bool = False,
    evaluate: str | None = None,
) -> None:
    """Tag ``input`` (a file; None: stdin) with the tagger in ``model_dir`` into ``output``
    (None: stdout) in ``format``; the arguments are ``tag.py``'s flags (see its ``--help``).

    With ``evaluate`` (a gold CoNLL-U file) and no ``input``, the gold file's own text is
    tagged: its CoNLL-U lines for ``input_format="conllu"``, else its ``# text`` lines (one
    sentence per line for ``"lines"``).
    """
    transformers_logging.disable_progress_bar()  # stderr is for errors, progress and speed
    check_outside_model_folders(output, "output")  # never over a model's own files
    if num_threads is not None:
        if num_threads < 1:
            raise ValueError(f"--num-threads: give a positive number of CPU threads, got {num_threads}")
        torch.set_num_threads(num_threads)
    check_compile_mode(torch_compile_mode)
    tagger = Tagger.from_pretrained(
        model_dir,
        device=device,
        dtype=DTYPES.get(dtype),
        language=language,
        batch_size=batch_size,
        torch_compile=torch_compile,
        torch_compile_mode=torch_compile_mode,
    )
    gold = ConlluDocument.read(evaluate) if evaluate else None
    text, name = None, input
    if gold is not None and input is None:
        name = evaluate
        text = (
            "\n".join(gold.lines)
            if input_format == "conllu"
            else gold.text(one_sentence_per_line=input_format == "lines")
        )
    with inference_autocast(bf16, fp16, next(tagger.model.parameters()).device):
        stats = tag_file(
            tagger,
            name,
            output,
            input_format=input_format,
            output_format=format,
            progress=False if no_progress else None,
            text=text,
            in_place=in_place,
        )
    print(stats.summary(), file=sys.stderr)
    if gold is not None:
        result = score(gold, ConlluDocument.read(output), scored_columns(tagger.columns))
        print(format_scores(result), file=sys.stderr)


__all__ = ["DTYPES", "tag_command"]
