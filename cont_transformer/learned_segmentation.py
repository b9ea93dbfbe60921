"""A segmenter learned from a treebank: raw text to tokens, words and sentences, in any
language the treebank writes (Thai without spaces, Vietnamese with spaces inside words,
Turkish, Greek or Coptic tokens of several words).

A small character model tags each character of a paragraph with what follows it
(:data:`LABELS`): nothing (the token goes on), a word boundary inside the token (the words
of a multiword token written one after the other, as Turkish ``değildir`` = ``değil``
``dir``), the end of a token, or the end of a sentence. Its layers: an embedding of the
lowercased character and of its kind: its Unicode category (so case and unseen characters
still speak) and its dictionary marks (where a token seen twice in training starts, ends
or goes through: the words of Thai and the syllable groups of Vietnamese, which the
characters alone hardly tell), a convolution over five characters, a bidirectional GRU, a linear layer. A paragraph
longer than :data:`WINDOW` characters is read in overlapping windows, each character
tagged where it has :data:`CONTEXT` characters of context on both sides.

A token's words (:meth:`Segmenter.token_words`): a form seen in training gets its most
frequent analysis there (``lexicon``: Greek ``στο`` -> ``σε`` ``το``; a form seen only
lowercased gets it with its case: ``Στο`` -> ``Σε`` ``το``; a form of the ``dictionary``,
seen at least twice and never as several words, stays one word); an unseen form the model's
word boundaries, else the longest suffix rule learned from the training tokens
(``suffix_rules``: a suffix that, in training, mostly ends a multiword token, and the
words it stands for), else it is one word. Words that are pieces of the token keep their
spans; words that are not (``σε`` of ``στο``) are given by their forms
(:class:`~.text_segmentation.Sentence`: each such word spans the whole token).

Punctuation the treebank never writes inside a longer token is parted from the word it
begins or ends, as the rules have it, whatever the model says (:meth:`Segmenter.separated`;
inside a word, between two letters, the model still decides): a small treebank
shows few question marks, quotes or brackets, and the model, which never saw them, glued
them to their words (Telugu ``తినాలి?``, Vietnamese ``(ông``). The exceptions are learned:
the punctuation characters the treebank writes inside longer tokens (``joined_punctuation``:
English ``.`` of ``Dr.``, the apostrophe of ``n't``) are left to the model.

A blank line always ends a sentence, as in :func:`.text_segmentation.split_text`; the
sentences and their ``paragraph_start`` are what that function gives, so every caller of
the rules takes a learned segmenter unchanged.

Files (:meth:`Segmenter.save`, :meth:`Segmenter.load`): :data:`WEIGHTS_FILE`
(safetensors) and :data:`SEGMENTER_FILE` (JSON: sizes, characters, lexicon, suffix rules).
Nothing read executes code; a file that is not a segmenter's is refused in one
``ValueError`` naming it. Training lives in ``tagging/segmenter_training.py``; this module
imports only torch, safetensors (a dependency of transformers) and its sibling
``text_segmentation.py``, so remote code carries it with the pipeline.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file
from torch import nn

from .text_segmentation import Sentence, paragraphs

SEGMENTER_FILE = "segmenter.json"
WEIGHTS_FILE = "segmenter.safetensors"
FORMAT = "cont-transformer learned segmenter"
# What follows each character: the token goes on, a word boundary inside the token, the
# token ends, the sentence ends.
INSIDE, SPLIT, TOKEN, SENTENCE = range(4)
LABELS = ("inside", "split", "token", "sentence")
IGNORED = -100  # whitespace between tokens: no label
WINDOW = 512  # characters per model row
CONTEXT = 64  # context kept on each side of a window's tagged characters
CATEGORIES = ("Cc", "Cf", "Co", "Cs", "Ll", "Lm", "Lo", "Lt", "Lu", "Mc", "Me", "Mn", "Nd", "Nl", "No", "Pc")
CATEGORIES += ("Pd", "Pe", "Pf", "Pi", "Po", "Ps", "Sc", "Sk", "Sm", "So", "Zl", "Zp", "Zs", "Cn")
PAD, UNKNOWN = 0, 1  # character ids
MARKS = 8  # a known word starts at the character, ends at it, goes through it: 3 bits
LONGEST_ENTRY = 24  # the longest dictionary word looked for, in characters


@dataclass
class SegmenterConfig:
    """The sizes of the character model."""

    num_characters: int
    embedding_size: int = 64
    category_size: int = 16  # the embedding of a character's kind: its category and dictionary marks
    hidden_size: int = 64
    kernel_size: int = 5
    dropout: float = 0.2


class CharacterTagger(nn.Module):
    """Characters to :data:`LABELS` logits: embeddings, a convolution, a BiGRU, a linear
    layer."""

    def __init__(self, config: SegmenterConfig):
        super().__init__()
        self.characters = nn.Embedding(config.num_characters, config.embedding_size, padding_idx=PAD)
        self.categories = nn.Embedding((len(CATEGORIES) + 1) * MARKS, config.category_size, padding_idx=0)
        inputs = config.embedding_size + config.category_size
        self.convolution = nn.Conv1d(inputs, config.hidden_size, config.kernel_size, padding=config.kernel_size // 2)
        self.gru = nn.GRU(config.hidden_size, config.hidden_size, batch_first=True, bidirectional=True)
        self.dropout = nn.Dropout(config.dropout)
        self.output = nn.Linear(2 * config.hidden_size, len(LABELS))

    def forward(self, characters: torch.Tensor, categories: torch.Tensor) -> torch.Tensor:
        # characters, categories: (batch, length) -> logits (batch, length, labels)
        embedded = torch.cat([self.characters(characters), self.categories(categories)], -1)
        hidden = torch.relu(self.convolution(self.dropout(embedded).transpose(1, 2))).transpose(1, 2)
        hidden, _ = self.gru(self.dropout(hidden))
        return self.output(self.dropout(hidden))


def is_punctuation(character: str) -> bool:
    """Whether ``character`` is Unicode punctuation (a general category ``P*``)."""
    return unicodedata.category(character).startswith("P")


def category_id(character: str) -> int:
    """The id of ``character``'s Unicode general category (0 is padding)."""
    return CATEGORIES.index(unicodedata.category(character)) + 1


def _recased(words: Sequence[str], form: str) -> list[str]:
    """Lowercase ``words`` with ``form``'s case: all upper, or the first letter upper."""
    if form.isupper() and len(form) > 1:
        return [word.upper() for word in words]
    if form[:1].isupper() and words:
        return [words[0][:1].upper() + words[0][1:], *words[1:]]
    return list(words)


class Segmenter:
    """A learned segmenter (module docstring): :meth:`split` is
    :func:`.text_segmentation.split_text` for the treebank's language.

    Args:
        model: the character model.
        characters: the lowercased characters it knows (id = index + 2).
        lexicon: token form -> its words, for forms whose most frequent analysis in training is
            several words; a form mapped to ``[]`` is one word (model boundaries ignored).
        suffix_rules: suffix -> ``[replacement, word, ...]``: an unseen form ending in the
            suffix is its stem + replacement, then the words.
        spaces_in_tokens: a token may hold whitespace (it did in training: Vietnamese).
        dictionary: lowercased token forms of two characters or more, marked on the
            characters the model reads (:meth:`marks`), as stanza's tokenizer marks its
            dictionary's words.
        language: the treebank's language code (informative).
        scores: its dev scores when it was trained (informative: what a folder carries).
        joined_punctuation: the punctuation characters that training showed inside longer
            tokens (module docstring); every other punctuation character is a token of its
            own. None (a segmenter saved before it was learned): the model alone decides.
    """

    def __init__(
        self,
        model: CharacterTagger,
        config: SegmenterConfig,
        characters: Sequence[str],
        lexicon: Mapping[str, Sequence[str]] | None = None,
        suffix_rules: Mapping[str, Sequence[str]] | None = None,
        spaces_in_tokens: bool = False,
        language: str | None = None,
        scores: Mapping[str, float] | None = None,
        dictionary: Sequence[str] = (),
        joined_punctuation: str | None = None,
    ):
        self.model, self.config = model, config
        self.joined_punctuation = joined_punctuation
        self.scores = dict(scores or {})
        self.dictionary = frozenset(dictionary)
        self.longest_entry = max(map(len, self.dictionary), default=0)
        self.characters = list(characters)
        self.character_ids = {c: i + 2 for i, c in enumerate(self.characters)}
        self.lexicon = {form: list(words) for form, words in (lexicon or {}).items()}
        self.suffix_rules = {suffix: list(rule) for suffix, rule in (suffix_rules or {}).items()}
        self.longest_suffix = max(map(len, self.suffix_rules), default=0)
        self.spaces_in_tokens = spaces_in_tokens
        self.language = language

    # Characters to labels. -----------------------------------------------------------------

    def encode(self, text: str) -> tuple[list[int], list[int]]:
        """Character ids and kind ids of ``text``: a kind is the character's Unicode category
        and its dictionary marks (:meth:`marks`)."""
        ids = [self.character_ids.get(fold_case(c), UNKNOWN) for c in text]
        return ids, [category_id(c) * MARKS + mark for c, mark in zip(text, self.marks(text))]

    def marks(self, text: str) -> list[int]:
        """Per character, where the dictionary's words (known tokens of two characters or
        more, lowercased) lie over it: 1 a word starts there, 2 one ends there, 4 one goes
        through it."""
        marks = [0] * len(text)
        if not self.dictionary:
            return marks
        lowered = "".join(map(fold_case, text))
        longest = min(self.longest_entry, LONGEST_ENTRY)
        for start in range(len(text)):
            if lowered[start].isspace():
                continue
            for length in range(2, min(longest, len(text) - start) + 1):
                if lowered[start : start + length] in self.dictionary:
                    marks[start] |= 1
                    marks[start + length - 1] |= 2
                    for inside in range(start + 1, start + length - 1):
                        marks[inside] |= 4
        return marks

    def label_logits(self, texts: Sequence[str], batch_windows: int = 64) -> list[torch.Tensor]:
        """Per text, ``(len(text), labels)`` logits, read in windows (module docstring)."""
        windows = []  # (text index, window start, first tagged, end tagged)
        for index, text in enumerate(texts):
            step = WINDOW - 2 * CONTEXT
            for core in range(0, max(len(text), 1), step):
                start = max(0, core - CONTEXT)
                windows.append((index, start, core, min(core + step, len(text))))
        outputs = [torch.zeros(len(text), len(LABELS)) for text in texts]
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                for first in range(0, len(windows), batch_windows):
                    chosen = windows[first : first + batch_windows]
                    rows = [self.encode(texts[i][start : start + WINDOW]) for i, start, _, _ in chosen]
                    length = max(len(ids) for ids, _ in rows)
                    characters = torch.zeros(len(rows), length, dtype=torch.long)
                    categories = torch.zeros(len(rows), length, dtype=torch.long)
                    for k, (ids, cats) in enumerate(rows):
                        characters[k, : len(ids)] = torch.tensor(ids)
                        categories[k, : len(cats)] = torch.tensor(cats)
                    logits = self.model(characters, categories)
                    for k, (i, start, core, end) in enumerate(chosen):
                        outputs[i][core:end] = logits[k, core - start : end - start]
        finally:
            self.model.train(was_training)
        return outputs

    # Labels to sentences. ------------------------------------------------------------------

    def separated(self, text: str, labels: list[int]) -> list[int]:
        """``labels`` of ``text``'s characters with every punctuation character outside
        :attr:`joined_punctuation` parted from the other characters beside it: a token ends
        between them (a sentence end stays one). Between two marks alike (``...``), and for a
        character inside a word, between two others (Yiddish ``ד“ר``, an abbreviation;
        ``3/4``), the model decides."""
        if self.joined_punctuation is None:
            return labels
        labels = list(labels)
        marks = [is_punctuation(c) for c in text]

        def letter(at: int) -> bool:  # a character of a word: neither space nor punctuation
            return 0 <= at < len(text) and not marks[at] and not text[at].isspace()

        for position, character in enumerate(text):
            if not marks[position] or character in self.joined_punctuation:
                continue
            if letter(position - 1) and letter(position + 1):
                continue
            for at in (position - 1, position):  # the boundary after the character at `at`
                parts = 0 <= at < len(text) - 1 and text[at] != text[at + 1]
                if parts and not text[at].isspace() and not text[at + 1].isspace() and labels[at] in (INSIDE, SPLIT):
                    labels[at] = TOKEN
        return labels

    def token_words(self, form: str, splits: Sequence[int] = ()) -> list[str] | None:
        """The words of the token ``form`` (module docstring), or None when it is one word;
        ``splits``: the model's word boundaries inside it (offsets into ``form``)."""
        words = self.lexicon.get(form)
        if words is None and form.lower() in self.lexicon:
            words = _recased(self.lexicon[form.lower()], form)
        if words is not None:
            return list(words) if len(words) > 1 else None
        if form.lower() in self.dictionary:  # seen in training, never as several words
            return None
        if splits:
            bounds = [0, *splits, len(form)]
            return [form[a:b] for a, b in itertools.pairwise(bounds)]
        lower = form.lower()
        for length in range(min(self.longest_suffix, len(form) - 1), 0, -1):
            rule = self.suffix_rules.get(lower[-length:])
            if rule is not None:
                replacement, *rest = rule
                return [form[:-length] + replacement, *_recased(rest, form if form.isupper() else "")]
        return None

    def _sentences(self, paragraph: str, labels: list[int], offset: int) -> Iterator[Sentence]:
        """The sentences of one paragraph from its characters' labels."""
        spans: list[tuple[int, int]] = []
        multiword: dict[int, int] = {}
        forms: dict[int, str] = {}
        start, splits, position = None, [], 0
        for position, character in enumerate(paragraph):
            space = character.isspace()
            if start is None:
                if space:
                    continue
                start, splits = position, []
            if space and not self.spaces_in_tokens:
                label = TOKEN  # the token ended before this space
                end = position
            else:
                label = labels[position]
                end = position + 1
                if label == SPLIT and not space:
                    splits.append(end - start)
                    continue
                if label not in (TOKEN, SENTENCE) and position + 1 < len(paragraph):
                    continue
            form = paragraph[start:end].rstrip()
            if form:
                self._add_token(form, start + offset, splits, spans, multiword, forms)
            start = None
            if label == SENTENCE and spans:
                yield Sentence(spans, multiword, forms=forms)
                spans, multiword, forms = [], {}, {}
        if start is not None and paragraph[start:].strip():
            self._add_token(paragraph[start:].rstrip(), start + offset, splits, spans, multiword, forms)
        if spans:
            yield Sentence(spans, multiword, forms=forms)

    def _add_token(self, form, start, splits, spans, multiword, forms) -> None:
        words = self.token_words(form, [s for s in splits if 0 < s < len(form)])
        if words is None:
            spans.append((start, start + len(form)))
            return
        multiword[len(spans)] = len(spans) + len(words)
        if "".join(words) == form:  # pieces of the token: their own spans
            for word in words:
                spans.append((start, start + len(word)))
                start += len(word)
            return
        for word in words:
            forms[len(spans)] = word
            spans.append((start, start + len(form)))

    def split(self, text: str) -> Iterator[Sentence]:
        """The sentences of raw ``text`` (paragraphs at blank lines), as
        :func:`.text_segmentation.split_text` gives them."""
        pieces = list(paragraphs(text))
        logits = self.label_logits([paragraph for _, paragraph in pieces])
        for (offset, paragraph), scores in zip(pieces, logits):
            labels = self.separated(paragraph, scores.argmax(-1).tolist())
            for number, sentence in enumerate(self._sentences(paragraph, labels, offset)):
                sentence.paragraph_start = number == 0
                yield sentence

    def tokenize(self, text: str, offset: int = 0) -> Sentence:
        """``text`` as one sentence (no sentence splitting), split into tokens and words."""
        (scores,) = self.label_logits([text])
        labels = [TOKEN if label == SENTENCE else label for label in self.separated(text, scores.argmax(-1).tolist())]
        sentences = list(self._sentences(text, labels, offset))
        return sentences[0] if sentences else Sentence([])

    # Files. --------------------------------------------------------------------------------

    def save(self, folder: str | os.PathLike) -> None:
        """Write :data:`WEIGHTS_FILE` and :data:`SEGMENTER_FILE` into ``folder``, each staged
        and moved into place."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        data = {
            "format": FORMAT,
            "config": asdict(self.config),
            "characters": self.characters,
            "lexicon": self.lexicon,
            "suffix_rules": self.suffix_rules,
            "spaces_in_tokens": self.spaces_in_tokens,
            "language": self.language,
            "scores": self.scores,
            "dictionary": sorted(self.dictionary),
        }
        if self.joined_punctuation is not None:
            data["joined_punctuation"] = self.joined_punctuation
        text = json.dumps(data, ensure_ascii=False, sort_keys=True) + "\n"
        # The weights record the digest of the JSON they go with: an edit of either is refused.
        record = {DIGEST_KEY: hashlib.sha256(text.encode("utf-8")).hexdigest()}
        staged = folder / f".{WEIGHTS_FILE}.tmp"
        state = {name: tensor.contiguous() for name, tensor in self.model.state_dict().items()}
        save_file(state, str(staged), metadata=record)
        os.replace(staged, folder / WEIGHTS_FILE)
        staged = folder / f".{SEGMENTER_FILE}.tmp"
        staged.write_text(text, encoding="utf-8")
        os.replace(staged, folder / SEGMENTER_FILE)

    @classmethod
    def load(cls, folder: str | os.PathLike, weights: str | os.PathLike | None = None) -> Segmenter:
        """The segmenter saved in ``folder`` (or :data:`SEGMENTER_FILE` ``folder`` itself, with
        its ``weights`` file); a ``ValueError`` naming the file that is not a segmenter's."""
        path = Path(folder)
        if path.is_dir():
            path, weights = path / SEGMENTER_FILE, path / WEIGHTS_FILE
        weights = Path(weights) if weights is not None else path.with_name(WEIGHTS_FILE)
        try:
            raw = path.read_bytes()
            data = json.loads(raw.decode("utf-8"))
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise ValueError(f"its format is not {FORMAT!r}")
            config = SegmenterConfig(**data["config"])
            characters = data["characters"]
            if not all(isinstance(c, str) and len(c) == 1 for c in characters):
                raise ValueError("characters: not a list of characters")
            if config.num_characters != len(characters) + 2:
                raise ValueError(f"num_characters {config.num_characters} for {len(characters)} characters")
            lexicon, rules = data.get("lexicon") or {}, data.get("suffix_rules") or {}
            dictionary = data.get("dictionary") or []
            joined = data.get("joined_punctuation")
            if joined is not None and not isinstance(joined, str):
                raise ValueError("joined_punctuation: not a string of characters")
            if not isinstance(dictionary, list) or not all(isinstance(w, str) for w in dictionary):
                raise ValueError("dictionary: not a list of strings")
            for name, table in (("lexicon", lexicon), ("suffix_rules", rules)):
                if not isinstance(table, dict) or not all(
                    isinstance(v, list) and all(isinstance(w, str) for w in v) for v in table.values()
                ):
                    raise ValueError(f"{name}: not an object of lists of strings")
        except (OSError, UnicodeDecodeError, ValueError, TypeError, KeyError) as err:
            raise ValueError(f"{path}: not a learned segmenter ({err})") from err
        model = CharacterTagger(config)
        try:
            with safe_open(str(weights), "pt") as opened:
                recorded = (opened.metadata() or {}).get(DIGEST_KEY)
            state = load_file(str(weights))
            model.load_state_dict(state, strict=True)
        except (OSError, SafetensorError, RuntimeError, ValueError) as err:
            message = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise ValueError(f"{weights}: not the weights of the segmenter in {path.name} ({message})") from err
        if recorded != hashlib.sha256(raw).hexdigest():
            raise ValueError(f"{path}: differs from the segmenter its weights {weights.name} were saved with")
        model.eval()
        spaces, language, scores = bool(data.get("spaces_in_tokens")), data.get("language"), data.get("scores")
        return cls(model, config, characters, lexicon, rules, spaces, language, scores, dictionary, joined)


def fold_case(character: str) -> str:
    """``character`` lowercased where that keeps it one character (Turkish ``İ`` lowercases
    to two, ``i`` and a combining dot: it stays as it is), so the model's characters and
    the text's offsets stay one for one."""
    lowered = character.lower()
    return lowered if len(lowered) == 1 else character


# The key of the weights' metadata that records the digest of the segmenter's JSON.
DIGEST_KEY = "segmenter_json_sha256"


def has_segmenter(folder: str | os.PathLike) -> bool:
    """``folder`` holds a learned segmenter (its :data:`SEGMENTER_FILE`)."""
    return (Path(folder) / SEGMENTER_FILE).is_file()


__all__ = [
    "FORMAT",
    "LABELS",
    "SEGMENTER_FILE",
    "WEIGHTS_FILE",
    "CharacterTagger",
    "Segmenter",
    "SegmenterConfig",
    "fold_case",
    "has_segmenter",
    "is_punctuation",
]
