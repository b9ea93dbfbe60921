"""One segmenter for every path: the pipeline a saved folder carries, ``Tagger``
and ``tag.py`` split raw text into the same words and sentences
(``cont_transformer/text_segmentation.py``), the saved tokenizer's pre-tokenizer gives the
same English words, and spaCy is no longer needed to tag text.
"""

import re
from pathlib import Path

import pytest

from cont_transformer.pipeline_cont_transformer import split_sentences
from cont_transformer.tagging.conllu_document import ConlluDocument, format_sentence
from cont_transformer.tagging.scoring import score
from cont_transformer.text.tokenization import build_tokenizer
from cont_transformer.text_segmentation import split_text, tokenize_sentences, word_pre_tokenizer

REPO = Path(__file__).resolve().parents[1]
UD = REPO.parent / "shared/data/ud"
DEV = {
    "en": UD / "UD_English-GUM/en_gum-ud-dev.conllu",
    "de": UD / "UD_German-GSD/de_gsd-ud-dev.conllu",
}
PARAGRAPH = (
    "Mr. Smith didn't go to the U.S. in 1999 -- he's gonna go now, with a native-like accent. "
    '"Why?" she asked (quietly.) See No. 5 and e.g. https://example.org/a_b, or mail me@x.org :-) today. [17] '
    "The states' rights cannot wait...\n\nA new paragraph; it ends here!"
)
GERMAN = "Wir gehen am 13. Mai zum Bahnhof, z.B. mit Dr. Müller. Er war ca. 5 Std. dort. ``Gut'', sagt er."


def words_and_sentences(text: str, language: str) -> tuple[list[list[str]], list[list[str]]]:
    """The pipeline's and the Tagger's sentences of ``text``, as lists of words."""
    pipeline = [[text[s:e] for s, e in sentence] for sentence in split_sentences(text, language)]
    tagger = [sentence.words(text) for sentence in split_text(text, language)]
    return pipeline, tagger


@pytest.mark.parametrize(("text", "language"), [(PARAGRAPH, "en"), (GERMAN, "de")])
def test_pipeline_and_tagger_split_a_paragraph_alike(text, language):
    pipeline, tagger = words_and_sentences(text, language)
    assert pipeline == tagger and len(tagger) > 1


def test_the_segmenters_words_and_sentences():
    sentences = list(split_text(PARAGRAPH))
    words = [s.words(PARAGRAPH) for s in sentences]
    assert words[0][:9] == ["Mr.", "Smith", "did", "n't", "go", "to", "the", "U.S.", "in"]
    assert ["he", "'s", "gon", "na"] == words[0][11:15] and ["native", "-", "like"] == words[0][20:23]
    assert words[1] == ['"', "Why", "?", '"', "she", "asked", "(", "quietly", ".", ")"]
    assert "No." in words[2] and "e.g." in words[2] and "https://example.org/a_b" in words[2]
    assert words[2][-7:] == ["me@x.org", ":-)", "today", ".", "[", "17", "]"]  # the footnote stays
    assert words[3] == ["The", "states", "'", "rights", "can", "not", "wait", "..."]
    assert words[4] == ["A", "new", "paragraph", ";", "it", "ends", "here", "!"]
    assert [s.paragraph_start for s in sentences] == [True, False, False, False, True]
    assert sentences[0].multiword == {2: 4, 11: 13, 13: 15}  # didn't, he's gonna (a run of clitic pieces)
    covered = {i for s in sentences for start, end in s.spans for i in range(start, end)}
    assert all(PARAGRAPH[i].isspace() == (i not in covered) for i in range(len(PARAGRAPH)))
    german = [s.words(GERMAN) for s in split_text(GERMAN, "de")]
    assert german[0] == ["Wir", "gehen", "am", "13.", "Mai", "zum", "Bahnhof", ",", "z.B.", "mit", "Dr.", "Müller", "."]
    assert german[1] == ["Er", "war", "ca.", "5", "Std.", "dort", "."] and german[2][0] == "``"


def test_the_saved_tokenizer_splits_raw_text_into_the_segmenters_english_words():
    tokenizer = build_tokenizer(["a"])
    pieces = tokenizer.backend_tokenizer.pre_tokenizer.pre_tokenize_str(PARAGRAPH)
    assert [span for _, span in pieces] == [span for s in split_text(PARAGRAPH) for span in s.spans]
    assert [word for word, _ in word_pre_tokenizer("de").pre_tokenize_str("Asien-Pazifik-Gipfel")] == [
        "Asien-Pazifik-Gipfel"
    ]


def test_lines_are_one_sentence_each():
    lines = ["He left. She stayed.", "I don't know"]
    assert [s.words(line) for s, line in zip(tokenize_sentences(lines), lines)] == [
        ["He", "left", ".", "She", "stayed", "."],
        ["I", "do", "n't", "know"],
    ]


def test_tagging_text_needs_no_spacy():
    source = "\n".join(path.read_text(encoding="utf-8") for path in (REPO / "cont_transformer").rglob("*.py"))
    assert re.search(r"^\s*(import|from) spacy", source, re.MULTILINE) is None
    dependencies = (REPO / "pyproject.toml").read_text(encoding="utf-8").split("[project.optional-dependencies]")[0]
    assert "spacy" not in dependencies


@pytest.mark.parametrize("language", ["en", "de"])
def test_dev_text_pipeline_and_tagger_agree_and_score_as_measured(language):
    if not DEV[language].is_file():
        pytest.skip(f"needs {DEV[language]} (shared/data)")
    gold = ConlluDocument.read(DEV[language])
    text = gold.text()
    pipeline, tagger = words_and_sentences(text, language)
    assert pipeline == tagger  # disagreement rate 0, words and sentences
    blocks = []
    for number, sentence in enumerate(split_text(text, language), start=1):
        words = sentence.words(text)
        blocks.append(format_sentence(str(number), words, ["_"] * len(words), "xpos", multiword=sentence.multiword))
    result = score(gold, ConlluDocument("".join(blocks), "system"))
    floor = {"en": (0.998, 0.95), "de": (0.97, 0.95)}[language]  # docs/experiments.md: 99.83 / 95.79, 97.04 / 95.94
    assert result["words"]["f1"] > floor[0] and result["sentences"]["f1"] > floor[1]
