"""The learned segmenter: trained on a treebank's train split (the generated sample
treebank, and a small Spanish-like one whose contractions ``del``/``al`` are multiword
tokens of words that are not their pieces), it splits raw text into tokens, words and
sentences; it round-trips through its files and refuses broken ones; ``tag.py``, ``Tagger``
and the folder's pipeline (without the package too) use it where a folder holds one."""

import json
import random
import shutil
from pathlib import Path

import pytest
import torch
from test_remote_pipeline import without_package_run
from tiny import labels
from transformers import pipeline

from cont_transformer import build_tokenizer
from cont_transformer.learned_segmentation import INSIDE, SEGMENTER_FILE, TOKEN, WEIGHTS_FILE, Segmenter, has_segmenter
from cont_transformer.tagging.conllu_document import ConlluDocument
from cont_transformer.tagging.sample_treebank import write_sample_treebank
from cont_transformer.tagging.segmenter_training import (
    joined_punctuation,
    note_on_card,
    score_segmenter,
    suffix_rules,
    token_lexicon,
    train_segmenter,
    treebank_paragraphs,
)
from cont_transformer.tagging.tag import Tagger

REPO = Path(__file__).resolve().parents[1]
GREEK = REPO.parent / "shared/data/ud/UD_Greek-GDT"
NOUNS = ["mercado", "río", "campo", "pueblo", "monte", "libro", "perro", "gato", "camino", "puerto"]
VERBS = ["vino", "fue", "salió", "corrió", "llegó", "habló"]
CONTRACTIONS = {"del": ("de", "el"), "al": ("a", "el")}


def spanish_treebank(path: Path, count: int, seed: int) -> Path:
    """``count`` sentences such as ``El perro vino del mercado al río.``, a paragraph every
    four, ``del``/``al`` written as multiword tokens over ``de el``/``a el``."""
    rng = random.Random(seed)
    blocks = ["# newdoc id = es"]
    for number in range(1, count + 1):
        tokens = [("El", ("El",)), (rng.choice(NOUNS), None), (rng.choice(VERBS), None)]
        for _ in range(rng.randint(1, 2)):
            contraction = rng.choice([*CONTRACTIONS, "en el"])
            if contraction == "en el":
                tokens += [("en", None), ("el", None)]
            else:
                tokens.append((contraction, CONTRACTIONS[contraction]))
            tokens.append((rng.choice(NOUNS), None))
        tokens.append((rng.choice(".!?"), None))
        text = " ".join(form for form, _ in tokens[:-1]) + tokens[-1][0]
        lines = (["# newpar"] if number % 4 == 1 and number > 1 else []) + [f"# sent_id = {number}", f"# text = {text}"]
        index = 1
        for position, (form, words) in enumerate(tokens):
            misc = "SpaceAfter=No" if position == len(tokens) - 2 else "_"
            words = words or (form,)
            if len(words) > 1:
                lines.append(f"{index}-{index + len(words) - 1}\t{form}\t_\t_\t_\t_\t_\t_\t_\t{misc}")
            for word in words:
                word_misc = misc if len(words) == 1 else "_"
                lines.append(f"{index}\t{word}\t_\tX\t_\t_\t{0 if index == 1 else 1}\tdep\t_\t{word_misc}")
                index += 1
        blocks.append("\n".join(lines) + "\n")
    path.write_text("\n".join(blocks) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def spanish(tmp_path_factory) -> tuple[Segmenter, dict, Path]:
    folder = tmp_path_factory.mktemp("spanish")
    train = spanish_treebank(folder / "es_toy-ud-train.conllu", 240, seed=0)
    dev = spanish_treebank(folder / "es_toy-ud-dev.conllu", 40, seed=1)
    torch.manual_seed(0)
    segmenter, scores = train_segmenter(train, dev, language="es", max_epochs=12, patience=12, log=lambda _: None)
    return segmenter, scores, dev


def test_treebank_text_and_labels_follow_its_tokens(tmp_path):
    dev = spanish_treebank(tmp_path / "x-ud-dev.conllu", 8, seed=3)
    document = ConlluDocument.read(dev)
    paragraphs, skipped = treebank_paragraphs(document)
    assert skipped == 0 and len(paragraphs) == 2  # a paragraph at each # newpar
    assert "\n\n".join(p.text for p in paragraphs) + "\n" == document.text()  # the evaluation's raw text
    first = paragraphs[0]
    assert len(first.labels) == len(first.text)
    # A label after every token's last character, a sentence end after each sentence.
    ends = [i for i, label in enumerate(first.labels) if label in (2, 3)]
    assert len(ends) == len(first.tokens)
    assert sum(label == 3 for label in first.labels) == 4
    assert all(first.labels[i] == -100 for i, c in enumerate(first.text) if c == " ")


def test_lexicon_and_suffix_rules_give_the_words_of_a_token():
    tokens = [("del", ("de", "el"))] * 3 + [("al", ("a", "el"))] * 3 + [("el", ("el",)), ("sol", ("sol",))]
    # A suffix rule counts distinct forms: two frequent contractions beside two other forms
    # ending in l (2 of 4) make none, however often they occur.
    assert "l" not in suffix_rules(tokens)
    tokens += [("pol", ("po", "el")), ("tal", ("ta", "el")), ("değildir", ("değil", "dir"))]
    lexicon, rules = token_lexicon(tokens), suffix_rules(tokens)
    assert lexicon["del"] == ["de", "el"] and "sol" not in lexicon
    assert rules["l"] == ["", "el"]  # 4 of the 6 forms ending in l are a word + el
    assert "r" not in rules  # değildir's words are its pieces: the model learns them
    segmenter = Segmenter(None, None, [], lexicon, rules)
    assert segmenter.token_words("Del") == ["De", "el"]  # the lexicon, with the form's case
    assert segmenter.token_words("pal") == ["pa", "el"]  # an unseen form: the suffix rule
    assert segmenter.token_words("pan") is None  # one word
    assert Segmenter(None, None, [], {"del": [], "al": ["a", "el"]}).token_words("Del") is None  # mostly one word
    assert segmenter.token_words("değildir", [5]) == ["değil", "dir"]  # the model's boundaries
    # A form seen twice, never as several words (Tamil மேலும், which a suffix rule would split):
    # one word, whatever the suffix rules or the model's boundaries say.
    seen = Segmenter(None, None, [], lexicon, rules, dictionary=["sol"])
    assert seen.token_words("Sol") is None and seen.token_words("sol", [2]) is None
    assert segmenter.token_words("sol") == ["so", "el"]  # without the dictionary: the rule


def test_punctuation_the_treebank_never_writes_inside_a_word_is_parted_from_it():
    # Learned: "." inside "Dr." and the apostrophe of "n't" are the treebank's own; "?" always
    # stands alone, "..." is punctuation alone too.
    tokens = [("Dr.", ("Dr.",)), ("...", ("...",)), ("?", ("?",)), ("n't", ("n't",)), ("word", ("word",))]
    assert joined_punctuation(tokens) == "'."
    assert joined_punctuation([(".", (".",))] * 200 + [("Dr.", ("Dr.",))]) == ""  # 1 in 201: noise
    text = 'Dr. Who said "hi?!" (twice) and didn\'t stop, 3/4 of it...'
    # A model that knows only spaces: every character inside, a token ending before each space.
    labels = [TOKEN if i + 1 == len(text) or text[i + 1] == " " else INSIDE for i in range(len(text))]
    logits = torch.nn.functional.one_hot(torch.tensor(labels), 4).float()
    segmenter = Segmenter(None, None, [], joined_punctuation="'.")
    segmenter.label_logits = lambda texts: [logits]
    (sentence,) = segmenter.split(text)
    # Quotes, brackets, "?", "!" and the comma are parted from what they touch; "3/4" (inside
    # a word), "..." (marks alike) and the joined "Dr.", "didn't" and "it..." are the model's.
    assert sentence.words(text) == [
        *("Dr.", "Who", "said", '"', "hi", "?", "!", '"', "(", "twice", ")"),
        *("and", "didn't", "stop", ",", "3/4", "of", "it..."),
    ]
    # A segmenter saved before the rule was learned keeps the model's tokens.
    assert Segmenter(None, None, []).separated(text, labels) == labels


def test_learns_tokens_multiword_tokens_and_sentences(spanish):
    segmenter, scores, dev = spanish
    assert scores["words"] > 97 and scores["sentences"] > 90 and scores["tokens"] > 97
    text = "El perro vino del monte al pueblo. El gato fue al río!\n\nEl perro llegó en el camino."
    sentences = list(segmenter.split(text))
    assert [s.words(text) for s in sentences] == [
        ["El", "perro", "vino", "de", "el", "monte", "a", "el", "pueblo", "."],
        ["El", "gato", "fue", "a", "el", "río", "!"],
        ["El", "perro", "llegó", "en", "el", "camino", "."],
    ]
    assert [s.paragraph_start for s in sentences] == [True, False, True]
    first = sentences[0]
    assert first.multiword == {3: 5, 6: 8}
    assert first.spans[3] == first.spans[4] == (text.index("del"), text.index("del") + 3)  # the token's span
    assert score_segmenter(lambda t: segmenter.split(t), ConlluDocument.read(dev))["words"] == scores["words"]


def test_training_runs_its_minimum_of_passes_before_patience_may_stop_it(tmp_path):
    train = spanish_treebank(tmp_path / "es_toy-ud-train.conllu", 40, seed=2)
    dev = spanish_treebank(tmp_path / "es_toy-ud-dev.conllu", 8, seed=3)
    passes = []
    train_segmenter(train, dev, max_epochs=6, patience=0, min_epochs=3, log=passes.append)
    assert 3 <= len([line for line in passes if line.startswith("epoch")]) <= 6


def test_sample_treebank_tokens_and_concatenated_multiword_tokens(tmp_path):
    files = write_sample_treebank(tmp_path, num_train=300, num_dev=60)
    segmenter, scores = train_segmenter(files["train"], files["validation"], max_epochs=12, log=lambda _: None)
    assert scores["words"] > 95
    text = "The dog didn't see it. They liked the bird."
    sentences = list(segmenter.split(text))
    assert [s.words(text) for s in sentences] == [
        ["The", "dog", "did", "n't", "see", "it", "."],
        ["They", "liked", "the", "bird", "."],
    ]
    assert sentences[0].multiword == {2: 4} and not sentences[0].forms  # did + n't: pieces of didn't


def test_save_load_round_trip_and_broken_files_refused(spanish, tmp_path):
    segmenter, _, _ = spanish
    segmenter.save(tmp_path)
    assert has_segmenter(tmp_path) and sorted(p.name for p in tmp_path.iterdir()) == [SEGMENTER_FILE, WEIGHTS_FILE]
    loaded = Segmenter.load(tmp_path)
    text = "El perro vino al río. El gato fue del campo al monte?"
    assert [(s.spans, s.multiword, s.forms) for s in loaded.split(text)] == [
        (s.spans, s.multiword, s.forms) for s in segmenter.split(text)
    ]
    assert loaded.lexicon == segmenter.lexicon and loaded.scores == segmenter.scores
    assert loaded.joined_punctuation == segmenter.joined_punctuation == ""  # the toy writes none inside words
    good = (tmp_path / SEGMENTER_FILE).read_text()
    wrong_joined = good.replace('"joined_punctuation": ""', '"joined_punctuation": [1]')
    for content in (
        "{not json",
        json.dumps({"format": "something else"}),
        good.replace('"num_characters"', '"n"'),
        wrong_joined,
    ):
        (tmp_path / SEGMENTER_FILE).write_text(content)
        with pytest.raises(ValueError, match=f"^{tmp_path / SEGMENTER_FILE}: not a learned segmenter") as err:
            Segmenter.load(tmp_path)
        assert "\n" not in str(err.value)
    # An edit that keeps it a segmenter (another lexicon entry) is refused by its weights' record.
    edited = json.loads(good)
    edited["lexicon"]["del"] = ["de", "la"]
    (tmp_path / SEGMENTER_FILE).write_text(json.dumps(edited, ensure_ascii=False, sort_keys=True) + "\n")
    with pytest.raises(ValueError, match=f"^{tmp_path / SEGMENTER_FILE}: differs from the segmenter its weights"):
        Segmenter.load(tmp_path)
    (tmp_path / SEGMENTER_FILE).write_text(good)
    assert Segmenter.load(tmp_path).lexicon == segmenter.lexicon
    (tmp_path / WEIGHTS_FILE).write_bytes(b"\x00" * 40)
    with pytest.raises(ValueError, match=f"^{tmp_path / WEIGHTS_FILE}: not the weights") as err:
        Segmenter.load(tmp_path)
    assert "\n" not in str(err.value)


@pytest.fixture(scope="module")
def folder(spanish, tiny_tagger, tmp_path_factory) -> Path:
    """A tiny tagger's folder holding the Spanish-like segmenter."""
    folder = tmp_path_factory.mktemp("tagger")
    tags = ["X", "PUNCT"]
    tokenizer = build_tokenizer(["el", "de", "a", "perro", "vino", ".", "!", "?", *NOUNS])
    model = tiny_tagger(vocab_size=len(tokenizer), max_position_embeddings=32, **labels(tags))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    (folder / "metrics.json").write_text(json.dumps({"tag_column": "xpos"}))
    spanish[0].save(folder)
    return folder


def test_a_compressed_tagger_keeps_its_segmenter_and_its_cards_row(folder, tmp_path):
    from cont_transformer.tools.compression import compress

    source = tmp_path / "source"
    shutil.copytree(folder, source)
    note_on_card(source, "UD_Spanish-Toy", {"words": 99.5})
    compress(source, tmp_path / "small", num_basis=2, repeats=1)
    assert Segmenter.load(tmp_path / "small").lexicon == Segmenter.load(source).lexicon
    row = "| raw text segmenter | learned from UD_Spanish-Toy (learned_segmentation.py; dev F1: words 99.50) |"
    assert row in (tmp_path / "small" / "README.md").read_text(encoding="utf-8").split("\n")
    assert Tagger.from_pretrained(tmp_path / "small").segmenter is not None


TEXT = "El perro vino del monte. El gato fue al río!"
WORDS = [["El", "perro", "vino", "de", "el", "monte", "."], ["El", "gato", "fue", "a", "el", "río", "!"]]


def test_tagger_and_tag_py_use_the_folders_segmenter(folder, tmp_path, script_here):
    tagger = Tagger.from_pretrained(folder, device="cpu")
    assert tagger.segmenter is not None
    document = tagger(TEXT)
    assert [[word.text for word in sentence.words] for sentence in document.sentences] == WORDS
    assert [token.text for token in document.sentences[0].tokens][3] == "del"
    conllu = document.to_conllu()
    assert "4-5\tdel\t" in conllu and "\n4\tde\t" in conllu and "\n5\tel\t" in conllu
    assert "# text = El perro vino del monte." in conllu
    (tmp_path / "in.txt").write_text(TEXT + "\n")
    result = script_here(REPO / "scripts/tag.py", folder, "--input", tmp_path / "in.txt", "--no-progress")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout == tagger(TEXT + "\n").to_conllu()  # the same words, tokens and sentences
    gold = ConlluDocument(result.stdout)  # valid CoNLL-U: the token over its words
    assert gold.words() == WORDS
    # The same folder without the segmenter keeps the rules.
    rules = Tagger(tagger.model, tagger.tokenizer, language="es")
    assert [w.text for w in rules(TEXT).sentences[0].words][3] == "del"


def test_the_folders_pipeline_uses_its_segmenter(folder):
    tagger = pipeline(model=str(folder), trust_remote_code=True)
    # With the package imported, its own pipeline; the folder's copy, without it, is tested below.
    assert type(tagger).__module__ == "cont_transformer.pipeline_cont_transformer"
    assert (folder / "learned_segmentation.py").is_file()
    entries = tagger(TEXT)
    assert [entry["word"] for entry in entries] == [word for words in WORDS for word in words]
    de, el = entries[3:5]
    assert de["token"] == el["token"] == {"text": "del", "start": 14, "end": 17, "id": "4-5"}
    assert (de["start"], de["end"]) == (14, 17)


WITHOUT_PACKAGE_CHECK = """
import json, sys
from transformers import pipeline
entries = pipeline(model=sys.argv[3], trust_remote_code=True)(sys.argv[4])
print("RESULT", json.dumps([[e["word"], e["token"] and e["token"]["id"]] for e in entries]))
"""


@pytest.mark.slow
def test_without_the_package_the_pipeline_carries_its_segmenter(folder, tmp_path):
    *_, found = without_package_run(tmp_path, WITHOUT_PACKAGE_CHECK, str(folder), TEXT)
    words = json.loads(found.removeprefix("RESULT "))
    assert [word for word, _ in words] == [word for sentence in WORDS for word in sentence]
    assert words[3] == ["de", "4-5"] and words[4] == ["el", "4-5"]


@pytest.mark.skipif(not GREEK.is_dir(), reason="needs UD_Greek-GDT under ../shared/data/ud")
def test_greek_contractions_from_a_few_dozen_real_sentences(tmp_path):
    lines = (GREEK / "el_gdt-ud-train.conllu").read_text(encoding="utf-8").split("\n\n")
    train = tmp_path / "el-ud-train.conllu"
    train.write_text("\n\n".join(lines[:300]) + "\n\n", encoding="utf-8")
    segmenter, scores = train_segmenter(train, GREEK / "el_gdt-ud-dev.conllu", max_epochs=4, log=lambda _: None)
    assert scores["words"] > 85
    text = "Πήγε στο σπίτι."
    (sentence,) = segmenter.split(text)
    assert sentence.words(text)[1:3] == ["σ", "το"] and sentence.multiword == {1: 3}  # as GDT writes στο


def test_train_segmenter_script_writes_into_a_folder_and_refuses_bad_arguments(tmp_path, script_here, monkeypatch):
    train = spanish_treebank(tmp_path / "es_toy-ud-train.conllu", 20, seed=0)
    dev = spanish_treebank(tmp_path / "es_toy-ud-dev.conllu", 8, seed=1)
    script = REPO / "scripts/train_segmenter.py"
    result = script_here(
        script, "--train-file", train, "--dev-file", dev, "--output-dir", tmp_path / "out", "--max-epochs", "1"
    )
    assert result.returncode == 0, result.stderr
    assert Segmenter.load(tmp_path / "out").language == "es" and "words" in Segmenter.load(tmp_path / "out").scores
    monkeypatch.delenv("UD_DIR", raising=False)
    for arguments, message in (
        ([], "give --treebank, or --train-file and --dev-file"),
        (["--treebank", "el_gdt"], "--treebank el_gdt: needs --data-dir or the UD_DIR environment variable"),
        (["--treebank", "xx_none", "--data-dir", str(tmp_path)], "--treebank xx_none: no train file"),
        (
            ["--train-file", str(tmp_path / "missing.conllu"), "--dev-file", str(dev)],
            "missing.conllu: no such train file",
        ),
    ):
        result = script_here(script, *arguments, "--output-dir", tmp_path / "refused")
        assert result.returncode == 2 and message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "refused").exists()


def test_the_card_says_which_segmenter_the_folder_carries(tmp_path):
    from cont_transformer.tagging.segmenter_training import SEGMENTER_ROW, note_on_card

    card = tmp_path / "README.md"
    card.write_text(f"# A tagger\n\n| | |\n|---|---|\n| {SEGMENTER_ROW} | the package's rules for 'el' |\n| x | y |\n")
    note_on_card(tmp_path, "UD_Greek-GDT", {"tokens": 99.8, "words": 99.87, "sentences": 94.28, "epoch": 17})
    text = card.read_text()
    assert f"| {SEGMENTER_ROW} | learned from UD_Greek-GDT (learned_segmentation.py; dev F1: tokens 99.80" in text
    assert "rules" not in text and text.count(SEGMENTER_ROW) == 1 and "| x | y |" in text
    card.write_text("# A card without the row\n")
    note_on_card(tmp_path, "el.conllu", {"words": 90.0})
    assert card.read_text().endswith(
        f"## Raw text\n\n| | |\n|---|---|\n| {SEGMENTER_ROW} | learned from el.conllu (learned_segmentation.py; dev F1: words 90.00) |\n"
    )


def test_case_folding_keeps_every_character_one_character():
    """Turkish ``İ`` lowercases to two characters: the model keeps it as it is, so the
    characters it saves load back (each is one character) and offsets stay one for one."""
    from cont_transformer.learned_segmentation import fold_case

    assert (fold_case("İ"), fold_case("I"), fold_case("Σ"), fold_case("ß")) == ("İ", "i", "σ", "ß")
    assert all(len(fold_case(chr(code))) == 1 for code in range(0x110000) if not 0xD800 <= code < 0xE000)
