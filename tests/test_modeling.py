"""The continuous transformer as a Hugging Face model: config, model, tokenizer, sharing, and
its word representations (spelling tokenizer, character CNN)."""

import json
import math

import pytest
import torch
import torch.nn.functional as F
from huggingface_hub import ModelCard
from safetensors.torch import load_file, save_file
from tiny import TAGS, WORDS
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForTokenClassification,
    AutoTokenizer,
    pipeline,
    trainer_utils,
)

from cont_transformer import (
    ContTransformerConfig,
    ContTransformerForTokenClassification,
    ContTransformerModel,
    build_tokenizer,
    change_basis,
    refine,
    set_num_steps,
    tag,
)
from cont_transformer.text.tokenization import character_ids, spelling_tables
from cont_transformer.word_encoding import SPACED_CONTINUATION_PREFIX, continuation_prefix, encode_words, word_shortener
from cont_transformer.word_representation import (
    CHAR_BOW,
    CHAR_EOW,
    CharacterCNN,
    WordRepresentation,
    clip_spelling,
    spell_words,
    word_spans,
)

SENTENCE = ["the", "zebra", "sat", "on", "a", "mat", "."]


def batch(seed=0, batch_size=3, seq_len=7):
    generator = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(3, len(WORDS) + 3, (batch_size, seq_len), generator=generator)
    input_ids[:, 0] = 2  # the root token
    return input_ids


# --- config ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "field, value",
    [
        ("basis", "splines"),
        ("scheme", "leapfrog"),
        ("num_basis", 0),
        ("num_basis", 2.5),
        ("num_steps", 0),
        ("time_horizon", 0.0),
        ("time_horizon", -1),
        ("num_attention_heads", 3),
        ("hidden_act", "swish"),
        ("position_encoding", "rotary"),
        ("hidden_dropout_prob", 1.0),
    ],
)
def test_config_rejects_invalid_values_naming_the_field(field, value, tiny_tagger_config):
    expected = "hidden_size" if field == "num_attention_heads" else field
    with pytest.raises(ValueError, match=expected):
        tiny_tagger_config(**{field: value})


def test_config_rejects_odd_num_basis_for_discontinuous_linear(tiny_tagger_config):
    with pytest.raises(ValueError, match="num_basis.*even"):
        tiny_tagger_config(basis="discontinuous_linear", num_basis=3)


def test_config_defaults_num_steps_to_num_basis_and_round_trips(tmp_path, tiny_tagger_config):
    config = tiny_tagger_config(num_basis=5, time_horizon=2.0)
    assert config.num_steps == 5 and config.num_labels == len(TAGS)
    config.save_pretrained(tmp_path)
    loaded = AutoConfig.from_pretrained(tmp_path)
    assert isinstance(loaded, ContTransformerConfig)
    for key in ("basis", "num_basis", "num_steps", "scheme", "time_horizon", "id2label"):
        assert getattr(loaded, key) == getattr(config, key)


# --- equivalence with a discrete pre-LayerNorm encoder ----------------------------


def sinusoid(seq_len, dim):
    table = torch.zeros(seq_len, dim)
    for pos in range(seq_len):
        for i in range(0, dim, 2):
            angle = pos / 10000 ** (i / dim)
            table[pos, i] = math.sin(angle)
            table[pos, i + 1] = math.cos(angle)
    return table


def discrete_encoder(model: ContTransformerModel, input_ids, attention_mask):
    """A pre-LayerNorm transformer encoder of K layers; layer k uses coefficient slice k."""
    config = model.config
    coefficients = dict(model.encoder.named_coefficients())
    heads, eps = config.num_attention_heads, config.layer_norm_eps
    batch_size, seq_len = input_ids.shape
    head_dim = config.hidden_size // heads
    x = model.embeddings.word_embeddings.weight[input_ids] + sinusoid(seq_len, config.hidden_size)
    blocked = ~attention_mask.bool()[:, None, None, :]  # (batch, 1, 1, seq)

    def linear(h, w, name):
        return h @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    def split(h):
        return h.view(batch_size, seq_len, heads, head_dim).transpose(1, 2)

    for k in range(config.num_basis):
        w = {name: value[k] for name, value in coefficients.items()}
        h = F.layer_norm(x, (config.hidden_size,), w["attention_norm.weight"], w["attention_norm.bias"], eps)
        q, key, v = (split(linear(h, w, f"attention.{n}")) for n in ("query", "key", "value"))
        scores = (q @ key.transpose(-1, -2) / math.sqrt(head_dim)).masked_fill(blocked, float("-inf"))
        context = (scores.softmax(-1) @ v).transpose(1, 2).reshape(batch_size, seq_len, -1)
        x = x + linear(context, w, "attention.output")
        h = F.layer_norm(x, (config.hidden_size,), w["mlp_norm.weight"], w["mlp_norm.bias"], eps)
        x = x + linear(F.gelu(linear(h, w, "mlp.fc1")), w, "mlp.fc2")
    final = model.final_norm
    return F.layer_norm(x, (config.hidden_size,), final.weight, final.bias, eps)


@pytest.mark.parametrize("num_layers", [1, 4])
def test_euler_piecewise_constant_is_a_discrete_pre_layernorm_encoder(num_layers, tiny_tagger_config):
    torch.manual_seed(0)
    config = tiny_tagger_config(num_basis=num_layers, num_steps=num_layers, time_horizon=float(num_layers))
    model = ContTransformerModel(config).eval()
    input_ids = batch(seq_len=6)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 4:] = 0
    expected = discrete_encoder(model, input_ids, attention_mask)
    actual = model(input_ids, attention_mask).last_hidden_state
    torch.testing.assert_close(actual, expected, atol=1e-5, rtol=0)


# --- hidden states, checkpointing, special tokens ---------------------------------


def test_hidden_states_are_the_depth_trajectory(tiny_tagger):
    # Euler + piecewise constant + K = N_T = T: x(t_n) is the encoder after n layers.
    model = tiny_tagger(num_basis=3, num_steps=3, time_horizon=3.0)
    input_ids = batch()
    out = model(input_ids, output_hidden_states=True)
    hidden = out.hidden_states
    assert len(hidden) == 4 and all(h.shape == (*input_ids.shape, 16) for h in hidden)
    base = model.cont_transformer
    torch.testing.assert_close(hidden[0], base.embeddings(input_ids).vectors)
    # x(t_1) is the output of the first layer alone: a one-layer model with slice 0.
    one_layer = tiny_tagger(num_basis=1, num_steps=1, time_horizon=1.0)
    one_layer.load_state_dict({k: v[:1] if ".encoder.rate." in k else v for k, v in model.state_dict().items()})
    first = one_layer(input_ids, output_hidden_states=True).hidden_states
    torch.testing.assert_close(hidden[1], first[1], atol=1e-6, rtol=0)
    encoded = base(input_ids, output_hidden_states=True)
    torch.testing.assert_close(base.final_norm(hidden[-1]), encoded.last_hidden_state)
    torch.testing.assert_close(model(input_ids).logits, out.logits)
    assert model(input_ids).hidden_states is None

    as_tuple = model(input_ids, output_hidden_states=True, return_dict=False)
    assert isinstance(as_tuple, tuple) and len(as_tuple) == 2
    torch.testing.assert_close(as_tuple[0], out.logits)
    assert all(torch.equal(a, b) for a, b in zip(as_tuple[1], hidden))
    labels = torch.zeros_like(input_ids)
    loss, logits = model(input_ids, labels=labels, return_dict=False)
    torch.testing.assert_close(logits, out.logits)
    torch.testing.assert_close(loss, model(input_ids, labels=labels).loss)

    set_num_steps(model, 1)  # the trajectory follows N_T
    assert len(model(input_ids, output_hidden_states=True).hidden_states) == 2
    model.config.output_hidden_states = True
    assert len(model(input_ids).hidden_states) == 2


def _loss_and_gradients(model, input_ids, labels):
    torch.manual_seed(1)  # the same dropout masks in every run
    model.zero_grad()
    loss = model(input_ids, labels=labels).loss
    loss.backward()
    return loss, {name: p.grad.clone() for name, p in model.named_parameters()}


@pytest.mark.filterwarnings("ignore::FutureWarning")  # transformers 5 says activation_checkpointing_*
def test_gradient_checkpointing_gives_the_same_gradients(tiny_tagger):
    # Dropout on, RK4, piecewise linear, and N_T < K (the used slices selected first).
    model = tiny_tagger(num_basis=5, num_steps=3, scheme="rk4", basis="piecewise_linear").train()
    input_ids, labels = batch(), batch(seed=1) % len(TAGS)
    loss, gradients = _loss_and_gradients(model, input_ids, labels)
    model.gradient_checkpointing_enable()
    assert model.is_gradient_checkpointing and model.cont_transformer.encoder.gradient_checkpointing
    checkpointed_loss, checkpointed = _loss_and_gradients(model, input_ids, labels)
    torch.testing.assert_close(checkpointed_loss, loss, atol=0, rtol=0)
    for name, grad in gradients.items():
        torch.testing.assert_close(checkpointed[name], grad, atol=1e-7, rtol=0, msg=name)
    model.gradient_checkpointing_disable()
    assert not model.cont_transformer.encoder.gradient_checkpointing


def test_config_carries_the_tokenizer_special_tokens(monkeypatch, tiny_tagger_config):
    tokenizer = build_tokenizer(WORDS)
    warned = []
    monkeypatch.setattr(trainer_utils.logger, "warning", warned.append)
    # What transformers' Trainer runs first: without the root token's id it warns.
    trainer_utils.align_special_tokens(ContTransformerForTokenClassification(tiny_tagger_config()), tokenizer)
    assert len(warned) == 1 and "bos_token_id" in warned[0]
    config = tiny_tagger_config(pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id)
    assert (config.pad_token_id, config.bos_token_id) == (0, 2)
    trainer_utils.align_special_tokens(ContTransformerForTokenClassification(config), tokenizer)
    assert len(warned) == 1
    with pytest.raises(ValueError, match="bos_token_id"):
        tiny_tagger_config(bos_token_id=100)


# --- padding and loss -------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["euler", "rk4"])
def test_padding_does_not_change_outputs_at_real_tokens(scheme, tiny_tagger):
    model = tiny_tagger(scheme=scheme)
    short = batch(seq_len=4, batch_size=1)
    padded = torch.cat([short, torch.zeros(1, 3, dtype=torch.long)], 1)  # [PAD] = 0
    mask = torch.cat([torch.ones(1, 4), torch.zeros(1, 3)], 1).long()
    alone = model(short).logits
    with_padding = model(padded, mask).logits[:, :4]
    torch.testing.assert_close(with_padding, alone, atol=1e-5, rtol=0)
    # Unmasked padding does change them: the mask is what protects them.
    assert not torch.allclose(model(padded).logits[:, :4], alone, atol=1e-5)


def test_loss_ignores_minus_100(tiny_tagger):
    model = tiny_tagger()
    input_ids = batch()
    labels = torch.randint(0, len(TAGS), input_ids.shape, generator=torch.Generator().manual_seed(1))
    labels[:, 0] = -100
    labels[0, 4:] = -100
    out = model(input_ids, labels=labels)
    scored = labels != -100
    expected = F.cross_entropy(out.logits[scored], labels[scored])
    torch.testing.assert_close(out.loss, expected)
    assert out.logits.shape == (*input_ids.shape, len(TAGS))
    assert model(input_ids).loss is None


# --- save / load ----------------------------------------------------------------


def test_save_load_through_auto_classes_before_and_after_compression(tmp_path, tiny_tagger):
    model = tiny_tagger(num_basis=4, time_horizon=4.0)
    input_ids = batch()
    model.save_pretrained(tmp_path / "source")
    loaded = AutoModelForTokenClassification.from_pretrained(tmp_path / "source")
    assert type(loaded) is ContTransformerForTokenClassification
    assert torch.equal(loaded(input_ids).logits, model(input_ids).logits)

    change_basis(model, "piecewise_linear", 3)
    set_num_steps(model, 2)
    assert (model.config.basis, model.config.num_basis, model.config.num_steps) == ("piecewise_linear", 3, 2)
    model.save_pretrained(tmp_path / "compressed")
    loaded = AutoModelForTokenClassification.from_pretrained(tmp_path / "compressed")
    block = loaded.cont_transformer.encoder
    assert (block.basis_name, block.num_basis, block.num_steps) == ("piecewise_linear", 3, 2)
    assert torch.equal(loaded(input_ids).logits, model(input_ids).logits)

    base = AutoModel.from_pretrained(tmp_path / "compressed")
    assert type(base) is ContTransformerModel
    assert torch.equal(base(input_ids).last_hidden_state, model.cont_transformer(input_ids).last_hidden_state)


def test_refine_keeps_outputs_and_config(tmp_path, tiny_tagger):
    model = tiny_tagger(num_basis=2, time_horizon=2.0)
    input_ids = batch()
    before = model(input_ids).logits
    refine(model)
    assert (model.config.num_basis, model.config.num_steps) == (4, 4)
    model.save_pretrained(tmp_path)
    loaded = AutoModelForTokenClassification.from_pretrained(tmp_path)
    torch.testing.assert_close(loaded(input_ids).logits, before, atol=1e-5, rtol=0)


def test_checkpoint_whose_coefficients_disagree_with_its_config_fails(tmp_path, tiny_tagger):
    model = tiny_tagger(num_basis=3)
    model.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    config["num_basis"] = config["num_steps"] = 5
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"differs .* in num_basis \(5, saved with 3\), num_steps \(5, saved with 3\)"):
        AutoModelForTokenClassification.from_pretrained(tmp_path)
    # Weights saved without the config record: the coefficients' shapes tell.
    save_file(load_file(tmp_path / "model.safetensors"), tmp_path / "model.safetensors", metadata={"format": "pt"})
    for ignore in (False, True):
        with pytest.raises(ValueError, match="disagrees with its config.*num_basis=5"):
            AutoModelForTokenClassification.from_pretrained(tmp_path, ignore_mismatched_sizes=ignore)


# --- parameters -----------------------------------------------------------------


@pytest.mark.parametrize("position_encoding", ["sinusoidal", "learned"])
def test_parameter_counts_split_embedding_and_non_embedding(position_encoding, tiny_tagger):
    model = tiny_tagger(num_basis=4, position_encoding=position_encoding)
    config = model.config
    h, i, labels = config.hidden_size, config.intermediate_size, len(TAGS)
    per_basis_function = 4 * (h * h + h) + 2 * 2 * h + (h * i + i) + (i * h + h)
    embedding = config.vocab_size * h
    if position_encoding == "learned":
        embedding += config.max_position_embeddings * h
    non_embedding = 4 * per_basis_function + 2 * h + h * labels + labels
    counts = model.num_parameters_split()
    assert counts == {"embedding": embedding, "non_embedding": non_embedding, "total": embedding + non_embedding}
    change_basis(model, num_basis=2)
    assert model.num_parameters_split()["non_embedding"] == non_embedding - 2 * per_basis_function


def _check_initialised(model, std):
    for name, p in model.named_parameters():
        if name.endswith("norm.weight"):
            assert torch.equal(p, torch.ones_like(p)), name
        elif name.endswith("bias"):
            assert torch.equal(p, torch.zeros_like(p)), name
        elif "encoder.rate" in name:
            for k in range(p.shape[0]):
                assert p[k].std().item() == pytest.approx(std, rel=0.1), f"{name}[{k}]"
            assert not torch.equal(p[0], p[1]), f"{name}: slices share one draw"
        else:
            assert p.std().item() == pytest.approx(std, rel=0.1), name


def test_coefficients_are_initialised_with_initializer_range(tmp_path, tiny_tagger, tiny_tagger_config):
    overrides = {"hidden_size": 64, "intermediate_size": 64, "vocab_size": 400, "initializer_range": 0.05}
    _check_initialised(tiny_tagger(**overrides), 0.05)
    torch.manual_seed(0)
    _check_initialised(AutoModelForTokenClassification.from_config(tiny_tagger_config(**overrides)), 0.05)

    # A key missing from a checkpoint is refused by name (a strict load), not
    # initialised afresh.
    model = tiny_tagger(seed=1, **overrides)
    model.save_pretrained(tmp_path)
    weights = load_file(tmp_path / "model.safetensors")
    missing = "cont_transformer.encoder.rate.mlp.fc1.weight"
    del weights[missing]
    save_file(weights, tmp_path / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ValueError, match=f"^{tmp_path}: tensor {missing} is missing from the weights"):
        AutoModelForTokenClassification.from_pretrained(tmp_path)


@pytest.mark.slow
def test_torch_compile_matches_eager(tiny_tagger):
    model = tiny_tagger(num_basis=2, scheme="midpoint")
    input_ids = batch()
    mask = torch.ones_like(input_ids)
    mask[0, 5:] = 0
    compiled = torch.compile(model)
    torch.testing.assert_close(compiled(input_ids, mask).logits, model(input_ids, mask).logits, atol=1e-5, rtol=0)


# --- tokenizer, tagging, sharing ------------------------------------------------


def test_tokenizer_round_trip(tmp_path):
    tokenizer = build_tokenizer(WORDS + ["cat"])
    assert tokenizer.convert_ids_to_tokens([0, 1, 2, 3]) == ["[PAD]", "[UNK]", "[ROOT]", "the"]
    assert len(tokenizer) == len(WORDS) + 3
    words = ["the", "zebra", "sat", "."]
    encoding = tokenizer(words, is_split_into_words=True)
    assert tokenizer.convert_ids_to_tokens(encoding["input_ids"]) == ["[ROOT]", "the", "[UNK]", "sat", "."]
    assert encoding.word_ids() == [None, 0, 1, 2, 3]
    tokenizer.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert loaded(words, is_split_into_words=True)["input_ids"] == encoding["input_ids"]
    assert loaded("the zebra sat .")["input_ids"] == encoding["input_ids"]
    padded = loaded([words, words[:2]], is_split_into_words=True, padding=True)
    assert padded["input_ids"][1][-2:] == [0, 0] and padded["attention_mask"][1] == [1, 1, 1, 0, 0]
    with pytest.raises(ValueError, match="whitespace"):
        build_tokenizer(["two words"])


@pytest.fixture
def saved_tagger(tmp_path, tiny_tagger):
    tokenizer = build_tokenizer(WORDS)
    model = tiny_tagger(vocab_size=len(tokenizer), num_basis=4)
    change_basis(model, num_basis=2)
    set_num_steps(model, 1)
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    return tmp_path, model, tokenizer


def test_tag_from_a_saved_folder(saved_tagger):
    folder, model, tokenizer = saved_tagger
    loaded = AutoModelForTokenClassification.from_pretrained(folder)
    loaded_tokenizer = AutoTokenizer.from_pretrained(folder)
    [sentence] = tag(" ".join(SENTENCE), loaded, loaded_tokenizer)  # raw text: one sentence
    tagged = list(sentence)
    assert [word for word, _ in tagged] == SENTENCE
    input_ids = tokenizer(SENTENCE, is_split_into_words=True, return_tensors="pt")["input_ids"]
    expected = [TAGS[i] for i in model(input_ids).logits[0, 1:].argmax(-1).tolist()]
    assert [t for _, t in tagged] == expected
    assert [list(s) for s in tag([SENTENCE], loaded, loaded_tokenizer)] == [tagged]

    tagger = pipeline("token-classification", model=str(folder))
    entities = tagger(" ".join(SENTENCE))
    assert [(e["word"], e["entity"]) for e in entities] == tagged


def test_saved_folder_is_complete_for_sharing(saved_tagger):
    folder, model, _ = saved_tagger
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "README.md"):
        assert (folder / name).is_file(), name
    card = ModelCard.load(folder / "README.md")
    assert card.data.library_name == "transformers"
    assert card.data.pipeline_tag == "token-classification"
    assert "cont-transformer" in card.data.tags
    counts = model.num_parameters_split()
    for fact in (
        "| basis | piecewise_constant |",
        "| K (num_basis) | 2 |",
        "| N_T (num_steps) | 1 |",
        "| word representation | word embeddings (unknown words: [UNK]) |",
        "| scheme | euler |",
        f"| parameters, non-embedding | {counts['non_embedding']:,} |",
        f"| parameters, embedding | {counts['embedding']:,} |",
    ):
        assert fact in card.text, fact


# --- word representations -------------------------------------------------------


@pytest.fixture(scope="module")
def spelling_tagger(tiny_tagger):
    """``spelling_tagger(seed=0, **overrides)``: a tiny ``"word+chars"`` tagger over WORDS and its
    spelling tokenizer."""

    def model_and_tokenizer(seed=0, **overrides):
        tokenizer = build_tokenizer(WORDS, spelling=True)
        max_word_length = overrides.pop("max_word_length", 6)
        tables, char_vocab_size = spelling_tables(tokenizer, set(WORDS), max_word_length)
        options = {
            "vocab_size": len(tokenizer),
            "unk_token_id": tokenizer.unk_token_id,
            "word_representation": "word+chars",
            "char_vocab_size": char_vocab_size,
            "char_embedding_size": 8,
            "char_hidden_size": 12,
            "max_word_length": max_word_length,
        }
        model = tiny_tagger(seed, **{**options, **overrides})
        model.cont_transformer.embeddings.set_spelling(**tables)
        return model, tokenizer

    return model_and_tokenizer


def test_spelling_tokenizer_splits_unknown_words_into_their_characters(tmp_path):
    tokenizer = build_tokenizer(WORDS, spelling=True)
    assert tokenizer.tokenize("the cat") == ["the", "cat"]  # training words: one token each
    assert tokenizer.tokenize("cats") == ["cat", "##s"]
    pieces = tokenizer.tokenize("tacos")
    assert len(pieces) > 1 and "".join(p.removeprefix("##") for p in pieces) == "tacos"
    assert tokenizer.tokenize("zebra") == ["[UNK]"]  # "z", "b" never seen in training
    hashes = build_tokenizer([*WORDS, "#"], spelling=True)  # raw text: "#" split off, "##s" no piece
    assert hashes.tokenize("##s") == ["#", "#", "##s"]
    encoding = tokenizer(["the", "cats", "."], is_split_into_words=True)
    assert encoding.word_ids() == [None, 0, 1, 1, 2]
    tokenizer.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert loaded(["the", "cats", "."], is_split_into_words=True)["input_ids"] == encoding["input_ids"]
    assert loaded.decode(encoding["input_ids"], skip_special_tokens=True) == "the cats ."


def test_no_piece_name_starts_with_whitespace_and_no_training_word_is_a_piece():
    tokenizer = build_tokenizer([*WORDS, "#"], spelling=True)
    assert continuation_prefix(tokenizer) == "##"
    assert not any(token[:1].isspace() for token in tokenizer.get_vocab())
    # A training word that starts with "##" stays one whole word: the prefix grows to "###".
    words = [*WORDS, "##s", "#"]
    hashes = build_tokenizer(words, spelling=True)
    assert continuation_prefix(hashes) == "###" and hashes.tokenize("cats") == ["cat", "###s"]
    assert encode_words(hashes, [["the", "##s"]])["input_ids"] == [[2, 3, hashes.convert_tokens_to_ids("##s")]]
    tables, _ = spelling_tables(hashes, set(words), 6)
    index = hashes.convert_tokens_to_ids
    assert tables["whole_word"][index("##s")] and not tables["continuation"][index("##s")]
    assert tables["continuation"][index("###s")] and tables["continuation"][index("####")]
    assert hashes.backend_tokenizer.decoder.prefix == "###"
    # An unknown word starting with the prefix would open with a continuation piece: it is [UNK].
    [ids] = encode_words(tokenizer, [["the", "##s", "#s"]])["input_ids"]
    assert ids == [2, 3, tokenizer.unk_token_id, *tokenizer.convert_tokens_to_ids(["#", "##s"])]


def legacy_tokenizer(tokenizer, folder):
    """``tokenizer`` as build_tokenizer made it before the prefix was a run of "#": its
    continuation pieces prefixed with " ##" (same ids), saved in ``folder`` and reloaded."""
    tokenizer.save_pretrained(folder)
    saved = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    model = saved["model"]
    assert model["continuing_subword_prefix"] == "##" and saved["decoder"]["prefix"] == "##"
    model["vocab"] = {(" " + t if t.startswith("##") else t): i for t, i in model["vocab"].items()}
    model["continuing_subword_prefix"] = saved["decoder"]["prefix"] = " ##"
    (folder / "tokenizer.json").write_text(json.dumps(saved, ensure_ascii=False), encoding="utf-8")
    return AutoTokenizer.from_pretrained(folder)


def test_a_tokenizer_saved_with_the_old_prefix_splits_and_tags_as_before(tmp_path, spelling_tagger):
    model, tokenizer = spelling_tagger(max_word_length=6)
    legacy = legacy_tokenizer(tokenizer, tmp_path)
    assert continuation_prefix(legacy) == SPACED_CONTINUATION_PREFIX == " ##"
    assert legacy.tokenize("cats") == ["cat", " ##s"]
    assert legacy.convert_tokens_to_ids(legacy.tokenize("cats")) == tokenizer.convert_tokens_to_ids(["cat", "##s"])
    # The same spelling tables, alphabet and cut words: the model reads the same thing.
    new_tables, new_size = spelling_tables(tokenizer, set(WORDS), 6)
    old_tables, old_size = spelling_tables(legacy, set(WORDS), 6)
    assert new_size == old_size and all(torch.equal(new_tables[k], old_tables[k]) for k in new_tables)
    assert character_ids(legacy) == character_ids(tokenizer)
    long_word = "cat" * 40 + "s"
    assert word_shortener(legacy, 6)(long_word) == word_shortener(tokenizer, 6)(long_word) != long_word
    sentences = [["the", "cats", "zebra", "tacos", long_word, "."], ["a", "dog", "sat", "on", "the", "mat"]]
    assert encode_words(legacy, sentences)["input_ids"] == encode_words(tokenizer, sentences)["input_ids"]
    assert [s.tags for s in tag(sentences, model, legacy)] == [s.tags for s in tag(sentences, model, tokenizer)]
    hashes = legacy_tokenizer(build_tokenizer([*WORDS, "#"], spelling=True), tmp_path / "hashes")
    [ids] = encode_words(hashes, [["##s"]])["input_ids"]  # no word starts with " ##": spelt
    assert hashes.convert_ids_to_tokens(ids) == ["[ROOT]", "#", " ###", " ##s"]


def test_a_language_model_with_the_old_prefix_gives_its_pieces_rows_to_a_new_tagger(tmp_path, spelling_tagger):
    from cont_transformer import ContTransformerForMaskedLM
    from cont_transformer.text.pretrained_encoder import extended_tokenizer, tagger_from_language_model

    tagger, _ = spelling_tagger(max_word_length=6)
    old = legacy_tokenizer(build_tokenizer(WORDS, spelling=True, mask=True), tmp_path)
    old_tables, _ = spelling_tables(old, set(WORDS), 6)
    lm = ContTransformerForMaskedLM(ContTransformerConfig(**{**tagger.config.to_dict(), "vocab_size": len(old)}))
    lm.cont_transformer.embeddings.set_spelling(**old_tables)
    new = extended_tokenizer(lm, old, ["zebu"])
    assert continuation_prefix(new) == "##" and new.get_vocab()["mat"] == old.get_vocab()["mat"]
    tables, char_vocab_size = spelling_tables(new, {*WORDS, "zebu"}, 6)
    config = ContTransformerConfig(
        **{**tagger.config.to_dict(), "vocab_size": len(new), "char_vocab_size": char_vocab_size}
    )
    fine_tuned = tagger_from_language_model(lm, old, config, new, tables)
    before = lm.cont_transformer.embeddings.word_embeddings.weight
    after = fine_tuned.cont_transformer.embeddings.word_embeddings.weight
    for old_piece, new_piece in ((" ##s", "##s"), (" ##t", "##t"), ("mat", "mat")):
        assert torch.equal(after[new.get_vocab()[new_piece]], before[old.get_vocab()[old_piece]]), new_piece


def test_model_reads_each_words_spelling_from_input_ids(spelling_tagger):
    model, tokenizer = spelling_tagger(max_word_length=6)
    alphabet = sorted(set("".join(WORDS)))
    generator = torch.Generator().manual_seed(0)
    sentences = [
        [
            "".join(alphabet[i] for i in torch.randint(len(alphabet), (n,), generator=generator).tolist())
            for n in torch.randint(1, 12, (7,), generator=generator).tolist()
        ]
        + ["the", "mat"]
        for _ in range(4)
    ]
    encoding = encode_words(tokenizer, sentences, padding=True, return_tensors="pt")  # words whole
    embeddings = model.cont_transformer.embeddings
    starts, token_words = word_spans(encoding["input_ids"], encoding["attention_mask"], embeddings.continuation)
    characters = spell_words(
        encoding["input_ids"],
        encoding["attention_mask"],
        starts,
        token_words,
        10,
        embeddings.piece_characters,
        embeddings.piece_lengths,
    )
    for row, words in enumerate(sentences):
        for index, word in enumerate(words):
            expected = [CHAR_BOW] + [3 + alphabet.index(c) for c in clip_spelling(word, 6)] + [CHAR_EOW]
            assert characters[row, index + 1, : len(expected)].tolist() == expected, word
            assert not characters[row, index + 1, len(expected) :].any()

    # The representation: the CNN of each word's spelling (run once per distinct word)
    # plus the embedding of the word, or of [UNK] for words not in WORDS.
    vectors = WordRepresentation.forward(embeddings, encoding["input_ids"], encoding["attention_mask"])
    ids = [
        [tokenizer.bos_token_id]
        + [tokenizer.convert_tokens_to_ids(w) if w in WORDS else tokenizer.unk_token_id for w in words]
        for words in sentences
    ]
    expected = embeddings.characters(characters.flatten(0, 1)).view(4, 10, -1)
    expected = expected + embeddings.word_embeddings(torch.tensor(ids))
    torch.testing.assert_close(vectors.vectors, expected, atol=1e-6, rtol=0)


def test_unknown_words_get_representations_that_differ_by_spelling(tiny_tagger, spelling_tagger):
    model, tokenizer = spelling_tagger()
    word_model = tiny_tagger(vocab_size=len(tokenizer))
    outputs = {}
    for word in ("cats", "tacos", "mast"):
        sentence = ["the", word, "sat", "on", "a", "mat", "."]
        encoding = tokenizer(sentence, is_split_into_words=True, return_tensors="pt")
        vectors = model.cont_transformer.embeddings(encoding["input_ids"]).vectors  # (1, words, hidden)
        assert vectors.shape[1] == len(sentence) + 1  # one vector per word, root included
        logits = model(**encoding).logits[0]
        pieces = [i for i, w in enumerate(encoding.word_ids()) if w == 1]
        assert len(pieces) > 1 and all(torch.equal(logits[i], logits[pieces[0]]) for i in pieces)
        outputs[word] = vectors[0, 2]
        # The word-only model sees [UNK] for every unknown word, whatever its spelling.
        unknown = build_tokenizer(WORDS)(sentence, is_split_into_words=True, return_tensors="pt")
        outputs[word, "word"] = word_model.cont_transformer.embeddings(unknown["input_ids"]).vectors[0, 2]
    assert not torch.allclose(outputs["cats"], outputs["tacos"])
    assert not torch.allclose(outputs["cats"], outputs["mast"])
    assert torch.equal(outputs["cats", "word"], outputs["tacos", "word"])


def test_inference_runs_the_character_cnn_once_per_word_and_follows_weight_changes(spelling_tagger):
    model, tokenizer = spelling_tagger()
    model.eval()
    sentences = [["the", "cats", "sat", "on", "a", "mat", "."], ["a", "tacos", "sat", "."]]
    batch = tokenizer(sentences, is_split_into_words=True, padding=True, return_tensors="pt")
    embeddings = model.cont_transformer.embeddings
    rows = []
    embeddings.characters.register_forward_hook(lambda module, args, output: rows.append(len(output)))

    def reference():  # with gradients on, nothing is cached
        with torch.enable_grad():
            return model(**batch).logits.detach()

    expected = reference()
    assert rows.pop() > 0
    with torch.no_grad():
        first = model(**batch).logits
        computed_first = rows.pop()
        second = model(**batch).logits
    # The second pass reruns the CNN only on the words of several tokens ("cats", "tacos").
    assert rows.pop() == 2 < computed_first
    with torch.inference_mode():
        third = model(**batch).logits
    for logits in (first, second, third):
        torch.testing.assert_close(logits, expected, atol=1e-6, rtol=0)

    # A change to the weights (in place, or loaded) or to the spelling is never served stale.
    with torch.no_grad():
        embeddings.characters.output.bias.add_(1.0)
        changed = model(**batch).logits
    torch.testing.assert_close(changed, reference(), atol=1e-6, rtol=0)
    other, _ = spelling_tagger(seed=1)
    model.load_state_dict(other.state_dict())
    with torch.inference_mode():
        loaded = model(**batch).logits
    torch.testing.assert_close(loaded, reference(), atol=1e-6, rtol=0)
    assert not torch.allclose(loaded, changed)
    # A fused optimiser's step bumps no version counter; training mode clears the cache.
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1, fused=True)
    model.train()
    model(**batch).logits.sum().backward()
    optimizer.step()
    model.eval()
    with torch.no_grad():
        stepped = model(**batch).logits
    torch.testing.assert_close(stepped, reference(), atol=1e-6, rtol=0)
    assert not torch.allclose(stepped, loaded)
    model.to(torch.float64)
    with torch.no_grad():
        doubled = model(**batch).logits
    assert doubled.dtype == torch.float64
    torch.testing.assert_close(doubled, reference(), atol=1e-9, rtol=0)


def test_spelling_model_ignores_padding(spelling_tagger):
    model, tokenizer = spelling_tagger()
    sentences = [["a", "cats", "."], ["the", "tacos", "sat", "on", "a", "mast", "."]]
    batch = tokenizer(sentences, is_split_into_words=True, padding=True, return_tensors="pt")
    for row, sentence in enumerate(sentences):
        alone = tokenizer(sentence, is_split_into_words=True, return_tensors="pt")
        length = alone["input_ids"].shape[1]
        torch.testing.assert_close(model(**batch).logits[row, :length], model(**alone).logits[0], atol=1e-5, rtol=0)


def test_spelling_model_round_trips_and_compression_leaves_the_representation(tmp_path, spelling_tagger):
    model, tokenizer = spelling_tagger(num_basis=4, time_horizon=4.0)
    sentence = ["the", "tacos", "sat", "on", "a", "mast", "."]
    inputs = tokenizer(sentence, is_split_into_words=True, return_tensors="pt")
    embeddings = model.cont_transformer.embeddings
    representation = {k: v.clone() for k, v in embeddings.state_dict().items()}
    vectors = embeddings(**inputs).vectors
    model.save_pretrained(tmp_path / "source")
    loaded = AutoModelForTokenClassification.from_pretrained(tmp_path / "source")
    assert loaded.config.word_representation == "word+chars"
    assert torch.equal(loaded(**inputs).logits, model(**inputs).logits)

    change_basis(model, "piecewise_linear", 3)
    set_num_steps(model, 2)
    state = embeddings.state_dict()
    assert state.keys() == representation.keys()
    assert all(torch.equal(state[k], representation[k]) for k in state)
    assert torch.equal(embeddings(**inputs).vectors, vectors)
    model.save_pretrained(tmp_path / "compressed")
    loaded = AutoModelForTokenClassification.from_pretrained(tmp_path / "compressed")
    assert torch.equal(loaded(**inputs).logits, model(**inputs).logits)


def test_spelling_model_tags_through_the_pipeline_and_tag(tmp_path, spelling_tagger):
    model, tokenizer = spelling_tagger()
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    assert "| word representation | word embeddings + character CNN" in (tmp_path / "README.md").read_text()
    sentence = ["the", "tacos", "sat", "on", "a", "mast", "."]
    (tagged,) = tag(
        [sentence], AutoModelForTokenClassification.from_pretrained(tmp_path), AutoTokenizer.from_pretrained(tmp_path)
    )
    tagged = list(tagged)
    encoding = tokenizer(sentence, is_split_into_words=True, return_tensors="pt")
    word_ids = encoding.word_ids()
    firsts = [word_ids.index(i) for i in range(len(sentence))]  # "tacos", "mast": several pieces
    logits = model(encoding["input_ids"]).logits[0]
    assert [t for _, t in tagged] == [TAGS[i] for i in logits[firsts].argmax(-1).tolist()]

    tagger = pipeline("token-classification", model=str(tmp_path), aggregation_strategy="first")
    groups = tagger(" ".join(sentence))  # adjacent words with one tag form one group
    assert [(word, g["entity_group"]) for g in groups for word in g["word"].split()] == tagged


def test_spelling_model_trains_with_the_hugging_face_trainer(tmp_path, spelling_tagger):
    from datasets import Dataset
    from transformers import DataCollatorForTokenClassification, Trainer, TrainingArguments

    model, tokenizer = spelling_tagger()
    rows = []
    for sentence in (["the", "cats", "sat"], ["a", "dog", "ran", "on", "a", "mast", "."]):
        encoding = tokenizer(sentence, is_split_into_words=True)
        previous, labels = None, []
        for word in encoding.word_ids():
            labels.append(-100 if word is None or word == previous else word % len(TAGS))
            previous = word
        rows.append({"input_ids": encoding["input_ids"], "labels": labels})
    before = model.cont_transformer.embeddings.characters.convolution.weight.clone()
    trainer = Trainer(
        model=model.train(),
        args=TrainingArguments(
            output_dir=str(tmp_path),
            max_steps=2,
            per_device_train_batch_size=2,
            report_to=[],
            use_cpu=True,
            save_strategy="no",
        ),
        train_dataset=Dataset.from_list(rows),
        data_collator=DataCollatorForTokenClassification(tokenizer),
    )
    result = trainer.train()
    assert math.isfinite(result.training_loss)
    assert not torch.equal(model.cont_transformer.embeddings.characters.convolution.weight, before)


def test_spelling_model_counts_the_character_cnn_as_embedding(spelling_tagger):
    model, _ = spelling_tagger()
    embeddings = sum(p.numel() for p in model.cont_transformer.embeddings.parameters())
    counts = model.num_parameters_split()
    assert counts["embedding"] == embeddings and counts["total"] == model.num_parameters()
    characters = sum(p.numel() for p in model.cont_transformer.embeddings.characters.parameters())
    assert characters > 0 and counts["embedding"] == characters + model.config.vocab_size * 16


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"word_representation": "bytes"}, "word_representation"),
        ({"word_representation": "word+chars"}, "unk_token_id"),
        ({"word_representation": "chars", "unk_token_id": 1, "char_kernel_size": 4}, "char_kernel_size"),
        ({"word_representation": "chars", "unk_token_id": 1, "max_word_length": 0}, "max_word_length"),
    ],
)
def test_config_rejects_invalid_word_representations(overrides, message, tiny_tagger_config):
    with pytest.raises(ValueError, match=message):
        tiny_tagger_config(**overrides)


def test_word_model_saved_before_word_dropout_was_a_buffer_still_loads(tmp_path, tiny_tagger):
    model = tiny_tagger()
    model.save_pretrained(tmp_path)
    weights = load_file(tmp_path / "model.safetensors")
    del weights["cont_transformer.embeddings.word_dropout"]
    save_file(weights, tmp_path / "model.safetensors", metadata={"format": "pt"})
    loaded = AutoModelForTokenClassification.from_pretrained(tmp_path)
    assert not loaded.cont_transformer.embeddings.word_dropout.any()
    input_ids = batch()
    assert torch.equal(loaded(input_ids).logits, model(input_ids).logits)


def test_the_character_cnn_keeps_each_filter_s_maximum_over_positions():
    """Pooling is the maximum over positions: its value, and a gradient that reaches one
    position per word and filter (the arg-max), also where padding positions tie."""
    torch.manual_seed(0)
    cnn = CharacterCNN(ContTransformerConfig(char_hidden_size=8))
    characters = torch.randint(1, 50, (5, 9))
    characters[:, 4:] = cnn.embedding.padding_idx  # pure padding from position 5 on: equal values
    with torch.no_grad():
        positions = cnn.activation(cnn.convolution(cnn.embedding(characters).transpose(1, 2)))
        torch.testing.assert_close(cnn(characters), cnn.output(positions.amax(-1)))  # (5, 8, 9) -> max
    outputs = []
    cnn.convolution.register_forward_hook(lambda module, args, out: out.retain_grad() or outputs.append(out))
    cnn(characters).sum().backward()
    reached = (outputs[0].grad != 0).sum(-1)  # (5, 8): positions with a gradient
    tied = positions[..., 5] == positions.amax(-1)  # the maximum sits on the padding (tied)
    assert (reached == 1).all() and tied.any()
