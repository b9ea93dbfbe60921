"""Pretraining the encoder as a masked language model, and fine-tuning a tagger from it.

A tiny language model pretrains on a small generated gzip text file (one module fixture,
``scripts/pretrain.py`` as a user runs it, about half a minute); the tests read what it
wrote, and are marked slow with it.
"""

import gzip
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

ROOT = Path(__file__).resolve().parents[1]
PRETRAIN = ROOT / "scripts" / "pretrain.py"
TRAIN_POS = ROOT / "scripts" / "train_pos.py"
# A word of the text that the generated sample treebank never shows.
TEXT_ONLY_WORD = "zygote"
# A tiny encoder (a tagger's or a language model's), its batches and warm-up.
TINY_ENCODER = [
    "--hidden-size",
    "16",
    "--num-attention-heads",
    "2",
    "--intermediate-size",
    "16",
    "--char-hidden-size",
    "16",
    "--char-embedding-size",
    "8",
    "--num-basis",
    "2",
    "--refine-steps",
    "none",
    "--batch-size",
    "16",
    "--warmup-steps",
    "2",
]
TINY = [*TINY_ENCODER, "--vocabulary-size", "300", "--heldout-lines", "40", "--learning-rate", "5e-3", "--seed", "3"]

# The module's pretraining run: 12 steps, evaluated and checkpointed at 6 and 12.
RUN = ("--max-steps", "12", "--eval-steps", "6", "--save-steps", "6", *TINY)


def _env() -> dict:
    return {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}


def _run(script: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, str(script), *args],
        check=False,
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"{script.name} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return result


def write_text(path: Path, lines: int = 600, seed: int = 0) -> Path:
    """Generated English-like sentences, gzip, one a line; every line holds common words
    and some hold :data:`TEXT_ONLY_WORD`."""
    rng = random.Random(seed)
    subjects = ["the dog", "a cat", "the old man", "my sister", "the bird", "a " + TEXT_ONLY_WORD]
    verbs = ["saw", "likes", "found", "chased", "heard", "wanted"]
    objects = ["the ball", "a house", "the tree", "some food", "the river", "an apple"]
    with gzip.open(path, "wt", encoding="utf-8") as stream:
        for _ in range(lines):
            words = [rng.choice(subjects), rng.choice(verbs), rng.choice(objects)]
            stream.write(" ".join(words).capitalize() + rng.choice([" .", " !", " ."]) + "\n")
    return path


@pytest.fixture(scope="module")
def text_file(tmp_path_factory) -> Path:
    return write_text(tmp_path_factory.mktemp("text") / "corpus.txt.gz")


@pytest.fixture(scope="module")
def language_model(text_file, tmp_path_factory) -> Path:
    """A tiny language model pretrained for 12 steps; its run folder."""
    output = tmp_path_factory.mktemp("lm") / "run"
    _run(
        PRETRAIN,
        "--text-files",
        str(text_file),
        "--output-dir",
        str(output),
        *RUN,
    )
    return output


@pytest.mark.slow
def test_a_tiny_language_model_pretrains_saves_and_loads_as_a_masked_lm(language_model):
    from transformers import AutoModelForMaskedLM, pipeline

    import cont_transformer  # noqa: F401  registers the Auto classes

    metrics = json.loads((language_model / "metrics.json").read_text())
    best = metrics["best"]
    assert 0 <= best["accuracy"] <= 1 and best["perplexity"] > 1 and best["num_masked_words"] > 0
    assert [entry["step"] for entry in metrics["history"]] == [6, 12]
    card = (language_model / "best" / "README.md").read_text()
    assert "pipeline_tag: fill-mask" in card and "masked-word accuracy" in card
    model = AutoModelForMaskedLM.from_pretrained(language_model / "best", trust_remote_code=False)
    assert type(model).__name__ == "ContTransformerForMaskedLM"
    embeddings = model.cont_transformer.embeddings.word_embeddings.weight
    assert model.lm_head.decoder.weight is embeddings  # tied after loading
    fill = pipeline("fill-mask", model=str(language_model / "best"))
    filled = fill("The dog [MASK] the ball .", top_k=3)
    assert len(filled) == 3 and all(entry["token_str"] and 0 <= entry["score"] <= 1 for entry in filled)
    assert filled[0]["sequence"].startswith("The dog ")


@pytest.mark.slow
def test_the_language_model_loads_by_remote_code_without_the_package(language_model, tmp_path):
    """In a process where ``cont_transformer`` cannot be imported, ``trust_remote_code``
    loads the saved folder's own code, and ``fill-mask`` fills a mask."""
    script = f"""
import sys
sys.meta_path[:] = [finder for finder in sys.meta_path if "editable" not in repr(finder)]
sys.path[:] = [p for p in sys.path if p not in ("", {str(ROOT)!r})]
try:
    import cont_transformer
    raise SystemExit("the package is importable: not a package-free test")
except ImportError:
    pass
from transformers import AutoModelForMaskedLM, pipeline
model = AutoModelForMaskedLM.from_pretrained({str(language_model / "best")!r}, trust_remote_code=True)
assert type(model).__name__ == "ContTransformerForMaskedLM", type(model)
assert "cont_transformer" not in sys.modules
fill = pipeline("fill-mask", model={str(language_model / "best")!r}, trust_remote_code=True)
print(fill("The cat [MASK] a house .", top_k=2)[0]["token_str"])
"""
    env = {**_env(), "HF_MODULES_CACHE": str(tmp_path / "modules")}
    result = subprocess.run(
        [sys.executable, "-c", script], check=False, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip()


@pytest.mark.slow
def test_a_compressed_language_model_stays_a_masked_language_model(language_model, tmp_path):
    """compress.py on the language model keeps its masked-word head, its card's task and fill-mask."""
    from transformers import AutoModelForMaskedLM, pipeline

    import cont_transformer

    output = tmp_path / "k1"
    _run(
        ROOT / "scripts" / "compress.py", str(language_model / "best"), "--num-basis", "1", "--output-dir", str(output)
    )
    cont_transformer.register_auto_classes()
    model = AutoModelForMaskedLM.from_pretrained(output, trust_remote_code=False)
    assert type(model).__name__ == "ContTransformerForMaskedLM" and model.config.num_basis == 1
    assert model.config.architectures == ["ContTransformerForMaskedLM"]
    card = (output / "README.md").read_text()
    assert "pipeline_tag: fill-mask" in card and "masked language model" in card
    filled = pipeline("fill-mask", model=str(output))("The dog [MASK] the ball .", top_k=2)
    assert len(filled) == 2 and filled[0]["sequence"].startswith("The dog ")


@pytest.mark.slow
def test_fine_tuning_keeps_the_pretrained_row_of_a_word_the_treebank_lacks(language_model, tmp_path):
    from transformers import AutoTokenizer

    from cont_transformer import ContTransformerForMaskedLM, ContTransformerForTokenClassification

    output = tmp_path / "tagger"
    _run(
        TRAIN_POS,
        "--treebank",
        "sample",
        "--model-name-or-path",
        str(language_model / "best"),
        "--output-dir",
        str(output),
        "--max-steps",
        "4",
        "--eval-steps",
        "4",
        "--save-steps",
        "4",
        "--warmup-steps",
        "1",
        "--batch-size",
        "16",
    )
    lm = ContTransformerForMaskedLM.from_pretrained(language_model / "best")
    lm_tokenizer = AutoTokenizer.from_pretrained(language_model / "best")
    tagger = ContTransformerForTokenClassification.from_pretrained(output / "best")
    tokenizer = AutoTokenizer.from_pretrained(output / "best")
    assert tagger.config.hidden_size == 16 and tagger.config.num_basis == 2  # the language model's sizes
    assert TEXT_ONLY_WORD in lm_tokenizer.get_vocab() and TEXT_ONLY_WORD in tokenizer.get_vocab()
    before = lm.cont_transformer.embeddings.word_embeddings.weight[lm_tokenizer.get_vocab()[TEXT_ONLY_WORD]]
    after = tagger.cont_transformer.embeddings.word_embeddings.weight[tokenizer.get_vocab()[TEXT_ONLY_WORD]]
    assert torch.equal(before, after)
    assert tagger.cont_transformer.embeddings.whole_word[tokenizer.get_vocab()[TEXT_ONLY_WORD]]
    # The language model's words keep their ids; the treebank's new words come after them.
    lm_vocab = lm_tokenizer.get_vocab()
    words = [w for w, i in lm_vocab.items() if lm.cont_transformer.embeddings.whole_word[i] and not w.startswith("[")]
    assert all(tokenizer.get_vocab()[w] == lm_vocab[w] for w in words)
    # The encoder started from the language model's: the steps moved it, but not far.
    lm_block = lm.cont_transformer.encoder.state_dict()
    tagger_block = tagger.cont_transformer.encoder.state_dict()
    assert lm_block.keys() == tagger_block.keys()


@pytest.mark.slow
def test_a_killed_pretraining_run_resumes_to_the_same_weights(language_model, text_file, tmp_path):
    output = tmp_path / "killed"
    command = [
        sys.executable,
        str(PRETRAIN),
        "--text-files",
        str(text_file),
        "--output-dir",
        str(output),
        *RUN,
    ]
    process = subprocess.Popen(
        command, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    marker = output / "checkpoints" / "step-6" / "trainer_state.json"
    deadline = time.monotonic() + 300
    while not marker.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert not (output / "checkpoints" / "step-12" / "trainer_state.json").exists(), "the run ended unkilled"
    _run(PRETRAIN, *command[2:], "--resume-from-checkpoint", "latest")
    final = "checkpoints/step-12/model.safetensors"
    reference, resumed = load_file(language_model / final), load_file(output / final)
    assert reference.keys() == resumed.keys()
    assert all(torch.equal(reference[key], resumed[key]) for key in reference)
    assert (
        json.loads((output / "metrics.json").read_text())["history"]
        == json.loads((language_model / "metrics.json").read_text())["history"]
    )


@pytest.mark.slow
def test_pretraining_goes_on_from_a_saved_language_model(language_model, tmp_path):
    """--model-name-or-path: new text, the saved vocabulary, sizes and weights (at a learning
    rate too small to move them, the new run's model is the saved one)."""
    saved = language_model / "best"
    output = tmp_path / "further"
    more = write_text(tmp_path / "more.txt.gz", lines=200, seed=5)
    steps = ("--max-steps", "2", "--eval-steps", "2", "--save-steps", "2", "--warmup-steps", "1", "--batch-size", "16")
    args = ("--text-files", str(more), "--output-dir", str(output), "--model-name-or-path", str(saved), *steps)
    _run(PRETRAIN, *args, "--learning-rate", "1e-12", "--heldout-lines", "40", "--vocabulary-size", "7")
    before, after = load_file(saved / "model.safetensors"), load_file(output / "best" / "model.safetensors")
    assert before.keys() == after.keys()
    assert all(torch.allclose(before[k].float(), after[k].float(), atol=1e-6) for k in before)
    assert (
        json.loads((output / "best" / "tokenizer.json").read_text())["model"]["vocab"]
        == json.loads((saved / "tokenizer.json").read_text())["model"]["vocab"]
    )
    config = json.loads((output / "best" / "config.json").read_text())
    assert (config["num_basis"], config["hidden_size"]) == (2, 16)  # the saved sizes, not the defaults
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["vocabulary_words"] == json.loads((language_model / "metrics.json").read_text())["vocabulary_words"]


def test_pretraining_goes_on_only_from_a_language_model(tmp_path, text_file):
    from cont_transformer.configuration_cont_transformer import ContTransformerConfig
    from cont_transformer.language_modeling.arguments import PretrainingArguments
    from cont_transformer.text.pretrained_encoder import read_saved_config

    ContTransformerConfig(architectures=["ContTransformerForTokenClassification"]).save_pretrained(tmp_path)
    args = PretrainingArguments(text_files=[str(text_file)], model_name_or_path=str(tmp_path))
    with pytest.raises(ValueError, match="holds a tagger; pretraining goes on only from a language model"):
        args.adopt_saved(read_saved_config(args.model_name_or_path))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "holds no text"),
        (b"\n  \n", "holds no text"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 50, "not"),
        (b"word " * 220_000, "a line of over"),  # 1.1 M characters, no line break
    ],
    ids=["empty", "blank", "binary", "one huge line"],
)
def test_bad_text_files_get_one_line_and_lose_nothing(content, message, language_model, tmp_path):
    """Refused in one line naming the file, before the output folder is touched: an earlier
    run there, asked to be overwritten, keeps its model and a user's notes."""
    bad = tmp_path / "bad.txt"
    bad.write_bytes(content)
    output = tmp_path / "run"
    shutil.copytree(language_model, output)
    (output / "best" / "MY_NOTES.txt").write_text("mine")
    weights = (output / "best" / "model.safetensors").read_bytes()
    result = _run(
        PRETRAIN, "--text-files", str(bad), "--output-dir", str(output), "--overwrite-output-dir", *TINY, check=False
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and message in lines[0], result.stderr[-2000:]
    assert (output / "best" / "MY_NOTES.txt").read_text() == "mine"
    assert (output / "best" / "model.safetensors").read_bytes() == weights


def test_gzip_text_is_read_through_datasets_in_rows_of_the_model_length(text_file):
    from cont_transformer.text.reading import load_text, split_words, text_files

    files = text_files([str(text_file.parent / "*.txt.gz")])
    data = load_text(files, heldout_lines=40, seed=0)
    assert len(data["train"]) + len(data["heldout"]) == 600 and len(data["heldout"]) == 40
    rows = split_words(["Tom didn't see the U.S. flag , it's 3.5 m away ."] * 1, max_words=5)
    assert rows == [["Tom", "did", "n't", "see", "the"], ["U.S.", "flag", ",", "it", "'s"], ["3.5", "m", "away", "."]]
