"""The CoNLL 2018 scorer (a local `evaluate` metric module) against hand-computed scores."""

import pytest

from cont_transformer.tagging.conllu_document import ConlluDocument
from cont_transformer.tagging.metrics import load_conll18
from cont_transformer.tagging.metrics.conll18.conll18 import evaluate_documents
from cont_transformer.tagging.scoring import score, scored_columns


def line(token_id, form, lemma="_", upos="_", xpos="_", feats="_"):
    return f"{token_id}\t{form}\t{lemma}\t{upos}\t{xpos}\t{feats}\t0\troot\t_\t_"


GOLD = "\n".join(
    [
        "# text = Cats don't sleep.",
        line(1, "Cats", "cat", "NOUN", "NNS", "Number=Plur"),
        line("2-3", "don't"),
        line(2, "do", "do", "AUX", "VBP", "Mood=Ind|Tense=Pres|VerbForm=Fin|Foo=Bar"),
        line(3, "n't", "not", "PART", "RB", "Polarity=Neg"),
        line(4, "sleep", "sleep", "VERB", "VB", "VerbForm=Inf"),
        line(5, ".", ".", "PUNCT", "."),
        "",
        "# text = New York rocks",
        line(1, "New", "New", "PROPN", "NNP", "Number=Sing"),
        line(2, "York", "_", "PROPN", "NNP", "Number=Sing"),
        line(3, "rocks", "rock", "VERB", "VBZ", "Number=Sing|Person=3"),
        "",
        "",
    ]
)
# One sentence; "don't" as two plain tokens; "sleep." and "rocks" as multiword tokens.
SYSTEM = "\n".join(
    [
        line(1, "Cats", "cat", "NOUN", "NNS", "Number=Plur"),
        line(2, "do", "do", "AUX", "VBP", "VerbForm=Fin|Tense=Pres|Mood=Ind"),  # Foo is no UFeat
        line(3, "n't", "n't", "PART", "RB", "Polarity=Neg"),  # lemma wrong
        line("4-5", "sleep."),
        line(4, "sleep", "sleep", "NOUN", "VB", "VerbForm=Inf"),  # UPOS wrong
        line(5, ".", ".", "PUNCT", "."),
        line(6, "New", "New", "PROPN", "NNP"),  # UFeats wrong
        line(7, "York", "Yorks", "PROPN", "NNPS", "Number=Sing"),  # XPOS wrong; gold lemma "_"
        line("8-9", "rocks"),
        line(8, "rock", "rock", "VERB", "VBZ", "Number=Sing|Person=3"),
        line(9, "s", "s", "PART", "POS"),
        "",
        "",
    ]
)


def test_a_multiword_token_and_a_tokenization_mismatch_scored_by_hand():
    result = evaluate_documents([GOLD], [SYSTEM])
    # Tokens: gold Cats don't sleep . New York rocks (7), system Cats do n't sleep. New York
    # rocks (7); the same spans: Cats, New, York, rocks.
    assert (result["Tokens"]["correct"], result["Tokens"]["gold"], result["Tokens"]["system"]) == (4, 7, 7)
    assert result["Tokens"]["f1"] == pytest.approx(4 / 7)
    assert (result["Sentences"]["correct"], result["Sentences"]["gold"], result["Sentences"]["system"]) == (0, 2, 1)
    # Words: gold 8, system 9. do / n't align inside gold's don't, sleep / . inside the
    # system's sleep.; rocks against rock + s has no common form: 7 aligned.
    words = result["Words"]
    assert (words["correct"], words["gold"], words["system"], words["aligned"]) == (7, 8, 9, None)
    assert words["precision"] == pytest.approx(7 / 9) and words["recall"] == pytest.approx(7 / 8)
    assert words["f1"] == pytest.approx(14 / 17)
    # Of the 7 aligned words: UPOS wrong on sleep, XPOS on York, UFeats on New,
    # AllTags on all three, Lemmas on n't (York's gold lemma "_" takes any lemma).
    for row, correct in (("UPOS", 6), ("XPOS", 6), ("UFeats", 6), ("AllTags", 4), ("Lemmas", 6)):
        values = result[row]
        assert (values["correct"], values["gold"], values["system"], values["aligned"]) == (correct, 8, 9, 7), row
        assert values["precision"] == pytest.approx(correct / 9), row
        assert values["recall"] == pytest.approx(correct / 8), row
        assert values["f1"] == pytest.approx(2 * correct / 17), row
        assert values["aligned_accuracy"] == pytest.approx(correct / 7), row


def _document(tokens: list[str]) -> str:
    """The official script's test notation: "abc a b c" is a multiword token abc of words a b c."""
    lines, words = [], 0
    for token in tokens:
        parts = token.split(" ")
        if len(parts) == 1:
            words += 1
            lines.append(line(words, parts[0]))
        else:
            lines.append(line(f"{words + 1}-{words + len(parts) - 1}", parts[0]))
            for part in parts[1:]:
                words += 1
                lines.append(line(words, part))
    return "\n".join([*lines, "", ""])


# The alignment cases of conll18_ud_eval.py's own unit tests: gold, system, aligned words.
OFFICIAL_CASES = [
    (["a"], ["a"], 1),
    (["a", "b", "c"], ["a", "b", "c"], 3),
    (["abc a b c"], ["a", "b", "c"], 3),
    (["a", "bc b c", "d"], ["a", "b", "c", "d"], 4),
    (["abcd a b c d"], ["ab a b", "cd c d"], 4),
    (["abc a b c", "de d e"], ["a", "bcd b c d", "e"], 5),
    (["abcd"], ["a", "b", "c", "d"], 0),
    (["abc", "d"], ["a", "b", "c", "d"], 1),
    (["a", "bc", "d"], ["a", "b", "c", "d"], 2),
    (["a", "bc b c", "d"], ["a", "b", "cd"], 2),
    (["abc a BX c", "def d EX f"], ["ab a b", "cd c d", "ef e f"], 4),
    (["ab a b", "cd bc d"], ["a", "bc", "d"], 2),
    (["a", "bc b c", "d"], ["ab AX BX", "cd CX a"], 1),
]


@pytest.mark.parametrize("gold, system, aligned", OFFICIAL_CASES)
def test_word_alignment_matches_the_official_scripts_cases(gold, system, aligned):
    words = evaluate_documents([_document(gold)], [_document(system)])["Words"]
    gold_words = sum(max(1, len(t.split(" ")) - 1) for t in gold)
    system_words = sum(max(1, len(t.split(" ")) - 1) for t in system)
    assert (words["correct"], words["gold"], words["system"]) == (aligned, gold_words, system_words)


def test_different_texts_are_refused():
    with pytest.raises(ValueError, match="different texts.*'b'"):
        evaluate_documents([_document(["a"])], [_document(["b"])])


def test_loaded_by_path_with_evaluate_and_counts_add_over_documents():
    metric = load_conll18()
    result = metric.compute(predictions=[SYSTEM, _document(["ab a b"])], references=[GOLD, _document(["a", "b"])])
    assert (result["Words"]["correct"], result["Words"]["gold"], result["Words"]["system"]) == (9, 10, 11)
    assert result["UPOS"]["aligned"] == 9


def test_scoring_documents_reports_the_predicted_columns():
    assert scored_columns(["xpos"]) == ("xpos",)
    assert scored_columns(["xpos", "upos", "feats", "lemma"]) == ("upos", "xpos", "feats", "alltags", "lemma")
    result = score(ConlluDocument(GOLD, "gold"), ConlluDocument(SYSTEM, "system"), ("upos", "feats", "lemma"))
    assert list(result) == ["tokens", "sentences", "words", "upos", "feats", "lemma"]
    assert result["lemma"]["aligned_accuracy"] == pytest.approx(6 / 7)
    assert "aligned_accuracy" not in result["words"]
    with pytest.raises(ValueError, match="columns: 'deprel'"):
        score(ConlluDocument(GOLD), ConlluDocument(GOLD), ("deprel",))
