"""Compression without retraining: change of basis, fewer steps, sweeps, model selection.

Tiny models are built, briefly trained and saved in ``tmp_path``, with a tiny CoNLL-U
file (and a tiny IDX folder for the image model) written here.
"""

import gzip
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from huggingface_hub import ModelCard
from tiny import labels

from cont_transformer import (
    OdeResNetForImageClassification,
    OdeResNetImageProcessor,
    build_tokenizer,
    write_model_card,
)
from cont_transformer.runtime.compressed_copies import compressed_copy, score_variants
from cont_transformer.tagging.evaluation import evaluate_saved_model
from cont_transformer.tools.compression import compress, load_eval_set, load_model
from cont_transformer.tools.sweep import (
    CSV_NAME,
    NUM_STEPS_PLOT,
    PARAMETERS_PLOT,
    STATES_KEPT,
    SweepRow,
    read_csv,
    select_smallest,
    sweep,
    sweep_points,
)

REPO = Path(__file__).resolve().parents[1]

# (word, UPOS, XPOS) sentences; the dev file adds an unseen word, a multiword token and
# a tag ("UH") the model has never seen, which must count as an error.
TRAIN = [
    [("the", "DET", "DT"), ("cat", "NOUN", "NN"), ("sat", "VERB", "VBD"), (".", "PUNCT", ".")],
    [
        ("a", "DET", "DT"),
        ("dog", "NOUN", "NN"),
        ("ran", "VERB", "VBD"),
        ("home", "ADV", "RB"),
        (".", "PUNCT", "."),
    ],
    [
        ("the", "DET", "DT"),
        ("dog", "NOUN", "NN"),
        ("sat", "VERB", "VBD"),
        ("on", "ADP", "IN"),
        ("a", "DET", "DT"),
        ("mat", "NOUN", "NN"),
        (".", "PUNCT", "."),
    ],
    [("a", "DET", "DT"), ("cat", "NOUN", "NN"), ("ran", "VERB", "VBD"), (".", "PUNCT", ".")],
]
DEV = [
    [("the", "DET", "DT"), ("mat", "NOUN", "NN"), ("ran", "VERB", "VBD"), (".", "PUNCT", ".")],
    [
        ("wow", "INTJ", "UH"),
        ("a", "DET", "DT"),
        ("bird", "NOUN", "NN"),
        ("sat", "VERB", "VBD"),
        (".", "PUNCT", "."),
    ],
    [
        ("the", "DET", "DT"),
        ("cat", "NOUN", "NN"),
        ("sat", "VERB", "VBD"),
        ("on", "ADP", "IN"),
        ("the", "DET", "DT"),
        ("dog", "NOUN", "NN"),
        (".", "PUNCT", "."),
    ],
]
XPOS = sorted({x for sentence in TRAIN for _, _, x in sentence})


def conllu(sentences, multiword=False) -> str:
    blocks = []
    for number, sentence in enumerate(sentences, 1):
        lines = [f"# sent_id = s{number}"]
        if multiword and number == 1:
            lines.append("1-2\tthemat\t_\t_\t_\t_\t_\t_\t_\t_")
        for i, (form, upos, xpos) in enumerate(sentence, 1):
            lines.append(f"{i}\t{form}\t{form}\t{upos}\t{xpos}\t_\t{max(i - 1, 0)}\t_\t_\t_")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n\n"


def tree_hashes(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def train_tagger(model, tokenizer, steps=40):
    words = [[w for w, _, _ in s] for s in TRAIN]
    encoding = tokenizer(words, is_split_into_words=True, padding=True, return_tensors="pt")
    labels = torch.full_like(encoding["input_ids"], -100)
    for row, sentence in enumerate(TRAIN):
        for position, word in enumerate(encoding.word_ids(row)):
            if word is not None:
                labels[row, position] = model.config.label2id[sentence[word][2]]
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-2)
    model.train()
    for _ in range(steps):
        loss = model(**encoding, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


@pytest.fixture(scope="module")
def save_tagger(tiny_tagger):
    """``save_tagger(folder, seed=0, train_steps=40, **overrides)``: a tiny tagger trained on TRAIN, saved."""

    def save(folder: Path, seed=0, train_steps=40, **overrides) -> Path:
        tokenizer = build_tokenizer(dict.fromkeys(w for s in TRAIN for w, _, _ in s), model_max_length=32)
        options = {
            "vocab_size": len(tokenizer),
            "max_position_embeddings": 32,
            "hidden_dropout_prob": 0.0,
            "attention_probs_dropout_prob": 0.0,
            "num_basis": 4,
            **labels(XPOS),
        }
        model = tiny_tagger(seed, **{**options, **overrides})
        train_tagger(model, tokenizer, train_steps)
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        return folder

    return save


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny models gain nothing from threads, and lose much on a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("data")
    (folder / "dev.conllu").write_text(conllu(DEV, multiword=True))
    return folder / "dev.conllu"


@pytest.fixture(scope="module")
def tagger(tmp_path_factory, save_tagger) -> Path:
    return save_tagger(tmp_path_factory.mktemp("models") / "tagger")


def logits(model, tokenizer, sentence="the cat sat on a mat ."):
    encoding = tokenizer(sentence.split(), is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        return model.eval()(**encoding).logits


# --- compress --------------------------------------------------------------------------
def test_compressed_card_records_its_lineage_and_measured_accuracy(tagger, data, tmp_path):
    source = tmp_path / "source"
    shutil.copytree(tagger, source)
    model = load_model(source).model
    write_model_card(model, source, language="en", license="cc-by-sa-4.0", datasets="universal_dependencies")
    result = compress(source, tmp_path / "out", num_basis=2, eval_file=data, repeats=1, base_model="me/gum-tagger")
    card = ModelCard.load(tmp_path / "out" / "README.md")
    data_ = card.data
    assert (data_.base_model, data_.base_model_relation) == ("me/gum-tagger", "quantized")
    assert (data_.language, data_.license, data_.datasets) == ("en", "cc-by-sa-4.0", ["universal_dependencies"])
    assert "compressed" in data_.tags and data_.compression["source_model"] == "me/gum-tagger"
    [evaluation] = data_.eval_results
    assert (evaluation.dataset_split, evaluation.metric_type) == ("dev", "accuracy")
    assert evaluation.metric_value == result.compressed.accuracy
    assert data_.model_name == "out"
    # A plain re-save states the compressed model's facts (kept in its config), not the source's.
    load_model(tmp_path / "out").model.save_pretrained(tmp_path / "resaved")
    again = ModelCard.load(tmp_path / "resaved" / "README.md").data
    assert (again.base_model, again.language, again.model_name) == ("me/gum-tagger", "en", "out")
    assert [r.metric_value for r in again.eval_results] == [result.compressed.accuracy]


def test_compress_then_reload_gives_the_reported_accuracy(tagger, data, tmp_path):
    before = tree_hashes(tagger)
    result = compress(tagger, tmp_path / "out", num_basis=2, num_steps=2, eval_file=data, repeats=1)
    assert tree_hashes(tagger) == before

    reloaded = load_model(tmp_path / "out")
    config = reloaded.model.config
    assert (config.basis, config.num_basis, config.num_steps) == ("piecewise_constant", 2, 2)
    accuracy = load_eval_set(reloaded, data).accuracy(reloaded.model)
    assert accuracy == result.compressed.accuracy
    assert reloaded.model.num_parameters() == result.compressed.total_parameters
    # All 16 words are scored, the one with a tag the model never saw ("wow"/UH) as an error.
    assert "16 words" in result.eval_description
    assert result.source.accuracy <= 15 / 16 and (16 * result.source.accuracy).is_integer()
    # The package's own evaluation of a saved tagger agrees.
    assert evaluate_saved_model(tmp_path / "out", eval_file=[str(data)])["accuracy"] == accuracy
    assert result.compressed.non_embedding_parameters < result.source.non_embedding_parameters
    assert result.compressed.embedding_parameters == result.source.embedding_parameters

    card = ModelCard.load(tmp_path / "out" / "README.md")
    facts = card.data.compression
    assert facts["num_basis"] == 2 and facts["num_steps"] == 2 and facts["method"] == "projection"
    assert facts["accuracy_after"] == result.compressed.accuracy
    assert facts["accuracy_before"] == result.source.accuracy
    assert facts["inference_seconds_after"] == result.compressed.inference_seconds
    assert facts["non_embedding_parameters_after"] == result.compressed.non_embedding_parameters
    assert str(tagger) in facts["source_model"]
    assert "## Compression" in card.text and "compression ratio" in card.text
    assert {"tokenizer.json", "config.json", "model.safetensors"} <= set(os.listdir(tmp_path / "out"))
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left


@pytest.mark.parametrize("method", ["projection", "interpolation"])
@pytest.mark.parametrize("basis", ["piecewise_constant", "piecewise_linear"])
def test_same_space_leaves_outputs_unchanged(tmp_path, data, method, basis, save_tagger):
    source_dir = save_tagger(tmp_path / "source", train_steps=0, basis=basis, num_basis=3, num_steps=5)
    source = load_model(source_dir)
    same = compressed_copy(source.model, basis, 3, 5, method)
    torch.testing.assert_close(logits(same, source.preprocessor), logits(source.model, source.preprocessor))
    compress(
        source_dir,
        tmp_path / "out",
        basis=basis,
        num_basis=3,
        num_steps=5,
        method=method,
        repeats=1,
    )
    out = load_model(tmp_path / "out")
    torch.testing.assert_close(logits(out.model, out.preprocessor), logits(source.model, source.preprocessor))


def test_source_model_is_left_unchanged_in_memory(tagger):
    source = load_model(tagger)
    state = {k: v.clone() for k, v in source.model.state_dict().items()}
    compressed_copy(source.model, "piecewise_linear", 2, 1)
    assert source.model.config.num_basis == 4 and source.model.config.num_steps == 4
    for key, value in source.model.state_dict().items():
        assert torch.equal(value, state[key]), key


# --- bad input -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def legendre_tagger(tmp_path_factory, save_tagger) -> Path:
    return save_tagger(tmp_path_factory.mktemp("models") / "legendre", train_steps=0, basis="legendre", num_basis=3)


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"basis": "chebyshev"}, "basis"),
        ({"method": "spline"}, "method"),
        ({"num_basis": 0}, "num_basis"),
        ({"num_steps": 0}, "num_steps"),
        ({"basis": "discontinuous_linear", "num_basis": 3}, "num_basis"),
        ({"basis": "legendre", "num_basis": 2, "method": "interpolation"}, "basis"),
        ({"num_basis": 2.5}, "num_basis"),
        ({"state_num_basis": 0}, "state_num_basis"),
        ({"state_num_basis": 2}, "state_num_basis"),  # a tagger has no running statistics
    ],
)
def test_bad_choices_raise_before_anything_is_written(tagger, tmp_path, kwargs, argument):
    before = tree_hashes(tagger)
    with pytest.raises(ValueError, match=rf"^{argument}:"):
        compress(tagger, tmp_path / "out", repeats=1, **kwargs)
    assert not (tmp_path / "out").exists()
    assert os.listdir(tmp_path) == []
    assert tree_hashes(tagger) == before


def test_interpolation_from_a_basis_without_control_points(legendre_tagger, tmp_path):
    before = tree_hashes(legendre_tagger)
    with pytest.raises(ValueError, match=r"^method: .*source basis 'legendre'"):
        compress(legendre_tagger, tmp_path / "out", basis="piecewise_constant", method="interpolation")
    assert os.listdir(tmp_path) == []
    assert tree_hashes(legendre_tagger) == before
    # Projection works from any basis.
    result = compress(legendre_tagger, tmp_path / "out", basis="piecewise_constant", num_basis=2, repeats=1)
    assert result.compressed.basis == "piecewise_constant"


def test_folders_that_are_not_models_of_this_package(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match=rf"model_dir: {empty} is not a saved model folder"):
        compress(empty, tmp_path / "out")
    bert = tmp_path / "bert"
    bert.mkdir()
    (bert / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(ValueError, match=rf"model_dir: {bert}: a 'bert' model is not a model of this package"):
        compress(bert, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_output_folder_must_not_touch_the_source(tagger, tmp_path):
    before = tree_hashes(tagger)
    for output in (tagger, tagger / "inside", tagger.parent):
        with pytest.raises(ValueError, match="^output_dir:"):
            compress(tagger, output, num_basis=2)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("x")
    with pytest.raises(ValueError, match="^output_dir: .* not empty"):
        compress(tagger, tmp_path / "full", num_basis=2)
    assert tree_hashes(tagger) == before
    # --overwrite replaces a model folder, never a folder of anything else.
    with pytest.raises(ValueError, match="^output_dir: .* not a saved model folder"):
        compress(tagger, tmp_path / "full", num_basis=2, repeats=1, overwrite=True)
    assert (tmp_path / "full" / "keep.txt").read_text() == "x"
    compress(tagger, tmp_path / "model", num_basis=4, repeats=1)
    compress(tagger, tmp_path / "model", num_basis=2, repeats=1, overwrite=True)
    assert load_model(tmp_path / "model").model.config.num_basis == 2


# --- sweep and selection ---------------------------------------------------------------
def test_sweep_points_cover_both_figures():
    points = sweep_points("piecewise_constant", 4, 4, 1.0)
    assert [p for p in points if p[0] == "num_basis"] == [
        ("num_basis", "piecewise_constant", 1, 4),
        ("num_basis", "piecewise_constant", 2, 4),
        ("num_basis", "piecewise_constant", 4, 4),
        ("num_basis", "piecewise_linear", 1, 4),
        ("num_basis", "piecewise_linear", 2, 4),
        ("num_basis", "piecewise_linear", 4, 4),
        ("num_basis", "discontinuous_linear", 2, 4),
        ("num_basis", "discontinuous_linear", 4, 4),
    ]
    assert [p for p in points if p[0] == "num_steps"] == [
        ("num_steps", "piecewise_constant", 4, 1),
        ("num_steps", "piecewise_constant", 4, 2),
        ("num_steps", "piecewise_constant", 4, 4),
    ]
    assert [p for p in points if p[0] == "num_basis_and_steps"] == [
        ("num_basis_and_steps", "piecewise_constant", 1, 1),
        ("num_basis_and_steps", "piecewise_constant", 2, 2),
    ]
    with pytest.raises(ValueError, match="^num_steps:"):
        sweep_points("piecewise_constant", 4, 4, 1.0, num_steps_values=[0])
    assert STATES_KEPT not in {p[0] for p in points}
    with_states = sweep_points("piecewise_constant", 4, 4, 1.0, state_num_basis=4)
    assert [p for p in with_states if p[0] == STATES_KEPT] == [
        (STATES_KEPT, "piecewise_constant", 1, 4),
        (STATES_KEPT, "piecewise_constant", 2, 4),
    ]


def row(grid="num_basis", basis="piecewise_constant", k=4, n=4, params=100, accuracy=0.9, seconds=1.0):
    return SweepRow(
        grid,
        "projection",
        basis,
        k,
        n,
        10,
        params,
        100 / params,
        accuracy,
        100 * (0.9 - accuracy),
        seconds,
        1.0 / seconds,
    )


def test_select_smallest_prefers_fewest_parameters_then_steps_then_time():
    source = row(grid="source")
    rows = [
        source,
        row(k=1, params=25, accuracy=0.80),  # too inaccurate for a 1-point budget
        row(k=2, params=50, accuracy=0.895, seconds=0.9),
        row(basis="piecewise_linear", k=2, params=50, accuracy=0.899, seconds=0.8),
        row(grid="num_steps", n=2, accuracy=0.9, seconds=0.5),
    ]
    assert select_smallest(rows, 1.0) is rows[3]
    assert select_smallest(rows, 20.0) is rows[1]
    assert select_smallest(rows, 0.0) is rows[4]
    rows[4].accuracy_drop = 0.5
    assert select_smallest(rows, 0.0) is source
    with pytest.raises(ValueError, match="^max_accuracy_drop:"):
        select_smallest(rows, -1)


@pytest.mark.slow
def test_sweep_writes_csv_plots_and_the_selected_model(tagger, data, tmp_path):
    before = tree_hashes(tagger)
    result = sweep(
        tagger,
        data,
        tmp_path / "sweep",
        num_steps_values=[1, 2, 4],
        repeats=1,
        max_accuracy_drop=100.0,
    )
    assert tree_hashes(tagger) == before
    rows = read_csv(tmp_path / "sweep" / CSV_NAME)
    expected = [("source", "piecewise_constant", 4, 4)] + sweep_points("piecewise_constant", 4, 4, 1.0)
    assert [(r.grid, r.basis, r.num_basis, r.num_steps) for r in rows] == expected
    assert rows[0].accuracy_drop == 0 and rows[0].compression_ratio == 1
    for name in (PARAMETERS_PLOT, NUM_STEPS_PLOT):
        assert (tmp_path / "sweep" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # With any drop allowed, the smallest model is K = 1 (piecewise constant or linear).
    assert result.selected.num_basis == 1
    saved = load_model(tmp_path / "sweep")
    assert (saved.model.config.basis, saved.model.config.num_basis) == (result.selected.basis, 1)
    assert load_eval_set(saved, data).accuracy(saved.model) == result.selected.accuracy
    assert ModelCard.load(tmp_path / "sweep" / "README.md").data.compression["num_basis"] == 1


@pytest.mark.slow
def test_cli_compress_and_sweep(tagger, data, tmp_path):
    before = tree_hashes(tagger)
    script = [sys.executable, str(REPO / "scripts" / "compress.py"), str(tagger)]
    run = subprocess.run(
        [
            *script,
            "--sweep",
            "--sweep-bases",
            "piecewise_constant",
            "--sweep-num-steps",
            "2",
            "4",
            "--eval-file",
            str(data),
            "--output-dir",
            str(tmp_path / "sweep"),
            "--repeats",
            "1",
            "--max-accuracy-drop",
            "0",
            "--num-threads",
            "1",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "| grid | basis | K | N_T |" in run.stdout
    rows = read_csv(tmp_path / "sweep" / CSV_NAME)
    assert len(rows) == 1 + 3 + 2 + 1  # source, K in {1, 2, 4}, N_T in {2, 4}, K = N_T = 2
    chosen = min(
        (r for r in rows if r.accuracy_drop <= 0),
        key=lambda r: (r.non_embedding_parameters, r.num_steps, r.inference_seconds, -r.accuracy),
    )
    config = json.loads((tmp_path / "sweep" / "config.json").read_text())
    assert (config["num_basis"], config["num_steps"]) == (chosen.num_basis, chosen.num_steps)

    assert tree_hashes(tagger) == before


@pytest.fixture(scope="module")
def script():
    """scripts/compress.py as a module, to call its main() in this process."""
    spec = importlib.util.spec_from_file_location("compress_script", REPO / "scripts" / "compress.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--num-basis", "0"], "error: num_basis: must be an integer >= 1"),
        (["--method", "interpolation", "--basis", "legendre"], "error: basis: interpolation"),
        (["--sweep"], "--sweep and --max-accuracy-drop need --eval-file"),
        (["--sweep", "--eval-file", "x", "--num-basis", "2"], "--sweep takes --sweep-bases"),
        (["--basis", "spline"], "invalid choice: 'spline'"),
    ],
)
def test_cli_bad_input(script, tagger, tmp_path, capsys, arguments, message):
    before = tree_hashes(tagger)
    with pytest.raises(SystemExit) as exit_info:
        script.main([str(tagger), "--output-dir", str(tmp_path / "out"), *arguments])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error
    assert len([line for line in error.splitlines() if line.startswith("error:")]) == 1
    assert os.listdir(tmp_path) == []
    assert tree_hashes(tagger) == before


# --- image models ----------------------------------------------------------------------
def write_idx(path: Path, array: np.ndarray) -> None:
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    with gzip.open(path, "wb") as handle:
        handle.write(header + array.astype(np.uint8).tobytes())


@pytest.fixture(scope="module")
def image_model(tmp_path_factory, tiny_ode_resnet_config) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("images")
    generator = np.random.default_rng(0)
    # The test split has a class ("3") the 3-class model does not know: always an error.
    for prefix, count, num_classes in (("train", 12, 3), ("t10k", 24, 4)):
        labels = generator.integers(0, num_classes, count)
        labels[:4] = 3 if prefix == "t10k" else labels[:4]
        images = generator.integers(0, 256, (count, 8, 8))
        images[:, :4] = labels[:, None, None] * 100  # a class signal in the top half
        write_idx(root / f"{prefix}-images-idx3-ubyte.gz", images)
        write_idx(root / f"{prefix}-labels-idx1-ubyte.gz", labels)
    torch.manual_seed(0)
    config = tiny_ode_resnet_config(
        stage_channels=[4], stage_strides=[1], num_basis=4, id2label={i: str(i) for i in range(3)}
    )
    model = OdeResNetForImageClassification(config).eval()
    model.save_pretrained(root / "model")
    OdeResNetImageProcessor().save_pretrained(root / "model")
    return root / "model", root


def test_image_model_compress_reload_and_same_space(image_model, tmp_path):
    model_dir, idx_dir = image_model
    before = tree_hashes(model_dir)
    result = compress(model_dir, tmp_path / "out", num_basis=2, num_steps=2, eval_file=idx_dir, repeats=1)
    assert tree_hashes(model_dir) == before
    assert "24 images" in result.eval_description
    assert result.source.accuracy <= 20 / 24 and result.compressed.accuracy <= 20 / 24
    reloaded = load_model(tmp_path / "out")
    assert reloaded.model.config.num_basis == 2
    assert load_eval_set(reloaded, idx_dir).accuracy(reloaded.model) == result.compressed.accuracy
    assert (tmp_path / "out" / "preprocessor_config.json").is_file()
    assert ModelCard.load(tmp_path / "out" / "README.md").data.compression["num_basis"] == 2

    kept = compress(model_dir, tmp_path / "kept", num_basis=2, state_num_basis=4, eval_file=idx_dir, repeats=1)
    assert (kept.compressed.num_basis, kept.compressed.state_num_basis) == (2, 4)
    reloaded = load_model(tmp_path / "kept")
    assert reloaded.model.ode_resnet.stages[0].ode.state_num_basis == 4
    assert load_eval_set(reloaded, idx_dir).accuracy(reloaded.model) == kept.compressed.accuracy
    card = ModelCard.load(tmp_path / "kept" / "README.md")
    assert card.data.compression["state_num_basis"] == 4
    source_row, compressed_row = (
        line for line in card.text.splitlines() if line.startswith(("| source |", "| compressed |"))
    )  # the compression table: model | basis | K | statistics K | N_T | ...
    assert source_row.split(" | ")[2:4] == ["4", "4"] and compressed_row.split(" | ")[2:4] == ["2", "4"]

    source = load_model(model_dir)
    same = compressed_copy(source.model, "piecewise_constant", 4, 4, "interpolation")
    pixels = torch.randn(5, 1, 8, 8)
    with torch.no_grad():
        torch.testing.assert_close(same(pixels).logits, source.model(pixels).logits)


def test_halving_k_alone_keeps_the_running_statistics(tiny_ode_resnet_config):
    torch.manual_seed(0)
    model = OdeResNetForImageClassification(tiny_ode_resnet_config(num_basis=4, num_steps=4))
    model.train()
    for _ in range(3):  # statistics that differ along the depth
        model(torch.randn(8, 1, 8, 8) * 3)
    model.eval()
    pixels = torch.randn(5, 1, 8, 8)

    def sizes(copy):
        block = copy.ode_resnet.stages[0].ode
        return block.num_basis, block.state_num_basis, block.num_steps

    halved, averaged = compressed_copy(model, num_basis=2), compressed_copy(model, num_basis=2, state_num_basis=2)
    assert (sizes(halved), sizes(averaged)) == ((2, 4, 4), (2, 2, 4))
    source_var = model.ode_resnet.stages[0].ode.rate.bn1.running_var
    assert torch.equal(halved.ode_resnet.stages[0].ode.rate.bn1.running_var, source_var)
    with torch.no_grad():
        assert not torch.allclose(halved(pixels).logits, averaged(pixels).logits)
    # With N_T or the basis changed, the stages sit elsewhere: the statistics follow K.
    assert sizes(compressed_copy(model, num_basis=2, num_steps=2)) == (2, 2, 2)
    assert sizes(compressed_copy(model, basis="piecewise_linear", num_basis=2)) == (2, 2, 4)
    assert sizes(compressed_copy(model, num_steps=2)) == (4, 4, 2)
    # The training report scores the same copies and says which statistics each kept.
    rows = score_variants(model, lambda m: {"accuracy": 0.5}, ["accuracy"], "accuracy")
    assert [(r["model"], r["num_basis"], r["state_num_basis"], r["num_steps"]) for r in rows] == [
        ("trained", 4, 4, 4),
        ("K/2", 2, 4, 4),
        ("K/4", 1, 4, 4),
        ("N_T/2", 4, 4, 2),
        ("N_T/4", 4, 4, 1),
        ("K/2, N_T/2", 2, 2, 2),
    ]


def test_image_sweep_adds_the_statistics_kept_line(image_model, tmp_path):
    model_dir, idx_dir = image_model
    result = sweep(
        model_dir,
        idx_dir,
        tmp_path / "sweep",
        bases=["piecewise_constant"],
        num_basis_values=[1, 2, 4],
        num_steps_values=[4],
        repeats=1,
        max_accuracy_drop=100.0,
    )
    kept = [r for r in result.rows if r.grid == STATES_KEPT]
    assert [(r.num_basis, r.state_num_basis, r.num_steps) for r in kept] == [(1, 4, 4), (2, 4, 4)]
    plain = [r for r in result.rows if r.grid == "num_basis"]
    assert [(r.num_basis, r.state_num_basis) for r in plain] == [(1, 1), (2, 2), (4, 4)]
    assert kept[0].non_embedding_parameters == plain[0].non_embedding_parameters
    assert read_csv(tmp_path / "sweep" / CSV_NAME) == result.rows
    assert "| statistics K |" in (tmp_path / "sweep" / "sweep.md").read_text()
    saved = load_model(tmp_path / "sweep")
    block = saved.model.ode_resnet.stages[0].ode
    assert (block.num_basis, block.state_num_basis) == (1, result.selected.state_num_basis)
    assert load_eval_set(saved, idx_dir).accuracy(saved.model) == result.selected.accuracy


def test_cli_pushes_the_written_folder(script, tagger, tmp_path, monkeypatch):
    calls = []

    class FakeApi:
        def create_repo(self, repo_id, **kwargs):
            calls.append(("create_repo", repo_id))

        def upload_folder(self, repo_id, folder_path, **kwargs):
            calls.append(("upload_folder", repo_id, sorted(os.listdir(folder_path))))
            return type("Commit", (), {"commit_url": f"https://hub/{repo_id}/commit"})()

    monkeypatch.setattr("cont_transformer.runtime.hub.HfApi", FakeApi)
    script.main(
        [
            str(tagger),
            "--num-basis",
            "2",
            "--output-dir",
            str(tmp_path / "out"),
            "--repeats",
            "1",
            "--push-to-hub",
            "me/tagger-k2",
        ]
    )
    assert calls[0] == ("create_repo", "me/tagger-k2")
    assert calls[1][:2] == ("upload_folder", "me/tagger-k2")
    assert {"README.md", "config.json", "model.safetensors", "tokenizer.json"} <= set(calls[1][2])


def test_a_sample_run_is_scored_on_the_sample_dev_split(tmp_path):
    """compress.py without --eval-file: a run on the generated sample (its run.json says so)
    is scored on the sample's dev split, generated again; any other model is not."""
    from cont_transformer.tagging.data import load_treebank
    from cont_transformer.tools.compress_command import run_dev_file
    from cont_transformer.training.identity import record_identity

    run, other, gum = tmp_path / "run", tmp_path / "other", tmp_path / "gum"
    for folder in (run / "best", other, gum):
        folder.mkdir(parents=True)
        (folder / "config.json").write_text('{"model_type": "cont_transformer"}')  # a tagger's family
    record_identity(run, {"treebank": "sample", "seed": 7}, "data")
    for model_dir in (run, run / "best"):
        dev = run_dev_file(model_dir, tmp_path / "dev")
        assert dev is not None and dev.name == "sample-ud-dev.conllu"
        # the very sentences training read as its validation split
        assert load_treebank({"validation": [dev]})["validation"][:] == load_treebank("sample")["validation"][:]
    record_identity(other, {"treebank": "sample"}, "data", files={"my-dev.conllu": "abc"})  # its own data
    record_identity(gum, {"treebank": "en_gum"}, "data")
    for model_dir in (other, gum, tmp_path / "no-run"):
        assert run_dev_file(model_dir, tmp_path / "dev") is None
