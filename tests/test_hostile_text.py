"""Hostile text to tag: huge words and inputs meet limits instead of hangs, and a
shortened word tags as the whole word would; three-letter language codes get their
language's rules and an unknown code is named; NUL bytes (UTF-16 without a byte-order mark)
are named by file and line; the wrong kind of Python value is named by its type."""

import random
import time

import pytest
import torch
from hostile import load_script, run_tag, save_tagger
from test_tag import WORDS

from cont_transformer import build_tokenizer
from cont_transformer.tagging.tag import Tagger
from cont_transformer.tagging.tag_files import tag_file
from cont_transformer.text_segmentation import LONGEST_WORD, split_text


@pytest.fixture(scope="module")
def spelling_tagger(tmp_path_factory, tiny_tagger):
    tagger = Tagger.from_pretrained(
        save_tagger(tmp_path_factory.mktemp("spelling"), tiny_tagger, spelling=True), device="cpu"
    )
    # As tokenizers saved before the cap were: every word spelled, however long.
    tagger.tokenizer.backend_tokenizer.model.max_input_chars_per_word = 10**6
    return tagger


def _word(n: int, seed: int = 0) -> str:
    generator = random.Random(seed)
    return "".join(generator.choice("dogsawbirhe") for _ in range(n))  # spelled in pieces


def _word_logits(tagger, words):
    """The logits of each word's first token, from the model over the words as given."""
    encoding = tagger.tokenizer(words, is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        logits = tagger.model(**encoding).logits[0]
    first = {}
    for position, word in enumerate(encoding.word_ids()):
        if word is not None:
            first.setdefault(word, position)
    return logits[[first[i] for i in range(len(words))]], encoding["input_ids"].shape[1]


def test_a_long_word_tags_fast_and_as_if_whole(spelling_tagger):
    tagger = spelling_tagger
    started = time.perf_counter()
    tagger.predict([[_word(100_000)]])
    assert time.perf_counter() - started < 5
    # Shortened, a word gives the model exactly what the whole word gives it.
    words = ["the", _word(300, 1), "saw", "a", _word(60, 2) + "é" + _word(60, 3), "dogsaw", *WORDS]
    whole, pieces = _word_logits(tagger, words)
    shortened, shortened_pieces = _word_logits(tagger, [tagger.shorten(w) for w in words])
    assert pieces > 300 and shortened_pieces < 100  # spelled in hundreds of pieces, or a few
    torch.testing.assert_close(whole, shortened, rtol=0, atol=1e-6)  # rounding: other shapes
    assert [tagger.shorten(w) for w in WORDS] == WORDS


def test_the_saved_tokenizer_does_not_spell_a_huge_word(tmp_path):
    tokenizer = build_tokenizer(WORDS, spelling=True)
    tokenizer.save_pretrained(tmp_path)
    started = time.perf_counter()
    assert tokenizer.tokenize(_word(100_000)) == ["[UNK]"]
    assert time.perf_counter() - started < 5


def test_tagging_time_is_linear_in_the_input(spelling_tagger, tmp_path):
    seconds = {}
    for size in (100_000, 1_000_000):
        path = tmp_path / f"{size}.txt"
        path.write_text(_word(size) + "\n")
        started = time.perf_counter()
        tag_file(spelling_tagger, path, tmp_path / f"{size}.conllu", input_format="tokens", progress=False)
        seconds[size] = time.perf_counter() - started
    assert seconds[1_000_000] < 30 * max(seconds[100_000], 0.05)
    assert seconds[1_000_000] < 20


def test_a_line_of_megabytes_tags_instead_of_panicking(spelling_tagger):
    # Oniguruma gives up on a run of letters this long (tokenizers panics); the segmenter cuts
    # such a run into words of LONGEST_WORD characters and splits the rest as usual.
    text = "the dog, " + "a" * 5_000_000 + " saw a bird.\n"
    doc = spelling_tagger(text)
    words = [word.text for word in doc.iter_words()]
    assert words[:3] == ["the", "dog", ","] and words[-4:] == ["saw", "a", "bird", "."]
    assert len(words) == 3 + 5_000_000 // LONGEST_WORD + 4 and all(word.xpos for word in doc.iter_words())


@pytest.fixture(scope="module")
def saved(tmp_path_factory, tiny_tagger):
    return save_tagger(tmp_path_factory.mktemp("tagger"), tiny_tagger)


ENGLISH = "Mr. Smith didn't see the dog. It ran away!"
GERMAN = "Am 3. Mai ging's los. Dr. Weber kam z.B. nicht."


def segmented(text, language):
    return [([text[a:b] for a, b in s.spans], sorted(s.multiword.items())) for s in split_text(text, language)]


def test_three_letter_language_codes_get_their_languages_rules(saved, tmp_path, capsys):
    assert segmented(ENGLISH, "eng") == segmented(ENGLISH, "en") != segmented(ENGLISH, "und")
    assert len(segmented(ENGLISH, "eng")) == 2 and segmented(ENGLISH, "eng")[0][1]  # didn't: a multiword token
    assert segmented(GERMAN, "deu") == segmented(GERMAN, "ger") == segmented(GERMAN, "de")
    assert segmented(ENGLISH, "eng-GB") == segmented(ENGLISH, "en")
    text = tmp_path / "in.txt"
    text.write_text(ENGLISH + "\n")
    output = tmp_path / "out.conllu"
    argv = [str(saved), "--input", str(text), "--output", str(output), "--no-progress"]
    load_script("tag").main([*argv, "--language", "eng"])
    conllu = output.read_text()
    assert conllu.count("# sent_id") == 2 and "didn't" in conllu
    capsys.readouterr()
    with pytest.raises(SystemExit, match="2"):  # argparse's refusal of a flag's value
        load_script("tag").main([*argv, "--language", "xx"])
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "argument --language: 'xx' is no ISO 639 language" in line, line
    with pytest.raises(ValueError, match="^language: 'qq' is no ISO 639 language"):
        list(split_text("text", "qq"))


def test_nul_bytes_in_text_are_named_by_file_and_line(saved, tmp_path, capsys):
    utf16 = tmp_path / "utf16.txt"
    utf16.write_bytes("The dog barks.\nIt ran.\n".encode("utf-16-le"))  # no byte-order mark
    output = tmp_path / "out.conllu"
    for input_format in ("text", "lines", "tokens", "conllu"):
        argv = [str(saved), "--input", str(utf16), "--output", str(output), "--input-format", input_format]
        line = run_tag(argv, capsys)
        assert line.startswith(f"error: {utf16}:1: a NUL byte"), line
        assert not output.exists()
    mid = tmp_path / "mid.txt"
    mid.write_bytes(b"the dog saw a bird.\nthe\0dog\n")
    line = run_tag([str(saved), "--input", str(mid), "--output", str(output)], capsys)
    assert line.startswith(f"error: {mid}:2: a NUL byte"), line


def test_the_wrong_kind_of_value_is_refused_naming_its_type(saved):
    tagger = Tagger.from_pretrained(saved, device="cpu")
    with pytest.raises(TypeError, match="not dict"):
        tagger({"text": "the dog saw a bird."})
    with pytest.raises(TypeError, match="^Tagger.pipe takes an iterable of texts.*not a str"):
        next(tagger.pipe("the dog saw a bird."))
    with pytest.raises(TypeError, match="not a dict"):
        next(tagger.pipe({"text": "the dog"}))
    with pytest.raises(TypeError, match="^Tagger.pipe: item 1 is a NoneType, not a text"):
        list(tagger.pipe(["the dog.", None, "a bird."]))
    with pytest.raises(TypeError, match="^batch_size: a whole number of sentences, not a str"):
        list(tagger.pipe(["the dog."], batch_size="5"))
    assert len(list(tagger.pipe(["the dog.", "a bird."], batch_size=5))) == 2
