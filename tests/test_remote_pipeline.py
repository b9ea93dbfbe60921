"""The whole tagger for Hub users: a saved tagger's folder carries its pipeline
(``cont_transformer/pipeline_cont_transformer.py``, named in ``config.json``'s
``custom_pipelines``), so ``pipeline(model=folder, trust_remote_code=True)`` gives one
entry per word with UPOS, XPOS, FEATS and the lemma, decoded as the package's ``Tagger``
decodes them, with the package and without it.

One tagger is trained for 60 steps on the sample treebank (every column, the seen tag
combinations) and saved again with ``save_pretrained``. The pipeline follows transformers'
conventions (batches of texts, words already split with ``is_split_into_words``, unknown
arguments refused, a ``score``), and a folder fine-tuned with transformers' ``Trainer``
where the package is not installed keeps its pipeline and its card: both checked in one
fresh interpreter that cannot import the package.
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
import torch
from huggingface_hub import ModelCard
from transformers import AutoModelForTokenClassification, pipeline

from cont_transformer.pipeline_cont_transformer import TASK, ContTransformerTaggingPipeline, split_sentences
from cont_transformer.pretrained import CustomCodeError, check_no_custom_code, inference_dtype
from cont_transformer.tagging.conllu_document import ConlluDocument
from cont_transformer.tagging.sample_treebank import write_sample_treebank
from cont_transformer.tagging.tag import Tagger
from cont_transformer.text.tokenization import load_tokenizer
from cont_transformer.tools.compression import compress

REPO = Path(__file__).resolve().parents[1]
COLUMNS = ("upos", "xpos", "feats", "lemma")
# transformers' token-classification entry first (the card's pipeline_tag), then the tagger's.
KEYS = ["entity", "score", "index", "word", "start", "end", "sentence", "token", *COLUMNS]
CODE_FILES = (
    "pipeline_cont_transformer.py",
    "text_segmentation.py",
    "learned_segmentation.py",
    "word_encoding.py",
    "sentence_windows.py",
    "processing_cont_transformer.py",
    "lemmas.py",
    "column_decoding.py",
    "configuration_cont_transformer.py",
    "tagger_files.py",
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
        {column: empty(columns[column][k], sentence[k]) for column in COLUMNS}
        for sentence, columns in zip(words, tagger.predict_columns(words))
        for k in range(len(sentence))
    ]


def empty(value, word):
    """A value as ``Tagger``'s ``Document`` keeps it: None for CoNLL-U's ``_``."""
    return None if value == "_" and word != "_" else value


def test_every_save_path_writes_the_pipeline_and_its_code(run, saved, tmp_path):
    assert_carries_pipeline(run / "best")  # a training run's best model
    assert_carries_pipeline(run)  # and its published copy at the top of the run folder
    assert_carries_pipeline(saved)  # plain save_pretrained
    compress(saved, tmp_path / "compressed", num_steps=2, repeats=1)
    assert_carries_pipeline(tmp_path / "compressed")  # compress.py


def test_the_folders_pipeline_gives_every_column_per_word_as_the_tagger_does(saved):
    # The task comes from the folder; the package is imported, so transformers takes its
    # classes (config, model, pipeline) rather than the folder's copies, and asks nothing.
    tagger = pipeline(model=str(saved))
    assert type(tagger) is ContTransformerTaggingPipeline and type(tagger.model).__module__.startswith("cont_")
    entries = tagger(TEXT)
    assert type(pipeline(model=str(saved), trust_remote_code=True)) is ContTransformerTaggingPipeline
    assert type(pipeline(TASK, model=str(saved))) is ContTransformerTaggingPipeline
    assert all(list(entry) == KEYS for entry in entries)
    assert all(TEXT[entry["start"] : entry["end"]] == entry["word"] for entry in entries)
    assert all(entry[column] is not None for entry in entries for column in ("upos", "xpos", "lemma"))
    assert "_" not in {entry["feats"] for entry in entries} and None in {entry["feats"] for entry in entries}
    # The sentence of each word, the multiword token it belongs to, the chosen tag's probability.
    assert [entry["sentence"] for entry in entries if entry["word"] in ("Tom", "Mr.", "Why")] == [1, 2, 3]
    did, nt = (entry for entry in entries if entry["word"] in ("did", "n't"))
    assert did["token"] == nt["token"] == {"text": "didn't", "start": 28, "end": 34, "id": "2-3"}
    assert all(entry["token"] is None for entry in entries if entry["word"] not in ("did", "n't", "Smith", "'s"))
    assert all(0 < entry["score"] <= 1 for entry in entries)
    # token-classification's keys: the primary column's tag as the entity, the word's position.
    assert all(entry["entity"] == entry["xpos"] for entry in entries)
    assert [entry["index"] for entry in entries if entry["sentence"] == 0] == list(range(1, 8))
    assert [{column: entry[column] for column in COLUMNS} for entry in entries] == tagger_columns(saved, TEXT)
    # The columns vary, lemma scripts are applied, UPOS / XPOS / FEATS are decoded jointly.
    assert len({entry["xpos"] for entry in entries}) > 2
    assert any(entry["lemma"].lower() != entry["word"].lower() for entry in entries)
    seen = {tuple(triple) for triple in json.loads((saved / "columns.json").read_text())["tag_combinations"]}
    assert all((entry["upos"], entry["xpos"], entry["feats"] or "_") in seen for entry in entries)
    # The package's class, without remote code, gives the same; token-classification is unchanged.
    local = pipeline(model=str(saved), pipeline_class=ContTransformerTaggingPipeline)
    assert local(TEXT) == entries
    # Options given to the constructor hold for every call; a generator streams its results.
    split = pipeline(model=str(saved), pipeline_class=ContTransformerTaggingPipeline, is_split_into_words=True)
    assert split(["The", "old", "dog"]) == local(["The", "old", "dog"], is_split_into_words=True)
    assert list(local((text for text in [TEXT, CARD_TEXT]), batch_size=2)) == [entries, local(CARD_TEXT)]
    # transformers' token-classification: its entries, the primary column's tag per token, grouped when asked.
    plain = pipeline("token-classification", model=str(saved))
    pieces = plain("The old dog")
    assert [piece["word"] for piece in pieces] == ["The", "old", "dog"]
    assert all({"entity", "score", "index", "word", "start", "end"} == set(piece) for piece in pieces)
    assert all(piece["entity"] in tagger.model.config.label2id for piece in pieces)
    assert all(
        {"entity_group", "score", "word", "start", "end"} == set(g) for g in plain(TEXT, aggregation_strategy="simple")
    )


def test_the_folders_pipeline_groups_words_as_token_classification_does(saved):
    tagger = pipeline(model=str(saved))
    entries = tagger(TEXT)
    groups = tagger(TEXT, aggregation_strategy="simple")
    assert [g["entity_group"] for g in groups] == [
        e["entity"]
        for k, e in enumerate(entries)
        if k == 0 or (e["sentence"], e["entity"]) != (entries[k - 1]["sentence"], entries[k - 1]["entity"])
    ]
    assert len(groups) < len(entries) and all(TEXT[g["start"] : g["end"]] == g["word"] for g in groups)
    assert sum(g["word"].count(" ") + 1 for g in groups) <= len(entries)
    for strategy in ("first", "average", "max"):  # whole words already: the same groups
        assert tagger(TEXT, aggregation_strategy=strategy) == groups
    assert tagger(TEXT, aggregation_strategy="none") == entries
    with pytest.raises(ValueError, match="aggregation_strategy: 'sideways' is not one of none, simple"):
        tagger(TEXT, aggregation_strategy="sideways")


def test_the_tagger_tag_py_and_the_pipeline_give_the_same_columns_by_default(saved, tmp_path, script_here):
    """One default precision for every door (bfloat16 on a CPU with bfloat16 arithmetic, as
    saved elsewhere): the same columns, byte for byte, for 400 sentences of the sample's dev
    text (in float32 the pipeline's columns differ from the bfloat16 Tagger's in a few words)."""
    text = ConlluDocument.read(write_sample_treebank(tmp_path, seed=1, num_train=1)["validation"]).text()
    tagger = Tagger.from_pretrained(saved, device="cpu")
    doc = tagger(text)
    (tmp_path / "dev.txt").write_text(text, encoding="utf-8")
    written = script_here("scripts/tag.py", saved, "--input", tmp_path / "dev.txt")
    assert written.returncode == 0 and written.stdout == doc.to_conllu()
    door = pipeline(model=str(saved))  # the folder's pipeline, no option
    assert door.model.dtype == tagger.model.dtype == (inference_dtype(torch.device("cpu")) or torch.float32)
    entries = door(text)
    assert [[e["word"], *(e[c] for c in COLUMNS)] for e in entries] == [
        [w.text, *(getattr(w, c) for c in COLUMNS)] for w in doc.iter_words()
    ]
    exact = pipeline(model=str(saved), trust_remote_code=True, dtype=torch.float32)  # as saved, when asked
    assert exact.model.dtype == torch.float32


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


def without_package_run(work: Path, code: str, *arguments: str) -> list[str]:
    """The lines ``code`` prints (``sys.argv[3:]``: ``arguments``), run in ``work`` by a fresh
    interpreter that cannot import the package, offline; skips where no such interpreter can
    be built, and checks that nothing of the package was imported."""
    paths = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    paths = [path for path in paths if not Path(path).resolve().is_relative_to(REPO)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(work / "hf_home"), "OMP_NUM_THREADS": "1"}
    env.pop("PYTHONPATH", None)
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", WITHOUT_PACKAGE, json.dumps(paths), code, *arguments],
        cwd=work,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    if result.stdout.startswith("CANNOT_BUILD"):
        pytest.skip(f"no interpreter without the package: {result.stdout.strip()}")
    *printed, loaded = result.stdout.strip().splitlines()
    assert loaded == "LOADED []"  # nothing of the package was imported
    return printed


def test_the_card_snippet_runs_where_the_package_is_not_installed(saved, tmp_path):
    printed = without_package_run(tmp_path, card_snippet(saved))
    rows = [line.split(" ") for line in printed]
    assert [row[0] for row in rows] == CARD_WORDS  # one line per word
    assert all(len(row) == 5 and "None" not in (row[1], row[2], row[4]) for row in rows)  # every column
    expected = [[str(c[column]) for column in COLUMNS] for c in tagger_columns(saved, CARD_TEXT)]
    assert [row[1:] for row in rows] == expected


# Where the package is not installed: the pipeline as transformers' pipelines behave, the
# tokenizer without a question, and a fine-tuning with transformers' Trainer whose folder
# keeps its pipeline and card. One process; sys.argv[3:]: the saved folder, an output folder.
REMOTE_CHECKS = textwrap.dedent(
    """
    import json, os, sys
    from transformers import (AutoModelForTokenClassification, AutoProcessor, AutoTokenizer,
                              DataCollatorForTokenClassification, Trainer, TrainingArguments, pipeline)
    folder, out = sys.argv[3], sys.argv[4]
    result = {}
    tagger = pipeline(model=folder, trust_remote_code=True)
    texts = json.loads(sys.argv[5])
    result["single"] = [tagger(text) for text in texts]
    result["batched"] = tagger(texts, batch_size=2)
    result["refused"] = []
    for arguments in ({"aggregation_strategy": "sideways"}, {"tokens_per_bach": 8}):
        try:
            tagger(texts[0], **arguments)
        except ValueError as err:
            result["refused"].append(str(err))
    try:
        pipeline(model=folder, trust_remote_code=True, tokens_per_bach=8)
    except ValueError as err:
        result["refused"].append(str(err))
    result["grouped"] = pipeline(model=folder, trust_remote_code=True, aggregation_strategy="simple")(texts[-1])
    words = [entry["word"] for entry in result["single"][0]]
    result["words"] = tagger(words, is_split_into_words=True)
    result["word_lists"] = tagger([words, ["Tom", "ran", "."]], is_split_into_words=True)
    processor = AutoProcessor.from_pretrained(folder, trust_remote_code=True)
    result["processor"] = [type(processor).__name__, list(processor.columns), processor.language]
    # The tokenizer runs no code; transformers reads config.json first, whose auto_map names
    # the config's code: trust_remote_code=False loads it without asking (input() exits).
    tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=False)
    model = AutoModelForTokenClassification.from_pretrained(folder, trust_remote_code=True)
    column = getattr(model.config, "primary_column", None) or "xpos"
    rows = []
    for text in texts:
        entries = tagger(text)
        encoding = tokenizer([e["word"] for e in entries], is_split_into_words=True)
        ids = encoding.word_ids()
        labels = [-100 if w is None or ids[i - 1] == w else model.config.label2id[entries[w][column]]
                  for i, w in enumerate(ids)]
        rows.append({"input_ids": encoding["input_ids"], "labels": labels})
    arguments = TrainingArguments(os.path.join(out, "checkpoints"), max_steps=10, per_device_train_batch_size=2,
                                  learning_rate=1e-4, report_to=[], save_strategy="no", use_cpu=True,
                                  logging_strategy="no", disable_tqdm=True)
    trainer = Trainer(model=model, args=arguments, train_dataset=rows * 4, processing_class=tokenizer,
                      data_collator=DataCollatorForTokenClassification(tokenizer))
    trainer.train()
    trainer.save_model(os.path.join(out, "tuned"))
    result["files"] = sorted(os.listdir(os.path.join(out, "tuned")))
    result["tuned"] = pipeline(model=os.path.join(out, "tuned"), trust_remote_code=True)(texts[-1])
    print("RESULT", json.dumps(result))
    """
)
BATCH_TEXTS = ["One dog.", "Two cats ran.", TEXT]


@pytest.fixture(scope="module")
def without_package(saved, tmp_path_factory) -> dict:
    """What :data:`REMOTE_CHECKS` found, in a fresh interpreter that cannot import the package."""
    work = tmp_path_factory.mktemp("without_package")
    *_, found = without_package_run(work, REMOTE_CHECKS, str(saved), str(work), json.dumps(BATCH_TEXTS))
    return {**json.loads(found.removeprefix("RESULT ")), "out": work}


def columns_of(entries: list[dict]) -> list[list]:
    return [[entry["word"], *(entry[column] for column in COLUMNS)] for entry in entries]


@pytest.mark.slow
def test_without_the_package_a_list_of_texts_in_batches_gives_one_result_per_text(saved, without_package):
    single, batched = without_package["single"], without_package["batched"]
    # The folder's copy of the code, in its default precision, gives the Tagger's columns.
    for text, entries in zip(BATCH_TEXTS, single):
        assert [{column: e[column] for column in COLUMNS} for e in entries] == tagger_columns(saved, text)
    assert [columns_of(entries) for entries in batched] == [columns_of(entries) for entries in single]
    assert [len(entries) for entries in batched] == [3, 4, len(single[2])]
    scores = [e["score"] for entries in batched for e in entries]
    assert scores == pytest.approx([e["score"] for entries in single for e in entries], abs=1e-5)


@pytest.mark.slow
def test_without_the_package_auto_processor_loads_the_taggers_processor(without_package):
    assert without_package["processor"] == ["ContTransformerTaggerProcessor", ["lemma", "upos", "xpos", "feats"], "en"]


def test_without_the_package_unknown_arguments_are_refused_by_name(without_package):
    refused = without_package["refused"]
    assert [message.split(":")[0] for message in refused] == [
        "aggregation_strategy",
        "tokens_per_bach",
        "tokens_per_bach",
    ]
    assert all("\n" not in message for message in refused) and "pos-tagging pipeline" in refused[1]
    # Given a strategy, the folder's copy groups words as transformers' token-classification does.
    assert all(list(group) == ["entity_group", "score", "word", "start", "end"] for group in without_package["grouped"])


@pytest.mark.slow
def test_without_the_package_words_already_split_are_tagged_as_one_sentence_each(without_package):
    text_entries, words, word_lists = (
        without_package["single"][0],
        without_package["words"],
        without_package["word_lists"],
    )
    assert columns_of(words) == columns_of(text_entries)  # the same words, with no text to split
    assert all((e["start"], e["end"], e["sentence"], e["token"]) == (None, None, 0, None) for e in words)
    assert len(word_lists) == 2 and columns_of(word_lists[0]) == columns_of(words)
    assert [e["word"] for e in word_lists[1]] == ["Tom", "ran", "."]


@pytest.mark.slow
def test_without_the_package_a_trainer_fine_tuned_folder_keeps_its_pipeline_and_card(saved, without_package):
    tuned = without_package["out"] / "tuned"
    assert {*CODE_FILES, "README.md", "tokenizer.json"} <= set(without_package["files"])
    assert_carries_pipeline(tuned)
    entries = without_package["tuned"]
    assert [e["word"] for e in entries] == [e["word"] for e in without_package["single"][2]]
    assert all(list(entry) == KEYS for entry in entries)
    # The card is the one the package writes: the same text (the same facts and architecture).
    card, source = (tuned / "README.md").read_text(), (saved / "README.md").read_text()
    assert card == source
    data = ModelCard.load(tuned / "README.md", ignore_metadata_errors=False).data
    assert data.language == "en" and data.eval_results and "`text_segmentation.py`" in card
