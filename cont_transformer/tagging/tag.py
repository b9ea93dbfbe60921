"""Tag a sentence with a trained token classifier: words in, ``(word, tag)`` pairs out."""

from __future__ import annotations

from collections.abc import Sequence

import torch


@torch.no_grad()
def tag(words_or_sentence: str | Sequence[str], model, tokenizer) -> list[tuple[str, str]]:
    """Tag one sentence.

    Args:
        words_or_sentence: the words of a sentence, or a string split on whitespace.
        model: a token classifier (e.g. ``ContTransformerForTokenClassification``) whose
            ``config.id2label`` names the tags.
        tokenizer: its tokenizer (see ``build_tokenizer``; a word may be several pieces).

    Returns one ``(word, tag)`` per word; each word is tagged by its first token (with the
    spelling representations every piece of a word carries the word's tag).

    Example::

        model = AutoModelForTokenClassification.from_pretrained(folder)
        tokenizer = AutoTokenizer.from_pretrained(folder)
        tag("The cat sat .", model, tokenizer)  # [("The", "DT"), ("cat", "NN"), ...]
    """
    words = words_or_sentence.split() if isinstance(words_or_sentence, str) else list(words_or_sentence)
    if not words:
        return []
    encoding = tokenizer(words, is_split_into_words=True, return_tensors="pt")
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    logits = model(
        input_ids=encoding["input_ids"].to(device), attention_mask=encoding["attention_mask"].to(device)
    ).logits  # (1, seq, num_labels)
    model.train(was_training)
    predicted = logits[0].argmax(-1).tolist()  # (seq,)
    tags: dict[int, str] = {}
    for position, word in enumerate(encoding.word_ids(0)):
        if word is not None and word not in tags:
            tags[word] = model.config.id2label[predicted[position]]
    return [(word, tags[i]) for i, word in enumerate(words)]
