"""Hub folders of every saved kind: model cards, auto_map, remote code, pipelines."""

import builtins
import inspect
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
from huggingface_hub import ModelCard
from PIL import Image
from tiny import WORDS
from transformers import AutoModel, pipeline

from cont_transformer import (
    OdeResNetConfig,
    OdeResNetForImageClassification,
    OdeResNetImageProcessor,
    build_tokenizer,
    change_basis,
    set_num_steps,
    write_model_card,
)
from cont_transformer.model_card import Evaluation, is_generated_card, record_card_facts

# The tiny tagger (conftest.py) at K = 4, with the tokenizer's [PAD] and [ROOT] ids.
TAGGER = {"num_basis": 4, "pad_token_id": 0, "bos_token_id": 2}

SENTENCE = "the dog sat on a mat ."


def image_classifier() -> OdeResNetForImageClassification:
    torch.manual_seed(0)
    config = OdeResNetConfig.from_preset(
        "mnist-small",
        stage_channels=[4],
        num_basis=2,
        num_labels=3,
        id2label={0: "zero", 1: "one", 2: "two"},
        label2id={"zero": 0, "one": 1, "two": 2},
    )
    return OdeResNetForImageClassification(config).eval()


# --- model cards ---------------------------------------------------------------------


def test_card_metadata_parses_and_its_results_are_what_was_passed(tmp_path, tiny_tagger):
    model = tiny_tagger(**TAGGER)
    results = [
        Evaluation("UD English-GUM (XPOS)", "dev", 0.9296, "universal_dependencies", "en_gum"),
        Evaluation("UD English-GUM (XPOS)", "test", 0.9311, "universal_dependencies", "en_gum"),
    ]
    path = write_model_card(
        model,
        tmp_path,
        {"training steps": 7000},
        language="en",
        license="cc-by-sa-4.0",
        datasets="universal_dependencies",
        results=results,
        model_name="gum-k4",
    )
    card = ModelCard.load(path)
    data = card.data
    assert (data.language, data.license, data.datasets) == ("en", "cc-by-sa-4.0", ["universal_dependencies"])
    assert data.library_name == "transformers" and data.pipeline_tag == "token-classification"
    assert data.model_name == "gum-k4" and "cont-transformer" in data.tags
    measured = [
        (r.task_type, r.dataset_type, r.dataset_name, r.dataset_config, r.dataset_split, r.metric_type, r.metric_value)
        for r in data.eval_results
    ]
    assert measured == [
        ("token-classification", r.dataset_id, r.dataset_name, r.dataset_config, r.split, "accuracy", r.accuracy)
        for r in results
    ]
    assert "| training steps | 7,000 |" in card.text and "| UD English-GUM (XPOS) | test | 93.11% |" in card.text
    assert is_generated_card(path)
    with pytest.raises(ValueError, match="base_model_relation"):
        write_model_card(model, tmp_path, base_model="me/source", base_model_relation="distilled")


def test_a_card_needs_no_model_family(tmp_path, monkeypatch, tiny_tagger):
    # A run from a source checkout (no entry points) or remote code without the package
    # knows no family: the card's text is the model class's, and its results make a
    # model-index the Hub parses (an entry without a task type is refused).
    from cont_transformer.runtime import families

    monkeypatch.setattr(families, "FAMILIES", {})
    monkeypatch.setattr(families, "entry_points", lambda group: [])
    for model, task in ((tiny_tagger(**TAGGER), "token-classification"), (image_classifier(), "image-classification")):
        path = write_model_card(model, tmp_path, results=[Evaluation("data", "validation", 0.5)], overwrite=True)
        data = ModelCard.load(path, ignore_metadata_errors=False).data
        assert [(r.task_type, r.metric_value) for r in data.eval_results] == [(task, 0.5)]
        assert data.pipeline_tag == task


def test_the_facts_a_config_keeps_make_every_save_write_the_same_card(tmp_path, tiny_tagger):
    model = tiny_tagger(**TAGGER)
    results = [Evaluation("UD English-GUM", "dev", 0.93, "universal_dependencies", "en_gum", "UPOS accuracy")]
    record_card_facts(
        model.config,
        language="en",
        license="cc-by-sa-4.0",
        datasets="universal_dependencies",
        results=results,
        model_name="gum",
        extra={"training data": "UD English-GUM, 100 sentences"},
    )
    model.save_pretrained(tmp_path / "first")
    reloaded = type(model).from_pretrained(tmp_path / "first")
    reloaded.save_pretrained(tmp_path / "again")  # a plain re-save, knowing nothing of the facts
    first, again = ((tmp_path / name / "README.md").read_text() for name in ("first", "again"))
    assert first == again
    data = ModelCard.load(tmp_path / "again" / "README.md", ignore_metadata_errors=False).data
    assert (data.language, data.license, data.datasets) == ("en", "cc-by-sa-4.0", ["universal_dependencies"])
    assert [(r.metric_name, r.metric_value, r.dataset_split) for r in data.eval_results] == [
        ("UPOS accuracy", 0.93, "dev")
    ]
    assert "| training data | UD English-GUM, 100 sentences |" in again
    assert "`text_segmentation.py`, the rules for language `en`" in again  # what splits raw text
    with pytest.raises(ValueError, match="^tags: not a fact"):
        record_card_facts(model.config, tags=["x"])


def test_saving_a_tagger_needs_nothing_above_the_package_root(tmp_path, tiny_tagger, fresh):
    model = tiny_tagger(**TAGGER)
    model.config.language = "en"
    model.save_pretrained(tmp_path / "source")
    code = (
        "import json, sys\n"
        "from transformers import AutoModelForTokenClassification\n"
        "import cont_transformer\n"
        f"model = AutoModelForTokenClassification.from_pretrained({str(tmp_path / 'source')!r})\n"
        f"model.save_pretrained({str(tmp_path / 'saved')!r})\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('cont_transformer'))))\n"
    )
    loaded = json.loads(fresh(code))  # a process of its own: what this one imported does not count
    above = ("tagging", "language_modeling", "training", "tools", "families")
    assert not [name for name in loaded if name.split(".")[1:2] and name.split(".")[1] in above]
    card = (tmp_path / "saved" / "README.md").read_text()
    assert card.startswith("---\nlanguage: en\n") and "pipeline_tag: token-classification" in card


@pytest.mark.slow
def test_the_trainers_register_their_own_families():
    code = (
        "import cont_transformer.runtime.families as f; f.entry_points = lambda group: []\n"  # as from a source checkout
        "import image_models.trainer, cont_transformer.tagging.trainer\n"
        "print(sorted(f.FAMILIES))"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.split("\n")[0] == "['cont_transformer', 'ode_resnet']"


def test_a_card_the_user_wrote_or_edited_is_kept(tmp_path, tiny_tagger):
    model = tiny_tagger(**TAGGER)
    readme = tmp_path / "README.md"
    model.save_pretrained(tmp_path)
    assert "K = 4" in readme.read_text()
    change_basis(model, num_basis=2)
    model.save_pretrained(tmp_path)  # our own card, untouched: rewritten for the new K
    assert "K = 2" in readme.read_text() and is_generated_card(readme)

    readme.write_text(readme.read_text().replace("K = 2", "K = 2, my notes"))  # edited: theirs now
    assert not is_generated_card(readme)
    edited = readme.read_text()
    model.save_pretrained(tmp_path)
    assert write_model_card(model, tmp_path) is None and readme.read_text() == edited
    readme.write_text("# My tagger\n")
    model.save_pretrained(tmp_path)
    assert readme.read_text() == "# My tagger\n"
    model.save_pretrained(tmp_path, regenerate_model_card=True)
    assert is_generated_card(readme) and "K = 2" in readme.read_text()


def test_image_classifier_folder_has_code_auto_map_and_card(tmp_path):
    model = image_classifier()
    model.save_pretrained(tmp_path)
    OdeResNetImageProcessor.for_dataset("mnist").save_pretrained(tmp_path)
    auto_map = json.loads((tmp_path / "config.json").read_text())["auto_map"]
    assert auto_map == {
        "AutoConfig": "configuration_ode_resnet.OdeResNetConfig",
        "AutoModel": "modeling_ode_resnet.OdeResNetModel",
        "AutoModelForImageClassification": "modeling_ode_resnet.OdeResNetForImageClassification",
        "AutoImageProcessor": "image_processing_ode_resnet.OdeResNetImageProcessor",
    }
    for name in (
        "modeling_ode_resnet.py",
        "configuration_ode_resnet.py",
        "image_processing_ode_resnet.py",
        "ode_block.py",
        "basis.py",
        "integrators.py",
        "pretrained.py",
        "model_card.py",
    ):
        assert (tmp_path / name).is_file(), name
    processor_config = json.loads((tmp_path / "preprocessor_config.json").read_text())
    assert "auto_map" not in processor_config and processor_config["num_channels"] == 1
    card = ModelCard.load(tmp_path / "README.md")
    assert card.data.pipeline_tag == "image-classification"
    assert "| K (num_basis) | 2 |" in card.text and "| input channels | 1 |" in card.text


# --- loading everywhere ---------------------------------------------------------------


@pytest.fixture(scope="module")
def saved_kinds(tmp_path_factory, tiny_tagger):
    """A tagger, a compressed tagger and an image classifier, each saved with its
    tokenizer or processor, and what each computes (here, with the package)."""
    root = tmp_path_factory.mktemp("kinds")
    tokenizer = build_tokenizer(WORDS)
    model = tiny_tagger(**TAGGER)
    compressed = tiny_tagger(**TAGGER)
    change_basis(compressed, "piecewise_linear", 3)
    set_num_steps(compressed, 2)
    for name, m in (("tagger", model), ("compressed", compressed)):
        m.save_pretrained(root / name)
        tokenizer.save_pretrained(root / name)
    image_model = image_classifier()
    image_model.save_pretrained(root / "image")
    OdeResNetImageProcessor.for_dataset("mnist").save_pretrained(root / "image")
    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 256, (10, 10), dtype=np.uint8)).save(root / "digit.png")
    expected = {}
    with torch.no_grad():
        for name, m in (("tagger", model), ("compressed", compressed)):
            input_ids = tokenizer(SENTENCE.split(), is_split_into_words=True, return_tensors="pt")["input_ids"]
            expected[name] = {
                "input": input_ids.tolist(),
                "hidden": m.cont_transformer(input_ids).last_hidden_state.tolist(),
                "logits": m(input_ids).logits.tolist(),
            }
        pixels = OdeResNetImageProcessor.for_dataset("mnist")(Image.open(root / "digit.png"), return_tensors="pt")
        expected["image"] = {
            "input": pixels["pixel_values"].tolist(),
            "hidden": image_model.ode_resnet(pixels["pixel_values"]).pooler_output.tolist(),
            "logits": image_model(pixels["pixel_values"]).logits.tolist(),
        }
    return root, expected


def _pipeline_outputs(root, **kwargs) -> dict:
    tagged = pipeline("token-classification", model=str(root / "tagger"), **kwargs)(SENTENCE)
    shortened = pipeline("token-classification", model=str(root / "compressed"), **kwargs)(SENTENCE)
    classified = pipeline("image-classification", model=str(root / "image"), **kwargs)(str(root / "digit.png"))
    return {
        "tagger": [e["entity"] for e in tagged],
        "compressed": [e["entity"] for e in shortened],
        "image": [[c["label"], round(c["score"], 5)] for c in classified],
    }


# Run in a fresh process where the package cannot be imported; the pipelines are
# called by the same function as above.
REMOTE = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    sys.modules["cont_transformer"] = None  # importing the project now fails
    sys.modules["image_models"] = None
    import torch
    from transformers import (AutoModel, AutoModelForImageClassification,
                              AutoModelForTokenClassification, pipeline)

    root = sys.argv[1]
    SENTENCE = sys.argv[2]
    expected = json.load(open(f"{root}/expected.json"))
    out = {"pipelines": _pipeline_outputs(Path(root), trust_remote_code=True)}
    for name, task in (("tagger", AutoModelForTokenClassification), ("compressed", AutoModelForTokenClassification),
                       ("image", AutoModelForImageClassification)):
        inputs = torch.tensor(expected[name]["input"])
        base = AutoModel.from_pretrained(f"{root}/{name}", trust_remote_code=True)
        head = task.from_pretrained(f"{root}/{name}", trust_remote_code=True)
        with torch.no_grad():
            features = base(inputs)
            hidden = features.pooler_output if name == "image" else features.last_hidden_state
            out[name] = {"modules": [type(base).__module__, type(head).__module__],
                         "hidden": hidden.tolist(), "logits": head(inputs).logits.tolist()}
    print(json.dumps(out))
    """
).replace("\n\nroot = ", "\n\n" + inspect.getsource(_pipeline_outputs) + "\n\nroot = ", 1)


@pytest.mark.slow
def test_every_kind_loads_as_remote_code_without_the_package(saved_kinds, monkeypatch):
    root, expected = saved_kinds
    # With the package imported, no pipeline asks whether to run the folder's code.
    asked = []
    monkeypatch.setattr(builtins, "input", lambda prompt="": asked.append(prompt) or "n")
    local = _pipeline_outputs(root)
    assert asked == []
    assert type(AutoModel.from_pretrained(root / "image")).__module__ == "cont_transformer.modeling_ode_resnet"

    assert json.loads((root / "compressed" / "config.json").read_text())["auto_map"] == {
        "AutoConfig": "configuration_cont_transformer.ContTransformerConfig",
        "AutoModel": "modeling_cont_transformer.ContTransformerModel",
        "AutoModelForTokenClassification": "modeling_cont_transformer.ContTransformerForTokenClassification",
    }
    (root / "expected.json").write_text(json.dumps(expected))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(root / "hf_home")}
    env.pop("PYTHONPATH", None)
    result = subprocess.run(
        [sys.executable, "-I", "-c", REMOTE, str(root), SENTENCE],
        check=False,
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    remote = json.loads(result.stdout.strip().splitlines()[-1])
    assert remote["pipelines"] == local
    for name in ("tagger", "compressed", "image"):
        assert all(m.startswith("transformers_modules.") for m in remote[name]["modules"]), name
        for key in ("hidden", "logits"):
            torch.testing.assert_close(
                torch.tensor(remote[name][key]), torch.tensor(expected[name][key]), atol=1e-6, rtol=0
            )
