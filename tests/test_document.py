"""The Python API in stanza's shape: a Document of sentences, tokens and words with
their columns and character offsets, multiword tokens, to_conllu() equal to what scripts/tag.py
writes, stanza's to_dict(), and CoNLL-U in (its multiword tokens and ids kept)."""

import os
import re
from pathlib import Path

import pytest

from cont_transformer.tagging.conllu_document import ConlluDocument
from cont_transformer.tagging.document import Document
from cont_transformer.tagging.tag import Tagger, tag
from cont_transformer.tagging.tag_files import tag_file
from cont_transformer.tagging.words import Token, Word

REPO = Path(__file__).resolve().parents[1]
TEXT = "The old dog saw a bird. Tom didn't see it!"
COLUMNS = ("lemma", "upos", "xpos", "feats")
# Gold columns, a head and relations, an empty node and a comment: all kept but the predicted columns.
CONLLU = """# sent_id = a
# text = Tom didn't see it!
1\tTom\tTom\tPROPN\tNNP\tNumber=Sing\t4\tnsubj\t_\t_
2-3\tdidn't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdid\tdo\tAUX\tVBD\tMood=Ind\t4\taux\t_\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t_\t_
4\tsee\tsee\tVERB\tVB\tVerbForm=Inf\t0\troot\t_\t_
4.1\tsaw\tsee\tVERB\tVBD\t_\t_\t_\t4:conj\t_
5\tit\tit\tPRON\tPRP\t_\t4\tobj\t_\tSpaceAfter=No
6\t!\t!\tPUNCT\t.\t_\t4\tpunct\t_\t_

# comment = two words
1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_
2\tdog\tdog\tNOUN\tNN\tNumber=Sing\t0\troot\t_\t_

"""


@pytest.fixture(scope="module")
def tagger(sample_run_60) -> Tagger:
    """The sample recipe's tagger after 60 steps (every column, varying from word to word)."""
    output = sample_run_60
    tagger = Tagger.from_pretrained(output, device="cpu")
    assert tagger.columns == COLUMNS and tagger.column == "xpos"
    return tagger


@pytest.fixture(scope="module")
def doc(tagger) -> Document:
    return tagger(TEXT)


def cli_output(tagger, tmp_path, text, input_format="text") -> str:
    """What tag_file (scripts/tag.py) writes as CoNLL-U for ``text``."""
    tag_file(tagger, None, tmp_path / "out.conllu", text=text, input_format=input_format, progress=False)
    return (tmp_path / "out.conllu").read_text(encoding="utf-8")


def test_words_carry_their_columns_and_offsets(tagger, doc):
    assert isinstance(doc, Document) and doc.text == TEXT
    assert [s.text for s in doc.sentences] == ["The old dog saw a bird.", "Tom didn't see it!"]
    words = [[w.text for w in s.words] for s in doc.sentences]
    assert words == [["The", "old", "dog", "saw", "a", "bird", "."], ["Tom", "did", "n't", "see", "it", "!"]]
    predicted = tagger.predict_columns(words)
    for sentence, columns in zip(doc.sentences, predicted):
        assert [w.id for w in sentence.words] == list(range(1, len(sentence.words) + 1))
        for column in COLUMNS:  # CoNLL-U's empty "_" is None, as in stanza
            assert [getattr(w, column) for w in sentence.words] == [None if v == "_" else v for v in columns[column]]
        for word in sentence.words:
            assert isinstance(word, Word) and isinstance(word.upos, str) and isinstance(word.lemma, str)
            assert TEXT[word.start : word.end] == word.text
            assert (word.start_char, word.end_char) == (word.start, word.end)
    assert doc[0].words[0].upos == doc.sentences[0].words[0].upos  # doc[i]: the i-th sentence
    assert doc.sentences[1].words[1].start == TEXT.index("didn't")


def test_a_contraction_is_one_token_of_two_words(doc):
    sentence = doc.sentences[1]
    assert [t.text for t in sentence.tokens] == ["Tom", "didn't", "see", "it", "!"]
    token = sentence.tokens[1]
    assert isinstance(token, Token) and token.is_mwt() and token.id == (2, 3)
    assert [w.text for w in token.words] == ["did", "n't"] and [w.id for w in token.words] == [2, 3]
    assert all(w.parent is token for w in token.words)
    assert [t.id for t in sentence.tokens] == [(1,), (2, 3), (4,), (5,), (6,)]
    for t in doc.iter_tokens():  # offsets slice the input to each token's text
        assert TEXT[t.start : t.end] == t.text == "".join(w.text for w in t.words)
    assert (doc.num_tokens, doc.num_words) == (12, 13) and len(list(doc.iter_words())) == 13


def test_documents_and_sentences_read_as_lists(doc):
    assert len(doc) == 2 and list(doc) == doc.sentences
    sentence = doc.sentences[1]
    xpos = [w.xpos or "_" for w in sentence.words]
    assert list(sentence) == list(zip(["Tom", "did", "n't", "see", "it", "!"], xpos))
    assert sentence.tags == sentence.xpos == xpos and len(sentence) == 6
    assert sentence.spans == [(w.start, w.end) for w in sentence.words]
    assert sentence.columns == {c: [getattr(w, c) or "_" for w in sentence.words] for c in COLUMNS}
    assert sentence.feats == sentence.columns["feats"]


def test_to_conllu_is_what_the_cli_writes(tagger, doc, tmp_path):
    conllu = doc.to_conllu()
    assert conllu == cli_output(tagger, tmp_path, TEXT)
    assert "\n2-3\tdidn't\t_\t_\t_\t_\t_\t_\t_\t_\n2\tdid\t" in conllu
    assert conllu.startswith("# newdoc\n# newpar\n# sent_id = 1\n# text = The old dog saw a bird.\n")
    # Sentences given as strings: what --input-format lines writes for them one per line.
    lines = [" The dog saw a bird. ", "I don't know!"]
    from_lines = tagger(lines)
    assert from_lines.text == "\n".join(lines) and from_lines.sentences[0].words[0].start == 1
    assert from_lines.to_conllu() == cli_output(tagger, tmp_path, "\n".join(lines), "lines")
    assert tag(TEXT, tagger.model, tagger.tokenizer).to_conllu() == conllu


def test_to_dict_is_stanzas(doc):
    data = doc.to_dict()
    assert [len(s) for s in data] == [7, 7]  # the multiword token's own entry, then its words
    keys = ["id", "text", *COLUMNS, "misc", "start_char", "end_char", "comments"]
    for sentence, entries in zip(doc.sentences, data):
        words = [entry for entry in entries if isinstance(entry["id"], int)]
        for word, entry in zip(sentence.words, words, strict=True):
            assert list(entry) == [k for k in keys if k in entry]  # stanza's order; None left out
            assert {k: v for k, v in entry.items() if k != "comments"} == {
                k: v for k, v in vars(word).items() if k in keys and v is not None
            } | {"start_char": word.start, "end_char": word.end}
        assert entries[0]["comments"] == sentence.comments  # the sentence's, on its first entry
    assert data[0][0]["id"] == 1 and data[0][0]["text"] == "The" and data[0][0]["start_char"] == 0
    assert data[0][0]["comments"] == ["# newdoc", "# newpar", "# sent_id = 1", "# text = The old dog saw a bird."]
    assert data[0][5]["misc"] == "SpaceAfter=No" and "misc" not in data[0][4]  # bird, then "."; one space
    mwt, did, nt = data[1][1:4]
    assert mwt == {"id": (2, 3), "text": "didn't", "start_char": 28, "end_char": 34}
    assert (did["id"], did["text"], nt["id"], nt["text"]) == (2, "did", 3, "n't")


def test_pre_tokenized_words_have_no_offsets(tagger):
    doc = tagger([["Tom", "did", "n't", "see", "it", "!"]])
    sentence = doc.sentences[0]
    assert doc.text is None and sentence.text == "Tom did n't see it !"
    assert all(w.start is None and w.end is None for w in sentence.words) and sentence.spans is None
    assert [t.id for t in sentence.tokens] == [(i,) for i in range(1, 7)]
    assert "start_char" not in doc.to_dict()[0][0]
    assert doc.to_conllu().startswith("# sent_id = 1\n# text = Tom did n't see it !\n1\tTom\t")


def test_conllu_in_keeps_its_tokens_and_ids_and_round_trips(tagger, tmp_path):
    read = Document.from_conllu(CONLLU)
    assert read.to_conllu() == CONLLU  # untagged: byte for byte
    first = read.sentences[0]
    assert first.text == "Tom didn't see it!" and read.sentences[1].text == "The dog"
    assert [w.text for w in first.words] == ["Tom", "did", "n't", "see", "it", "!"]  # the empty node is no word
    assert [t.id for t in first.tokens] == [(1,), (2, 3), (4,), (5,), (6,)]
    assert [w.text for w in first.tokens[1].words] == ["did", "n't"] and first.tokens[1].text == "didn't"
    did, nt = first.tokens[1].words
    assert (did.lemma, did.upos, did.xpos, did.feats, nt.feats) == ("do", "AUX", "VBD", "Mood=Ind", None)
    assert did.start is None and first.spans is None

    path = tmp_path / "in.conllu"
    path.write_text(CONLLU, encoding="utf-8")
    again = Document.read_conllu(path)
    assert again.to_dict() == read.to_dict() and [s.text for s in again] == [s.text for s in read]
    tagged = tagger(read)
    assert tagged is read  # tagged in place, as stanza's pipeline does
    assert [t.id for t in first.tokens] == [(1,), (2, 3), (4,), (5,), (6,)] and first.tokens[1].words == [did, nt]
    predicted = tagger.predict_columns([[w.text for w in s.words] for s in read.sentences])
    assert first.upos == predicted[0]["upos"] and first.tags == predicted[0]["xpos"]
    tag_file(tagger, path, tmp_path / "out.conllu", input_format="conllu", progress=False)
    assert tagged.to_conllu() == (tmp_path / "out.conllu").read_text(encoding="utf-8")
    assert (
        "\t4\tnsubj\t" in tagged.to_conllu()
        and "\n4.1\tsaw\tsee\tVERB\tVBD\t_\t_\t_\t4:conj\t_\n" in tagged.to_conllu()
    )

    # The words are the data: a changed value is what to_conllu writes.
    first.words[0].upos = "X"
    assert tagged.to_conllu().split("\n")[2].split("\t")[3] == "X"
    assert tag(Document.from_conllu(CONLLU), tagger.model, tagger.tokenizer).sentences[0].tags == first.tags
    with pytest.raises(ValueError, match=r"<input>:2: expected 10 tab-separated columns"):
        Document.from_conllu("# text = a\n1\ta\n")
    with pytest.raises(ValueError, match=r"<input>:2: HEAD 'x' is not a word id"):
        Document.from_conllu("# text = a\n1\ta\t_\t_\t_\t_\tx\t_\t_\t_\n")


def test_conllu_words_keep_every_column_and_sentences_their_comments():
    read = Document.from_conllu(CONLLU)
    first, second = read.sentences
    tom, _, nt, see, it = first.words[:5]
    assert (tom.head, tom.deprel, tom.deps, tom.misc) == (4, "nsubj", None, None)  # empty: None, not "_"
    assert (see.head, see.deprel, it.misc, nt.feats) == (0, "root", "SpaceAfter=No", None)
    assert first.sent_id == "a" and first.comments == ["# sent_id = a", "# text = Tom didn't see it!"]
    assert second.sent_id is None and second.comments == ["# comment = two words"]
    assert read.sentence_comments() == [first.comments, second.comments]
    entry = read.to_dict()[0][0]
    assert entry == {
        "id": 1,
        "text": "Tom",
        "lemma": "Tom",
        "upos": "PROPN",
        "xpos": "NNP",
        "feats": "Number=Sing",
        "head": 4,
        "deprel": "nsubj",
        "comments": first.comments,
    }
    # The words are the data: a changed head is what to_conllu writes.
    tom.head, tom.deprel = 2, "dep"
    assert read.to_conllu().split("\n")[2] == "1\tTom\tTom\tPROPN\tNNP\tNumber=Sing\t2\tdep\t_\t_"


def test_a_document_of_its_own_dict_round_trips():
    read = Document.from_conllu(CONLLU)
    without_empty_node = "".join(line for line in CONLLU.splitlines(keepends=True) if not line.startswith("4.1\t"))
    # Empty nodes are no words, so no entries; every other line comes back, comments as they were.
    bare = Document(read.to_dict())
    assert bare.to_dict() == read.to_dict() and bare.to_conllu() == without_empty_node
    assert [s.sent_id for s in bare] == ["a", None] and bare.sentences[0].tokens[1].id == (2, 3)
    assert bare.sentences[0].text == "Tom didn't see it!" and bare.sentences[1].text == "The dog"
    # stanza's Document(sentences, text, comments): the comments given replace those of the entries.
    comments = [["# sent_id = b"], ["# sent_id = c", "# text = The dog"]]
    again = Document(read.to_dict(), comments=comments)
    assert [s.sent_id for s in again] == ["b", "c"] and again.sentence_comments() == comments
    assert again.to_conllu().startswith("# sent_id = b\n1\tTom\tTom\tPROPN\tNNP\t")
    # Entries without comments (a dict written by hand): numbered, their text from the words.
    plain = [[{k: v for k, v in e.items() if k != "comments"} for e in entries] for entries in read.to_dict()]
    assert Document(plain).to_conllu().startswith("# sent_id = 1\n# text = Tom didn't see it!\n1\tTom\t")
    assert [s.sent_id for s in Document(plain)] == ["1", "2"]
    with pytest.raises(ValueError, match="word entry: 'colour' is not one of"):
        Document([[{"id": 1, "text": "a", "colour": "red"}]])
    with pytest.raises(ValueError, match="comments: 1 lists for 2 sentences"):
        Document(read.to_dict(), comments=[[]])


def test_a_tagged_text_round_trips_through_its_dict(tagger):
    text = "  The old dog saw a bird.\n\nTom didn't see it!\tI  did.\n"
    doc = tagger(text)
    for again in (Document(doc.to_dict(), doc.text), Document(doc.to_dict())):  # with its text and without
        assert again.to_dict() == doc.to_dict() and [s.text for s in again] == [s.text for s in doc]
        assert [[w.upos for w in s.words] for s in again] == [[w.upos for w in s.words] for s in doc]
        assert again.to_conllu() == doc.to_conllu()  # # newdoc / # newpar, # text, the whitespace in MISC
    # The whitespace after each token, as stanza gives it, rebuilds the text.
    tokens = list(doc.iter_tokens())
    assert text.lstrip() == "".join(token.text + token.spaces_after for token in tokens)
    assert [t.spaces_after for t in doc.sentences[1].tokens][-2:] == ["", "\t"]


def test_stanzas_conllu_format_spec(doc):
    assert format(doc, "C") == doc.to_conllu() == f"{doc:C}"  # stanza's "{:C}".format(doc)
    plain = f"{doc:c}"
    assert not any(line.startswith("#") for line in plain.split("\n")) and plain.count("\n\n") == len(doc.sentences)
    read = Document.from_conllu(CONLLU)
    assert f"{read:C}" == CONLLU
    block = f"{read.sentences[0]:C}"
    assert block.startswith("# sent_id = a\n# text = Tom didn't see it!\n1\tTom\t") and not block.endswith("\n")
    assert f"{read.sentences[0]:c}".startswith("1\tTom\t") and f"{read:}" == str(read)


def written_sent_ids(conllu: str) -> list[str | None]:
    """The ``# sent_id`` of each block of ``conllu`` (None for a block without one)."""
    blocks = [block for block in conllu.split("\n\n") if block.strip()]
    return [next((line[12:] for line in b.split("\n") if line.startswith("# sent_id = ")), None) for b in blocks]


def test_stanzas_back_references_ids_and_language(tagger, doc):
    assert doc.lang == tagger.language == "en" and Document.from_conllu(CONLLU).lang is None
    for index, sentence in enumerate(doc.sentences):
        assert sentence.doc is doc and sentence.index == sentence.id == index
        assert all(word.sent is sentence for word in sentence.words)
        assert all(token.sent is sentence for token in sentence.tokens)
    # sent_id is what the CoNLL-U written says, from raw text, words, CoNLL-U and dicts alike.
    for made in (doc, tagger([["Tom", "ran"], ["A", "dog", "."]]), Document.from_conllu(CONLLU)):
        assert [s.sent_id for s in made] == written_sent_ids(made.to_conllu())
        assert [s.sent_id for s in Document(made.to_dict())] == [s.sent_id for s in made]
    assert [s.sent_id for s in doc] == ["1", "2"]
    assert f"{doc.sentences[0].tokens[-2].spaces_after!r}" == "''"  # "bird" then "."


GUM_DEV = Path(os.environ.get("UD_DIR", "/work/shared/data/ud")) / "UD_English-GUM" / "en_gum-ud-dev.conllu"


@pytest.mark.skipif(not GUM_DEV.is_file(), reason="UD English-GUM dev is not here (UD_DIR)")
def test_gum_dev_round_trips_through_its_dict(tagger):
    """GUM dev as CoNLL-U (its comments, SpaceAfter=No, multiword tokens) and as raw text
    tagged by the sample tagger: a document of its own dict writes the same CoNLL-U (empty
    nodes, which are no words, aside)."""
    read = Document.read_conllu(GUM_DEV)
    gold = GUM_DEV.read_text(encoding="utf-8")
    without_empty_nodes = "".join(
        line for line in gold.splitlines(keepends=True) if not re.match(r"[0-9]+\.[0-9]+\t", line)
    )
    assert read.to_conllu() == gold and without_empty_nodes != gold  # GUM dev has empty nodes
    assert Document(read.to_dict()).to_conllu() == without_empty_nodes
    assert [s.sent_id for s in read] == written_sent_ids(gold)
    text = ConlluDocument(gold).text()  # paragraphs and sentences as its # text lines give them
    doc = tagger(text[:60_000])
    assert Document(doc.to_dict()).to_conllu() == doc.to_conllu()
    assert Document(doc.to_dict(), doc.text).to_conllu() == doc.to_conllu()
    assert "".join(t.text + t.spaces_after for t in doc.iter_tokens()) == text[:60_000].lstrip()
    assert [s.sent_id for s in doc] == written_sent_ids(doc.to_conllu())


def test_a_document_and_the_processor_name_the_same_written_columns():
    from cont_transformer.processing_cont_transformer import WRITTEN_COLUMNS as processor_columns
    from cont_transformer.tagging.document import WRITTEN_COLUMNS

    assert WRITTEN_COLUMNS == processor_columns == ("lemma", "upos", "xpos", "feats")
