"""Lemmas the vocabulary knows: a word outside the lemma lexicon takes its likeliest script,
unless that script makes a word the tokenizer's vocabulary lacks and a next likeliest one,
within the margin, makes a word it holds (``lemmas.choose_lemma``)."""

import math

import torch

from cont_transformer.column_decoding import decode_columns
from cont_transformer.lemmas import (
    LEMMA_CANDIDATES,
    LEMMA_MARGIN,
    NO_CANDIDATE,
    choose_lemma,
    lemma_candidates,
    parse_script,
    vocabulary_words,
)
from cont_transformer.tagging.tag import Tagger
from cont_transformer.text.tokenization import build_tokenizer

# The scripts of a lemma head: strip "d", strip "ed" (the likeliest for "endorsed" below), "=be", keep.
SCRIPTS = [parse_script(s) for s in ("lower|-0+|-1+", "lower|-0+|-2+", "=be", "keep|-0+|-0+")]
STRIP_D, STRIP_ED, BE, KEEP = range(4)


def test_a_script_that_makes_an_unknown_word_gives_way_to_one_that_makes_a_known_word():
    vocabulary = frozenset({"endorse", "walk"})
    assert choose_lemma("endorsed", [STRIP_ED, STRIP_D], SCRIPTS, vocabulary) == "endorse"  # "endors" is unknown
    assert choose_lemma("Endorsed", [STRIP_ED, STRIP_D], SCRIPTS, vocabulary) == "endorse"  # sentence-initial
    assert choose_lemma("endorsed", [STRIP_ED, STRIP_D], SCRIPTS, frozenset({"Endorse"})) == "endors"  # cased: no
    assert choose_lemma("walked", [STRIP_D, STRIP_ED], SCRIPTS, vocabulary) == "walk"
    # The likeliest script stays where its lemma is known, or is the word itself (a name).
    assert choose_lemma("walked", [STRIP_ED, STRIP_D], SCRIPTS, vocabulary) == "walk"
    assert choose_lemma("Norton", [KEEP, STRIP_D], SCRIPTS, frozenset({"Norto"})) == "Norton"


def test_no_known_alternative_no_vocabulary_or_one_id_keeps_the_likeliest_script():
    assert choose_lemma("endorsed", [STRIP_ED, STRIP_D], SCRIPTS, frozenset({"walk"})) == "endors"
    assert choose_lemma("endorsed", [STRIP_ED, STRIP_D], SCRIPTS) == "endors"
    assert choose_lemma("endorsed", STRIP_ED, SCRIPTS, frozenset({"endorse"})) == "endors"
    # An absolute lemma fits any word, so it is never taken for being known; a place past
    # the margin ends the candidates.
    assert choose_lemma("endorsed", [STRIP_ED, BE], SCRIPTS, frozenset({"be"})) == "endors"
    assert choose_lemma("endorsed", [STRIP_ED, NO_CANDIDATE, STRIP_D], SCRIPTS, frozenset({"endorse"})) == "endors"
    # Scripts as text choose alike.
    assert choose_lemma("endorsed", [1, 0], [str(s) for s in SCRIPTS], frozenset({"endorse"})) == "endorse"


def test_candidates_are_the_likeliest_scripts_within_the_margin():
    logits = torch.tensor([[[5.0, 4.0, 4.5, -9.0], [0.0, 0.0, -2 * LEMMA_MARGIN, 1.0]]])
    candidates = lemma_candidates(logits)
    assert candidates.shape == (1, 2, LEMMA_CANDIDATES)
    assert candidates[0, 0].tolist() == [0, 2, 1]
    assert candidates[0, 1].tolist() == [3, 0, 1] or candidates[0, 1].tolist() == [3, 1, 0]
    far = torch.tensor([[[0.0, -(LEMMA_MARGIN + 0.5), math.log(0.5) - 0.1]]])  # one within, one past
    assert lemma_candidates(far)[0, 0].tolist() == [0, 2, NO_CANDIDATE]
    assert lemma_candidates(torch.zeros(1, 1, 2)).shape == (1, 1, 2)  # fewer scripts than candidates


def test_the_vocabulary_is_the_tokenizers_whole_words():
    tokenizer = build_tokenizer(["Walked", "the", "dog"], spelling=True)
    words = vocabulary_words(tokenizer)
    assert {"Walked", "the", "dog"} <= words
    assert not words & set(tokenizer.all_special_tokens)
    assert not any(word.startswith("#") for word in words)  # no continuation pieces


def test_decoding_a_sentence_uses_the_vocabulary_and_the_lexicon_still_wins():
    labels = {"xpos": ["VBD", "NNP"], "lemma": SCRIPTS}
    words = ["endorsed", "invoked"]
    ids = {"xpos": [0, 0], "lemma": [[STRIP_ED, STRIP_D, NO_CANDIDATE]] * 2}
    vocabulary = frozenset({"endorse", "invoke"})
    assert decode_columns(words, ids, labels)["lemma"] == ["endors", "invok"]
    assert decode_columns(words, ids, labels, vocabulary=vocabulary)["lemma"] == ["endorse", "invoke"]
    lexicon = {"xpos": {"VBD": {"invoked": "INVOKE"}}}
    assert decode_columns(words, ids, labels, lemma_lexicon=lexicon, vocabulary=vocabulary)["lemma"] == [
        "endorse",
        "INVOKE",
    ]


def test_a_saved_tagger_chooses_lemmas_with_its_tokenizers_words(sample_run_60):
    tagger = Tagger.from_pretrained(sample_run_60, device="cpu")
    vocabulary = tagger.processor.vocabulary
    assert vocabulary == vocabulary_words(tagger.tokenizer) and len(vocabulary) > 10
    sentences = [["The", "dogs", "walked", "home", "."], ["Endorsed", "by", "them", "blorped", "."]]
    chosen = tagger.predict_columns(sentences)
    tagger.processor.vocabulary = frozenset()
    likeliest = tagger.predict_columns(sentences)
    for words, with_vocabulary, without in zip(sentences, chosen, likeliest):
        assert {c: v for c, v in with_vocabulary.items() if c != "lemma"} == {
            c: v for c, v in without.items() if c != "lemma"
        }
        for word, lemma, first in zip(words, with_vocabulary["lemma"], without["lemma"]):
            if lemma != first:  # a known word instead of an unknown one that is not the word itself
                assert lemma in vocabulary or lemma.lower() in vocabulary
                assert first not in vocabulary and first.lower() not in vocabulary and first.lower() != word.lower()
