"""A model folder never runs code and never prompts: every load of the package
passes ``trust_remote_code=False`` and first refuses, in one line, a folder whose
``auto_map`` names a class that is not one of the package's own
(``cont_transformer.pretrained.check_no_custom_code``).

Each planted folder carries a module that writes a marker file when imported: a test
answers transformers' "[y/N]" prompt with yes on stdin and checks the marker was never
written (``tag.py`` once in its own process; the scripts otherwise in the test's process,
through conftest's ``script_here``, with the same stdin). The package's own folders, whose ``config.json`` names its classes, still load.
"""

import builtins
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cont_transformer import (
    ContTransformerConfig,
    ContTransformerForTokenClassification,
    ContTransformerModel,
    OdeResNetConfig,
    OdeResNetForImageClassification,
    OdeResNetImageProcessor,
    OdeResNetModel,
    modeling_cont_transformer,
    pretrained,
)
from cont_transformer.pretrained import (
    CustomCodeError,
    check_no_custom_code,
    class_reference,
    is_own_class,
    own_model_types,
    register_own_class,
)
from cont_transformer.tagging.tag import Tagger
from cont_transformer.text.tokenization import build_tokenizer

REPO = Path(__file__).resolve().parents[1]
WORDS = ["the", "cat", "dog", "sat", "ran", "on", "a", "mat", "."]
TAGS = ["DT", "NN", "VB", "IN", "."]
REFUSAL = "this package never runs code from a model folder"


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    """A tiny tagger saved with its tokenizer, its config.json naming the package's classes
    in ``auto_map`` as ``save_pretrained`` writes them."""
    folder = tmp_path_factory.mktemp("tagger")
    tokenizer = build_tokenizer(WORDS)
    config = ContTransformerConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        num_attention_heads=2,
        intermediate_size=24,
        num_basis=3,
        id2label=dict(enumerate(TAGS)),
        label2id={tag: i for i, tag in enumerate(TAGS)},
    )
    ContTransformerForTokenClassification(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    path = folder / "config.json"
    saved_config = json.loads(path.read_text())
    saved_config["auto_map"] = {
        **(saved_config.get("auto_map") or {}),
        "AutoConfig": class_reference(ContTransformerConfig),
        "AutoModel": class_reference(ContTransformerModel),
        "AutoModelForTokenClassification": class_reference(ContTransformerForTokenClassification),
    }
    path.write_text(json.dumps(saved_config))
    return folder


def plant(saved: Path, tmp_path: Path, file: str, entries: dict) -> tuple[Path, Path]:
    """A copy of ``saved`` whose ``file`` gets ``entries`` (``auto_map`` merged) and a module
    ``evil_mod.py`` that writes a marker when imported; returns the folder and the marker."""
    folder = tmp_path / "planted"
    shutil.copytree(saved, folder)
    marker = tmp_path / "MARKER"
    (folder / "evil_mod.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
        "from transformers import PreTrainedTokenizerFast as EvilTokenizer, PretrainedConfig as EvilConfig\n"
    )
    path = folder / file
    data = json.loads(path.read_text()) if path.is_file() else {}
    for key, value in entries.items():
        data[key] = {**data.get(key, {}), **value} if key == "auto_map" else value
    path.write_text(json.dumps(data))
    return folder, marker


PLANTED_TOKENIZER = {
    "tokenizer_class": "EvilTokenizer",
    "auto_map": {"AutoTokenizer": ["evil_mod.EvilTokenizer", None]},
}


def run_script(args: list[str], answer: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args],
        check=False,
        input=f"{answer}\nThe dog sat.\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        timeout=300,
    )


def run_here(script_here, monkeypatch, args: list[str], answer: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """:func:`run_script` in this process (conftest's ``script_here``): the same stdin and directory."""
    monkeypatch.chdir(tmp_path)
    return script_here(*args, stdin=f"{answer}\nThe dog sat.\n")


def assert_refused(result: subprocess.CompletedProcess, marker: Path, expected: str) -> None:
    """Exit status 2, stderr one ``error:`` line holding ``expected``, no prompt, no marker."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert expected in lines[0] and REFUSAL in lines[0], lines[0]
    assert "[y/N]" not in result.stdout + result.stderr
    assert not marker.exists()


# --- the scripts, with "yes" on stdin -------------------------------------------------------
@pytest.mark.parametrize(("answer", "own_process"), [("y", True), ("1", False)], ids=["y-process", "1-here"])
def test_tag_script_refuses_a_planted_tokenizer(saved, tmp_path, answer, own_process, script_here, monkeypatch):
    folder, marker = plant(saved, tmp_path, "tokenizer_config.json", PLANTED_TOKENIZER)
    args = [str(REPO / "scripts" / "tag.py"), str(folder)]
    if own_process:
        result = run_script(args, answer, tmp_path)
    else:
        result = run_here(script_here, monkeypatch, args, answer, tmp_path)
    assert_refused(
        result,
        marker,
        f"{folder / 'tokenizer_config.json'}: auto_map names custom code (AutoTokenizer -> evil_mod.EvilTokenizer)",
    )


def test_compress_script_refuses_a_planted_model_class(saved, tmp_path, script_here, monkeypatch):
    folder, marker = plant(
        saved, tmp_path, "config.json", {"auto_map": {"AutoModelForTokenClassification": "evil_mod.EvilModel"}}
    )
    args = [str(REPO / "scripts" / "compress.py"), str(folder), "--num-basis", "2", "--output-dir", "out"]
    result = run_here(script_here, monkeypatch, args, "y", tmp_path)
    assert_refused(result, marker, "config.json: auto_map names custom code (AutoModelForTokenClassification ->")
    assert not (tmp_path / "out").exists()


def test_train_pos_eval_only_refuses_a_planted_config(saved, tmp_path, script_here, monkeypatch):
    # An unknown model_type: transformers would ask before importing the folder's config class.
    folder, marker = plant(
        saved, tmp_path, "config.json", {"model_type": "evil", "auto_map": {"AutoConfig": "evil_mod.EvilConfig"}}
    )
    args = [str(REPO / "scripts" / "train_pos.py"), "--eval-only", str(folder)]
    result = run_here(script_here, monkeypatch, args, "y", tmp_path)
    assert_refused(result, marker, "config.json: auto_map names custom code (AutoConfig -> evil_mod.EvilConfig)")


def test_fine_tuning_refuses_a_planted_tokenizer(saved, tmp_path, script_here, monkeypatch):
    folder, marker = plant(saved, tmp_path, "tokenizer_config.json", PLANTED_TOKENIZER)
    args = [str(REPO / "scripts" / "train_pos.py"), "--model-name-or-path", str(folder), "--output-dir", "run"]
    result = run_here(script_here, monkeypatch, [*args, "--max-steps", "1"], "y", tmp_path)
    assert_refused(result, marker, "tokenizer_config.json: auto_map names custom code (AutoTokenizer ->")
    assert not (tmp_path / "run").exists()


# --- the Python API: every load path refuses before transformers reads the folder ----------
@pytest.fixture
def no_prompt(monkeypatch):
    """Fail the test if anything asks on stdin."""

    def ask(*args):
        raise AssertionError(f"prompted: {args}")

    monkeypatch.setattr(builtins, "input", ask)


PLANTS = {
    "tokenizer auto_map": ("tokenizer_config.json", PLANTED_TOKENIZER, "auto_map names custom code (AutoTokenizer"),
    "tokenizer class alone": (
        "tokenizer_config.json",
        {"tokenizer_class": "EvilTokenizer"},
        "tokenizer_class 'EvilTokenizer' is not a tokenizer class of transformers",
    ),
    "config auto_map": (
        "config.json",
        {"auto_map": {"AutoConfig": "evil_mod.EvilConfig"}},
        "auto_map names custom code (AutoConfig -> evil_mod.EvilConfig)",
    ),
    "hub code reference": (
        "config.json",
        {"auto_map": {"AutoModel": "someone/repo--modeling_cont_transformer.ContTransformerModel"}},
        "auto_map names custom code (AutoModel -> someone/repo--modeling_cont_transformer",
    ),
    "own classes for another model_type": (
        "config.json",
        {"model_type": "evil"},
        "auto_map names this package's classes for model_type 'evil'",
    ),
    "image processor auto_map": (
        "preprocessor_config.json",
        {"auto_map": {"AutoImageProcessor": "evil_mod.EvilProcessor"}},
        "auto_map names custom code (AutoImageProcessor -> evil_mod.EvilProcessor)",
    ),
}


@pytest.mark.parametrize("plant_name", list(PLANTS))
def test_tagger_from_pretrained_refuses_a_planted_folder(saved, tmp_path, no_prompt, plant_name):
    file, entries, expected = PLANTS[plant_name]
    folder, marker = plant(saved, tmp_path, file, entries)
    with pytest.raises(CustomCodeError, match=f"^{folder / file}: ") as refused:
        Tagger.from_pretrained(folder, device="cpu")
    assert expected in str(refused.value) and "\n" not in str(refused.value)
    assert isinstance(refused.value, ValueError)
    assert not marker.exists()


def _load_tagger(folder):
    from cont_transformer.tagging.evaluation import load_tagger

    load_tagger(folder)


def _load_tokenizer(folder):
    from cont_transformer.text.tokenization import load_tokenizer

    load_tokenizer(folder)


def _compression_load(folder):
    from cont_transformer.tools.compression import load_model

    load_model(folder)


def _fine_tuning_start(folder):
    from cont_transformer.tagging.arguments import TrainingArguments
    from cont_transformer.tagging.starts import tagger_start

    tagger_start(TrainingArguments(output_dir="unused", model_name_or_path=str(folder)))


def _tag_combinations(folder):
    from cont_transformer.tagging.combinations import add_tag_combinations

    add_tag_combinations(folder, "unused.conllu")


def _image_processor(folder):
    from image_models.family import load_preprocessor

    return load_preprocessor(folder)


LOADERS = [_load_tagger, _load_tokenizer, _compression_load, _fine_tuning_start, _tag_combinations]


@pytest.mark.parametrize("load", LOADERS, ids=lambda f: f.__name__.strip("_"))
def test_every_load_path_refuses_a_planted_folder(saved, tmp_path, no_prompt, load):
    folder, marker = plant(saved, tmp_path, "tokenizer_config.json", PLANTED_TOKENIZER)
    with pytest.raises(CustomCodeError, match="auto_map names custom code"):
        load(folder)
    assert not marker.exists()


def test_the_image_processor_load_refuses_a_planted_folder(saved, tmp_path, no_prompt):
    folder, marker = plant(
        saved, tmp_path, "preprocessor_config.json", {"auto_map": {"AutoImageProcessor": "evil_mod.EvilProcessor"}}
    )
    with pytest.raises(CustomCodeError, match="preprocessor_config.json: auto_map names custom code"):
        _image_processor(folder)
    assert not marker.exists()


# --- the package's own folders ----------------------------------------------------------------
def test_a_saved_tagger_with_its_own_auto_map_loads(saved, no_prompt):
    check_no_custom_code(saved)
    tagger = Tagger.from_pretrained(saved, device="cpu")
    assert [len(tags) for tags in tagger.predict([["the", "dog", "sat"]])] == [3]


def test_a_saved_ode_resnet_with_its_processor_passes(tmp_path, no_prompt):
    config = OdeResNetConfig(num_channels=1, stage_channels=[4, 6], stage_strides=[1, 2], num_labels=3, num_basis=3)
    model = OdeResNetForImageClassification(config)
    model.save_pretrained(tmp_path)
    OdeResNetImageProcessor().save_pretrained(tmp_path)
    saved_config = json.loads((tmp_path / "config.json").read_text())
    saved_config["auto_map"] = {
        **(saved_config.get("auto_map") or {}),
        "AutoConfig": class_reference(OdeResNetConfig),
        "AutoModel": class_reference(OdeResNetModel),
        "AutoModelForImageClassification": class_reference(OdeResNetForImageClassification),
        "AutoImageProcessor": class_reference(OdeResNetImageProcessor),
    }
    (tmp_path / "config.json").write_text(json.dumps(saved_config))
    check_no_custom_code(tmp_path)
    assert isinstance(_image_processor(tmp_path), OdeResNetImageProcessor)


def test_the_allow_list_is_the_package_registered_classes(monkeypatch):
    assert is_own_class("configuration_cont_transformer.ContTransformerConfig")
    assert is_own_class("image_processing_ode_resnet.OdeResNetImageProcessor")
    assert is_own_class("pipeline_cont_transformer.ContTransformerTaggingPipeline")
    assert is_own_class("modeling_cont_transformer.ContTransformerModel")
    assert not is_own_class("modeling_cont_transformer.ContTransformerNoSuchClass")
    assert not is_own_class("modeling_cont_transformer.torch")  # in the module, not a class of the package
    assert not is_own_class("modeling_cont_transformer.ContTransformerLMHead")  # a class, but no Auto class's
    assert not is_own_class("evil_mod.ContTransformerModel")
    assert not is_own_class("someone/repo--modeling_cont_transformer.ContTransformerModel")
    assert own_model_types() == {"cont_transformer", "ode_resnet"}
    # A class registered (as runtime/auto.py registers the package's) is allowed.
    monkeypatch.setattr(pretrained, "_OWN_CLASSES", dict(pretrained._OWN_CLASSES))
    new_task = type("ContTransformerForNewTask", (), {"__module__": modeling_cont_transformer.__name__})
    register_own_class(new_task)
    assert is_own_class("modeling_cont_transformer.ContTransformerForNewTask")
