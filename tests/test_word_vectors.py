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

from cont_transformer.tagging.word_vectors import (
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


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--word-representation", "word"], "needs a spelling representation"),
    ],
)
def test_word_vectors_refuse_contradictory_flags(vectors, tmp_path, flags, message):
    output = tmp_path / "run"
    result = _run(
        TRAIN_POS, *TINY_TAGGER, "--word-vectors", str(vectors), *flags, "--output-dir", str(output), check=False
    )
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not output.exists()


def test_a_folder_without_vectors_is_refused_before_training(tmp_path):
    result = _run(
        TRAIN_POS, *TINY_TAGGER, "--word-vectors", str(tmp_path), "--output-dir", str(tmp_path / "run"), check=False
    )
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


def test_vector_training_keeps_a_users_folder(vectors, tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    text = write_text(tmp_path / "t.txt.gz", lines=50)
    result = _run(TRAIN_VECTORS, "--text-files", str(text), "--output-dir", str(folder), check=False)
    assert result.returncode == 2 and "is not empty" in result.stderr
    result = _run(TRAIN_VECTORS, "--text-files", str(text), "--output-dir", str(folder), "--overwrite", check=False)
    assert result.returncode == 2 and "holds no vectors of this package" in result.stderr
    assert (folder / "notes.txt").read_text() == "keep me"
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    result = _run(TRAIN_VECTORS, "--text-files", str(empty), "--output-dir", str(tmp_path / "v"), check=False)
    assert result.returncode == 2 and "holds no text" in result.stderr
    assert not (tmp_path / "v").exists()


def test_word2vec_vectors_for_the_comparison(tmp_path):
    text = write_text(tmp_path / "t.txt.gz", lines=200)
    output = tmp_path / "w2v"
    result = _run(TRAIN_VECTORS, "--text-files", str(text), "--output-dir", str(output), "--method", "word2vec")
    assert json.loads(result.stdout.strip().splitlines()[-1])["method"] == "word2vec skip-gram (gensim)"
    words, vectors = load_word_vectors(output)
    assert "the" in words and vectors.shape == (len(words), 100)
