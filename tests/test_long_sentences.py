"""A sentence far longer than the model's window, in every input format of ``scripts/tag.py``:
tagged completely, each word as its window tagged alone tags it, with the documented
context at the seams, and for work linear in its length (counted in tokens through the
model, not timed: the times are in docs/experiments.md, "One long sentence")."""

import itertools
import math

import pytest
from tiny import labels

from cont_transformer import build_tokenizer
from cont_transformer.sentence_windows import evaluation_windows, seam_context
from cont_transformer.tagging.conllu_document import ConlluDocument
from cont_transformer.tagging.tag import Tagger
from cont_transformer.tagging.tag_files import INPUT_FORMATS, tag_file

TAGS = ["DT", "NN", "VB", "CC", ","]
WORDS = ["the", "dog", "saw", "a", "bird", "and", "cat", ","]  # none ends a sentence
POSITIONS = 32  # the tiny tagger's max_position_embeddings: windows of 31 words and the root
CAPACITY = POSITIONS - 1
LENGTH = 20_000  # words of the long sentence, 870 windows
SHORT = 25  # words of a short sentence, one window (as 50 words are for a model of 128 positions)


@pytest.fixture(scope="module")
def tagger(tiny_tagger):
    tokenizer = build_tokenizer(WORDS)
    model = tiny_tagger(vocab_size=len(tokenizer), num_basis=2, max_position_embeddings=POSITIONS, **labels(TAGS))
    return Tagger(model, tokenizer, batch_size=2048)


@pytest.fixture(scope="module")
def words():
    cycle = itertools.cycle([5, 3, 7, 2, 11, 4])  # irregular, so that windows see different words
    return [WORDS[(i * next(cycle)) % len(WORDS)] for i in range(LENGTH)]


class Counting:
    """The model's forward, counting the rows and tokens it is given."""

    def __init__(self, forward):
        self.inner, self.rows, self.tokens = forward, 0, 0

    def __call__(self, input_ids, attention_mask=None):
        self.rows += input_ids.shape[0]
        self.tokens += int(input_ids.numel() if attention_mask is None else attention_mask.sum())
        return self.inner(input_ids=input_ids, attention_mask=attention_mask)


def one_input(words: list[str], input_format: str) -> str:
    """``words`` as one sentence in ``input_format``."""
    if input_format == "conllu":
        return "".join(f"{i}\t{word}\t_\t_\t_\t_\t_\t_\t_\t_\n" for i, word in enumerate(words, 1)) + "\n"
    return " ".join(words) + "\n"


def short_input(words: list[str], input_format: str, size: int = SHORT) -> str:
    """The same ``words`` in sentences of ``size`` (raw text: one paragraph each)."""
    sentences = [words[i : i + size] for i in range(0, len(words), size)]
    separator = "\n" if input_format == "text" else ""  # a blank line ends a sentence of raw text
    return separator.join(one_input(sentence, input_format) for sentence in sentences)


def tagged(tagger, text: str, input_format: str, tmp_path) -> tuple[list[dict[str, list[str]]], Counting]:
    """Per sentence of ``tag_file``'s CoNLL-U output, its words and columns; and the model's work."""
    counting = Counting(tagger.forward)
    tagger.forward = counting
    try:
        tag_file(tagger, None, tmp_path / "out.conllu", input_format=input_format, progress=False, text=text)
    finally:
        tagger.forward = counting.inner
    document = ConlluDocument((tmp_path / "out.conllu").read_text())
    sentences = []
    for lines in document.sentences:
        fields = [document.lines[i].split("\t") for i in lines]
        sentences.append({"form": [f[1] for f in fields], "xpos": [f[4] for f in fields]})
    return sentences, counting


def window_tags(tagger, words: list[str]) -> list[str]:
    """Each word's tag from its window (``evaluation_windows``) tagged as a sentence of its own."""
    windows = evaluation_windows(len(words), CAPACITY)
    alone = tagger.predict([words[start : start + CAPACITY] for start, _, _ in windows])
    return [tags[j - start] for (start, begin, end), tags in zip(windows, alone) for j in range(begin, end)]


# The windows ----------------------------------------------------------------------------------


@pytest.mark.parametrize("capacity", [1, 2, 3, 7, 8, 31, 127])
@pytest.mark.parametrize("length", [1, 5, 31, 32, 33, 100, 1000, 1001])
def test_windows_partition_the_sentence_with_context_at_every_seam(length, capacity):
    context = seam_context(capacity)
    windows = evaluation_windows(length, capacity)
    assert [j for _, begin, end in windows for j in range(begin, end)] == list(range(length))
    for start, begin, end in windows:
        assert 0 <= start <= begin < end <= min(start + capacity, length)
        assert begin - start >= min(context, begin)  # context before its first word
        assert start + capacity - end >= min(context, length - end)  # and after its last
    if length > capacity:
        assert all(start + capacity <= length for start, _, _ in windows)  # full windows
        assert len(windows) == 1 + math.ceil((length - capacity) / (capacity - 2 * context))


def test_the_context_at_seams_is_an_eighth_of_a_window():
    assert [seam_context(c) for c in (1, 2, 3, 8, 31, 127, 511)] == [0, 0, 1, 1, 4, 16, 64]
    windows = evaluation_windows(10_000, 127)
    assert len(windows) == 1 + math.ceil((10_000 - 127) / 95)  # 95 words of its own each: linear
    with pytest.raises(ValueError, match="context"):
        evaluation_windows(200, 8, context=4)


# The long sentence, in every input format -------------------------------------------------------


@pytest.mark.parametrize("input_format", INPUT_FORMATS)
def test_a_long_sentence_is_tagged_completely_as_its_windows_tag_it(tagger, words, input_format, tmp_path):
    [sentence], counting = tagged(tagger, one_input(words, input_format), input_format, tmp_path)
    assert sentence["form"] == words  # every word, once, in order
    assert all(tag in TAGS for tag in sentence["xpos"])
    assert sentence["xpos"] == window_tags(tagger, words)
    # Linear: every window is a full one (the root and 31 words); 23 words of its own each.
    windows = 1 + math.ceil((LENGTH - CAPACITY) / (CAPACITY - 2 * seam_context(CAPACITY)))
    assert counting.rows == windows
    assert counting.tokens == windows * POSITIONS


@pytest.mark.parametrize("input_format", INPUT_FORMATS)
def test_a_long_sentence_costs_less_than_twice_its_words_in_short_sentences(tagger, words, input_format, tmp_path):
    (tmp_path / "long").mkdir()
    (tmp_path / "short").mkdir()
    [sentence], long = tagged(tagger, one_input(words, input_format), input_format, tmp_path / "long")
    sentences, short = tagged(tagger, short_input(words, input_format), input_format, tmp_path / "short")
    assert [len(s["form"]) for s in sentences] == [SHORT] * (LENGTH // SHORT)
    assert [w for s in sentences for w in s["form"]] == sentence["form"] == words
    assert short.tokens == LENGTH + LENGTH // SHORT  # each word once, and a root per sentence
    assert long.tokens < 1.4 * short.tokens  # 870 windows of 32 tokens: 1.34 times


def test_the_words_a_window_owns_are_tagged_as_in_that_window_alone(tagger, words):
    """Through ``Tagger`` (the library's path): a 3-window sentence, a word near each seam."""
    sentence = words[:60]
    assert len(evaluation_windows(len(sentence), CAPACITY)) == 3
    [tags] = tagger.predict([sentence])
    assert tags == window_tags(tagger, sentence)
    assert tagger([sentence]).sentences[0].tags == tags
