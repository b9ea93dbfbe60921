"""Output folders keep their kind: every folder's manifest records what it holds (a tagger's or a
language model's run, a model folder, word vectors, a compressed model), ``--overwrite`` /
``--overwrite-output-dir`` replaces only a folder of the kind its command writes, a folder saved
before kinds were recorded is known by its files, and a checkpoint of another run resumes only
into an empty folder or replaces the run there whole. Every refusal leaves the victim folder
byte-identical (:func:`hostile.folder_digest`)."""

import json
import shutil

import pytest
from hostile import folder_digest, run_script, save_tagger, train_pos
from test_pretraining import language_model, text_file, write_text  # noqa: F401  (the language model's fixtures)

from cont_transformer.language_modeling.word_vectors import train_word_vectors
from cont_transformer.runtime.model_folders import (
    COMPRESSED_MODEL,
    LANGUAGE_MODEL_RUN,
    MODEL_FOLDER,
    TAGGER_RUN,
    WORD_VECTORS,
    folder_kind,
)
from cont_transformer.runtime.safe_files import MANIFEST_FILE, OutputFolderError, release_output_folder
from cont_transformer.tools.compression import compress
from cont_transformer.training.outputs import check_run_folder

pytest.importorskip("gensim")


@pytest.fixture(scope="module")
def saved(tmp_path_factory, tiny_tagger):
    return save_tagger(tmp_path_factory.mktemp("tagger"), tiny_tagger)


@pytest.fixture(scope="module")
def vectors(tmp_path_factory):
    folder = tmp_path_factory.mktemp("vectors")
    train_word_vectors([write_text(folder / "t.txt.gz", lines=60)], folder / "vectors", vector_size=4, epochs=1)
    return folder / "vectors"


def copy(folder, destination):
    shutil.copytree(folder, destination, symlinks=True)
    return destination


def refusal(folder, found, kind, several, command, flag="--output-dir"):
    return (
        f"error: {flag}: {folder} holds {found}, not {kind}; {command} replaces only {several}: choose another folder"
    )


def as_saved_before_kinds(folder, kind):
    """Rewrite the manifest of ``folder`` as the package wrote it before kinds were told
    apart (``run`` or ``model``, or no kind at all for ``None``)."""
    path = folder / MANIFEST_FILE
    manifest = json.loads(path.read_text())
    manifest.pop("kind")
    if kind is not None:
        manifest["kind"] = kind
    path.write_text(json.dumps(manifest))


@pytest.mark.slow
def test_overwrite_replaces_only_a_folder_of_its_own_kind(
    sample_run_60,
    language_model,  # noqa: F811
    saved,
    vectors,
    tmp_path,
    capsys,
):
    run, lm = copy(sample_run_60, tmp_path / "run"), copy(language_model, tmp_path / "lm")
    vec = copy(vectors, tmp_path / "vec")
    assert (folder_kind(run), folder_kind(run / "best")) == (TAGGER_RUN, MODEL_FOLDER)
    assert (folder_kind(lm), folder_kind(vec)) == (LANGUAGE_MODEL_RUN, WORD_VECTORS)
    text = write_text(tmp_path / "t.txt.gz", lines=60)
    tagger_run, lm_run = "a tagger training run", "a language-model training run"
    vector_args = ["--text-files", text, "--vector-size", "4", "--epochs", "1", "--overwrite", "--output-dir"]
    words = ("word vectors", "word vectors", "train_word_vectors.py --overwrite")
    tagging = ["--treebank", "sample", "--max-steps", "2", "--overwrite-output-dir", "--output-dir"]
    cases = [
        ("train_word_vectors", [*vector_args, run], refusal(run, tagger_run, *words)),
        ("train_word_vectors", [*vector_args, run / "best"], refusal(run / "best", "a model folder", *words)),
        ("train_word_vectors", [*vector_args, lm], refusal(lm, lm_run, *words)),
        (
            "compress",
            [saved, "--num-basis", "2", "--overwrite", "--output-dir", vec],
            refusal(
                vec, "word vectors", "a compressed model", "compressed models", "compress.py --overwrite", "output_dir"
            ),
        ),
        (
            "train_pos",
            [*tagging, vec],
            refusal(vec, "word vectors", tagger_run, "tagger training runs", "train_pos.py --overwrite-output-dir"),
        ),
        (
            "train_pos",
            [*tagging, lm],
            refusal(lm, lm_run, tagger_run, "tagger training runs", "train_pos.py --overwrite-output-dir"),
        ),
        (
            "pretrain",
            ["--text-files", text, "--max-steps", "2", "--overwrite-output-dir", "--output-dir", run],
            refusal(run, tagger_run, lm_run, "language-model training runs", "pretrain.py --overwrite-output-dir"),
        ),
    ]
    before = {folder: folder_digest(folder) for folder in (run, lm, vec)}
    for script, argv, expected in cases:
        assert run_script(script, argv, capsys) == expected
        for folder in (run, lm, vec):
            release_output_folder(folder)
    assert {folder: folder_digest(folder) for folder in (run, lm, vec)} == before
    # The same kind is replaced, and stays that kind.
    settings = train_word_vectors([text], vec, vector_size=4, epochs=1, overwrite=True)
    assert settings["words"] > 3 and folder_kind(vec) == WORD_VECTORS
    assert folder_digest(vec) != before[vec]


def test_a_folder_saved_before_kinds_is_known_by_its_files(saved, vectors, tmp_path, capsys):
    # A tagger run's folder as the package saved it before kinds (its manifests say run and model).
    run = tmp_path / "run"
    (run / "best").mkdir(parents=True)
    for path in saved.iterdir():
        shutil.copy(path, run / "best" / path.name)
        shutil.copy(path, run / path.name)
    names = sorted(p.name for p in saved.iterdir())
    (run / "best" / MANIFEST_FILE).write_text(
        json.dumps({"written_by": "cont_transformer", "kind": "model", "outputs": names})
    )
    outputs = sorted([*names, "best", "run.json"])
    (run / MANIFEST_FILE).write_text(json.dumps({"written_by": "cont_transformer", "kind": "run", "outputs": outputs}))
    (run / "run.json").write_text(json.dumps({"run_id": "x", "arguments": {"treebank": "sample", "seed": 1}}))
    assert (folder_kind(run), folder_kind(run / "best")) == (TAGGER_RUN, MODEL_FOLDER)
    before = folder_digest(run)
    assert check_run_folder(run, resuming=False, overwrite=True, kind=TAGGER_RUN)  # train_pos.py may replace it
    with pytest.raises(OutputFolderError, match="holds a tagger training run, not a language-model training run"):
        check_run_folder(run, resuming=False, overwrite=True, kind=LANGUAGE_MODEL_RUN)
    text = write_text(tmp_path / "t.txt.gz", lines=60)
    line = run_script("train_word_vectors", ["--text-files", text, "--output-dir", run, "--overwrite"], capsys)
    assert line.startswith(f"error: --output-dir: {run} holds a tagger training run, not word vectors")
    line = run_script("compress", [saved, "--output-dir", run / "best", "--overwrite", "--num-basis", "2"], capsys)
    assert "lies inside the outputs of the training run" in line
    # A run whose record tells no kind is replaced by no command.
    (run / "run.json").write_text(json.dumps({"run_id": "x", "arguments": {"seed": 1}}))
    before = folder_digest(run)
    line = run_script("train_pos", ["--treebank", "sample", "--overwrite-output-dir", "--output-dir", run], capsys)
    assert line.startswith(f"error: --output-dir: {run} holds outputs of this package of a kind neither")
    release_output_folder(run)
    assert folder_digest(run) == before
    # Word vectors and a compressed model whose manifests say "model" (or no kind): their writers replace them.
    vec = copy(vectors, tmp_path / "vec")
    as_saved_before_kinds(vec, None)
    assert folder_kind(vec) == WORD_VECTORS
    train_word_vectors([text], vec, vector_size=4, epochs=1, overwrite=True)
    assert json.loads((vec / MANIFEST_FILE).read_text())["kind"] == WORD_VECTORS
    small = tmp_path / "small"
    compress(saved, small, num_basis=2, repeats=1)
    as_saved_before_kinds(small, "model")
    assert folder_kind(small) == COMPRESSED_MODEL
    compress(saved, small, num_basis=1, repeats=1, overwrite=True)
    assert json.loads((small / "config.json").read_text())["num_basis"] == 1
    # A model folder is no compressed model: compress.py does not replace it.
    model = copy(run / "best", tmp_path / "model")
    before = folder_digest(model)
    line = run_script("compress", [saved, "--output-dir", model, "--overwrite", "--num-basis", "2"], capsys)
    assert line == refusal(
        model, "a model folder", "a compressed model", "compressed models", "compress.py --overwrite", "output_dir"
    )
    assert folder_digest(model) == before


@pytest.mark.slow
def test_a_checkpoint_of_another_run_replaces_a_run_only_when_asked(tmp_path):
    args = ["recipes/sample.json", "--max-steps", "20", "--save-steps", "10", "--eval-steps", "10"]
    first, second = tmp_path / "a", tmp_path / "b"
    for run in (first, second):
        result = train_pos(*args, "--output-dir", str(run))
        assert result.returncode == 0, result.stderr[-2000:]
    (second / "MY_NOTES.txt").write_text("mine")
    before, first_before = folder_digest(second), folder_digest(first)
    ids = {json.loads((run / "run.json").read_text())["run_id"] for run in (first, second)}
    foreign = first / "checkpoints" / "step-10"
    result = train_pos(*args, "--output-dir", str(second), "--resume-from-checkpoint", str(foreign))
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: --resume-from-checkpoint: {foreign} is a checkpoint of another run folder, and --output-dir "
        f"{second} holds a run of its own; resume that run into an empty folder, resume {second}'s own run with "
        "--resume-from-checkpoint latest, or pass --overwrite-output-dir to replace it"
    )
    assert folder_digest(second) == before
    # With --overwrite-output-dir the run there is replaced whole by the resumed one.
    result = train_pos(
        *args, "--output-dir", str(second), "--resume-from-checkpoint", str(foreign), "--overwrite-output-dir"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads((second / "run.json").read_text())["run_id"] not in ids
    assert [entry["step"] for entry in json.loads((second / "metrics.json").read_text())["history"]] == [20]
    assert (second / "model.safetensors").read_bytes() == (second / "best" / "model.safetensors").read_bytes()
    assert sorted(p.name for p in (second / "checkpoints").glob("step-*")) == ["step-20"]
    assert (second / "MY_NOTES.txt").read_text() == "mine"
    assert folder_digest(first) == first_before  # the checkpoint's run is only read
