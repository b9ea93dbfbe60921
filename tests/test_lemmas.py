"""Lemma edit scripts: learnt from (form, lemma) pairs, applied to forms never seen; and the
lemma lexicon, which gives a (form, tag) seen in training its lemma."""

import pytest

from cont_transformer import ContTransformerConfig
from cont_transformer.column_decoding import decode_columns
from cont_transformer.lemmas import EditScript, apply_script, edit_script, lemma_lexicon, parse_script, script_labels


def test_a_made_up_verbs_ed_form_gets_its_lemma_from_the_walked_script():
    script = edit_script("walked", "walk")
    assert str(script) == "lower|-0+|-2+"
    assert apply_script(script, "blorped") == "blorp"
    assert apply_script(str(script), "Blorped") == "blorp"  # through its text, sentence-initial


def test_a_capitalised_sentence_initial_word_is_lower_cased():
    # "the -> the" is the script of every lower-case word that is its own lemma.
    assert edit_script("the", "the") == edit_script("The", "the")
    assert apply_script(edit_script("dog", "dog"), "The") == "the"


def test_proper_nouns_keep_their_case():
    script = edit_script("Paris", "Paris")
    assert script.casing == "keep"
    assert apply_script(script, "Blorpville") == "Blorpville"
    assert apply_script(script, "NASA") == "NASA"
    assert apply_script(edit_script("i", "I"), "i") == "I"  # title case


def test_case_sensitive_rewrites_and_absolute_lemmas():
    assert apply_script(edit_script("Häuser", "Haus"), "Häuser") == "Haus"
    went = edit_script("went", "go")
    assert went == EditScript(absolute="go") and str(went) == "=go"
    assert apply_script(went, "Went") == "go"
    assert apply_script(edit_script("ran", "run"), "ran") == "run"


def test_a_script_that_does_not_fit_the_form_falls_back_to_the_cased_form():
    studies = edit_script("studies", "study")  # strip "ies", add "y"
    assert apply_script(studies, "Ies") == "ies"  # would strip the whole word: lower-cased form
    assert apply_script(edit_script("Vögeln", "Vogel"), "Xy") == "Xy"  # keep: the form itself


@pytest.mark.parametrize(
    "form, lemma", [("walked", "walk"), ("a|b", "a|b"), ("x+|-1+", "y"), ("USA", "U.S.A."), ("", "x")]
)
def test_scripts_round_trip_through_their_text(form, lemma):
    script = edit_script(form, lemma)
    assert parse_script(str(script)) == script
    assert apply_script(str(script), form) == lemma


def test_bad_script_text_is_named():
    with pytest.raises(ValueError, match="'nonsense'"):
        parse_script("nonsense")


def test_script_labels_keep_scripts_seen_min_count_times_most_frequent_first():
    pairs = [("walked", "walk"), ("talked", "talk"), ("dogs", "dog"), ("went", "go")]
    assert script_labels(pairs) == ["lower|-0+|-2+", "=go", "lower|-0+|-1+"]
    assert script_labels(pairs, min_count=2) == ["lower|-0+|-2+"]
    with pytest.raises(ValueError, match="lemma_min_count"):
        script_labels(pairs, min_count=0)


def test_the_lexicon_keeps_each_form_and_tags_most_frequent_lemma():
    triples = [
        ("leaves", "VBZ", "leave"),
        ("leaves", "NNS", "leaf"),
        ("leaves", "NNS", "leaf"),
        ("leaves", "NNS", "leave"),  # outvoted
        ("saw", "VBD", "see"),
        ("saw", "VBD", "saw"),  # a tie: the first seen stays
        ("um", "UH", "_"),  # no lemma: not a lemma of the lexicon
    ]
    assert lemma_lexicon(triples, "xpos") == {
        "xpos": {"VBZ": {"leaves": "leave"}, "NNS": {"leaves": "leaf"}, "VBD": {"saw": "see"}}
    }
    assert lemma_lexicon([("um", "UH", "_")], "xpos") is None


def test_a_word_of_the_lexicon_with_its_predicted_tag_takes_the_lexicons_lemma():
    labels = {"xpos": ["NNS", "VBZ"], "lemma": [parse_script("lower|-0+|-1+"), parse_script("keep|-0+|-0+")]}
    words = ["leaves", "leaves", "dogs"]
    ids = {"xpos": [0, 1, 0], "lemma": [0, 0, 0]}  # the script strips a final letter everywhere
    lexicon = {"xpos": {"NNS": {"leaves": "leaf"}}}
    assert decode_columns(words, ids, labels)["lemma"] == ["leave", "leave", "dog"]
    # Only the (form, tag) the lexicon holds changes: "leaves" as VBZ keeps its script's lemma.
    assert decode_columns(words, ids, labels, lemma_lexicon=lexicon)["lemma"] == ["leaf", "leave", "dog"]
    assert decode_columns(words, {"xpos": ids["xpos"]}, labels, lemma_lexicon=lexicon) == {
        "xpos": ["NNS", "VBZ", "NNS"]
    }


@pytest.mark.parametrize(
    "lexicon",
    [
        {"feats": {"_": {"a": "a"}}},  # not a tag column
        {"upos": {"DET": {"a": "a"}}},  # a column the model does not predict
        {"xpos": {}, "upos": {}},  # two keys
        {"xpos": {"DT": "the"}},  # a tag without its forms
        {"xpos": {"DT": {"the": 3}}},  # a lemma that is no string
        {"xpos": ["DT"]},
    ],
)
def test_a_config_refuses_a_lexicon_keyed_by_a_column_it_cannot_use(lexicon):
    with pytest.raises(ValueError, match="lemma_lexicon"):
        ContTransformerConfig(
            vocab_size=9,
            id2label={0: "DT"},
            primary_column="xpos",
            column_labels={"lemma": ["keep|-0+|-0+"]},
            lemma_lexicon=lexicon,
        )


def test_the_lexicon_is_saved_in_a_file_of_its_own_and_read_back(tmp_path):
    """A tagger's config.json holds no lemma table: the lexicon is ``lemma_lexicon.json``
    beside it, read back into ``config.lemma_lexicon``; a folder whose config.json holds the
    lexicon loads it from there, and a lexicon the model cannot use is refused naming the file."""
    import json

    from cont_transformer import ContTransformerForTokenClassification
    from cont_transformer.tagger_files import LEMMA_LEXICON_FILE

    lexicon = {"xpos": {"NNS": {"leaves": "leaf"}}}
    config = ContTransformerConfig(
        vocab_size=9,
        hidden_size=8,
        intermediate_size=8,
        num_basis=2,
        num_steps=2,
        char_vocab_size=8,
        id2label={0: "NNS", 1: "VBZ"},
        primary_column="xpos",
        column_labels={"lemma": ["keep|-0+|-0+"]},
        lemma_lexicon=lexicon,
    )
    model = ContTransformerForTokenClassification(config)
    model.save_pretrained(tmp_path / "new")
    assert not json.loads((tmp_path / "new" / "config.json").read_text()).get("lemma_lexicon")
    assert json.loads((tmp_path / "new" / LEMMA_LEXICON_FILE).read_text()) == lexicon
    assert model.config.lemma_lexicon == lexicon  # the model saved keeps its own
    assert ContTransformerForTokenClassification.from_pretrained(tmp_path / "new").config.lemma_lexicon == lexicon

    # A folder saved with the lexicon inside config.json (and no record of its config in the
    # weights, as such folders were written) keeps reading it there.
    from safetensors.torch import load_file, save_file

    weights = tmp_path / "new" / "model.safetensors"
    save_file(load_file(weights), weights, metadata={"format": "pt"})
    (tmp_path / "new" / LEMMA_LEXICON_FILE).rename(tmp_path / "lexicon.json")
    inside = json.loads((tmp_path / "new" / "config.json").read_text())
    (tmp_path / "new" / "config.json").write_text(json.dumps({**inside, "lemma_lexicon": lexicon}))
    loaded = ContTransformerForTokenClassification.from_pretrained(tmp_path / "new")
    assert loaded.config.lemma_lexicon == lexicon

    # A saved model without a lexicon leaves no stale file behind; a foreign one is refused by name.
    model.config.lemma_lexicon = None
    model.save_pretrained(tmp_path / "new")
    assert not (tmp_path / "new" / LEMMA_LEXICON_FILE).exists()
    (tmp_path / "new" / LEMMA_LEXICON_FILE).write_text(json.dumps({"upos": {"DET": {"a": "a"}}}))
    with pytest.raises(ValueError, match=LEMMA_LEXICON_FILE):
        ContTransformerForTokenClassification.from_pretrained(tmp_path / "new")
