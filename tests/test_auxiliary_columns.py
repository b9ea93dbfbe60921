"""DEPREL as an auxiliary column: read from CoNLL-U, learnt beside the tags when asked for,
scored on dev, given to a student by its teachers, and never output."""

import json

import pytest
import torch

from cont_transformer import ContTransformerConfig, build_tokenizer
from cont_transformer.configuration_cont_transformer import PREDICTED_COLUMNS
from cont_transformer.processing_cont_transformer import ContTransformerTaggerProcessor
from cont_transformer.runtime.model_folders import BEST_MODEL_DIR
from cont_transformer.tagging.arguments import parse_columns
from cont_transformer.tagging.columns import annotated_columns, column_labels, primary_column
from cont_transformer.tagging.data import load_treebank, read_conllu
from cont_transformer.tagging.evaluation import GoldColumns
from cont_transformer.tagging.sample_treebank import write_sample_treebank
from cont_transformer.tagging.self_training import silver_sentences, vote


@pytest.fixture(scope="module")
def sample_files(tmp_path_factory):
    return write_sample_treebank(tmp_path_factory.mktemp("sample"), num_train=200, num_dev=40)


def test_deprel_is_read_and_labelled_but_learnt_only_when_asked_for(sample_files):
    sentences = read_conllu(sample_files["train"])
    relations = {deprel for sentence in sentences for deprel in sentence["deprel"]}
    assert {"root", "punct"} <= relations and "_" not in relations
    train = load_treebank({"train": sample_files["train"], "dev": sample_files["validation"]})["train"]
    assert annotated_columns(train) == ("upos", "xpos", "feats", "lemma")  # the default: no DEPREL
    assert annotated_columns(train, PREDICTED_COLUMNS)[-1] == "deprel"
    assert column_labels(train, ["xpos", "deprel"])["deprel"] == sorted(relations)
    assert parse_columns("xpos,deprel") == ("xpos", "deprel") and primary_column(["deprel", "lemma"]) == "lemma"
    with pytest.raises(ValueError, match="columns: 'deprel' is learnt only beside one of upos,xpos,feats,lemma"):
        parse_columns("deprel")


def test_a_config_keeps_deprel_beside_the_tags_and_never_as_the_primary_column():
    config = ContTransformerConfig(
        vocab_size=10, num_basis=2, id2label={0: "NN"}, primary_column="xpos", column_labels={"deprel": ["nsubj"]}
    )
    assert config.predicted_columns == ("xpos", "deprel")
    with pytest.raises(ValueError, match="primary_column: choose one of"):
        ContTransformerConfig(vocab_size=10, num_basis=2, id2label={0: "nsubj"}, primary_column="deprel")


def test_teachers_vote_on_deprel_as_on_lemmas():
    def tags(*deprels):
        return {
            "upos": ["NOUN"] * 2,
            "xpos": ["NN"] * 2,
            "feats": ["_"] * 2,
            "lemma": ["a"] * 2,
            "deprel": list(deprels),
        }

    assert vote([tags("obj", "root"), tags("nsubj", "root"), tags("nsubj", "dep")])["deprel"] == ["nsubj", "root"]


def test_deprel_is_scored_only_on_data_that_has_it():
    words = [["Dogs", "barked"]]
    gold = {"xpos": [["NNS", "VBD"]], "deprel": [["nsubj", "root"]]}
    labels = {"xpos": ["NNS", "VBD"], "deprel": ["nsubj", "root"]}
    predicted = {"xpos": torch.tensor([0, 1]), "deprel": torch.tensor([0, 0])}
    tokenizer = build_tokenizer(["Dogs", "barked"])
    processor = ContTransformerTaggerProcessor(tokenizer, labels)
    assert GoldColumns(words, gold, labels, "xpos", tokenizer).scores(predicted, processor)["deprel"] == 0.5
    # A treebank without DEPREL (all "_", or no column): no meaningless score of 0.
    for without in ({"xpos": gold["xpos"], "deprel": [["_", "_"]]}, {"xpos": gold["xpos"]}):
        scores = GoldColumns(words, without, labels, "xpos", tokenizer).scores(predicted, processor)
        assert "deprel" not in scores and scores["xpos"] == 1.0


@pytest.mark.slow
def test_a_tagger_learns_deprel_scores_it_and_gives_it_to_a_student_only(sample_files, tmp_path):
    from hostile import train_pos

    from cont_transformer.tagging.tag import Tagger

    data = ("--train-file", str(sample_files["train"]), "--dev-file", str(sample_files["validation"]))
    run = tmp_path / "run"
    result = train_pos("recipes/sample.json", *data, "--max-steps", "60", "--output-dir", str(run),
                       "--columns", "xpos,upos,feats,lemma,deprel")  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["columns"][-1] == "deprel" and 0.0 < metrics["best"]["deprel"] <= 1.0
    assert "deprel" not in {"upos", "xpos", "ufeats", "lemmas"} & set(metrics["best"])  # not selected on
    assert json.loads((run / BEST_MODEL_DIR / "config.json").read_text())["column_sizes"]["deprel"] > 0
    relations = json.loads((run / BEST_MODEL_DIR / "columns.json").read_text())["column_labels"]["deprel"]
    card = (run / BEST_MODEL_DIR / "README.md").read_text()
    assert f"| deprel head (labels), learnt as a training signal, not output | {len(relations)} |" in card
    tagger = Tagger.from_pretrained(run, device="cpu")
    assert tagger.columns == ("lemma", "upos", "xpos", "feats") and tagger.auxiliary_columns == ("deprel",)
    # What it gives has no DEPREL (there is no head to attach it to) ...
    conllu = tagger("The old dog saw a bird.").to_conllu()
    assert {line.split("\t")[7] for line in conllu.splitlines() if line and not line.startswith("#")} == {"_"}
    # ... but as a teacher it gives every word one of its relations.
    (predicted,) = tagger.predict_columns([["The", "old", "dog", "saw", "a", "bird", "."]], auxiliary=True)
    assert len(predicted["deprel"]) == 7 and set(predicted["deprel"]) <= set(relations)
    text = tmp_path / "text.txt"
    text.write_text("The old dog saw a bird .\nTom saw the cat .\n")
    sentences, columns = silver_sentences(run, [str(text)], 5, seed=0, device="cpu")
    assert columns[-1] == "deprel" and all(set(s["deprel"]) <= set(relations) for s in sentences)
