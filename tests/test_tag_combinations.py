"""Joint decoding of UPOS, XPOS and FEATS over the triples seen in training: the config
field, the decoding, and adding the triples to a trained model's folder."""

import json

import pytest
import torch

from cont_transformer import (
    ContTransformerConfig,
    ContTransformerForTokenClassification,
    build_tokenizer,
)
from cont_transformer.tagging.combinations import main as add_main
from cont_transformer.tagging.tag import Tagger

WORDS = ["the", "dog", "walked"]
XPOS = ["DT", "NN", "VBD"]
LABELS = {"upos": ["DET", "NOUN", "VERB"], "feats": ["Number=Sing", "Tense=Past", "_"]}
SEEN = [["DET", "DT", "_"], ["NOUN", "NN", "Number=Sing"], ["VERB", "VBD", "Tense=Past"]]
TRAIN = "\n".join(  # noqa: FLY002
    [
        "1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_",
        "2\tdog\tdog\tNOUN\tNN\tNumber=Sing\t3\tnsubj\t_\t_",
        "3\twalked\twalk\tVERB\tVBD\tTense=Past\t0\troot\t_\t_",
        "4\tran\trun\tVERB\tVBD\tMood=Ind\t3\tconj\t_\t_",  # a FEATS the model has no label for
        "",
        "",
    ]
)


def rigged_model(combinations=None):
    """Independent argmax: NOUN / VBD / Number=Sing, a triple never seen; of the seen ones
    NOUN / NN / Number=Sing scores best (only XPOS gives way)."""
    biases = {"classifier": [0.0, 1.0, 3.0], "upos": [0.0, 3.0, 1.0], "feats": [3.0, 0.0, 0.0]}
    return biased_model(XPOS, "xpos", LABELS, biases, combinations)


def biased_model(primary_labels, primary, column_labels, biases, combinations):
    """A tiny tagger whose heads give every word the same scores: each head's ``biases``."""
    config = ContTransformerConfig(
        vocab_size=len(WORDS) + 3,
        hidden_size=16,
        num_attention_heads=2,
        intermediate_size=24,
        num_basis=2,
        id2label=dict(enumerate(primary_labels)),
        label2id={t: i for i, t in enumerate(primary_labels)},
        primary_column=primary,
        column_labels=column_labels,
        tag_combinations=combinations,
    )
    model = ContTransformerForTokenClassification(config).eval()
    heads = {"classifier": model.classifier, **model.column_classifiers}
    with torch.no_grad():
        for name, head in heads.items():
            head.weight.zero_()
            head.bias.copy_(torch.tensor(biases[name]))
    return model


def tagged(model):
    (sentence,) = Tagger(model, build_tokenizer(WORDS), batch_size=64)([["the", "dog"]])
    return sentence


def test_without_combinations_each_column_takes_its_own_argmax():
    sentence = tagged(rigged_model())
    assert (sentence.upos, sentence.xpos, sentence.feats) == (
        ["NOUN"] * 2,
        ["VBD"] * 2,
        ["Number=Sing"] * 2,
    )


def test_joint_decoding_picks_the_best_seen_triple():
    sentence = tagged(rigged_model(SEEN))
    assert (sentence.upos, sentence.xpos, sentence.feats) == (
        ["NOUN"] * 2,
        ["NN"] * 2,
        ["Number=Sing"] * 2,
    )
    # Only seen triples: without NOUN / NN, the verb's triple beats the determiner's.
    sentence = tagged(rigged_model([SEEN[0], SEEN[2]]))
    assert (sentence.upos, sentence.xpos, sentence.feats) == (
        ["VERB"] * 2,
        ["VBD"] * 2,
        ["Tense=Past"] * 2,
    )


def test_config_round_trips_and_rejects_bad_combinations(tmp_path):
    rigged_model(SEEN).config.save_pretrained(tmp_path)
    assert ContTransformerConfig.from_pretrained(tmp_path).tag_combinations == SEEN
    with pytest.raises(ValueError, match="tag_combinations: the model predicts fewer than two"):
        ContTransformerConfig(  # XPOS alone: nothing to decode jointly
            vocab_size=9,
            id2label={0: "DT"},
            primary_column="xpos",
            tag_combinations=[["DET", "DT", "_"]],
        )
    with pytest.raises(ValueError, match="tag_combinations: every combination is an"):
        ContTransformerConfig(
            vocab_size=9,
            id2label={0: "DT"},
            primary_column="xpos",
            column_labels={"upos": ["DET"]},
            tag_combinations=[["DET", "DT"]],
        )


def test_adding_combinations_to_a_saved_model(tmp_path, capsys):
    folder, train = tmp_path / "model", tmp_path / "train.conllu"
    rigged_model().save_pretrained(folder)
    build_tokenizer(WORDS).save_pretrained(folder)
    train.write_text(TRAIN)
    assert add_main([str(folder), str(train)]) == 0
    assert json.loads((folder / "columns.json").read_text())["tag_combinations"] == SEEN
    assert "tag_combinations" not in json.loads((folder / "config.json").read_text())
    assert not list(folder.glob("*.tmp"))
    (sentence,) = Tagger.from_pretrained(folder, device="cpu")([["the"]])
    assert (sentence.upos, sentence.xpos) == (["NOUN"], ["NN"])
    assert add_main([str(tmp_path / "missing"), str(train)]) == 1
    assert "missing" in capsys.readouterr().err
    # The weights record the config they go with: a config.json edited by hand is refused, untouched.
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "time_horizon": 2.0}))
    (folder / "columns.json").write_text(
        json.dumps({"column_labels": json.loads((folder / "columns.json").read_text())["column_labels"]})
    )
    before = [(folder / name).read_bytes() for name in ("config.json", "columns.json")]
    assert add_main([str(folder), str(train)]) == 1
    assert "time_horizon (2.0, saved with 1.0)" in capsys.readouterr().err
    assert [(folder / name).read_bytes() for name in ("config.json", "columns.json")] == before


def upos_feats_model(combinations=None):
    """A tagger without XPOS (Marathi-UFAL, Hungarian-Szeged): UPOS primary, FEATS beside it.
    Independent argmax: VERB / Number=Sing, never seen together; of the seen pairs,
    NOUN / Number=Sing beats VERB / Tense=Past."""
    biases = {"classifier": [0.0, 2.5, 3.0], "feats": [3.0, 0.0, 0.0]}
    return biased_model(LABELS["upos"], "upos", {"feats": LABELS["feats"]}, biases, combinations)


def test_two_joint_columns_are_decoded_jointly_without_the_third():
    from datasets import Dataset

    from cont_transformer.tagging.combinations import tag_combinations

    train = Dataset.from_dict(
        {"tokens": [WORDS], "upos": [["DET", "NOUN", "VERB"]], "feats": [["_", "Number=Sing", "Tense=Past"]]}
    )
    labels = {"upos": LABELS["upos"], "feats": LABELS["feats"]}
    pairs = tag_combinations(train, labels)
    assert pairs == [["DET", "_", "_"], ["NOUN", "_", "Number=Sing"], ["VERB", "_", "Tense=Past"]]
    assert tag_combinations(train, {"upos": LABELS["upos"]}) is None  # one column: nothing to join
    alone = tagged(upos_feats_model())
    assert (alone.upos, alone.feats) == (["VERB"] * 2, ["Number=Sing"] * 2)
    joint = tagged(upos_feats_model(pairs))
    assert (joint.upos, joint.feats) == (["NOUN"] * 2, ["Number=Sing"] * 2)
    assert joint.xpos is None  # not predicted: written _
