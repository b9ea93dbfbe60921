"""Training a learned segmenter (``learned_segmentation.py``) on a treebank's train split,
selected on its dev split.

What it learns from the train file (:func:`treebank_paragraphs`): each paragraph's raw text,
rebuilt as the raw text UD releases it (and as ``ConlluDocument.text`` and ``tag.py
--evaluate`` rebuild it: a sentence's ``# text``, sentences joined by a space, a paragraph
at each ``# newpar``/``# newdoc``), with each character labelled by what follows it: the
end of a token (its FORM found in the text, ``SpaceAfter=No`` or not), of a sentence, or a
word boundary inside a multiword token whose words are its pieces (Turkish ``değildir`` =
``değil`` ``dir``); whitespace between tokens has no label. A sentence whose tokens cannot
be found in its ``# text`` is left out of the labels (counted). The lexicon of token forms
(the most frequent analysis of each form that is ever a multiword token) and the suffix
rules (:func:`suffix_rules`) come from its tokens.

The model is trained with Adam on windows of :data:`TRAIN_WINDOW` characters; after each pass it segments the dev text and the CoNLL 2018 scorer scores it
(:func:`score_segmenter`); the pass with the best Words F1 (then Sentences, then Tokens F1) is kept, and
training stops after ``patience`` (5) passes without a better one, or ``max_epochs``; never
before ``min_epochs`` (8) passes: the first passes' model, which hardly marks a boundary, can
score well on a text whose spaces and punctuation give most tokens. With 3 passes of patience
and no minimum, that early lead stopped Marathi's training after four passes (dev Words
88.73, where twenty give 96.70) and Greek's after eleven (99.81, where seventeen give 99.87).
"""

from __future__ import annotations

import itertools
import os
import random
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..learned_segmentation import (
    IGNORED,
    INSIDE,
    SENTENCE,
    SPLIT,
    TOKEN,
    CharacterTagger,
    Segmenter,
    SegmenterConfig,
    fold_case,
    has_segmenter,
    is_punctuation,
)
from ..runtime.model_folders import BEST_MODEL_DIR, resolve_model_dir
from .conllu_document import ConlluDocument, format_text_sentence
from .scoring import score

RULE_MIN_COUNT = 2  # a suffix rule is kept when it explains at least this many distinct training forms
RULE_MIN_SHARE = 0.5  # ... and more than this share of the distinct forms ending in its suffix
MIN_CHARACTER_COUNT = 2  # rarer characters are unknown to the model
DICTIONARY_MIN_COUNT = 2  # a token form seen this often is a dictionary word: in training,
# the words seen once are the unknown words of new text
# A punctuation character written inside a longer token more often than this share of its
# occurrences is left to the model (English "." of "Dr.", the apostrophe of "n't").
JOINED_MIN_SHARE = 0.01
TRAIN_WINDOW = 192  # characters per training row: more, shorter rows make more steps per pass


@dataclass
class Paragraph:
    """One paragraph of a treebank: its text, a label per character, and its tokens'
    forms with their words."""

    text: str = ""
    labels: list[int] = field(default_factory=list)
    tokens: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)


def _sentence_tokens(document: ConlluDocument, block: range) -> tuple[str, list[tuple[str, tuple[str, ...]]]]:
    """A sentence's ``# text`` (without one, its tokens with their ``SpaceAfter``) and its
    tokens: ``(form, words)``."""
    text, tokens, end, rebuilt = None, [], 0, ""
    for index in block:
        line = document.lines[index].rstrip("\r")
        if line.startswith("# text = "):
            text = line[len("# text = ") :]
        if line.startswith("#"):
            continue
        fields = line.split("\t")
        _first, dash, last = fields[0].partition("-")
        spaced = "SpaceAfter=No" not in fields[-1].split("|")
        if dash:
            tokens.append((fields[1], []))
            end = int(last)
            rebuilt += fields[1] + " " * spaced
        elif fields[0].isdigit():
            if int(fields[0]) <= end:
                tokens[-1][1].append(fields[1])
            else:
                tokens.append((fields[1], [fields[1]]))
                rebuilt += fields[1] + " " * spaced
    text = rebuilt.rstrip() if text is None else text
    return text, [(form, tuple(words)) for form, words in tokens]


def _token_spans(text: str, forms: list[str]) -> list[tuple[int, int]] | None:
    """Where each form lies in ``text`` in order (whitespace in a form matching any
    whitespace), or None where they do not."""
    spans, position = [], 0
    for form in forms:
        while position < len(text) and text[position].isspace():
            position += 1
        start = position
        for character in form.strip():
            if character.isspace():
                while position < len(text) and text[position].isspace():
                    position += 1
            elif position < len(text) and text[position] == character:
                position += 1
            else:
                return None
        spans.append((start, position))
    return spans


def treebank_paragraphs(document: ConlluDocument) -> tuple[list[Paragraph], int]:
    """The labelled paragraphs of a treebank (module docstring) and the number of sentences
    left out because their tokens are not found in their ``# text``."""
    paragraphs: list[Paragraph] = []
    skipped = 0
    for block in document.blocks:
        comments = [document.lines[i] for i in block if document.lines[i].startswith("#")]
        text, tokens = _sentence_tokens(document, block)
        if not paragraphs or any(c.startswith(("# newdoc", "# newpar")) for c in comments):
            paragraphs.append(Paragraph())
        paragraph = paragraphs[-1]
        spans = _token_spans(text, [form for form, _ in tokens])
        if paragraph.text:
            paragraph.text += " "
            paragraph.labels.append(IGNORED)
        paragraph.text += text
        labels = [IGNORED] * len(text)
        if spans is None:
            skipped += 1
        else:
            for (start, end), (form, words) in zip(spans, tokens):
                for position in range(start, end):
                    labels[position] = INSIDE
                if len(words) > 1 and "".join(words) == text[start:end]:
                    boundary = start
                    for word in words[:-1]:
                        boundary += len(word)
                        labels[boundary - 1] = SPLIT
                labels[end - 1] = TOKEN
            if spans:
                labels[spans[-1][1] - 1] = SENTENCE
        paragraph.labels += labels
        paragraph.tokens += [(text[s:e], words) for (s, e), (_, words) in zip(spans or [], tokens)]
    return paragraphs, skipped


def token_lexicon(tokens: list[tuple[str, tuple[str, ...]]]) -> dict[str, list[str]]:
    """Each form that is a multiword token at least once -> its most frequent words in
    training (``[]``: most often one word); lowercased forms too, where the lowercase form
    is not itself a token."""
    analyses: dict[str, Counter] = defaultdict(Counter)
    for form, words in tokens:
        analyses[form][words if len(words) > 1 else ()] += 1
    lexicon = {}
    for form, counts in analyses.items():
        if any(counts_words for counts_words in counts):
            best = counts.most_common(1)[0][0]
            lexicon[form] = list(best)
    for form, words in list(lexicon.items()):
        lower = form.lower()
        if lower not in analyses and lower not in lexicon and words:
            lexicon[lower] = [word.lower() for word in words]
    return lexicon


def suffix_rules(tokens: list[tuple[str, tuple[str, ...]]]) -> dict[str, list[str]]:
    """Suffix -> ``[replacement, word, ...]`` for multiword tokens whose words are not its
    pieces: a lowercased form's suffix that covers what its first word changes, kept when
    it explains at least :data:`RULE_MIN_COUNT` distinct training forms and more than
    :data:`RULE_MIN_SHARE` of the distinct forms ending in it. A rule is for forms never
    seen (the lexicon gives a seen one its words), so its evidence is how many forms it
    explains, not how often they occur: a frequent contraction alone makes no rule (Yiddish
    ``פֿונעם`` = ``פֿון`` ``דעם`` had split the unseen ``קלײנעם`` into ``קלײן`` ``דעם``)."""
    tokens = sorted({(form, tuple(words)) for form, words in tokens})
    candidates: dict[str, Counter] = defaultdict(Counter)
    for form, words in tokens:
        if len(words) < 2 or "".join(words) == form:
            continue
        lower, first = form.lower(), words[0].lower()
        common = 0
        while common < min(len(lower), len(first)) and lower[common] == first[common]:
            common += 1
        for length in range(max(1, len(lower) - common), len(lower)):
            rule = (first[len(lower) - length :], *(word.lower() for word in words[1:]))
            candidates[lower[-length:]][rule] += 1
    if not candidates:
        return {}
    longest = max(map(len, candidates))
    endings = Counter(form.lower()[-n:] for form, _ in tokens for n in range(1, min(longest, len(form) - 1) + 1))
    rules = {}
    for suffix, counts in candidates.items():
        rule, count = counts.most_common(1)[0]
        if count >= RULE_MIN_COUNT and count > RULE_MIN_SHARE * endings[suffix]:
            rules[suffix] = list(rule)
    return rules


def joined_punctuation(tokens: list[tuple[str, tuple[str, ...]]]) -> str:
    """The punctuation characters that the training ``tokens`` write in tokens holding more
    than punctuation in more than :data:`JOINED_MIN_SHARE` of their occurrences, sorted: the
    segmenter parts every other punctuation character from the letters and digits beside it
    (``Segmenter.separated``)."""
    alone, inside = Counter(), Counter()  # in a token of punctuation alone ("?", "...", "?!"), or not
    for form, _ in tokens:
        marks = [c for c in form if is_punctuation(c)]
        for character in set(marks):
            (alone if len(marks) == len(form) else inside)[character] += 1
    return "".join(sorted(c for c, n in inside.items() if n > JOINED_MIN_SHARE * (n + alone[c])))


def segmented_conllu(text: str, sentences) -> ConlluDocument:
    """``sentences`` (``text_segmentation.Sentence``) of ``text`` as a CoNLL-U document with
    empty columns, for the scorer."""
    blocks = []
    for number, sentence in enumerate(sentences, 1):
        empty = ["_"] * len(sentence.spans)
        blocks.append(
            format_text_sentence(
                str(number), text, sentence.spans, {"upos": empty}, sentence.multiword, forms=sentence.forms
            )
        )
    return ConlluDocument("".join(blocks), "segmented")


def score_segmenter(split: Callable, gold: ConlluDocument) -> dict[str, float]:
    """Tokens, words and sentences F1 (percent) of ``split`` (text -> sentences) on the raw
    text of ``gold``."""
    text = gold.text()
    result = score(gold, segmented_conllu(text, split(text)), columns=())
    return {unit: 100 * result[unit]["f1"] for unit in ("tokens", "words", "sentences")}


def _encoded(paragraphs: list[Paragraph], segmenter: Segmenter) -> tuple[list[int], list[int], list[int]]:
    """The training text (paragraphs joined by a blank line, which has no label) as the
    model reads it: character ids, kind ids, labels."""
    text = "\n\n".join(p.text for p in paragraphs)
    labels = []
    for p in paragraphs:
        labels += ([IGNORED, IGNORED] if labels else []) + p.labels
    return (*segmenter.encode(text), labels)


def _windows(length: int, rng: random.Random) -> list[tuple[int, int]]:
    """``(start, end)`` of windows of at most :data:`TRAIN_WINDOW` characters over a text of
    ``length``, from a random offset, shuffled."""
    start = rng.randrange(TRAIN_WINDOW)
    bounds = [0, *range(start, length, TRAIN_WINDOW), length]
    windows = [(a, b) for a, b in itertools.pairwise(bounds) if b > a]
    rng.shuffle(windows)
    return windows


def _batch(encoded: tuple[list[int], ...], windows: list[tuple[int, int]]) -> list[torch.Tensor]:
    """Character ids, kind ids and labels of ``windows`` of the encoded training text, padded:
    each ``(batch, length)``."""
    length = max(end - start for start, end in windows)
    rows = [torch.zeros(len(windows), length, dtype=torch.long) for _ in range(2)]
    rows.append(torch.full((len(windows), length), IGNORED, dtype=torch.long))
    for k, (start, end) in enumerate(windows):
        for row, values in zip(rows, encoded):
            row[k, : end - start] = torch.tensor(values[start:end])
    return rows


def train_segmenter(
    train_file: str | os.PathLike,
    dev_file: str | os.PathLike,
    language: str | None = None,
    hidden_size: int = 64,
    max_epochs: int = 25,
    patience: int = 5,
    min_epochs: int = 8,
    batch_size: int = 16,
    learning_rate: float = 3e-3,
    seed: int = 0,
    log: Callable[[str], object] = print,
) -> tuple[Segmenter, dict[str, float]]:
    """A segmenter trained on ``train_file`` and chosen on ``dev_file`` (module docstring),
    with its dev scores (``tokens``, ``words``, ``sentences`` F1, ``epoch``, ``seconds``)."""
    began = time.perf_counter()
    torch.manual_seed(seed)
    rng = random.Random(seed)
    train, skipped = treebank_paragraphs(ConlluDocument.read(train_file))
    gold = ConlluDocument.read(dev_file)
    if skipped:
        log(f"{train_file}: {skipped} sentences whose tokens are not in their # text are not labelled")
    tokens = [token for paragraph in train for token in paragraph.tokens]
    counts = Counter(fold_case(c) for paragraph in train for c in paragraph.text)
    characters = sorted(c for c, n in counts.items() if n >= MIN_CHARACTER_COUNT)
    config = SegmenterConfig(num_characters=len(characters) + 2, hidden_size=hidden_size)
    model = CharacterTagger(config)
    segmenter = Segmenter(
        model,
        config,
        characters,
        token_lexicon(tokens),
        suffix_rules(tokens),
        spaces_in_tokens=any(any(c.isspace() for c in form) for form, _ in tokens),
        language=language,
        dictionary=[
            form
            for form, count in Counter(form.lower() for form, _ in tokens).items()
            if count >= DICTIONARY_MIN_COUNT and len(form) > 1
        ],
        joined_punctuation=joined_punctuation(tokens),
    )
    encoded = _encoded(train, segmenter)
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    loss_function = torch.nn.CrossEntropyLoss(ignore_index=IGNORED)
    best, best_state, waited = None, None, 0
    for epoch in range(1, max_epochs + 1):
        model.train()
        windows = _windows(len(encoded[0]), rng)
        total = 0.0
        for first in range(0, len(windows), batch_size):
            characters_in, categories_in, targets = _batch(encoded, windows[first : first + batch_size])
            logits = model(characters_in, categories_in)
            loss = loss_function(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            total += loss.item()
        scores = score_segmenter(lambda text: list(segmenter.split(text)), gold)
        log(
            f"epoch {epoch}: loss {total / max(1, len(windows) / batch_size):.4f}, dev tokens "
            f"{scores['tokens']:.2f} words {scores['words']:.2f} sentences {scores['sentences']:.2f} "
            f"({time.perf_counter() - began:.0f} s)"
        )
        key = (scores["words"], scores["sentences"], scores["tokens"])
        if best is None or key > (best["words"], best["sentences"], best["tokens"]):
            best, waited = {**scores, "epoch": epoch}, 0
            best_state = {name: tensor.clone() for name, tensor in model.state_dict().items()}
        else:
            waited += 1
            if waited >= patience and epoch >= min_epochs:
                break
    model.load_state_dict(best_state)
    model.eval()
    best["seconds"] = time.perf_counter() - began
    return segmenter, best


def treebank_split(treebank: str, split: str, data_dir: str | os.PathLike | None = None) -> Path:
    """The ``split`` file of a treebank: ``UD_*/CODE-ud-SPLIT.conllu`` under ``data_dir`` (or
    ``$UD_DIR``) for a code (``el_gdt``), or ``*-ud-SPLIT.conllu`` in a release folder."""
    if Path(treebank).is_dir():
        matches = sorted(Path(treebank).glob(f"*-ud-{split}.conllu"))
    else:
        root = data_dir if data_dir is not None else os.environ.get("UD_DIR")
        if root is None:
            raise ValueError(f"--treebank {treebank}: needs --data-dir or the UD_DIR environment variable")
        matches = sorted(Path(root).glob(f"UD_*/{treebank}-ud-{split}.conllu"))
    if not matches:
        raise FileNotFoundError(f"--treebank {treebank}: no {split} file (*-ud-{split}.conllu) found")
    return matches[0]


def train_into_folder(
    train_file: str | os.PathLike,
    dev_file: str | os.PathLike,
    output_dir: str | os.PathLike,
    language: str | None = None,
    log: Callable[[str], object] = print,
    **options,
) -> dict[str, float]:
    """Train a segmenter (:func:`train_segmenter`, ``options``) and save it into
    ``output_dir``: a tagger's model folder (a training run's ``best/`` model), which then
    segments raw text with it, or a folder of its own. Returns its dev scores."""
    for name, path in (("train file", train_file), ("dev file", dev_file)):
        if not Path(path).is_file():
            raise FileNotFoundError(f"{path}: no such {name}")
    folder = Path(output_dir)
    folders = [folder]
    if folder.is_dir() and ((folder / "config.json").is_file() or (folder / BEST_MODEL_DIR).is_dir()):
        # A run folder may hold the model at its top besides best/: both get the segmenter.
        best = resolve_model_dir(folder)
        folders = [best, *([folder] if best != folder and (folder / "config.json").is_file() else [])]
    if language is None:
        language = Path(dev_file).name.split("_")[0] if "_" in Path(dev_file).name else None
    segmenter, scores = train_segmenter(train_file, dev_file, language=language, log=log, **options)
    segmenter.scores = scores
    source = Path(train_file).parent.name if Path(train_file).parent.name.startswith("UD_") else Path(train_file).name
    for target in folders:
        segmenter.save(target)
        note_on_card(target, source, scores)
        log(f"saved the segmenter into {target} (dev: {', '.join(f'{k} {v:.2f}' for k, v in scores.items())})")
    return scores


# The row of a tagger's card that says how it splits raw text (the trainer writes the rules').
SEGMENTER_ROW = "raw text segmenter"


def note_on_card(folder: Path, source: str, scores: dict[str, float]) -> None:
    """Say on the card of the tagger in ``folder`` (its README.md, if any) that it splits raw
    text with a segmenter learned from ``source``, with its dev scores: its
    :data:`SEGMENTER_ROW` row replaced, or the row added in a section of its own."""
    figures = ", ".join(f"{name} {value:.2f}" for name, value in scores.items() if name != "epoch")
    _card_row(folder, f"| {SEGMENTER_ROW} | learned from {source} (learned_segmentation.py; dev F1: {figures}) |")


def carry_segmenter(source: Path, folder: Path) -> None:
    """The learned segmenter of the tagger in ``source``, if it holds one, in ``folder`` too (a
    compressed copy of it), checked as it loads, with its card's :data:`SEGMENTER_ROW` row."""
    if not has_segmenter(source):
        return
    Segmenter.load(source).save(folder)
    card = source / "README.md"
    lines = card.read_text(encoding="utf-8").split("\n") if card.is_file() else []
    rows = [line for line in lines if line.startswith(f"| {SEGMENTER_ROW} |")]
    if rows:
        _card_row(folder, rows[0])


def _card_row(folder: Path, row: str) -> None:
    """``row`` as the :data:`SEGMENTER_ROW` row of the card in ``folder`` (its README.md, if
    any), or added in a section of its own."""
    card = folder / "README.md"
    if not card.is_file():
        return
    lines = card.read_text(encoding="utf-8").split("\n")
    noted = [row if line.startswith(f"| {SEGMENTER_ROW} |") else line for line in lines]
    text = "\n".join(noted)
    if noted == lines:
        text = text.rstrip("\n") + f"\n\n## Raw text\n\n| | |\n|---|---|\n{row}\n"
    staged = card.with_name(f".{card.name}.tmp")
    staged.write_text(text, encoding="utf-8")
    os.replace(staged, card)


__all__ = [
    "Paragraph",
    "carry_segmenter",
    "note_on_card",
    "score_segmenter",
    "segmented_conllu",
    "suffix_rules",
    "token_lexicon",
    "train_into_folder",
    "train_segmenter",
    "treebank_paragraphs",
    "treebank_split",
]
