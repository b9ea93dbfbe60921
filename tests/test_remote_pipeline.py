"""The whole tagger for Hub users (issue #37): a saved tagger's folder carries its pipeline
(``cont_transformer/pipeline_cont_transformer.py``, named in ``config.json``'s
``custom_pipelines``), so ``pipeline(model=folder, trust_remote_code=True)`` gives one
entry per word with UPOS, XPOS, FEATS and the lemma, decoded as the package's ``Tagger``
decodes them, with the package and without it.

One tagger is trained for 60 steps on the sample treebank (every column, the seen tag
combinations) and saved again with ``save_pretrained``.
"""

import json
import os
import re
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
from transformers import AutoModelForTokenClassification, pipeline

from cont_transformer.pipeline_cont_transformer import TASK, ContTransformerTaggingPipeline, split_sentences
from cont_transformer.pretrained import CustomCodeError, check_no_custom_code
from cont_transformer.tagging.tag import Tagger
from cont_transformer.text.tokenization import load_tokenizer
from cont_transformer.tools.compression import compress

REPO = Path(__file__).resolve().parents[1]
COLUMNS = ("upos", "xpos", "feats", "lemma")
KEYS = ["word", "start", "end", *COLUMNS]
CODE_FILES = (
    "pipeline_cont_transformer.py",
    "text_segmentation.py",
    "word_encoding.py",
    "sentence_windows.py",
    "token_batches.py",
    "lemma_scripts.py",
    "column_decoding.py",
    "configuration_cont_transformer.py",
)
TEXT = (
    "The old dog saw a bird. Tom didn't see it!\n\n"
    'Mr. Smith\'s blorpers blorped near the U.S. border. "Why?" she asked (quietly.) The cats sat'
)
CARD_TEXT = "The old dog saw a bird. Tom didn't see it!"  # the card snippet's text
CARD_WORDS = ["The", "old", "dog", "saw", "a", "bird", ".", "Tom", "did", "n't", "see", "it", "!"]


def assert_carries_pipeline(folder: Path) -> None:
    config = json.loads((folder / "config.json").read_text())
    assert config["custom_pipelines"] == {
        TASK: {
            "impl": "pipeline_cont_transformer.ContTransformerTaggingPipeline",
            "pt": ["AutoModelForTokenClassification"],
            "type": "text",
        }
    }
    for name in CODE_FILES:
        assert (folder / name).is_file(), name
    check_no_custom_code(folder)  # the package's own loads accept it


@pytest.fixture(scope="module")
def run(sample_run_60) -> Path:
    """A training run of 60 steps on the sample treebank (every column; enough steps for the
    columns to vary from word to word)."""
    output = sample_run_60
    return output


@pytest.fixture(scope="module")
def saved(run, tmp_path_factory) -> Path:
    """The run's best model, loaded and saved again with plain ``save_pretrained``."""
    folder = tmp_path_factory.mktemp("remote_tagger")
    AutoModelForTokenClassification.from_pretrained(run / "best", trust_remote_code=False).save_pretrained(folder)
    load_tokenizer(run / "best").save_pretrained(folder)
    return folder


def tagger_columns(folder: Path, text: str) -> list[dict]:
    """The package's ``Tagger`` on the words and sentences the pipeline splits ``text`` into:
    per word ``{column: value}``."""
    tagger = Tagger.from_pretrained(folder, device="cpu")
    words = [[text[start:end] for start, end in sentence] for sentence in split_sentences(text, tagger.language)]
    return [
        {column: columns[column][k] for column in COLUMNS}
        for columns in tagger.predict_columns(words)
        for k in range(len(next(iter(columns.values()))))
    ]


def test_every_save_path_writes_the_pipeline_and_its_code(run, saved, tmp_path):
    assert_carries_pipeline(run / "best")  # a training run's best model
    assert_carries_pipeline(run)  # and its published copy at the top of the run folder
    assert_carries_pipeline(saved)  # plain save_pretrained
    compress(saved, tmp_path / "compressed", num_steps=2, repeats=1)
    assert_carries_pipeline(tmp_path / "compressed")  # compress.py


def test_the_folders_pipeline_gives_every_column_per_word_as_the_tagger_does(saved):
    tagger = pipeline(model=str(saved), trust_remote_code=True)  # the task comes from the folder
    assert type(tagger).__module__.startswith("transformers_modules.")  # the folder's copy of the code
    entries = tagger(TEXT)
    assert all(list(entry) == KEYS for entry in entries)
    assert all(TEXT[entry["start"] : entry["end"]] == entry["word"] for entry in entries)
    assert all(entry[column] is not None for entry in entries for column in COLUMNS)
    assert [{column: entry[column] for column in COLUMNS} for entry in entries] == tagger_columns(saved, TEXT)
    # The columns vary, lemma scripts are applied, UPOS / XPOS / FEATS are decoded jointly.
    assert len({entry["xpos"] for entry in entries}) > 2
    assert any(entry["lemma"].lower() != entry["word"].lower() for entry in entries)
    seen = {tuple(triple) for triple in json.loads((saved / "config.json").read_text())["tag_combinations"]}
    assert all((entry["upos"], entry["xpos"], entry["feats"]) in seen for entry in entries)
    # The package's class, without remote code, gives the same; token-classification is unchanged.
    local = pipeline(model=str(saved), pipeline_class=ContTransformerTaggingPipeline)
    assert local(TEXT) == entries
    pieces = pipeline("token-classification", model=str(saved), trust_remote_code=True)("The old dog")
    assert [piece["word"] for piece in pieces] == ["The", "old", "dog"] and all("entity" in p for p in pieces)


def test_the_folders_pipeline_looks_seen_words_up_in_the_lemma_lexicon(saved, tmp_path):
    folder = tmp_path / "lexicon"
    model = AutoModelForTokenClassification.from_pretrained(saved, trust_remote_code=False)
    assert "dog" in model.config.lemma_lexicon["xpos"]["NN"]  # the training treebank's own
    # A made-up lemma for "dog" under every tag, which no edit script could give it (saved with
    # the model: the weights record the config, so an edit of config.json alone is refused).
    tags = [model.config.id2label[i] for i in range(len(model.config.id2label))]
    model.config.lemma_lexicon = {"xpos": {tag: {"dog": "LEXICON"} for tag in tags}}
    model.save_pretrained(folder)
    load_tokenizer(saved).save_pretrained(folder)
    entries = pipeline(model=str(folder), trust_remote_code=True)(TEXT)
    assert [entry["lemma"] for entry in entries if entry["word"] == "dog"] == ["LEXICON"]
    assert [{column: entry[column] for column in COLUMNS} for entry in entries] == tagger_columns(folder, TEXT)


def test_a_sentence_longer_than_the_model_covers_is_tagged_in_windows(saved):
    tagger = pipeline(model=str(saved), pipeline_class=ContTransformerTaggingPipeline)
    limit = tagger.model.config.max_position_embeddings
    text = " ".join(["the", "old", "dog", "saw", "a", "bird", "and"] * (2 * limit // 7 + 3))  # no sentence end
    entries = tagger(text, tokens_per_batch=4 * limit)
    assert len(entries) == len(text.split()) > 2 * limit  # no word dropped
    assert [{column: entry[column] for column in COLUMNS} for entry in entries] == tagger_columns(saved, text)


def test_sentences_end_after_final_punctuation_with_what_is_attached_and_at_blank_lines():
    def sentences(text):
        return [[text[s:e] for s, e in sentence] for sentence in split_sentences(text)]

    assert sentences('He left." Why?! (She asked.) Mr. Li of the U.S. came...\n\nno end here\nstill') == [
        ["He", "left", ".", '"'],
        ["Why", "?", "!"],
        ["(", "She", "asked", ".", ")"],
        ["Mr.", "Li", "of", "the", "U.S.", "came", "..."],
        ["no", "end", "here", "still"],
    ]
    assert sentences("  \n\n ") == []


def test_a_folder_naming_a_foreign_pipeline_is_refused(saved, tmp_path):
    config = json.loads((saved / "config.json").read_text())
    config["custom_pipelines"] = {TASK: {"impl": "evil_mod.EvilPipeline", "pt": ["AutoModelForTokenClassification"]}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(CustomCodeError, match=r"custom_pipelines\[pos-tagging\] -> evil_mod\.EvilPipeline"):
        check_no_custom_code(tmp_path)


# In a fresh interpreter that cannot import the package: -I -S, then site-packages on the
# path without their .pth files (so neither the editable install's finder nor the repo).
WITHOUT_PACKAGE = textwrap.dedent(
    """
    import json, sys
    sys.path.extend(json.loads(sys.argv[1]))
    try:
        import torch, transformers, tokenizers, safetensors  # noqa: F401
    except ImportError as err:
        print("CANNOT_BUILD", err)
        raise SystemExit(0)
    for name in ("cont_transformer", "image_models"):
        try:
            __import__(name)
        except ModuleNotFoundError:
            pass
        else:
            raise SystemExit(f"{name} is importable: the test would not show anything")
    import builtins
    builtins.input = lambda prompt="": sys.exit(f"asked: {prompt}")
    exec(compile(sys.argv[2], "README.md", "exec"), {"__name__": "__main__"})
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("cont_transformer", "image_models"))
    print("LOADED", json.dumps(loaded))
    """
)


def card_snippet(folder: Path) -> str:
    """The first Python block of the card's Usage section, for ``folder`` instead of the Hub."""
    card = (folder / "README.md").read_text()
    usage = card[card.index("## Usage") :]
    snippet = re.search(r"```python\n(.*?)```", usage, re.DOTALL).group(1)
    assert "<this repo>" in snippet and CARD_TEXT in snippet
    return snippet.replace("<this repo>", str(folder))


def test_the_card_snippet_runs_where_the_package_is_not_installed(saved, tmp_path):
    paths = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    paths = [path for path in paths if not Path(path).resolve().is_relative_to(REPO)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf_home"), "OMP_NUM_THREADS": "1"}
    env.pop("PYTHONPATH", None)
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", WITHOUT_PACKAGE, json.dumps(paths), card_snippet(saved)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    if result.stdout.startswith("CANNOT_BUILD"):
        pytest.skip(f"no interpreter without the package: {result.stdout.strip()}")
    *printed, loaded = result.stdout.strip().splitlines()
    assert loaded == "LOADED []"  # nothing of the package was imported
    rows = [line.split(" ") for line in printed]
    assert [row[0] for row in rows] == CARD_WORDS  # one line per word
    assert all(len(row) == 5 and "None" not in row for row in rows)  # every column
    expected = [[c[column] for column in COLUMNS] for c in tagger_columns(saved, CARD_TEXT)]
    assert [row[1:] for row in rows] == expected
