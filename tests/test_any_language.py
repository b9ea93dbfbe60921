"""Raw text in any language: the generic Unicode rules of ``text_segmentation.py`` for every
language code without tuned rules, ``--language`` taking any ISO 639 code, and text that
another tool already segmented (CoNLL-U, tokens) kept exactly as given."""

import argparse

import pytest
from hostile import load_script, save_tagger

from cont_transformer.pipeline_cont_transformer import split_sentences
from cont_transformer.tagging.document import Document
from cont_transformer.tagging.tag import Tagger
from cont_transformer.tagging.tag_command import language_argument
from cont_transformer.text_segmentation import (
    GENERIC,
    LONGEST_WORD,
    check_language,
    rules,
    split_text,
    tokenize_sentences,
)


def sentences(text: str, language: str) -> list[list[str]]:
    return [s.words(text) for s in split_text(text, language)]


def covers_every_visible_character(text: str, language: str) -> bool:
    covered = {i for s in split_text(text, language) for start, end in s.spans for i in range(start, end)}
    return all(text[i].isspace() == (i not in covered) for i in range(len(text)))


FRENCH = (
    "L'homme a dit : « Aujourd'hui, c'est 3,5 € ou 1.000 € ? » Voir https://exemple.fr/a?b=1 ou moi@ex.fr. "
    "Peut-être qu'il viendra... Oui !"
)


def test_generic_words_and_sentences_of_a_latin_script():
    assert sentences(FRENCH, "fr") == [
        [
            "L'",
            "homme",
            "a",
            "dit",
            ":",
            "«",
            "Aujourd'hui",
            ",",
            "c'",
            "est",
            "3,5",
            "€",
            "ou",
            "1.000",
            "€",
            "?",
            "»",
        ],
        ["Voir", "https://exemple.fr/a?b=1", "ou", "moi@ex.fr", "."],
        ["Peut-être", "qu'", "il", "viendra", "..."],
        ["Oui", "!"],
    ]
    assert sentences("¿Qué tal? ¡Muy bien! Vive en EE.UU. desde 2010.", "es") == [
        ["¿", "Qué", "tal", "?"],
        ["¡", "Muy", "bien", "!"],
        ["Vive", "en", "EE.UU.", "desde", "2010", "."],
    ]
    assert not any(s.multiword for s in split_text(FRENCH, "fr"))  # no multiword tokens by the generic rules
    assert covers_every_visible_character(FRENCH, "fr")


def test_generic_rules_of_other_scripts():
    assert sentences("Он сказал: «Привет!» Потом ушёл.", "ru") == [
        ["Он", "сказал", ":", "«", "Привет", "!", "»"],
        ["Потом", "ушёл", "."],
    ]
    assert sentences("هل أنت بخير؟ نعم، شكرا.", "ar") == [["هل", "أنت", "بخير", "؟"], ["نعم", "،", "شكرا", "."]]
    assert sentences("मैं घर जा रहा हूँ। तुम कहाँ हो?", "hi") == [
        ["मैं", "घर", "जा", "रहा", "हूँ", "।"],
        ["तुम", "कहाँ", "हो", "?"],
    ]


def test_text_without_spaces_is_split_into_characters_or_runs():
    chinese = "我爱北京。他说：「你好！」然后走了。"
    assert sentences(chinese, "zh") == [
        ["我", "爱", "北", "京", "。"],
        ["他", "说", "：", "「", "你", "好", "！", "」"],
        ["然", "后", "走", "了", "。"],
    ]
    assert sentences("東京は首都です。「カタカナ」も。", "ja") == [
        ["東", "京", "は", "首", "都", "で", "す", "。"],
        ["「", "カタカナ", "」", "も", "。"],  # an opening bracket after the end begins the next sentence
    ]
    assert sentences("สวัสดีครับ ผมชื่อสมชาย", "th") == [["สวัสดีครับ", "ผมชื่อสมชาย"]]  # runs between spaces
    for text, language in ((chinese, "zh"), ("สวัสดีครับ ผมชื่อสมชาย", "th")):
        assert covers_every_visible_character(text, language)


def test_language_codes():
    assert [check_language(code) for code in ("fr", "grc", "pt-BR", "zh_Hant", "und")] == [
        "fr",
        "grc",
        "pt-BR",
        "zh_Hant",
        "und",
    ]
    assert [rules(code) for code in ("en", "en-GB", "DE", "fr", "zh", "und")] == ["en", "en", "de", *[GENERIC] * 3]
    for bad in ("", "f", "french", "f r", "en--GB", "12", None):
        with pytest.raises(ValueError, match="language: .* is not a language code"):
            check_language(bad)
    with pytest.raises(ValueError, match="language"):
        list(split_text("Bonjour.", "français"))
    # The tuned English rules still apply to a regional English (clitics split, a multiword token).
    assert sentences("I didn't.", "en-GB") == [["I", "did", "n't", "."]]


def test_the_language_flag_takes_any_code_and_refuses_garbage_in_one_line(capsys):
    parser = argparse.ArgumentParser()
    parser.add_argument("--language", type=language_argument)
    assert parser.parse_args(["--language", "fr"]).language == "fr"
    with pytest.raises(SystemExit):
        parser.parse_args(["--language", "fr!"])
    error = capsys.readouterr().err.splitlines()[-1]
    assert "argument --language: 'fr!' is not a language code" in error
    script = load_script("tag")
    assert script.parse_args(["model", "--language", "grc"]).language == "grc"
    with pytest.raises(SystemExit) as exit_info:
        script.parse_args(["model", "--language", "x y"])
    error = capsys.readouterr().err.splitlines()
    assert exit_info.value.code == 2 and not any("invalid choice" in line for line in error)
    assert error[-1].endswith(
        "error: argument --language: 'x y' is not a language code (ISO 639: two or three "
        "letters, optionally a region or script after '-': en, fr, grc, pt-BR)"
    )


def test_the_pipeline_splits_any_language_as_the_tagger_does():
    for text, language in ((FRENCH, "fr"), ("我爱北京。他说：「你好！」", "zh")):
        assert split_sentences(text, language) == [s.spans for s in split_text(text, language)]


def test_an_absurd_line_is_cut_not_a_crash():
    # A line of letters megabytes long makes Oniguruma give up (tokenizers panics): such a run
    # of visible characters is cut into words of LONGEST_WORD, the text around it split as usual.
    size = 5_000_000
    text = "Hello, " + "a" * size + " world. Bye!\n\nNext " + "b" * (LONGEST_WORD + 1) + "."
    for language in ("en", "de", "fr"):
        result = list(split_text(text, language))
        words = [s.words(text) for s in result]
        flat = [word for sentence in words for word in sentence]
        assert flat[:2] == ["Hello", ","] and flat[-3:] == ["Next", "b" * LONGEST_WORD, "b."]
        assert ["world", "."] == flat[2 + size // LONGEST_WORD : 4 + size // LONGEST_WORD]
        assert max(len(word) for word in flat) == LONGEST_WORD and sum(map(len, flat)) == len("".join(text.split()))
        assert words[1] == ["Bye", "!"] and result[2].paragraph_start
    line = "x" * (3 * LONGEST_WORD)
    assert [s.words(line) for s in tokenize_sentences([line])] == [["x" * LONGEST_WORD] * 3]


# Text another tool segmented: its words and sentences as given. -------------------------------

# As stanza, spaCy or UDPipe may write it: a word with a space, "don't" one word, a sentence
# the rules would split in two, and one they would join to the next.
SEGMENTED = """# sent_id = a
# text = I don't know. He left
1\tI\t_\t_\t_\t_\t_\t_\t_\t_
2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
3\tknow.\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No
4\tHe\t_\t_\t_\t_\t_\t_\t_\t_
5\tleft\t_\t_\t_\t_\t_\t_\t_\t_

# sent_id = b
# text = a 100 000 dogs
1\ta\t_\t_\t_\t_\t_\t_\t_\t_
2\t100 000\t_\t_\t_\t_\t_\t_\t_\t_
3\tdogs\t_\t_\t_\t_\t_\t_\t_\t_

"""


@pytest.fixture(scope="module")
def tagger_folder(tmp_path_factory, tiny_tagger):
    return save_tagger(tmp_path_factory.mktemp("any_language"), tiny_tagger)


def test_segmented_conllu_keeps_its_words_and_sentences(tagger_folder, tmp_path):
    gold = tmp_path / "segmented.conllu"
    gold.write_text(SEGMENTED, encoding="utf-8")
    words = [["I", "don't", "know.", "He", "left"], ["a", "100 000", "dogs"]]
    tagger = Tagger.from_pretrained(tagger_folder, device="cpu", language="fr")
    document = tagger(Document.read_conllu(gold))
    assert [[word.text for word in sentence.words] for sentence in document.sentences] == words
    assert all(word.xpos is not None for word in document.iter_words())
    output = tmp_path / "tagged.conllu"
    load_script("tag").main(
        [str(tagger_folder), "--input", str(gold), "--input-format", "conllu", "--output", str(output)]
        + ["--language", "fr", "--no-progress"]
    )
    tagged = output.read_text(encoding="utf-8").split("\n")
    original = SEGMENTED.split("\n")
    assert len(tagged) == len(original)
    for mine, theirs in zip(tagged, original):
        fields, given = mine.split("\t"), theirs.split("\t")
        assert fields[:2] == given[:2] and fields[5:] == given[5:]  # ids, forms, sentences, MISC as given


def test_a_word_written_with_spaces_is_one_vocabulary_entry():
    """Vietnamese writes a word's syllables apart (``học sinh``): a tokenizer built from such
    words holds them joined, and reads a given word so; one built without them reads each
    syllable alone, as before."""
    from cont_transformer import build_tokenizer
    from cont_transformer.tagging.trainer import _vocabulary
    from cont_transformer.word_encoding import SPACE_IN_WORD, encode_words

    vocabulary = _vocabulary({"tokens": [["học sinh", "đi", "học"], ["học sinh"]]})
    assert vocabulary == [f"học{SPACE_IN_WORD}sinh", "học", "đi"]  # most frequent first
    for spelling in (False, True):
        tokenizer = build_tokenizer(vocabulary, spelling=spelling)
        encoding = encode_words(tokenizer, [["học  sinh", "đi"]])
        assert tokenizer.convert_ids_to_tokens(encoding["input_ids"][0])[1:] == [f"học{SPACE_IN_WORD}sinh", "đi"]
        assert encoding.word_ids(0) == [None, 0, 1]
    before = build_tokenizer(["học", "sinh", "đi"])
    encoding = encode_words(before, [["học sinh", "đi"]])
    assert before.convert_ids_to_tokens(encoding["input_ids"][0])[1:] == ["học", "sinh", "đi"]
