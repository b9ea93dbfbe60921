"""What ``scripts/tag.py`` runs: load a tagger, tag files (or stdin), and score against gold.

:func:`tag_command` takes the script's flags as keyword arguments. It loads the tagger
(:meth:`~.tag.Tagger.from_pretrained`), tags each input through
:func:`~.tag_files.tag_file` (streaming: output comes out batch by batch), prints the
words/s summary to stderr (not with ``quiet``) and, with ``evaluate``, the CoNLL 2018
scores of the output against that gold file (:mod:`.scoring`; the output is kept in
memory for it, so it needs no ``--output``). Bad input raises ``ValueError`` or
``OSError`` in one line naming the file, line or flag, before a staged output changes.

Several inputs (files or glob patterns) go one output each into ``output_dir``: the
input's stem and the format's extension (:data:`~.tag_files.EXTENSIONS`).

The module imports only what parsing the flags needs; torch, transformers and the tagger
load when :func:`tag_command` runs, so ``tag.py --help`` answers at once. Nothing on the
tagging path imports `accelerate`, `datasets`, `evaluate` or `pyarrow` (transformers
itself imports `accelerate` with its model classes when it is installed).
"""

from __future__ import annotations

import argparse
import glob
import io
import logging
import re
import sys
from pathlib import Path

from ..runtime.workers import worker_count
from ..text_segmentation import check_language
from .tag_files import EXTENSIONS, check_input

# --dtype: the model's precision (torch dtypes of these names).
DTYPES = ("float32", "bfloat16")
# --log-level: Python's logging level names.
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def language_argument(value: str) -> str:
    """``argparse`` type of ``--language``: :func:`check_language`'s code, its refusal as the
    flag's one-line error."""
    try:
        return check_language(value)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("language: ")) from None


def parse_log_level(name: str) -> int:
    """``--log-level``: the logging level of ``name`` (any case); ValueError in one line
    naming the flag for anything else."""
    if str(name).upper() not in LOG_LEVELS:
        raise ValueError(f"--log-level: {name!r} is not a logging level; give one of {', '.join(LOG_LEVELS)}")
    return getattr(logging, str(name).upper())


def check_device_name(device: str | None) -> None:
    """``--device``: ValueError in one line for a name that is not of torch's form (``cpu``,
    ``cuda``, ``cuda:1``); whether torch knows it and this machine has it is checked when
    the tagger loads."""
    if device and not re.fullmatch(r"[a-z_]+(:[0-9]+)?", device):
        raise ValueError(f"--device: {device!r} is not a torch device (cpu, cuda, cuda:1, mps, ...)")


def expand_inputs(inputs: list[str] | None) -> list[str | None]:
    """``--input`` values: files, ``-`` (stdin) and glob patterns (each matching at least
    one file, in sorted order); ``[None]`` (stdin) when none are given."""
    if not inputs:
        return [None]
    files: list[str | None] = []
    for pattern in inputs:
        if pattern != "-" and glob.has_magic(pattern) and not Path(pattern).exists():
            matches = sorted(glob.glob(pattern))
            if not matches:
                raise FileNotFoundError(f"--input: {pattern} matches no file")
            files.extend(matches)
        else:
            files.append(pattern)
    return files


def output_paths(inputs: list[str | None], output: str | None, output_dir: str | None, format: str) -> list:
    """Where each input's output goes: ``output`` (None: stdout) for one input, else
    ``output_dir``/stem + extension; ValueError in one line for ``--output`` with several
    inputs, several inputs without ``--output-dir``, stdin into ``--output-dir``, or two
    inputs that would write the same file."""
    if output is not None and output_dir is not None:
        raise ValueError("--output and --output-dir: give one of them")
    if output_dir is None:
        if len(inputs) > 1:
            given = "--output takes one input" if output is not None else "several inputs need --output-dir"
            raise ValueError(f"{given}; {len(inputs)} given ({inputs[0]}, {inputs[1]}, ...): use --output-dir DIR")
        return [output]
    paths: dict[Path, str] = {}
    for input in inputs:
        if input is None or input == "-":
            raise ValueError("--output-dir: stdin has no name to write under; give --input files")
        path = Path(output_dir) / (Path(input).stem + EXTENSIONS[format])
        if path in paths:
            raise ValueError(f"--output-dir: {paths[path]} and {input} would both write {path}")
        paths[path] = input
    return list(paths)


def tag_command(
    model_dir: str,
    *,
    input: str | list[str] | None = None,  # the flag's name
    input_format: str = "text",
    output: str | None = None,
    output_dir: str | None = None,
    in_place: bool = False,
    format: str = "conllu",  # the flag's name
    language: str | None = None,
    tokens_per_batch: int = 2048,
    device: str | None = None,
    dtype: str | None = None,
    bf16: bool = False,
    fp16: bool = False,
    num_threads: int | None = None,
    processes: int = 1,
    torch_compile: bool = False,
    torch_compile_mode: str | None = None,
    no_progress: bool = False,
    quiet: bool = False,
    log_level: str = "WARNING",  # the flag's name
    evaluate: str | None = None,
) -> None:
    """Tag each ``input`` (files or glob patterns; None: stdin) with the tagger in
    ``model_dir`` into ``output`` (None: stdout) or ``output_dir`` in ``format``; the
    arguments are ``tag.py``'s flags (see its ``--help``).

    With ``evaluate`` (a gold CoNLL-U file) and no ``input``, the gold file's own text is
    tagged: its CoNLL-U lines for ``input_format="conllu"``, else its ``# text`` lines (one
    sentence per line for ``"lines"``).
    """
    level = parse_log_level(log_level)
    inputs = expand_inputs([input] if isinstance(input, str) else input)
    outputs = output_paths(inputs, output, output_dir, format)
    if evaluate and len(inputs) > 1:
        raise ValueError("--evaluate scores one input against its gold file; give one --input")
    if num_threads is not None and num_threads < 1:
        raise ValueError(f"--num-threads: give a positive number of CPU threads, got {num_threads}")
    worker_count(processes)
    check_device_name(device)
    for name in [*inputs, evaluate]:
        check_input(name)

    from ..runtime.model_folders import check_outside_model_folders, resolve_model_dir
    from .conllu_document import ConlluDocument
    from .scoring import format_scores, score, scored_columns

    resolve_model_dir(model_dir)  # a missing folder, or one without a model: one line before torch loads
    _set_up_logging(level)
    for path in outputs:
        check_outside_model_folders(path, "output")  # never over a model's own files
    tagger = _load_tagger(
        model_dir, device, dtype, language, tokens_per_batch, num_threads, torch_compile, torch_compile_mode
    )
    gold = ConlluDocument.read(evaluate) if evaluate else None
    text = None
    if gold is not None and inputs == [None]:
        inputs = [evaluate]
        text = (
            "\n".join(gold.lines)
            if input_format == "conllu"
            else gold.text(one_sentence_per_line=input_format == "lines")
        )
    if output_dir is not None:
        Path(output_dir).mkdir(parents=True, exist_ok=True)
    system = io.StringIO() if gold is not None else None
    options = {
        "input_format": input_format,
        "output_format": format,
        "text": text,
        "in_place": in_place,
        "processes": processes,
    }
    _tag_inputs(tagger, inputs, outputs, options, bf16, fp16, no_progress, quiet, system)
    if gold is not None:
        output_name = outputs[-1] or "<output>"
        result = score(gold, ConlluDocument(system.getvalue(), output_name), scored_columns(tagger.columns))
        print(format_scores(result), file=sys.stderr)


def _set_up_logging(level: int) -> None:
    """Log ``level`` and above of ours and of transformers to stderr, without transformers'
    progress bars (stderr is for errors, progress and speed)."""
    from transformers.utils import logging as transformers_logging

    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("cont_transformer").setLevel(level)
    transformers_logging.set_verbosity(level)
    transformers_logging.disable_progress_bar()


def _load_tagger(
    model_dir: str,
    device: str | None,
    dtype: str | None,
    language: str | None,
    tokens_per_batch: int,
    num_threads: int | None,
    torch_compile: bool,
    torch_compile_mode: str | None,
):
    """The :class:`~.tag.Tagger` of ``model_dir`` as the flags ask (torch's CPU threads set
    first, the compile mode checked)."""
    import torch

    from ..runtime.compiling import check_compile_mode
    from .tag import Tagger

    if num_threads is not None:
        torch.set_num_threads(num_threads)
    check_compile_mode(torch_compile_mode)
    return Tagger.from_pretrained(
        model_dir,
        device=device,
        dtype=getattr(torch, dtype) if dtype else None,
        language=language,
        tokens_per_batch=tokens_per_batch,
        torch_compile=torch_compile,
        torch_compile_mode=torch_compile_mode,
    )


def _tag_inputs(
    tagger,
    inputs: list[str | None],
    outputs: list,
    options: dict,
    bf16: bool,
    fp16: bool,
    no_progress: bool,
    quiet: bool,
    system: io.StringIO | None,
) -> None:
    """Tag each input into its output (:func:`~.tag_files.tag_file` with ``options``), its
    output also into ``system`` when scoring; each input's words/s summary to stderr unless
    ``quiet``."""
    from ..training.accelerator import inference_autocast
    from .tag_files import tag_file

    for name, path in zip(inputs, outputs):
        with inference_autocast(bf16, fp16, next(tagger.model.parameters()).device):
            stats = tag_file(
                tagger,
                name,
                path,
                **options,
                progress=False if no_progress else None,
                also=None if system is None else system.write,
            )
        if not quiet:
            print(stats.summary() if len(inputs) == 1 else f"{name}: {stats.summary()}", file=sys.stderr)


__all__ = ["DTYPES", "LOG_LEVELS", "expand_inputs", "output_paths", "parse_log_level", "tag_command"]
