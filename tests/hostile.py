"""Helpers of the hostile-input tests (``test_hostile_*.py``): the scripts as
modules or processes, a saved tiny tagger, and the one ``error:`` line each bad input must give."""

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_tag import TAGGER, WORDS

from cont_transformer import build_tokenizer
from cont_transformer.text.tokenization import spelling_tables
from cont_transformer.tools.cli import run_cli

REPO = Path(__file__).resolve().parents[1]


def train_pos(*args: str) -> subprocess.CompletedProcess:
    """``scripts/train_pos.py ARGS`` in its own process, one thread, its output captured."""
    return subprocess.run(
        [sys.executable, "scripts/train_pos.py", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        timeout=300,
        check=False,
    )


def load_script(name):
    """``scripts/<name>.py`` as a module."""
    spec = importlib.util.spec_from_file_location(f"hostile_{name}", REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def save_tagger(folder: Path, tiny_tagger, spelling: bool = False, **config) -> Path:
    """A tiny tagger over test_tag's WORDS and TAGGER (``tiny_tagger``: conftest's fixture;
    ``config``: fields besides), saved in ``folder`` with its tokenizer, as a tagger run saves it."""
    tokenizer = build_tokenizer(WORDS, spelling=spelling)
    if spelling:
        tables, char_vocab_size = spelling_tables(tokenizer, set(WORDS), 6)
        model = tiny_tagger(
            vocab_size=len(tokenizer),
            **TAGGER,
            word_representation="word+chars",
            char_vocab_size=char_vocab_size,
            unk_token_id=tokenizer.unk_token_id,
            max_word_length=6,
            char_embedding_size=8,
            char_hidden_size=12,
            **config,
        )
        model.cont_transformer.embeddings.set_spelling(**tables)
    else:
        model = tiny_tagger(vocab_size=len(tokenizer), **TAGGER, **config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    (folder / "metrics.json").write_text(json.dumps({"tag_column": "xpos"}))
    return folder


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


def run_tag(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        load_script("tag").main(argv)
    assert exit_info.value.code == 2
    return one_error_line(capsys)


def run_compress(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        run_cli(load_script("compress").main, argv)
    assert exit_info.value.code == 2
    return one_error_line(capsys)


def toy_trainer():
    """test_scaffold's toy trainer and its arguments: ``ToyTrainer, toy = toy_trainer()``."""
    from test_scaffold import ToyTrainer, toy

    return ToyTrainer, toy


def folder_digest(folder: Path) -> dict[str, str]:
    """Every file and folder under ``folder`` (hidden ones too) with its SHA-256 (``dir`` for
    a folder, the target for a link): equal before and after means nothing was touched."""
    found = {}
    for path in sorted(Path(folder).rglob("*")):
        name = str(path.relative_to(folder))
        if path.is_symlink():
            found[name] = "-> " + str(path.readlink())
        elif path.is_dir():
            found[name] = "dir"
        else:
            found[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def run_script(name: str, argv, capsys) -> str:
    """``scripts/<name>.py ARGV`` under ``run_cli``, which must refuse it: its one error line."""
    with pytest.raises(SystemExit) as exit_info:
        run_cli(load_script(name).main, [str(arg) for arg in argv])
    assert exit_info.value.code == 2
    return one_error_line(capsys)


def _can_mount_a_small_disk() -> bool:
    try:
        return subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False).returncode == 0
    except OSError:
        return False


# A test that needs a full disk mounts a small one in a user namespace of its own.
needs_a_small_disk = pytest.mark.skipif(
    not _can_mount_a_small_disk(), reason="no user namespace to mount a small disk in"
)


def on_a_small_disk(disk: Path, size: str, argv: list[str], timeout: int = 300) -> subprocess.CompletedProcess:
    """``argv`` (a program and its arguments) run in the repository with a file system of
    ``size`` (tmpfs's ``size=``: ``64k``, ``2m``) mounted at the empty folder ``disk``, its
    output captured."""
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", f'mount -t tmpfs -o size={size} tmpfs "{disk}" && exec "$@"', "sh", *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"},
        timeout=timeout,
        check=False,
    )
