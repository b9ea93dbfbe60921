"""Static word vectors: trained by gensim on a small gzip text, read by a new tagger.

``scripts/train_word_vectors.py`` trains fastText vectors on the generated text of
``test_pretraining.write_text`` (a few seconds); a tiny tagger trains with them on the
sample treebank. The tests check what a user relies on: the folder holds no pickle, a
word of the text that the treebank never shows gets its own vector in the tagger and
keeps it through training and ``from_pretrained``, and bad folders or flag combinations
are refused in one line before anything is trained.
"""

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file
from test_pretraining import (  # noqa: F401  (the language model's fixtures)
    ROOT,
    TEXT_ONLY_WORD,
    TINY_ENCODER,
    TRAIN_POS,
    _run,
    language_model,
    text_file,
    write_text,
)

from cont_transformer.text.word_vectors import (
    VECTORS_FILE,
    WORDS_FILE,
    WordVectorError,
    load_word_vectors,
    vector_table,
)

pytest.importorskip("gensim")

TRAIN_VECTORS = ROOT / "scripts" / "train_word_vectors.py"
TINY_TAGGER = ["--treebank", "sample", *TINY_ENCODER, "--max-steps", "6", "--eval-steps", "6", "--save-steps", "6"]
TINY_TAGGER += ["--seed", "1"]


@pytest.fixture(scope="module")
def vectors(tmp_path_factory) -> Path:
    """fastText vectors of width 8 trained on the generated text; their folder."""
    folder = tmp_path_factory.mktemp("vectors")
    text = write_text(folder / "corpus.txt.gz")
    output = folder / "vectors"
    result = _run(TRAIN_VECTORS, "--text-files", str(text), "--output-dir", str(output), "--vector-size", "8")
    assert json.loads(result.stdout.strip().splitlines()[-1])["words"] > 10
    return output


def test_the_vector_folder_holds_vectors_and_words_and_no_pickle(vectors):
    words, table = load_word_vectors(vectors)
    assert TEXT_ONLY_WORD in words and "the" in words
    assert table.shape == (len(words), 8) and torch.isfinite(table).all()
    assert abs(float(table.std()) - 1.0) < 1e-3  # scaled to unit spread
    names = {p.name for p in vectors.iterdir() if not p.name.startswith(".")}
    assert names == {"word_vectors.json", WORDS_FILE, VECTORS_FILE}


def test_vector_table_puts_each_vector_at_its_id():
    words, vectors = ["b", "a", "z"], torch.arange(6.0).view(3, 2)
    table, found = vector_table({"[PAD]": 0, "a": 1, "b": 2}, 3, words, vectors)
    assert found == 2
    assert table.tolist() == [[0, 0], [2, 3], [0, 1]]


@pytest.mark.slow
def test_a_tagger_keeps_the_vector_of_a_word_only_the_text_shows(vectors, tmp_path):
    from transformers import AutoTokenizer

    from cont_transformer.modeling_cont_transformer import ContTransformerForTokenClassification
    from cont_transformer.tagging.tag import Tagger

    output = tmp_path / "tagger"
    _run(TRAIN_POS, *TINY_TAGGER, "--word-vectors", str(vectors), "--output-dir", str(output))
    best = output / "best"
    assert "static word vectors" in (best / "README.md").read_text()
    tokenizer = AutoTokenizer.from_pretrained(best)
    model = ContTransformerForTokenClassification.from_pretrained(best)
    assert model.config.word_vector_size == 8
    embeddings = model.cont_transformer.embeddings
    words, table = load_word_vectors(vectors)
    word_id = tokenizer.convert_tokens_to_ids(TEXT_ONLY_WORD)
    assert word_id != tokenizer.unk_token_id  # in the vocabulary through the vectors
    assert not bool(embeddings.whole_word[word_id])  # no trained embedding of its own: [UNK]'s
    torch.testing.assert_close(embeddings.static_vectors[word_id], table[words.index(TEXT_ONLY_WORD)])
    assert not embeddings.static_vectors.requires_grad
    # The projection read the vectors: changing a word's vector changes its representation.
    sentence = Tagger.from_pretrained(best)([["The", TEXT_ONLY_WORD, "barks", "."]])
    assert len(sentence.sentences[0].words) == 4
    ids = torch.tensor([[tokenizer.convert_tokens_to_ids(TEXT_ONLY_WORD)]])
    before = embeddings(ids).vectors
    embeddings.static_vectors[word_id] += 1.0
    assert not torch.allclose(before, embeddings(ids).vectors)
    # A saved tagger keeps its own vectors: fine-tuning it with others is refused in one line.
    again = tmp_path / "again"
    result = _run(
        TRAIN_POS, *TINY_TAGGER, "--word-vectors", str(vectors), "--model-name-or-path", str(best),
        "--output-dir", str(again), check=False,
    )  # fmt: skip
    assert result.returncode == 2 and not again.exists()
    assert "a saved tagger (--model-name-or-path) keeps its own" in result.stderr.strip().splitlines()[-1]


@pytest.mark.slow
def test_a_tagger_from_a_language_model_takes_vectors_too(language_model, vectors, tmp_path):  # noqa: F811
    """Fine-tuning from the language model with vectors: a word of the text keeps its
    pretrained row and gets its vector; the vectors' other words get [UNK]'s channel."""
    from transformers import AutoTokenizer

    from cont_transformer import ContTransformerForMaskedLM, ContTransformerForTokenClassification

    output = tmp_path / "tagger"
    flags = ["--max-steps", "4", "--eval-steps", "4", "--save-steps", "4", "--warmup-steps", "1"]
    _run(
        TRAIN_POS, "--treebank", "sample", "--model-name-or-path", str(language_model / "best"),
        "--word-vectors", str(vectors), "--output-dir", str(output), *flags,
    )  # fmt: skip
    lm = ContTransformerForMaskedLM.from_pretrained(language_model / "best")
    lm_vocab = AutoTokenizer.from_pretrained(language_model / "best").get_vocab()
    tagger = ContTransformerForTokenClassification.from_pretrained(output / "best")
    vocab = AutoTokenizer.from_pretrained(output / "best").get_vocab()
    embeddings = tagger.cont_transformer.embeddings
    words, table = load_word_vectors(vectors)
    word_id = vocab[TEXT_ONLY_WORD]
    assert word_id == lm_vocab[TEXT_ONLY_WORD] and bool(embeddings.whole_word[word_id])
    before = lm.cont_transformer.embeddings.word_embeddings.weight[word_id]
    torch.testing.assert_close(embeddings.word_embeddings.weight[word_id], before)
    torch.testing.assert_close(embeddings.static_vectors[word_id], table[words.index(TEXT_ONLY_WORD)])
    assert set(words) <= set(vocab)
    vector_only = [w for w in words if w not in lm_vocab]
    assert all(not bool(embeddings.whole_word[vocab[w]]) for w in vector_only)
    # ... and no rows: the table ends at the last whole word, past the language model's words.
    rows = embeddings.word_embeddings.weight.shape[0]
    assert rows == 1 + int(embeddings.whole_word.nonzero().max()) < len(vocab)
    assert word_id < rows and all(vocab[w] >= rows for w in vector_only)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--word-representation", "word"], "needs a spelling representation"),
    ],
)
def test_word_vectors_refuse_contradictory_flags(vectors, tmp_path, flags, message, script_here):
    output = tmp_path / "run"
    result = script_here(TRAIN_POS, *TINY_TAGGER, "--word-vectors", vectors, *flags, "--output-dir", output)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not output.exists()


def test_a_folder_without_vectors_is_refused_before_training(tmp_path, script_here):
    result = script_here(TRAIN_POS, *TINY_TAGGER, "--word-vectors", tmp_path, "--output-dir", tmp_path / "run")
    assert result.returncode == 2
    assert f"{tmp_path} has no {VECTORS_FILE}" in result.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("words", "problem"),
    [
        ("a\nb\n", "has 2 words for 3 vectors"),
        ("a\nb\nb\n", "lists a word twice"),
        ("a\nb c\nd\n", f"{WORDS_FILE}:2: not one word"),
    ],
)
def test_damaged_vector_folders_are_named(tmp_path, words, problem):
    save_file({"vectors": torch.zeros(3, 4)}, str(tmp_path / VECTORS_FILE))
    (tmp_path / WORDS_FILE).write_text(words, encoding="utf-8")
    with pytest.raises(WordVectorError, match=problem):
        load_word_vectors(tmp_path)


def test_non_finite_vectors_are_refused(tmp_path):
    save_file({"vectors": torch.tensor([[0.0, float("nan")]])}, str(tmp_path / VECTORS_FILE))
    (tmp_path / WORDS_FILE).write_text("a\n", encoding="utf-8")
    with pytest.raises(WordVectorError, match="non-finite"):
        load_word_vectors(tmp_path)


def test_vector_training_keeps_a_users_folder(vectors, tmp_path, script_here):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    text = write_text(tmp_path / "t.txt.gz", lines=50)
    result = script_here(TRAIN_VECTORS, "--text-files", text, "--output-dir", folder)
    assert result.returncode == 2 and "is not empty" in result.stderr
    result = script_here(TRAIN_VECTORS, "--text-files", text, "--output-dir", folder, "--overwrite")
    assert result.returncode == 2 and "holds no vectors of this package" in result.stderr
    assert (folder / "notes.txt").read_text() == "keep me"
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    result = script_here(TRAIN_VECTORS, "--text-files", empty, "--output-dir", tmp_path / "v")
    assert result.returncode == 2 and "holds no text" in result.stderr
    assert not (tmp_path / "v").exists()


def test_word2vec_vectors_for_the_comparison(tmp_path, script_here):
    text = write_text(tmp_path / "t.txt.gz", lines=200)
    output = tmp_path / "w2v"
    result = script_here(TRAIN_VECTORS, "--text-files", text, "--output-dir", output, "--method", "word2vec")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1])["method"] == "word2vec skip-gram (gensim)"
    words, vectors = load_word_vectors(output)
    assert "the" in words and vectors.shape == (len(words), 100)


# --- the vectors' extra words have no word-embedding rows ----------------------------------

PACKAGE_FREE = """
import json, sys
sys.modules["cont_transformer"] = None  # importing the package now fails
import torch
from transformers import AutoModelForTokenClassification
folder, ids = sys.argv[1], torch.tensor(json.loads(sys.argv[2]))
model = AutoModelForTokenClassification.from_pretrained(folder, trust_remote_code=True).eval()
assert type(model).__module__.startswith("transformers_modules."), type(model).__module__
with torch.no_grad():
    logits = model(ids).logits
print(json.dumps({"rows": model.get_input_embeddings().num_embeddings, "logits": logits.tolist()}))
"""


def test_vector_only_ids_have_no_word_embedding_rows():
    """A table that ends at the last whole word: a vector-only word and an unknown word read
    [UNK]'s row; a whole word past the table, a misordered vocabulary and a masked LM with
    a short table are refused in one line."""
    from cont_transformer import (
        ContTransformerConfig,
        ContTransformerForMaskedLM,
        ContTransformerForTokenClassification,
    )
    from cont_transformer.tagging.starts import whole_word_rows
    from cont_transformer.text.tokenization import build_tokenizer, spelling_tables

    training, vector_only = ["The", "dog", "barks", "."], ["zygote", "cat"]
    tokenizer = build_tokenizer([*training, *vector_only], spelling=True)
    spelling, char_vocab_size = spelling_tables(tokenizer, set(training), 20)
    rows = whole_word_rows(spelling["whole_word"])
    assert rows == 3 + len(training) < len(tokenizer)  # the special tokens, then the training words
    sizes = {"hidden_size": 8, "num_attention_heads": 1, "intermediate_size": 8, "num_basis": 2}
    config = ContTransformerConfig(
        vocab_size=len(tokenizer), **sizes, word_representation="word+chars", unk_token_id=tokenizer.unk_token_id,
        char_vocab_size=char_vocab_size, char_hidden_size=8, word_vector_size=4, num_word_embeddings=rows,
        id2label={0: "A", 1: "B"},
    )  # fmt: skip
    model = ContTransformerForTokenClassification(config).eval()
    embeddings = model.cont_transformer.embeddings
    assert embeddings.word_embeddings.weight.shape == (rows, 8)
    assert embeddings.static_vectors.shape == (len(tokenizer), 4) and embeddings.whole_word.shape == (len(tokenizer),)
    embeddings.set_spelling(**spelling)
    ids = tokenizer(["The", "zygote", "barks", "."], is_split_into_words=True, return_tensors="pt")["input_ids"]
    assert int(ids.max()) >= rows  # the vector-only word's id is past the table
    assert model(ids).logits.shape == (1, 5, 2)
    # Its word channel is [UNK]'s: changing [UNK]'s row changes its vector, not The's.
    before = embeddings(ids).vectors
    with torch.no_grad():
        embeddings.word_embeddings.weight[tokenizer.unk_token_id] += 1.0
    changed = (embeddings(ids).vectors - before).abs().sum(-1)[0]
    assert changed[2] > 0 and changed[1] == 0  # words: [ROOT], The, zygote, barks, .
    # Buffers that claim a whole word past the table are refused, and could not index past it.
    bad = spelling["whole_word"].clone()
    bad[rows] = True
    with pytest.raises(ValueError, match=f"whole_word: id {rows} is a whole word but the word embeddings have {rows}"):
        embeddings.set_spelling(**{**spelling, "whole_word": bad})
    embeddings.whole_word.copy_(bad)
    assert model(ids).logits.shape == (1, 5, 2)
    misordered = spelling["whole_word"].clone()
    misordered[3], misordered[rows] = False, True
    with pytest.raises(ValueError, match="vocabulary: id 3 is not a whole word but comes before the last one"):
        whole_word_rows(misordered)
    with pytest.raises(ValueError, match="num_word_embeddings: a masked language model scores every id"):
        ContTransformerForMaskedLM(config)
    for fields, message in (
        ({"num_word_embeddings": len(tokenizer) + 1}, "must lie in"),
        ({"num_word_embeddings": 1}, "leave unk_token_id=1 without its row"),
        ({"word_representation": "word", "num_word_embeddings": rows}, "'word' representation embeds every id"),
    ):
        with pytest.raises(ValueError, match=f"^num_word_embeddings: .*{message}"):
            ContTransformerConfig(**{**config.to_dict(), **fields})
    assert ContTransformerConfig(vocab_size=10, num_basis=2).word_embedding_rows == 10  # 0, as in older configs


@pytest.mark.slow
def test_a_saved_vector_tagger_has_rows_for_its_whole_words_only(vectors, tmp_path):
    """The saved tagger's word embeddings end at its last whole word, and it loads and tags a
    vector-only word with the package and, without it, by remote code."""
    import os
    import subprocess
    import sys

    from transformers import AutoTokenizer

    from cont_transformer.modeling_cont_transformer import ContTransformerForTokenClassification
    from cont_transformer.tagging.tag import Tagger

    output = tmp_path / "tagger"
    _run(TRAIN_POS, *TINY_TAGGER, "--word-vectors", str(vectors), "--output-dir", str(output))
    best = output / "best"
    tokenizer = AutoTokenizer.from_pretrained(best)
    model = ContTransformerForTokenClassification.from_pretrained(best).eval()
    embeddings = model.cont_transformer.embeddings
    rows = embeddings.word_embeddings.weight.shape[0]
    assert rows == model.config.num_word_embeddings == 1 + int(embeddings.whole_word.nonzero().max())
    assert rows < len(tokenizer) == model.config.vocab_size
    word_id = tokenizer.convert_tokens_to_ids(TEXT_ONLY_WORD)
    assert word_id >= rows and bool(embeddings.static_vectors[word_id].any())
    tagged = Tagger.from_pretrained(best)([["The", TEXT_ONLY_WORD, "barks", "."]])
    assert [w.text for w in tagged.sentences[0].words] == ["The", TEXT_ONLY_WORD, "barks", "."]
    assert all(w.upos for w in tagged.sentences[0].words)
    ids = tokenizer(["The", TEXT_ONLY_WORD, "barks", "."], is_split_into_words=True, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logits = model(ids).logits
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf_home"), "OMP_NUM_THREADS": "1"}
    env.pop("PYTHONPATH", None)
    result = subprocess.run(
        [sys.executable, "-I", "-c", PACKAGE_FREE, str(best), json.dumps(ids.tolist())],
        check=False, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    remote = json.loads(result.stdout.strip().splitlines()[-1])
    assert remote["rows"] == rows
    torch.testing.assert_close(torch.tensor(remote["logits"]), logits)


def test_vectors_refuse_a_language_model_without_spelling(vectors, tiny_tagger_config, tmp_path, script_here):
    """A word-only language model would give the vectors' new words untrained embeddings."""
    from cont_transformer import ContTransformerForMaskedLM

    lm = tmp_path / "lm"
    ContTransformerForMaskedLM(tiny_tagger_config(word_representation="word")).save_pretrained(lm)
    output = tmp_path / "run"
    flags = ["--treebank", "sample", "--model-name-or-path", str(lm), "--word-vectors", str(vectors)]
    result = script_here(TRAIN_POS, *flags, "--output-dir", output)
    assert result.returncode == 2 and not output.exists()
    assert "needs a spelling representation" in result.stderr.strip().splitlines()[-1]
