"""Tagging real text: splitting and tokenizing, tag() and Tagger, tag_file and scripts/tag.py,
CoNLL-U re-tagging, scoring by character offsets, any sentence length."""

import csv
import importlib.util
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tiny import labels, save_tagger
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast, pipeline

from cont_transformer import (
    build_tokenizer,
    tag,
)
from cont_transformer.processing_cont_transformer import Row
from cont_transformer.tagging.conllu_document import ConlluDocument, format_sentence
from cont_transformer.tagging.sample_treebank import write_sample_treebank
from cont_transformer.tagging.scoring import score
from cont_transformer.tagging.tag import Tagger
from cont_transformer.tagging.tag_files import tag_file
from cont_transformer.text_segmentation import split_text, tokenize_sentences

REPO = Path(__file__).resolve().parents[1]
TAGS = ["DT", "NN", "VB", "IN", ".", ",", "RB", "PRP", "``"]
WORDS = ["the", "dog", "saw", "a", "bird", ".", ",", "I", "do", "n't", "know", "!", '"', "he"]
GUM_DEV = REPO.parent / "shared/data/ud/UD_English-GUM/en_gum-ud-dev.conllu"
# The tiny tagger of these tests (see conftest.py) over TAGS, with room for 32 tokens.
TAGGER = {"num_basis": 2, "max_position_embeddings": 32, **labels(TAGS)}


@pytest.fixture(scope="module")
def tagger(tiny_tagger):
    tokenizer = build_tokenizer(WORDS)
    return Tagger(tiny_tagger(vocab_size=len(tokenizer), **TAGGER), tokenizer, batch_size=64)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, tagger):
    return save_tagger(tagger, tmp_path_factory.mktemp("tagger"))


def expected_tags(tagger, words):
    """Tags straight from one forward pass over the whole sentence (first token per word)."""
    encoding = tagger.tokenizer(words, is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        predicted = tagger.model(**encoding).logits[0].argmax(-1).tolist()
    first = {}
    for position, word in enumerate(encoding.word_ids()):
        if word is not None:
            first.setdefault(word, predicted[position])
    return [TAGS[first[i]] for i in range(len(words))]


# Raw text -------------------------------------------------------------------------------


def test_raw_text_punctuation_contractions_and_offsets():
    text = "The dog, saw a bird. I don't know!  \"Yes,\" he said.\n\nNo end here\n\nMr. Smith's car."
    sentences = list(split_text(text))
    assert [s.words(text) for s in sentences] == [
        ["The", "dog", ",", "saw", "a", "bird", "."],
        ["I", "do", "n't", "know", "!"],
        ['"', "Yes", ",", '"', "he", "said", "."],  # the opening quote starts its sentence
        ["No", "end", "here"],  # a blank line ends a sentence
        ["Mr.", "Smith", "'s", "car", "."],
    ]
    assert [s.multiword for s in sentences] == [{}, {1: 3}, {}, {}, {1: 3}]
    assert [s.paragraph_start for s in sentences] == [True, False, False, True, True]
    # every character is a word's or whitespace
    covered = {i for s in sentences for start, end in s.spans for i in range(start, end)}
    assert all(text[i].isspace() == (i not in covered) for i in range(len(text)))


def test_german_fused_forms_stay_one_word():
    text = "Wir gehen zum Bahnhof. Er war's nicht."
    words = [s.words(text) for s in split_text(text, "de")]
    assert words[0] == ["Wir", "gehen", "zum", "Bahnhof", "."]
    assert len(words) == 2


def rebuild_text(conllu: str) -> str:
    """The input text again, from FORMs (tokens, not the words of multiword tokens) and MISC."""
    unescape = {"s": " ", "t": "\t", "r": "\r", "n": "\n", "p": "|", "\\": "\\"}

    def spaces(value):
        return re.sub(
            r"\\(u[0-9a-f]{4}|.)", lambda m: chr(int(m[1][1:], 16)) if len(m[1]) > 1 else unescape[m[1]], value
        )

    text, inside = "", 0
    for line in conllu.split("\n"):
        if not line:
            inside = 0
        if not line or line.startswith("#"):
            continue
        fields = line.split("\t")
        if "-" in fields[0]:
            inside = int(fields[0].split("-")[1])
        elif int(fields[0]) <= inside:
            continue
        misc = dict(item.split("=", 1) for item in fields[9].split("|") if "=" in item)
        text += spaces(misc.get("SpacesBefore", "")) + fields[1]
        text += "" if misc.get("SpaceAfter") == "No" else spaces(misc.get("SpacesAfter", " "))
    return text


@pytest.mark.parametrize("input_format", ["text", "lines", "tokens"])
def test_conllu_output_rebuilds_the_input(tmp_path, tagger, input_format):
    text = "  He didn't\tgo.  The dog's | bird,\u00a0a\\b!\n\n\nI  know.\r\nYes\n"
    source = tmp_path / "in.txt"
    source.write_bytes(text.encode())
    output = tmp_path / "out.conllu"
    stats = tag_file(tagger, source, output, input_format=input_format)
    conllu = output.read_text(encoding="utf-8")
    assert rebuild_text(conllu) == text
    document = ConlluDocument(conllu, output)  # valid CoNLL-U
    assert stats.words == sum(map(len, document.words()))
    if input_format == "text":
        assert conllu.startswith("# newdoc\n# newpar\n# sent_id = 1\n# text = He didn't go.\n")
        assert "1-2\tdidn't" not in conllu and "2-3\tdidn't\t_" in conllu
    if input_format == "lines":
        assert len(document.sentences) == 3  # blank lines are no sentences


# tag() ----------------------------------------------------------------------------------


def test_tag_takes_text_sentences_or_words(tagger):
    text = "The dog saw a bird. I don't know!"
    from_text = tag(text, tagger.model, tagger.tokenizer)
    from_sentences = tag(["The dog saw a bird.", "I don't know!"], tagger.model, tagger.tokenizer)
    words = [["The", "dog", "saw", "a", "bird", "."], ["I", "do", "n't", "know", "!"]]
    from_words = tag(words, tagger.model, tagger.tokenizer)
    for result in (from_text, from_sentences, from_words):
        assert [[w.text for w in s.words] for s in result] == words
        assert [s.tags for s in result] == [expected_tags(tagger, w) for w in words]
    assert [text[a:b] for a, b in from_text[1].spans] == words[1]
    assert next(iter(from_words[0])) == ("The", from_words[0].tags[0]) and len(from_words[0]) == 6
    assert from_words[0].spans is None
    assert tag("", tagger.model, tagger.tokenizer).sentences == []
    assert tag([], tagger.model, tagger.tokenizer).sentences == []


def test_empty_or_mixed_input_is_an_error(tagger):
    with pytest.raises(ValueError, match="sentence 2, word 3: empty"):
        tagger([["a", "dog"], ["the", "dog", ""]])
    with pytest.raises(ValueError, match="sentence 1, word 1: empty"):
        tagger([["  "]])
    with pytest.raises(TypeError, match="not a mix"):
        tagger(["a dog", ["a", "dog"]])


def test_order_is_kept_under_length_sorting(tagger):
    rng = random.Random(0)
    sentences = [[rng.choice(WORDS) for _ in range(rng.randint(1, 31))] for _ in range(60)]
    batched = tagger.predict(sentences)  # several batches of mixed lengths
    assert batched == [expected_tags(tagger, words) for words in sentences]
    assert [len(t) for t in batched] == [len(s) for s in sentences]
    rows = [Row(0, [1] * length, []) for length in (3, 9, 5, 9, 1)]
    batches = list(tagger.processor.batches(rows, tokens_per_batch=18))
    assert [chosen for chosen, _, _ in batches] == [[1, 3], [2, 0, 4]]
    assert [tuple(input_ids.shape) for _, input_ids, _ in batches] == [(2, 9), (3, 5)]
    assert batches[0][2] is None and batches[1][2].tolist()[2] == [1, 0, 0, 0, 0]


def test_each_batch_count_has_its_own_name(tagger, model_dir, script_here):
    """Tokens per forward pass (``tokens_per_batch``, as the folder's pipeline names it) and
    sentences read ahead by ``pipe`` (``sentences_per_batch``); ``batch_size``, the older name
    of each, still means the same, and both at once are refused in one line."""
    model, tokenizer = tagger.model, tagger.tokenizer
    assert Tagger(model, tokenizer).tokens_per_batch == 2048
    assert Tagger(model, tokenizer, tokens_per_batch=64).tokens_per_batch == 64
    assert Tagger(model, tokenizer, batch_size=64).tokens_per_batch == 64
    with pytest.raises(ValueError, match=r"^tokens_per_batch and batch_size name the same count of tokens: give one$"):
        Tagger(model, tokenizer, tokens_per_batch=64, batch_size=64)
    with pytest.raises(ValueError, match=r"^tokens_per_batch must be an integer >= 1 token, got 0$"):
        Tagger(model, tokenizer, tokens_per_batch=0)
    texts = ["the dog saw a bird .", "I do n't know ! he saw the dog .", "a bird ."]
    expected = [doc.to_conllu() for doc in tagger.pipe(texts)]
    for options in ({"sentences_per_batch": 1}, {"batch_size": 1}, {}):
        assert [doc.to_conllu() for doc in tagger.pipe(texts, **options)] == expected
        assert [doc.to_conllu() for doc in tagger.bulk_process(texts, **options)] == expected
    with pytest.raises(ValueError, match=r"^sentences_per_batch and batch_size name the same count of sentences"):
        list(tagger.pipe(texts, sentences_per_batch=1, batch_size=1))
    with pytest.raises(ValueError, match=r"^batch_size must be an integer >= 1 sentence, got 0$"):
        list(tagger.pipe(texts, batch_size=0))
    # tag.py: --tokens-per-batch, and --batch-size, its older spelling, the same count.
    (model_dir.parent / "in.txt").write_text("I do n't know . He left .", encoding="utf-8")
    outputs = [
        script_here("scripts/tag.py", model_dir, "--input", model_dir.parent / "in.txt", flag, "8")
        for flag in ("--tokens-per-batch", "--batch-size")
    ]
    assert all(out.returncode == 0 for out in outputs) and outputs[0].stdout == outputs[1].stdout != ""


@pytest.mark.slow
def test_compiled_tagger_tags_like_the_eager_one(tagger):
    compiled = Tagger(
        tagger.model, tagger.tokenizer, batch_size=64, torch_compile=True, torch_compile_backend="aot_eager"
    )
    rng = random.Random(1)
    sentences = [[rng.choice(WORDS) for _ in range(rng.randint(1, 31))] for _ in range(20)]
    assert compiled.predict(sentences) == tagger.predict(sentences)
    assert compiled.forward is not tagger.model


def test_words_of_several_tokens_are_tagged_by_their_first(tiny_tagger):
    vocab = {"[PAD]": 0, "[UNK]": 1, "[ROOT]": 2, "the": 3, "zeb": 4, "##ra": 5, "ran": 6}
    backend = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.post_processor = processors.TemplateProcessing(single="[ROOT] $A", special_tokens=[("[ROOT]", 2)])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="[PAD]", unk_token="[UNK]", bos_token="[ROOT]"
    )
    model = tiny_tagger(vocab_size=len(vocab), **TAGGER)
    words = ["the", "zebra", "ran", "zebra"]
    assert len(tokenizer(words, is_split_into_words=True)["input_ids"]) == 7
    [sentence] = tag([words], model, tokenizer)
    assert sentence.tags == expected_tags(Tagger(model, tokenizer), words)


# Any length -----------------------------------------------------------------------------


def test_a_2000_word_sentence_is_tagged_completely(tmp_path, tagger, model_dir, tiny_tagger):
    rng = random.Random(1)
    words = [rng.choice(WORDS[:6]) for _ in range(2000)]
    [sentence] = tag([words], tagger.model, tagger.tokenizer)  # windows of 32 tokens
    assert [w.text for w in sentence.words] == words and len(sentence.tags) == 2000
    input_ids = tagger.tokenizer(words, is_split_into_words=True, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logits = tagger.model(input_ids=input_ids).logits  # sinusoidal: no length limit
    assert logits.shape == (1, 2001, len(TAGS))
    entities = pipeline("token-classification", model=str(model_dir))(" ".join(words))
    assert [e["word"] for e in entities] == words  # nothing truncated

    learned = tiny_tagger(vocab_size=len(tagger.tokenizer), **{**TAGGER, "position_encoding": "learned"})
    with pytest.raises(ValueError, match=r"2001 words \(root included\) is longer than the 32 learned positions"):
        learned(input_ids=input_ids)
    [sentence] = tag([words], learned, tagger.tokenizer)
    assert len(sentence.tags) == 2000
    assert sentence.tags[:10] == expected_tags(Tagger(learned, tagger.tokenizer), words[:31])[:10]


# CoNLL-U in ------------------------------------------------------------------------------

CONLLU = (
    "# newdoc id = d1\r\n"
    "# sent_id = 1\r\n"
    "# text = I don't go\r\n"
    "1\tI\ti\tPRON\tPRP\tCase=Nom\t3\tnsubj\t3:nsubj\t_\r\n"
    "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No\r\n"
    "2\tdo\tdo\tAUX\tVBP\t_\t4\taux\t4:aux\t_\r\n"
    "3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t4:advmod\t_\r\n"
    "3.1\tgo\tgo\tVERB\tVB\t_\t_\t_\t0:root\t_\r\n"
    "4\tgo\tgo\tVERB\tVB\t_\t0\troot\t0:root\tGloss=x y\r\n"
    "\r\n"
    "# sent_id = 2\n"
    "1\tthe\tthe\tDET\tDT\t_\t0\troot\t_\t_\n"
    "\n"
)


def test_conllu_round_trip_changes_only_the_predicted_column(tmp_path, tagger):
    sample = write_sample_treebank(tmp_path, num_train=1, num_dev=50)["validation"]
    texts = [CONLLU, sample.read_text(encoding="utf-8")]
    if GUM_DEV.is_file():  # the real file: multiword tokens, comments, SpaceAfter in MISC
        texts.append(GUM_DEV.read_text(encoding="utf-8"))
    for text in texts:
        source = tmp_path / "in.conllu"
        source.write_bytes(text.encode())
        output = tmp_path / "out.conllu"
        tag_file(tagger, source, output, input_format="conllu")
        document = ConlluDocument.read(source)
        tags = tagger.predict(document.words())
        expected = document.retagged("xpos", tags)
        assert output.read_bytes() == expected.encode()
        before, after = text.split("\n"), expected.split("\n")
        changed = {i for s in document.sentences for i in s}
        for index, (old, new) in enumerate(zip(before, after, strict=True)):
            if index not in changed:
                assert new == old
            else:
                old_fields, new_fields = old.split("\t"), new.split("\t")
                assert old_fields[:4] + old_fields[5:] == new_fields[:4] + new_fields[5:]


def test_json_and_tsv_outputs(tmp_path, tagger):
    source = tmp_path / "in.txt"
    source.write_text("The dog saw a bird. I don't know!")
    tag_file(tagger, source, tmp_path / "out.jsonl", output_format="json")
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["words"] for r in records][1] == ["I", "do", "n't", "know", "!"]
    assert records[1]["text"] == "I don't know!" and records[1]["spans"][1] == [22, 24]
    assert len(records[1]["xpos"]) == 5
    assert records[1]["tokens"][1] == {"id": [2, 3], "text": "don't"} and len(records[1]["tokens"]) == 4
    tag_file(tagger, source, tmp_path / "out.tsv", output_format="tsv")
    header, *lines = (tmp_path / "out.tsv").read_text().split("\n")
    assert header == "word\txpos" and lines[0] == f"The\t{records[0]['xpos'][0]}"
    assert "\n".join(lines).split("\n\n")[1].split("\n")[1] == f"do\t{records[1]['xpos'][1]}"
    with (tmp_path / "out.tsv").open(newline="") as stream:  # the header names the columns
        rows = list(csv.DictReader(stream, delimiter="\t", quoting=csv.QUOTE_NONE))
    assert [row["word"] for row in rows] == records[0]["words"] + records[1]["words"]
    # CoNLL-U in, JSON out: a comment holding a dash (UD's document ids do) is no token range.
    conllu = tmp_path / "in.conllu"
    conllu.write_text(
        "# newdoc id = gdt-20020204-ep-1\n# sent_id = gdt-1\n1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
        "1\tdo\t_\t_\t_\t_\t_\t_\t_\t_\n2\tn't\t_\t_\t_\t_\t_\t_\t_\t_\n3\tgo\t_\t_\t_\t_\t_\t_\t_\t_\n\n"
    )
    tag_file(tagger, conllu, tmp_path / "conllu.jsonl", input_format="conllu", output_format="json")
    (record,) = [json.loads(line) for line in (tmp_path / "conllu.jsonl").read_text().splitlines()]
    assert record["tokens"] == [{"id": [1, 2], "text": "don't"}, {"id": [3], "text": "go"}]
    assert [row["xpos"] for row in rows] == records[0]["xpos"] + records[1]["xpos"]


# Scoring --------------------------------------------------------------------------------


def test_scoring_aligns_words_by_character_offsets():
    gold = ConlluDocument(CONLLU.replace("\r", ""), "gold")
    result = score(gold, gold)
    assert {unit: values["f1"] for unit, values in result.items()} == dict.fromkeys(result, 1.0)
    # The system splits don't into two plain tokens, joins the sentences, mistags "the".
    system = format_sentence("1", ["I", "do", "n't", "go", "the"], ["PRP", "VBP", "RB", "VB", "NN"], "xpos")
    result = score(gold, ConlluDocument(system, "system"))
    assert result["tokens"]["f1"] == pytest.approx(2 * 3 / (4 + 5))  # I, go, the
    assert result["words"]["f1"] == 1.0  # do / n't align inside the multiword token
    assert result["sentences"]["f1"] == 0.0
    assert result["xpos"]["aligned_accuracy"] == pytest.approx(4 / 5)
    assert result["xpos"]["f1"] == pytest.approx(4 / 5)
    with pytest.raises(ValueError, match="different texts"):
        score(gold, ConlluDocument(format_sentence("1", ["I"], ["PRP"], "xpos"), "other"))


@pytest.mark.skipif(not GUM_DEV.is_file(), reason="needs the GUM dev file in shared/data")
def test_gum_dev_text_tokenizes_to_its_gold_words():
    gold = ConlluDocument.read(GUM_DEV)
    text = gold.text()
    out = []
    for number, sentence in enumerate(split_text(text), start=1):
        words = sentence.words(text)
        out.append(format_sentence(str(number), words, ["_"] * len(words), "xpos", multiword=sentence.multiword))
    result = score(gold, ConlluDocument("".join(out), "system"))
    assert result["tokens"]["f1"] > 0.99 and result["words"]["f1"] > 0.99
    assert result["sentences"]["f1"] > 0.9
    lines = gold.text(one_sentence_per_line=True).splitlines()
    assert len(lines) == len(gold.sentences)
    assert [s.words(lines[0]) for s in tokenize_sentences(lines[:1])] == gold.words()[:1]


# scripts/tag.py ------------------------------------------------------------------------


def _script():
    spec = importlib.util.spec_from_file_location("tag_script", REPO / "scripts" / "tag.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "name, content, input_format, message",
    [
        ("bad.txt", b"fine\n\xff\xfe\n", "text", r"bad.txt:2: not valid UTF-8"),
        ("bad.conllu", b"# c\n1\tI\tI\tPRON\tPRP\t_\n", "conllu", r"bad.conllu:2: expected 10"),
        (
            "empty_word.conllu",
            b"1\t\ti\tPRON\tPRP\t_\t0\troot\t_\t_\n",
            "conllu",
            r"empty_word.conllu:1: column 2 is empty",
        ),
        (
            "blank_word.conllu",
            b"1\tI\ti\t_\t_\t_\t0\troot\t_\t_\n2\t \t_\t_\t_\t_\t1\tx\t_\t_\n",
            "conllu",
            r"blank_word.conllu:2: blank word",
        ),
    ],
)
def test_script_bad_input_is_one_line_and_exit_2(tmp_path, capsys, model_dir, name, content, input_format, message):
    source = tmp_path / name
    source.write_bytes(content)
    output = tmp_path / "out.conllu"
    output.write_text("kept")
    with pytest.raises(SystemExit) as exit_info:
        _script().main(
            [
                str(model_dir),
                "--input",
                str(source),
                "--input-format",
                input_format,
                "--output",
                str(output),
                "--no-progress",
            ]
        )
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and re.search(message, error[0]), error
    assert output.read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, "out.conllu"])


@pytest.mark.parametrize("input_format", ["text", "conllu"])
def test_script_empty_input_gives_empty_output(tmp_path, model_dir, input_format):
    source = tmp_path / "empty"
    source.write_bytes(b"")
    output = tmp_path / "out.conllu"
    _script().main(
        [
            str(model_dir),
            "--input",
            str(source),
            "--input-format",
            input_format,
            "--output",
            str(output),
            "--no-progress",
        ]
    )
    assert output.read_bytes() == b""


@pytest.mark.slow
def test_script_stdin_to_stdout(model_dir):
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "tag.py"), str(model_dir), "--format", "tsv"],
        input=b"I don't know. He left.",
        capture_output=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()
    rows = [line.split("\t")[0] for line in result.stdout.decode().splitlines()]
    assert rows == ["word", "I", "do", "n't", "know", ".", "", "He", "left", ".", ""]  # a header line first
    assert "words/s" in result.stderr.decode()


@pytest.mark.parametrize(
    "args, message",
    [
        (["runs/nope"], "runs/nope: no such folder"),
        (["{model_dir}", "--device", "gpu 1"], "--device: 'gpu 1' is not a torch device"),
        (["{model_dir}", "--input", "nope.txt"], "input: nope.txt: no such file"),
        (["{model_dir}", "--processes", "-1"], "--processes: give a number of worker processes"),
    ],
)
def test_script_refuses_bad_flags_before_loading_torch(model_dir, args, message):
    code = (
        "import runpy, sys\n"
        "sys.argv = sys.argv[1:]\n"
        "try:\n"
        "    runpy.run_path(sys.argv[0], run_name='__main__')\n"
        "except SystemExit as exit_info:\n"
        "    loaded = [m for m in ('torch', 'transformers', 'huggingface_hub') if m in sys.modules]\n"
        "    print(exit_info.code, loaded)\n"
    )
    argv = [arg.format(model_dir=model_dir) for arg in args]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-c", code, str(REPO / "scripts" / "tag.py"), *argv]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert result.stdout.strip() == "2 []", result.stderr
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(f"error: {message}"), result.stderr
