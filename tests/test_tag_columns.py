"""Tagging every predicted column: tag(), Tagger, CoNLL-U / TSV / JSON Lines output,
re-tagging that changes exactly the predicted columns, scoring them."""

import importlib.util
import json
from pathlib import Path

import pytest
import torch

from cont_transformer import (
    ContTransformerConfig,
    ContTransformerForTokenClassification,
    build_tokenizer,
)
from cont_transformer.tagging.conllu_document import COLUMNS, ConlluDocument
from cont_transformer.tagging.tag import Tagger
from cont_transformer.tagging.tag_files import tag_file

REPO = Path(__file__).resolve().parents[1]
WORDS = ["the", "dog", "walked", "do", "n't", "."]
TAGS = ["DT", "NN", "VBD"]
COLUMN_LABELS = {
    "upos": ["DET", "NOUN", "VERB"],
    "feats": ["Number=_", "Number=Plur", "Number=Sing", "Tense=_", "Tense=Past"],
    "lemma": ["lower|-0+|-0+", "lower|-0+|-2+", "keep|-0+|-0+"],
}
CONLLU = "\n".join(  # noqa: FLY002
    [
        "# sent_id = 1",
        "# text = The dog walked.",
        "1\tThe\tthe\tDET\tDT\tDefinite=Def\t2\tdet\t_\t_",
        "2\tdog\tdog\tNOUN\tNN\tNumber=Sing\t3\tnsubj\t_\t_",
        "3\twalked\twalk\tVERB\tVBD\tTense=Past\t0\troot\t_\tSpaceAfter=No",
        "4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_",
        "",
        "# text = Blorped don't",
        "1\tBlorped\tblorp\tVERB\tVBD\t_\t0\troot\t_\t_",
        "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_",
        "2\tdo\tdo\tAUX\tVBP\t_\t1\taux\t_\t_",
        "3\tn't\tnot\tPART\tRB\t_\t1\tadvmod\t_\t_",
        "3.1\tgone\tgo\tVERB\tVBN\t_\t_\t_\t0:root\t_",
        "",
        "",
    ]
)


def rigged_model(columns=COLUMN_LABELS, feats_mode="factored"):
    """A model whose heads all predict one label: VBD / VERB / Number=Plur, Tense=Past /
    strip two characters (the lemma of walked, and of a made-up blorped)."""
    torch.manual_seed(0)
    config = ContTransformerConfig(
        vocab_size=len(WORDS) + 3,
        hidden_size=16,
        num_attention_heads=2,
        intermediate_size=24,
        num_basis=2,
        id2label=dict(enumerate(TAGS)),
        label2id={t: i for i, t in enumerate(TAGS)},
        primary_column="xpos" if columns else None,
        column_labels=columns,
        feats_mode=feats_mode,
    )
    model = ContTransformerForTokenClassification(config).eval()
    chosen = {"classifier": [2], "upos": [2], "feats": [1, 4] if feats_mode == "factored" else [1], "lemma": [1]}
    heads = {"classifier": model.classifier, **getattr(model, "column_classifiers", {})}
    with torch.no_grad():
        for name, head in heads.items():
            head.weight.zero_()
            head.bias.zero_()
            head.bias[chosen[name]] = 10.0
    return model


@pytest.fixture
def tagger():
    return Tagger(rigged_model(), build_tokenizer(WORDS), batch_size=64)


def test_tag_fills_every_column_and_iterates_the_primary_one(tagger):
    assert tagger.column == "xpos" and tagger.columns == ("lemma", "upos", "xpos", "feats")
    (sentence,) = tagger([["Blorped", "walked", "ed"]])
    assert list(sentence) == [("Blorped", "VBD"), ("walked", "VBD"), ("ed", "VBD")]
    assert sentence.xpos == sentence.tags == ["VBD"] * 3
    assert sentence.upos == ["VERB"] * 3
    assert sentence.feats == ["Number=Plur|Tense=Past"] * 3
    # The predicted script (strip two) on unseen forms; "ed" would be emptied: lower-cased form.
    assert sentence.lemma == ["blorp", "walk", "ed"]
    (raw,) = tagger("The dog walked.")
    assert raw.lemma[:2] == ["t", "d"] and raw.spans[0] == (0, 3)


def test_whole_features_and_a_model_of_one_column():
    whole = {"feats": ["Number=Plur", "Tense=Past", "_"], "lemma": COLUMN_LABELS["lemma"]}
    tagger = Tagger(rigged_model(whole, "whole"), build_tokenizer(WORDS))
    assert tagger([["dogs"]])[0].feats == ["Tense=Past"]
    single = Tagger(rigged_model(None, "whole"), build_tokenizer(WORDS), column="upos")
    (sentence,) = single([["dog"]])
    assert single.columns == ("upos",) and sentence.columns == {"upos": ["VBD"]}
    assert sentence.lemma is None and list(sentence) == [("dog", "VBD")]


def test_retagging_changes_exactly_the_predicted_columns(tagger, tmp_path):
    partial = {"upos": COLUMN_LABELS["upos"], "lemma": COLUMN_LABELS["lemma"]}  # no feats head
    tagger = Tagger(rigged_model(partial), build_tokenizer(WORDS))
    source = tmp_path / "in.conllu"
    source.write_text(CONLLU)
    tag_file(tagger, source, tmp_path / "out.conllu", input_format="conllu", progress=False)
    before, after = CONLLU.split("\n"), (tmp_path / "out.conllu").read_text().split("\n")
    assert len(before) == len(after)
    predicted = {COLUMNS.index(c) for c in ("lemma", "upos", "xpos")}
    for old, new in zip(before, after):
        if not old.split("\t")[0].isdigit():
            assert new == old  # comments, the multiword token, the empty node, blank lines
            continue
        old_fields, new_fields = old.split("\t"), new.split("\t")
        assert [f for i, f in enumerate(old_fields) if i not in predicted] == [
            f for i, f in enumerate(new_fields) if i not in predicted
        ]
        assert (new_fields[3], new_fields[4]) == ("VERB", "VBD")
    assert after[2].split("\t")[2] == "t" and after[4].split("\t")[2] == "walk"
    assert after[8].split("\t")[2] == "blorp"


def test_tsv_json_and_conllu_carry_every_column(tagger, tmp_path):
    text = "The dog walked."
    tag_file(tagger, None, tmp_path / "out.tsv", output_format="tsv", text=text, progress=False)
    header, _, _, walked = (tmp_path / "out.tsv").read_text().split("\n")[:4]
    assert (header, walked) == ("word\tlemma\tupos\txpos\tfeats", "walked\twalk\tVERB\tVBD\tNumber=Plur|Tense=Past")
    tag_file(tagger, None, tmp_path / "out.jsonl", output_format="json", text=text, progress=False)
    record = json.loads((tmp_path / "out.jsonl").read_text())
    assert record["lemma"][2] == "walk" and record["upos"] == ["VERB"] * 4 and record["xpos"] == ["VBD"] * 4
    assert record["feats"] == ["Number=Plur|Tense=Past"] * 4
    tag_file(tagger, None, tmp_path / "out.conllu", text=text, progress=False)
    document = ConlluDocument.read(tmp_path / "out.conllu")
    word = document.lines[document.sentences[0][2]].split("\t")
    assert word[:6] == ["3", "walked", "walk", "VERB", "VBD", "Number=Plur|Tense=Past"]


def test_script_evaluates_every_predicted_column(tagger, tmp_path, capsys):
    tagger.model.save_pretrained(tmp_path / "model")
    tagger.tokenizer.save_pretrained(tmp_path / "model")
    (tmp_path / "gold.conllu").write_text(CONLLU)
    spec = importlib.util.spec_from_file_location("tag_script", REPO / "scripts" / "tag.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    script.main(
        [
            str(tmp_path / "model"),
            "--input-format",
            "conllu",
            "--evaluate",
            str(tmp_path / "gold.conllu"),
            "--output",
            str(tmp_path / "out.conllu"),
            "--no-progress",
            "--device",
            "cpu",
        ]
    )
    lines = capsys.readouterr().err.splitlines()
    table = lines[next(i for i, line in enumerate(lines) if "precision" in line) + 1 :]
    rows = {line.split()[0]: line.split()[1:] for line in table}
    assert set(rows) == {"tokens", "sentences", "words", "lemma", "upos", "xpos", "feats", "alltags"}
    # XPOS: walked and Blorped (VBD) of 7 words. Lemmas (strip two): walk, blorp, and
    # "." and "do", too short to strip two: their lower-cased forms.
    assert float(rows["xpos"][-1]) == pytest.approx(100 * 2 / 7, abs=0.01)
    assert float(rows["lemma"][-1]) == pytest.approx(100 * 4 / 7, abs=0.01)
