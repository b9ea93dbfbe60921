"""Every UD column from one encoder: the data's columns and labels, the heads, batches."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from transformers import AutoModelForTokenClassification, pipeline

from cont_transformer import (
    ContTransformerConfig,
    ContTransformerForTokenClassification,
    build_tokenizer,
    change_basis,
    set_num_steps,
)
from cont_transformer.tagging.columns import (
    annotated_columns,
    canonical_feats,
    column_labels,
    decode_column,
    encode_column,
    primary_column,
)
from cont_transformer.tagging.data import UNSEEN_TAG, load_treebank
from cont_transformer.text.batching import IGNORE_INDEX, PaddingCollator, encode_for_training

WORDS = ["the", "cat", "cats", "sat", "walked", "on", "a", "mat", "."]
TAGS = ["DT", "NN", "NNS", "VBD", "IN", "."]
COLUMNS = {
    "upos": ["ADP", "DET", "NOUN", "PUNCT", "VERB"],
    "feats": ["Definite=_", "Definite=Def", "Number=_", "Number=Plur", "Number=Sing"],
    "lemma": ["lower|-0+|-0+", "lower|-0+|-1+", "lower|-0+|-2+"],
}


def row(i, form, lemma, upos, xpos, feats="_"):
    return f"{i}\t{form}\t{lemma}\t{upos}\t{xpos}\t{feats}\t0\troot\t_\t_"


TRAIN = "\n".join(
    [
        row(1, "The", "the", "DET", "DT", "Definite=Def|PronType=Art"),
        row(2, "cats", "cat", "NOUN", "NNS", "Number=Plur"),
        row(3, "walked", "walk", "VERB", "VBD", "Tense=Past|Mood=Ind"),
        row(4, ".", ".", "PUNCT", "."),
        "",
        row(1, "Tom", "Tom", "PROPN", "NNP", "Number=Sing"),
        row(2, "sat", "sit", "VERB", "VBD", "Mood=Ind|Tense=Past"),
        "",
        "",
    ]
)
DEV = "\n".join([row(1, "Dogs", "dog", "NOUN", "NNS", "Number=Plur|Case=Nom"), "", ""])


@pytest.fixture
def treebank(tmp_path):
    (tmp_path / "train.conllu").write_text(TRAIN)
    (tmp_path / "dev.conllu").write_text(DEV)
    return load_treebank({"train": tmp_path / "train.conllu", "dev": tmp_path / "dev.conllu"})


def test_annotated_columns_and_their_labels(treebank):
    train = treebank["train"]
    assert annotated_columns(train) == ("upos", "xpos", "feats", "lemma")
    assert primary_column(annotated_columns(train)) == "xpos"
    labels = column_labels(train)
    assert labels["upos"] == ["DET", "NOUN", "PROPN", "PUNCT", "VERB"]
    assert labels["feats"] == ["Definite=Def|PronType=Art", "Mood=Ind|Tense=Past", "Number=Plur", "Number=Sing", "_"]
    assert labels["lemma"][0] == "lower|-0+|-0+"  # the, .: the most frequent script
    assert set(labels["lemma"]) == {
        "lower|-0+|-0+",
        "lower|-0+|-1+",
        "lower|-0+|-2+",
        "keep|-0+|-0+",
        "lower|-0+|-2+it",
    }
    factored = column_labels(train, ["feats"], feats_mode="factored")["feats"]
    assert factored == [
        "Definite=_",
        "Definite=Def",
        "Mood=_",
        "Mood=Ind",
        "Number=_",
        "Number=Plur",
        "Number=Sing",
        "PronType=_",
        "PronType=Art",
        "Tense=_",
        "Tense=Past",
    ]
    assert column_labels(train, ["lemma"], lemma_min_count=2) == {"lemma": ["lower|-0+|-0+"]}


def test_a_treebank_without_lemmas_or_features_gets_no_such_column(tmp_path):
    bare = TRAIN.replace("\tthe\t", "\t_\t").split("\n")
    bare = "\n".join(
        "\t".join(f[:2] + ["_"] + f[3:5] + ["_"] + f[6:]) if "\t" in line else line
        for line in bare
        for f in [line.split("\t")]
    )
    (tmp_path / "train.conllu").write_text(bare)
    train = load_treebank({"train": tmp_path / "train.conllu"})["train"]
    assert annotated_columns(train) == ("upos", "xpos")
    assert set(column_labels(train)) == {"upos", "xpos"}
    with pytest.raises(ValueError, match="no lemma"):
        column_labels(train, ["xpos", "lemma"])


def test_encode_and_decode_each_column(treebank):
    train, dev = treebank["train"], treebank["validation"]
    labels = column_labels(train)
    lemma_ids = encode_column("lemma", dev["tokens"], dev["lemma"], labels["lemma"])
    assert decode_column("lemma", ["Dogs"], lemma_ids[0], labels["lemma"]) == ["dog"]
    assert decode_column("lemma", ["Blorped"], [labels["lemma"].index("lower|-0+|-2+")], labels["lemma"]) == ["blorp"]
    # Whole features: a FEATS string unseen in train has no label.
    assert encode_column("feats", dev["tokens"], dev["feats"], labels["feats"]) == [[UNSEEN_TAG]]
    assert encode_column("feats", [["x"]], [["Tense=Past|Mood=Ind"]], labels["feats"]) == [[1]]
    # Factored: per feature, the value (Case is unknown to train and is left out).
    factored = column_labels(train, ["feats"], feats_mode="factored")["feats"]
    ids = encode_column("feats", dev["tokens"], dev["feats"], factored, "factored")
    assert ids == [[[0, 0, 1, 0, 0]]]
    assert decode_column("feats", ["Dogs"], ids[0], factored, "factored") == ["Number=Plur"]
    assert decode_column("feats", ["x"], [[1, 1, 0, 0, 1]], factored, "factored") == [
        "Definite=Def|Mood=Ind|Tense=Past"
    ]
    assert decode_column("feats", ["x"], [[0] * 5], factored, "factored") == ["_"]
    assert canonical_feats("Tense=Past|Mood=Ind|case=Nom") == "case=Nom|Mood=Ind|Tense=Past"


def test_collator_pads_every_label_column_like_labels(treebank):
    tokenizer = build_tokenizer(WORDS)
    train = treebank["train"]
    labels = column_labels(train, feats_mode="factored")
    columns = {
        "upos_targets": train["upos"],
        "feats_targets": encode_column("feats", train["tokens"], train["feats"], labels["feats"], "factored"),
        "lemma_targets": encode_column("lemma", train["tokens"], train["lemma"], labels["lemma"]),
    }
    rows, _ = encode_for_training(tokenizer, train["tokens"], train["xpos"], 16, columns)
    assert set(rows[0]) == {"input_ids", "labels", "upos_targets", "feats_targets", "lemma_targets"}
    batch = PaddingCollator(tokenizer.pad_token_id)(rows)
    assert batch["feats_targets"].shape == (2, 5, 5)
    for key in ("labels", "upos_targets", "lemma_targets"):
        assert batch[key].shape == (2, 5)
        assert batch[key][1, 3:].tolist() == [IGNORE_INDEX] * 2  # padding
        assert batch[key][:, 0].tolist() == [IGNORE_INDEX] * 2  # the root
    assert (batch["feats_targets"][1, 3:] == IGNORE_INDEX).all()
    assert batch["upos_targets"][0, 1:].tolist() == train["upos"][0]


# --- the model's heads ------------------------------------------------------------------


def multi_config(**overrides) -> ContTransformerConfig:
    options = {
        "vocab_size": len(WORDS) + 3,
        "hidden_size": 16,
        "num_attention_heads": 2,
        "intermediate_size": 24,
        "num_basis": 4,
        "pad_token_id": 0,
        "bos_token_id": 2,
        "id2label": dict(enumerate(TAGS)),
        "label2id": {t: i for i, t in enumerate(TAGS)},
        "primary_column": "xpos",
        "column_labels": COLUMNS,
        "feats_mode": "factored",
    }
    return ContTransformerConfig(**{**options, **overrides})


def multi_model(**overrides) -> ContTransformerForTokenClassification:
    torch.manual_seed(0)
    return ContTransformerForTokenClassification(multi_config(**overrides)).eval()


def inputs():
    return torch.tensor([[2, 3, 4, 5, 6, 7], [2, 8, 9, 10, 0, 0]])


def all_logits(output) -> dict:
    return {k: output[k] for k in ("logits", "upos_logits", "feats_logits", "lemma_logits")}


def test_config_checks_the_columns():
    assert multi_config().predicted_columns == ("xpos", "upos", "feats", "lemma")
    with pytest.raises(ValueError, match="column_labels: 'morph'"):
        multi_config(column_labels={"morph": ["x"]})
    with pytest.raises(ValueError, match="primary column"):
        multi_config(column_labels={"xpos": ["x"]})
    with pytest.raises(ValueError, match="feats_mode"):
        multi_config(feats_mode="split")
    with pytest.raises(ValueError, match="not contiguous"):
        multi_config(column_labels={"feats": ["A=_", "B=_", "A=x"]})
    with pytest.raises(ValueError, match="primary_column"):
        multi_config(primary_column=None)


def test_each_head_has_its_logits_and_the_loss_sums_the_columns():
    model = multi_model()
    mask = torch.tensor([[1] * 6, [1] * 4 + [0] * 2])
    output = model(inputs(), mask)
    assert output.logits.shape == (2, 6, len(TAGS))
    assert output.upos_logits.shape == (2, 6, 5)
    assert output.feats_logits.shape == (2, 6, 5)  # two features side by side
    assert output.lemma_logits.shape == (2, 6, 3)
    assert output.xpos_logits is None and output.loss is None

    labels = torch.tensor([[-100, 0, 1, 3, -1, 5], [-100, 0, 2, 5, -100, -100]])
    feats = torch.tensor([[0, 2]]).expand(2, 6, 2).clone()
    feats[:, 0] = -100
    lemmas = labels.clamp(max=2)
    single = [
        model(inputs(), mask, **{name: value}).loss
        for name, value in (
            ("labels", labels),
            ("upos_targets", labels.clamp(max=4)),
            ("feats_targets", feats),
            ("lemma_targets", lemmas),
        )
    ]
    joint = model(
        inputs(), mask, labels=labels, upos_targets=labels.clamp(max=4), feats_targets=feats, lemma_targets=lemmas
    ).loss
    torch.testing.assert_close(joint, sum(single))
    # -1 (a label the model lacks) is masked like -100 in the loss.
    scored = labels.masked_fill(labels == -1, -100)
    expected = torch.nn.functional.cross_entropy(output.logits.flatten(0, 1), scored.flatten())
    torch.testing.assert_close(single[0], expected)
    # Factored features: the mean over the features of each one's cross-entropy.
    case, number = output.feats_logits[:, 1:].split([2, 3], dim=-1)
    expected = (
        torch.nn.functional.cross_entropy(case.flatten(0, 1), feats[:, 1:, 0].flatten())
        + torch.nn.functional.cross_entropy(number.flatten(0, 1), feats[:, 1:, 1].flatten())
    ) / 2
    torch.testing.assert_close(single[2], expected)
    with pytest.raises(ValueError, match="xpos_targets"):
        model(inputs(), xpos_targets=labels)


def test_transformers_trainer_reports_eval_loss_with_its_defaults(tmp_path):
    """transformers' ``Trainer`` takes as label names the parameters of ``forward`` named like
    labels and computes a loss only for batches holding every one: ``labels`` alone, the
    other columns' label ids being ``{column}_targets``."""
    from transformers import Trainer, TrainingArguments

    model = multi_model()
    mask = torch.tensor([[1] * 6, [1] * 4 + [0] * 2])
    labels = torch.tensor([[-100, 0, 1, 3, 2, 4], [-100, 0, 2, 4, -100, -100]])
    rows = [{"input_ids": inputs()[i], "attention_mask": mask[i], "labels": labels[i]} for i in range(2)]
    arguments = TrainingArguments(tmp_path, per_device_eval_batch_size=2, report_to=[], use_cpu=True)
    trainer = Trainer(model=model, args=arguments, eval_dataset=rows)
    assert trainer.label_names == ["labels"]
    metrics = trainer.evaluate()
    with torch.no_grad():
        expected = model(inputs(), mask, labels=labels).loss
    assert metrics["eval_loss"] == pytest.approx(float(expected), rel=1e-5)
    # The other columns' labels, where a batch has them, still add their losses.
    both = [dict(row, upos_targets=labels[i].clamp(max=4)) for i, row in enumerate(rows)]
    with_upos = Trainer(model=model, args=arguments, eval_dataset=both).evaluate()["eval_loss"]
    with torch.no_grad():
        joint = model(inputs(), mask, labels=labels, upos_targets=labels.clamp(max=4)).loss
    assert with_upos == pytest.approx(float(joint), rel=1e-5) and with_upos > metrics["eval_loss"]


def test_old_single_column_configs_load_and_behave_as_before(tmp_path):
    torch.manual_seed(0)
    config = multi_config(primary_column=None, column_labels=None, feats_mode="whole")
    model = ContTransformerForTokenClassification(config).eval()
    model.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    for key in ("primary_column", "column_sizes", "feats_mode"):
        saved.pop(key)  # as written before the fields existed
    (tmp_path / "config.json").write_text(json.dumps(saved))
    loaded = AutoModelForTokenClassification.from_pretrained(tmp_path).eval()
    assert not hasattr(loaded, "column_classifiers")
    assert loaded.config.predicted_columns == ()
    assert set(loaded.state_dict()) == set(model.state_dict())
    output = loaded(inputs())
    assert torch.equal(output.logits, model(inputs()).logits)
    assert output.to_tuple()[0] is output.logits  # nothing else in the tuple


def test_every_head_survives_save_load_and_compression(tmp_path):
    model = multi_model()
    model.save_pretrained(tmp_path / "source")
    loaded = AutoModelForTokenClassification.from_pretrained(tmp_path / "source").eval()
    assert loaded.config.column_labels == COLUMNS and loaded.config.feats_mode == "factored"
    for name, value in all_logits(model(inputs())).items():
        assert torch.equal(all_logits(loaded(inputs()))[name], value), name
    heads = {k: v.clone() for k, v in model.state_dict().items() if "classifier" in k}
    change_basis(model, "piecewise_linear", 3)
    set_num_steps(model, 2)
    assert all(torch.equal(model.state_dict()[k], v) for k, v in heads.items())  # heads untouched
    model.save_pretrained(tmp_path / "compressed")
    loaded = AutoModelForTokenClassification.from_pretrained(tmp_path / "compressed").eval()
    for name, value in all_logits(model(inputs())).items():
        assert torch.equal(all_logits(loaded(inputs()))[name], value), name


REMOTE = textwrap.dedent(
    """
    import json, sys
    sys.modules["cont_transformer"] = None  # importing the project now fails
    import torch
    from transformers import AutoModelForTokenClassification, pipeline
    folder, inputs = sys.argv[1], torch.tensor(json.loads(sys.argv[2]))
    model = AutoModelForTokenClassification.from_pretrained(folder, trust_remote_code=True).eval()
    with torch.no_grad():
        output = model(inputs)
    out = {k: output[k].tolist() for k in ("logits", "upos_logits", "feats_logits", "lemma_logits")}
    out["module"] = type(model).__module__
    out["pipeline"] = [e["entity"] for e in pipeline("token-classification", model=folder,
                                                     trust_remote_code=True)("the cats sat")]
    print(json.dumps(out))
    """
)


def test_every_head_loads_as_remote_code_and_the_pipeline_reads_the_primary_column(tmp_path):
    model = multi_model()
    model.save_pretrained(tmp_path)
    build_tokenizer(WORDS).save_pretrained(tmp_path)
    local = pipeline("token-classification", model=str(tmp_path))("the cats sat")
    assert [e["entity"] for e in local] and all(e["entity"] in TAGS for e in local)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf_home")}
    env.pop("PYTHONPATH", None)
    result = subprocess.run(
        [sys.executable, "-I", "-c", REMOTE, str(tmp_path), json.dumps(inputs().tolist())],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    remote = json.loads(result.stdout.strip().splitlines()[-1])
    assert remote.pop("module").startswith("transformers_modules.")
    assert remote.pop("pipeline") == [e["entity"] for e in local]
    with torch.no_grad():
        for name, value in all_logits(model(inputs())).items():
            torch.testing.assert_close(torch.tensor(remote[name]), value, atol=1e-6, rtol=0)
