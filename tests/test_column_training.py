"""Training on every UD column a treebank annotates: the columns chosen, a treebank without
lemmas, the paper's one-column model, and the scores every column gets in evaluation."""

import json

import pytest
import torch

from cont_transformer import build_tokenizer
from cont_transformer.lemmas import edit_script
from cont_transformer.processing_cont_transformer import ContTransformerTaggerProcessor
from cont_transformer.runtime.model_folders import BEST_MODEL_DIR
from cont_transformer.tagging.arguments import parse_columns, resolve_arguments
from cont_transformer.tagging.evaluation import GoldColumns, reported_rows
from cont_transformer.tagging.family import eval_set
from cont_transformer.tagging.metrics import load_conll18
from cont_transformer.tagging.sample_treebank import write_sample_treebank
from cont_transformer.tagging.trainer import train

TINY = {
    "max_steps": 4,
    "warmup_steps": 1,
    "refine_steps": "none",
    "final_num_basis": 2,
    "eval_steps": 2,
    "save_steps": 4,
    "batch_size": 4,
    "hidden_size": 16,
    "intermediate_size": 16,
    "char_hidden_size": 8,
    "word_dropout": 0.0,
}


def _conllu(rows_per_sentence) -> str:
    """CoNLL-U of sentences given as ``(form, lemma, upos, xpos, feats)`` rows."""
    sentences = []
    for words in rows_per_sentence:
        lines = [
            f"{i}\t{f}\t{l}\t{u}\t{x}\t{feats}\t0\troot\t_\t_" for i, (f, l, u, x, feats) in enumerate(words, start=1)
        ]
        sentences.append("\n".join(lines) + "\n")
    return "\n".join(sentences) + "\n"


def _no_lemma_treebank(folder):
    words = [
        ("Dogs", "_", "NOUN", "NNS", "Number=Plur"),
        ("bark", "_", "VERB", "VBP", "_"),
        (".", "_", "PUNCT", ".", "_"),
    ]
    other = [
        ("A", "_", "DET", "DT", "_"),
        ("cat", "_", "NOUN", "NN", "Number=Sing"),
        ("sleeps", "_", "VERB", "VBZ", "_"),
    ]
    text = _conllu([words, other] * 6)
    paths = {}
    for split in ("train", "dev"):
        paths[split] = folder / f"x-ud-{split}.conllu"
        paths[split].write_text(text)
    return paths


def test_parse_columns():
    assert parse_columns("xpos, UPOS,lemma") == ("xpos", "upos", "lemma")
    for bad in ("xpos,xpos", "deprel", ","):
        with pytest.raises(ValueError, match="columns"):
            parse_columns(bad)


def test_reported_rows_and_the_selection_score():
    assert reported_rows(["xpos"]) == ["xpos"]
    assert reported_rows(["xpos", "upos", "feats", "lemma"]) == ["upos", "xpos", "ufeats", "alltags", "lemmas"]
    assert reported_rows(["upos", "feats"]) == ["upos", "ufeats"]  # AllTags needs XPOS too
    words = [["Dogs", "barked"]]
    gold = {
        "upos": [["NOUN", "VERB"]],
        "xpos": [["NNS", "VBD"]],
        "feats": [["Number=Plur", "Foo=Bar"]],
        "lemma": [["dog", "bark"]],
    }
    scripts = [str(edit_script("Dogs", "dog")), str(edit_script("barked", "bark"))]
    labels = {"xpos": ["NNS", "VBD"], "feats": ["Number=Plur", "_"], "lemma": scripts}
    tokenizer = build_tokenizer(["Dogs", "barked"])
    processor = ContTransformerTaggerProcessor(tokenizer, labels)
    scores = GoldColumns(words, gold, labels, "xpos", tokenizer).scores(
        {"xpos": torch.tensor([0, 0]), "feats": torch.tensor([0, 1]), "lemma": torch.tensor([0, 1])}, processor
    )
    # UFeats compares universal features only: "Foo=Bar" and "_" agree, as the scorer says.
    assert (scores["xpos"], scores["ufeats"], scores["lemmas"]) == (0.5, 1.0, 1.0)
    assert scores["accuracy"] == pytest.approx((scores["xpos"] + scores["ufeats"] + scores["lemmas"]) / 3)


@pytest.mark.slow
def test_a_treebank_without_lemmas_trains_without_a_lemma_head(tmp_path):
    paths = _no_lemma_treebank(tmp_path)
    args = resolve_arguments(
        {
            **TINY,
            "treebank": "x",
            "train_file": [str(paths["train"])],
            "dev_file": [str(paths["dev"])],
            "output_dir": str(tmp_path / "run"),
        }
    )
    metrics = train(args)
    assert metrics["columns"] == ["xpos", "upos", "feats"]
    assert set(reported_rows(metrics["columns"])) <= set(metrics["best"]) and "lemmas" not in metrics["best"]
    config = json.loads((tmp_path / "run" / BEST_MODEL_DIR / "config.json").read_text())
    config.update(json.loads((tmp_path / "run" / BEST_MODEL_DIR / "columns.json").read_text()))
    assert config["primary_column"] == "xpos" and sorted(config["column_labels"]) == ["feats", "upos"]
    # The seen (UPOS, XPOS, FEATS) triples, each of known labels, for joint decoding.
    labels = {
        "upos": config["column_labels"]["upos"],
        "xpos": list(config["id2label"].values()),
        "feats": config["column_labels"]["feats"],
    }
    assert config["tag_combinations"]
    assert all(
        u in labels["upos"] and x in labels["xpos"] and f in labels["feats"] for u, x, f in config["tag_combinations"]
    )
    # Asking for lemmas there is an error naming the column.
    with pytest.raises(ValueError, match="columns: the train split has no lemma"):
        train(resolve_arguments({**vars(args), "columns": "xpos,lemma", "output_dir": str(tmp_path / "r2")}))


@pytest.mark.slow
def test_one_column_model_is_the_papers_and_multi_column_eval_sets_score_every_column(tmp_path):
    files = write_sample_treebank(tmp_path / "data", num_train=40, num_dev=10)
    common = {**TINY, "treebank": "sample", "train_file": [str(files["train"])], "dev_file": [str(files["validation"])]}
    single = train(resolve_arguments({**common, "columns": "xpos", "output_dir": str(tmp_path / "one")}))
    assert single["columns"] == ["xpos"] and single["best"]["accuracy"] == single["best"]["xpos"]
    assert {"upos", "ufeats", "lemmas"}.isdisjoint(single["best"])
    config = json.loads((tmp_path / "one" / BEST_MODEL_DIR / "config.json").read_text())
    assert not config.get("column_sizes") and not (tmp_path / "one" / BEST_MODEL_DIR / "columns.json").exists()
    # The compression tools' eval set of a multi-column model scores every column.
    train(resolve_arguments({**common, "output_dir": str(tmp_path / "all")}))
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    folder = tmp_path / "all" / BEST_MODEL_DIR
    model = AutoModelForTokenClassification.from_pretrained(folder)
    evaluation = eval_set(model, AutoTokenizer.from_pretrained(folder), folder, files["validation"], 8)
    scores = evaluation.scores(model)
    assert list(scores) == ["accuracy", "upos", "xpos", "ufeats", "alltags", "lemmas"]
    assert evaluation.accuracy(model) == scores["accuracy"]
    # ... equal to the CoNLL 2018 scorer on the model's predictions.
    from cont_transformer.tagging.tag import Tagger
    from cont_transformer.tagging.tag_files import tag_file

    tag_file(
        Tagger.from_pretrained(folder, device="cpu"),
        files["validation"],
        tmp_path / "p.conllu",
        input_format="conllu",
        progress=False,
    )
    official = load_conll18().compute(
        predictions=[(tmp_path / "p.conllu").read_text()], references=[files["validation"].read_text()]
    )
    assert official["Lemmas"]["aligned_accuracy"] == pytest.approx(scores["lemmas"], abs=1e-12)
    assert official["UFeats"]["aligned_accuracy"] == pytest.approx(scores["ufeats"], abs=1e-12)
