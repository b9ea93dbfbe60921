"""Which positions a tagger's raw outputs cover, as its docstring and model card
say: logits and hidden states per token, the root at position 0; attentions per encoder
word, the root as word 0, each word once however many pieces it has."""

import torch
from tiny import WORDS

from cont_transformer.model_card import OUTPUTS_HEADING, OUTPUTS_TEXT
from cont_transformer.modeling_cont_transformer import ContTransformerForTokenClassification
from cont_transformer.text.tokenization import build_tokenizer, spelling_tables


def test_logits_cover_tokens_and_attentions_cover_words(tiny_tagger, tmp_path):
    tokenizer = build_tokenizer(WORDS, spelling=True)
    tables, char_vocab_size = spelling_tables(tokenizer, set(WORDS), 6)
    model = tiny_tagger(
        vocab_size=len(tokenizer),
        unk_token_id=tokenizer.unk_token_id,
        word_representation="word+chars",
        char_vocab_size=char_vocab_size,
        char_embedding_size=8,
        char_hidden_size=12,
        max_word_length=6,
    )
    model.cont_transformer.embeddings.set_spelling(**tables)
    words = [WORDS[0], WORDS[1], WORDS[0] + WORDS[0][-1]]  # the last is no training word: two pieces or more
    encoding = tokenizer([words], is_split_into_words=True, return_tensors="pt")
    word_ids = encoding.word_ids()
    assert word_ids[0] is None and len(word_ids) > len(words) + 1  # the root, and a word in pieces
    with torch.no_grad():
        output = model(**encoding, output_attentions=True, output_hidden_states=True)
    tokens = encoding["input_ids"].shape[1]
    assert output.logits.shape[1] == tokens  # per token, the root at position 0 included
    assert all(state.shape[1] == tokens for state in output.hidden_states)
    assert all(a.shape[-2:] == (len(words) + 1, len(words) + 1) for a in output.attentions)  # root + words
    # A word's pieces carry its word's values.
    pieces = [i for i, w in enumerate(word_ids) if w == 2]
    assert torch.equal(output.logits[0, pieces[0]], output.logits[0, pieces[-1]])
    # The docstring and the card say so.
    doc = ContTransformerForTokenClassification.__doc__
    assert "[ROOT]" in doc and "(batch, heads, words, words)" in doc
    model.save_pretrained(tmp_path)
    card = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert f"## {OUTPUTS_HEADING}\n\n{OUTPUTS_TEXT}" in card
