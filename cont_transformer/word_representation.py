"""The continuous transformer's input representation: one vector per word, from ``input_ids``.

``config.word_representation`` names it:

* ``"word"`` (the paper): one embedding per vocabulary id; every token is a word and a
  word outside the training vocabulary is ``[UNK]``.
* ``"word+chars"``: the word embedding (a training word's own, ``[UNK]``'s for any other
  word) plus a character CNN over the word's spelling, so unknown and rare words are
  represented by their form.
* ``"chars"``: the character CNN alone (an ablation: no word embedding).

Spelling from ``input_ids`` alone. With the spelling tokenizer
(``text/tokenization.py``) a training word is one token and any other word splits
into pieces whose characters concatenate to its spelling. The model holds, per
vocabulary id, persistent buffers (saved with the weights, set once by
:meth:`WordRepresentation.set_spelling`): its characters (ids into a character alphabet),
its length, whether it is a continuation piece and whether it is a whole word with its
own embedding. A word is a start token and the continuation tokens after it
(:func:`word_spans`); :func:`spell_words` reassembles each word's characters as
``[BOW] c_1 … c_n [EOW]`` (a word longer than ``max_word_length`` keeps its first and last
characters, which carry its prefix and suffix). The encoder then sees one vector per word:
the words of a row are packed into a dense ``(batch, words, hidden)`` tensor, and the
model maps the encoder's output back onto the tokens (every piece of a word gets the
word's vector, so tagging by the first piece, or any piece, gives the word's tag).

Static word vectors (``config.word_vector_size``; stanza's and UDPipe 2's pretrained
embeddings): a fixed vector per vocabulary id, trained on unlabelled text
(``language_modeling/word_vectors.py``), through a trained projection added to the word's
vector. A word of the text that the treebank never shows has ``[UNK]``'s word channel
but its own static vector, which lives in the same space as the training words' ones:
what the tagger learnt of those carries over to it. A word of several pieces has none.

Word dropout (Kiperwasser & Goldberg, 2016) lives here too, active only in training
mode like dropout: a word seen ``c`` times in train has its *word* channel replaced by
``[UNK]``'s with probability ``α / (α + c)`` (a buffer of per-id probabilities, set by
:meth:`WordRepresentation.set_word_dropout`); its spelling stays visible. For ``"word"``
this is exactly replacing the token by ``[UNK]``.

The representation sits outside the ODE block: compression (change of basis, fewer
steps) never touches it. See docs/design.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers.activations import ACT2FN

from .configuration_cont_transformer import ContTransformerConfig

# Character ids reserved by the model; the alphabet's characters follow.
CHAR_PAD, CHAR_BOW, CHAR_EOW = 0, 1, 2
NUM_RESERVED_CHARS = 3


def clip_spelling(characters: Sequence, max_word_length: int) -> list:
    """The characters the model keeps of a word: all, or its first ``max_word_length -
    max_word_length // 2`` and last ``max_word_length // 2`` when it is longer.

    Clipping each piece of a word and then the reassembled word gives the clipped word,
    so the vocabulary's pieces are stored clipped (see :func:`spell_words`).
    """
    characters = list(characters)
    if len(characters) <= max_word_length:
        return characters
    tail = max_word_length // 2
    return characters[: max_word_length - tail] + characters[len(characters) - tail :]


@dataclass
class WordVectors:
    """The representation's output.

    Attributes:
        vectors: ``(batch, words, hidden)``, one vector per word (for ``"word"`` the words
            are the tokens).
        mask: ``(batch, words)`` 1 at real words, or None (every position is real).
        token_words: ``(batch, seq)`` the word of each token (index into ``words``), or
            None when tokens are words.
    """

    vectors: torch.Tensor
    mask: torch.Tensor | None
    token_words: torch.Tensor | None

    def to_tokens(self, per_word: torch.Tensor) -> torch.Tensor:
        """``per_word`` ``(batch, words, d)`` on the tokens: ``(batch, seq, d)``, each token
        its word's vector (unchanged when tokens are words)."""
        if self.token_words is None:
            return per_word
        index = self.token_words[..., None].expand(-1, -1, per_word.shape[-1])  # (batch, seq, d)
        return per_word.gather(1, index)


def word_spans(
    input_ids: torch.Tensor, attention_mask: torch.Tensor | None, continuation: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Which word each token belongs to.

    A word is a start token (any token that is not a continuation piece; the first token
    of a row always starts one) and the continuation tokens after it. Padding
    (``attention_mask`` 0) starts no word.

    Args:
        input_ids: ``(batch, seq)``.
        attention_mask: ``(batch, seq)`` or None.
        continuation: ``(vocab,)`` bool, True at continuation pieces.

    Returns ``starts`` ``(batch, seq)`` bool and ``token_words`` ``(batch, seq)`` long, the
    index of each token's word in its row (padding: the last word's).
    """
    starts = ~continuation[input_ids]  # (batch, seq)
    starts[:, 0] = True
    if attention_mask is not None:
        starts &= attention_mask.bool()
    token_words = (starts.long().cumsum(1) - 1).clamp(min=0)  # (batch, seq)
    return starts, token_words


def spell_words(
    input_ids: torch.Tensor,
    token_mask: torch.Tensor,
    starts: torch.Tensor,
    token_words: torch.Tensor,
    num_words: int,
    piece_characters: torch.Tensor,
    piece_lengths: torch.Tensor,
) -> torch.Tensor:
    """Each word's characters, reassembled from its pieces.

    Args:
        input_ids, token_mask, starts, token_words: ``(batch, seq)`` (``token_mask`` 1 at
            real tokens; ``starts``, ``token_words`` from :func:`word_spans`).
        num_words: the number of word slots per row (at least the most words in a row).
        piece_characters: ``(vocab, C)`` each id's clipped characters, 0-padded;
            ``C = max_word_length``.
        piece_lengths: ``(vocab,)`` their numbers.

    Returns ``(batch, num_words, C + 2)`` character ids: ``[BOW]``, the word's characters
    (clipped as :func:`clip_spelling` does), ``[EOW]``, then padding.
    """
    batch = input_ids.shape[0]
    width = piece_characters.shape[1]
    lengths = piece_lengths[input_ids].long() * token_mask.long()  # (batch, seq)
    ends = lengths.cumsum(1)
    begins = ends - lengths  # characters before each token in its row
    # Tokens of a word are contiguous and ``begins`` never decreases, so the running
    # maximum of the begins of start tokens is the begin of each token's word.
    word_begins = torch.cummax(torch.where(starts, begins, 0), dim=1).values
    offsets = begins - word_begins  # (batch, seq) position of each token's first character
    word_lengths = torch.zeros(batch, num_words, dtype=torch.long, device=input_ids.device)
    word_lengths.scatter_add_(1, token_words, lengths)  # (batch, words)
    total = word_lengths.gather(1, token_words)[..., None]  # (batch, seq, 1)

    j = torch.arange(width, device=input_ids.device)
    position = offsets[..., None] + j  # (batch, seq, C) in the unclipped word
    keep = j < lengths[..., None]
    tail = width // 2
    clipped = total > width
    in_tail = position >= total - tail
    keep &= ~clipped | (position < width - tail) | in_tail
    position = torch.where(clipped & in_tail, position - (total - width), position)

    slots = width + 2
    row = torch.arange(batch, device=input_ids.device)[:, None, None] * num_words
    target = (row + token_words[..., None]) * slots + position + 1  # (batch, seq, C)
    dump = batch * num_words * slots  # one extra slot takes every character not kept
    target = torch.where(keep, target, dump)
    characters = torch.zeros(dump + 1, dtype=torch.long, device=input_ids.device)
    characters.scatter_(0, target.flatten(), piece_characters[input_ids].long().flatten())
    characters = characters[:dump].view(batch, num_words, slots)
    characters[..., 0] = CHAR_BOW
    end = (word_lengths.clamp(max=width) + 1)[..., None]  # (batch, words, 1)
    characters.scatter_(2, end, CHAR_EOW)
    return characters


class CharacterCNN(nn.Module):
    """Character embeddings -> one convolution -> activation -> max over positions -> Linear.

    ``(n, length)`` character ids -> ``(n, hidden_size)``.
    """

    def __init__(self, config: ContTransformerConfig):
        super().__init__()
        self.embedding = nn.Embedding(config.char_vocab_size, config.char_embedding_size, CHAR_PAD)
        self.convolution = nn.Conv1d(
            config.char_embedding_size,
            config.char_hidden_size,
            config.char_kernel_size,
            padding=config.char_kernel_size // 2,
        )
        self.activation = ACT2FN[config.hidden_act]
        self.output = nn.Linear(config.char_hidden_size, config.hidden_size)

    def forward(self, characters: torch.Tensor) -> torch.Tensor:
        x = self.embedding(characters).transpose(1, 2)  # (n, char_embedding, length)
        x = self.activation(self.convolution(x))  # (n, char_hidden, length)
        # Max over positions as a pooling: its backward routes each gradient through the
        # argmax alone (amax's compares the whole tensor with its maximum: 1.8x slower in bf16).
        return self.output(F.adaptive_max_pool1d(x, 1).squeeze(-1))  # (n, hidden)


class WordRepresentation(nn.Module):
    """One vector per word from ``input_ids``, as ``config.word_representation`` says.

    Buffers (persistent, saved with the weights): ``word_dropout`` ``(vocab,)``, with
    ``word_vector_size`` ``static_vectors`` ``(vocab, word_vector_size)``, and, for
    the spelling representations, ``piece_characters`` ``(vocab, max_word_length)``,
    ``piece_lengths``, ``continuation`` and ``whole_word`` ``(vocab,)``.

    The word embeddings have ``config.word_embedding_rows`` rows (``num_word_embeddings``):
    with fewer than ``vocab`` (``"word+chars"``), the ids past them are never whole words and
    read ``[UNK]``'s row, as any other word without an embedding of its own does.
    """

    def __init__(self, config: ContTransformerConfig):
        super().__init__()
        self.kind = config.word_representation
        self.unk_token_id = config.unk_token_id
        vocab = config.vocab_size
        if self.kind != "chars":
            self.word_embeddings = nn.Embedding(config.word_embedding_rows, config.hidden_size, config.pad_token_id)
        self.register_buffer("word_dropout", torch.zeros(vocab))
        # Whether the buffer drops anything: read when training starts (`train`), so the
        # forward pass never synchronises with the device to find out.
        self.dropping_words = False
        # Inference only: the character CNN's output per vocabulary id, filled as ids are met
        # and valid while the weights and spelling it was computed from are unchanged
        # (see `_cached_spelling_vectors`). Not saved.
        self._spelling_cache: tuple | None = None
        if self.kind != "word":
            self.characters = CharacterCNN(config)
            self.register_buffer("piece_characters", torch.zeros(vocab, config.max_word_length, dtype=torch.int32))
            self.register_buffer("piece_lengths", torch.zeros(vocab, dtype=torch.int32))
            self.register_buffer("continuation", torch.zeros(vocab, dtype=torch.bool))
            self.register_buffer("whole_word", torch.zeros(vocab, dtype=torch.bool))
        if config.word_vector_size:
            self.register_buffer("static_vectors", torch.zeros(vocab, config.word_vector_size))
            self.static_projection = nn.Linear(config.word_vector_size, config.hidden_size, bias=False)

    @torch.no_grad()
    def set_spelling(
        self,
        piece_characters: torch.Tensor,
        piece_lengths: torch.Tensor,
        continuation: torch.Tensor,
        whole_word: torch.Tensor,
    ) -> None:
        """Store the vocabulary's spelling (``text.tokenization.spelling_tables`` makes it).

        Args:
            piece_characters: ``(vocab, max_word_length)`` character ids of each id's text,
                clipped by :func:`clip_spelling`, 0-padded (empty for special tokens).
            piece_lengths: ``(vocab,)`` the number of characters stored.
            continuation: ``(vocab,)`` bool, True at continuation pieces.
            whole_word: ``(vocab,)`` bool, True at ids that are whole words with their own
                embedding (training words and special tokens); none past the word
                embeddings' rows (``config.num_word_embeddings``).
        """
        if self.kind == "word":
            raise ValueError("the 'word' representation reads no spelling")
        rows = self.word_embeddings.num_embeddings if self.kind == "word+chars" else len(whole_word)
        if bool(whole_word[rows:].any()):
            word = rows + int(whole_word[rows:].nonzero()[0])
            raise ValueError(
                f"whole_word: id {word} is a whole word but the word embeddings have {rows} rows "
                "(config.num_word_embeddings); a whole word needs a row of its own"
            )
        for name, value in (
            ("piece_characters", piece_characters),
            ("piece_lengths", piece_lengths),
            ("continuation", continuation),
            ("whole_word", whole_word),
        ):
            buffer = getattr(self, name)
            if tuple(value.shape) != tuple(buffer.shape):
                raise ValueError(f"{name}: expected shape {list(buffer.shape)}, got {list(value.shape)}")
            buffer.copy_(value)
        num_chars = self.characters.embedding.num_embeddings
        if int(piece_characters.max()) >= num_chars:
            raise ValueError(
                f"piece_characters: character id {int(piece_characters.max())} is outside char_vocab_size={num_chars}"
            )

    def buffer_problem(self) -> str | None:
        """The first spelling buffer holding a value no saved model has (a damaged weights
        file: a character id outside the alphabet, a length beyond ``max_word_length``), in
        words; None when every one is in range. Loading checks it
        (``pretrained.check_buffers``), so such a file is refused rather than failing in the
        first forward pass."""
        if self.kind == "word" or self.piece_characters.device.type == "meta":
            return None
        limits = {
            "piece_characters": self.characters.embedding.num_embeddings,
            "piece_lengths": self.piece_characters.shape[1] + 1,
        }
        for name, limit in limits.items():
            values = getattr(self, name)
            if values.numel() and not bool(((values >= 0) & (values < limit)).all()):
                return f"{name} holds values outside [0, {limit})"
        return None

    @torch.no_grad()
    def set_static_vectors(self, vectors: torch.Tensor) -> None:
        """Store the static word vectors ``(vocab, word_vector_size)`` (zeros where an id has none)."""
        if not hasattr(self, "static_vectors"):
            raise ValueError("static vectors: the config has word_vector_size=0")
        if tuple(vectors.shape) != tuple(self.static_vectors.shape):
            raise ValueError(
                f"static vectors: expected shape {list(self.static_vectors.shape)}, got {list(vectors.shape)}"
            )
        if not bool(torch.isfinite(vectors).all()):
            raise ValueError("static vectors: non-finite values")
        self.static_vectors.copy_(vectors)

    @torch.no_grad()
    def set_word_dropout(self, probabilities: torch.Tensor) -> None:
        """Per vocabulary id ``(vocab,)``, the probability (in training mode) of replacing the
        word channel by ``[UNK]``; zeros turn word dropout off."""
        if tuple(probabilities.shape) != tuple(self.word_dropout.shape):
            raise ValueError(
                f"word dropout probabilities: expected shape {list(self.word_dropout.shape)}, "
                f"got {list(probabilities.shape)}"
            )
        if bool((probabilities > 0).any()) and self.unk_token_id is None:
            raise ValueError("word dropout needs config.unk_token_id")
        self.word_dropout.copy_(probabilities)
        self.train(self.training)

    def train(self, mode: bool = True) -> WordRepresentation:
        if mode:
            self.dropping_words = self.unk_token_id is not None and bool((self.word_dropout > 0).any())
            # Fused optimisers update weights without bumping their version counters; a
            # training step runs in training mode, so entering it starts a new cache.
            self._spelling_cache = None
        return super().train(mode)

    def _drop_words(self, ids: torch.Tensor) -> torch.Tensor:
        """``ids`` with each replaced by ``[UNK]`` with its word-dropout probability (training
        mode only), drawing from torch's global RNG."""
        if not (self.training and self.dropping_words):
            return ids
        drop = torch.rand(ids.shape, device=ids.device) < self.word_dropout[ids]
        return ids.masked_fill(drop, self.unk_token_id)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> WordVectors:
        """``input_ids``, ``attention_mask`` ``(batch, seq)`` -> :class:`WordVectors`."""
        if self.kind == "word":
            ids = self._drop_words(input_ids)
            vectors = self.word_embeddings(ids)
            if hasattr(self, "static_vectors"):
                vectors = vectors + self.static_projection(self.static_vectors[input_ids].to(vectors.dtype))
            return WordVectors(vectors, attention_mask, None)

        token_mask = torch.ones_like(input_ids) if attention_mask is None else attention_mask
        starts, token_words = word_spans(input_ids, attention_mask, self.continuation)
        counts = starts.sum(1)  # (batch,) words per row
        # Compiled: one word slot per token (a static shape, no host synchronisation);
        # eager: as many slots as the longest row has words.
        num_words = input_ids.shape[1] if torch.compiler.is_compiling() else int(counts.max())
        batch = input_ids.shape[0]
        mask = (torch.arange(num_words, device=input_ids.device) < counts[:, None]).long()
        characters = spell_words(
            input_ids,
            token_mask,
            starts,
            token_words,
            num_words,
            self.piece_characters,
            self.piece_lengths,
        )  # (batch, words, C + 2)
        first, single = self._first_pieces(input_ids, token_mask, starts, token_words, num_words)
        # Padding slots are spelled like [PAD] (nothing): one key with it.
        keyed = single | ~mask.bool()
        vectors = self._spelling_vectors(characters.flatten(0, 1), first.flatten(), keyed.flatten())
        vectors = vectors.view(batch, num_words, -1)  # (batch, words, hidden)
        if self.kind == "word+chars":
            own = self.whole_word[first] & single
            rows = self.word_embeddings.num_embeddings
            if rows < self.whole_word.shape[0]:  # ids past the table read [UNK]'s row, whatever the buffer says
                own &= first < rows
            ids = torch.where(own, first, self.unk_token_id)  # (batch, words)
            vectors = vectors + self.word_embeddings(self._drop_words(ids))
        if hasattr(self, "static_vectors"):  # a word of one token has its vector; others none
            static = self.static_vectors[first] * single[..., None]  # (batch, words, word_vector_size)
            vectors = vectors + self.static_projection(static.to(vectors.dtype))
        return WordVectors(vectors, mask, token_words)

    def _first_pieces(self, input_ids, token_mask, starts, token_words, num_words):
        """``(batch, words)`` each word's first token id, and whether it is the word's only token."""
        batch = input_ids.shape[0]
        slot = torch.where(starts, token_words, num_words)  # non-starts to a dump column
        first = torch.zeros(batch, num_words + 1, dtype=torch.long, device=input_ids.device)
        first.scatter_(1, slot, input_ids)
        pieces = torch.zeros_like(first).scatter_add_(1, token_words, token_mask.long())
        return first[:, :num_words], pieces[:, :num_words] == 1

    def _spelling_vectors(self, characters: torch.Tensor, first: torch.Tensor, keyed: torch.Tensor) -> torch.Tensor:
        """The character CNN of ``characters`` ``(n, C + 2)``, run once per distinct word.

        Words repeat within a batch (about half of a batch of English-GUM sentences is
        repeats of "the", ",", ...): a word of one token (``keyed``) is keyed by its id
        ``first``, any other by its position, and the CNN runs on one row per key.
        """
        if torch.compiler.is_compiling():  # no data-dependent shapes: every slot, no reuse
            return self.characters(characters)
        n = characters.shape[0]
        positions = torch.arange(n, device=characters.device)
        keys = torch.where(keyed, first, self.whole_word.shape[0] + positions)  # (n,)
        unique, inverse = torch.unique(keys, return_inverse=True)
        rows = torch.zeros_like(unique).scatter_(0, inverse, positions)  # one position per key
        if self.training or torch.is_grad_enabled():
            return self.characters(characters[rows])[inverse]  # (n, hidden)
        return self._cached_spelling_vectors(unique, characters[rows])[inverse]

    def _spelling_state(self) -> tuple:
        """What the character CNN's output per id depends on: its weights and the spelling
        buffers (identity, storage, dtype and in-place version of each)."""
        tensors = [*self.characters.parameters(), self.piece_characters, self.piece_lengths]
        return tuple((id(t), t.data_ptr(), t.dtype, t.device, t._version) for t in tensors)

    @torch.inference_mode(False)
    def _cached_spelling_vectors(self, keys: torch.Tensor, characters: torch.Tensor) -> torch.Tensor:
        """The character CNN of ``characters`` ``(u, C + 2)`` whose ``keys`` ``(u,)`` are
        distinct: a key below the vocabulary size is a one-token word spelled by that id,
        whose vector is computed once and kept; other keys are computed every time.

        At inference most words of a text are training words, so the CNN runs on the few
        new ones only (docs/design.md §6). Any change to the weights or the spelling
        (``load_state_dict``, ``.to()``, ``set_spelling``, an in-place edit, and training:
        ``train()`` clears the cache) starts a new one.
        """
        with torch.no_grad():
            vocab = self.whole_word.shape[0]
            state = self._spelling_state()
            if self._spelling_cache is None or self._spelling_cache[0] != state:
                weight = self.characters.output.weight  # (hidden, char_hidden)
                table = weight.new_zeros(vocab, weight.shape[0])
                self._spelling_cache = (state, table, torch.zeros(vocab, dtype=torch.bool, device=keys.device))
            _, table, filled = self._spelling_cache
            by_id = keys < vocab
            known = by_id.clone()
            known[by_id] = filled[keys[by_id]]
            vectors = torch.empty(keys.shape[0], table.shape[1], dtype=table.dtype, device=keys.device)
            vectors[known] = table[keys[known]]
            if not bool(known.all()):
                new = ~known
                computed = self.characters(characters[new]).to(table.dtype)
                vectors[new] = computed
                store = by_id[new]  # of the new rows, those keyed by a vocabulary id
                ids = keys[new][store]
                table[ids] = computed[store]
                filled[ids] = True
            return vectors


__all__ = [
    "CharacterCNN",
    "WordRepresentation",
    "WordVectors",
    "clip_spelling",
    "spell_words",
    "word_spans",
]
