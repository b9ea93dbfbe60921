"""The layers of docs/design.md §1: a module imports only from its own layer or below.

Statically, every import statement in the package (``ast``, function-level imports
included) points to its own layer or a lower one, and no tool imports an application (the
tools serve every model family through the registry, §9). Dynamically, in fresh
processes: importing the core, the models, the harnesses, the training scaffold or any
tool loads no application (``cont_transformer.tagging``, ``image_models``); importing the
core alone loads no transformers either, nor any module of the package above it (every
name of ``cont_transformer/__init__.py`` loads lazily); ``image_models.augmentation``
loads neither the training scaffold nor ``datasets``; and importing the package or any of
its modules registers both model kinds with the Auto classes (``cont_transformer.auto``):
at once when that import loads transformers, and when transformers is imported after the
core otherwise.
"""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("cont_transformer", "image_models")
APPLICATIONS = ("cont_transformer.tagging", "cont_transformer.language_modeling", "image_models")

# Lowest first. A module's layer is that of the longest prefix of its dotted name listed here.
MODELS = [
    "",  # the package's __init__: the public API, every name lazy
    "auto",  # the registration with the Auto classes
    "configuration_cont_transformer",
    "configuration_ode_resnet",
    "modeling_cont_transformer",
    "modeling_ode_resnet",
    "image_processing_ode_resnet",
    "word_representation",
    "pretrained",
    "model_card",
    "safe_files",  # crash-safe files and folders: manifests, locks, staged folders (imports nothing of the package)
    "model_folders",  # model and run folders as the package reads them, the Hub
    "compiling",  # torch.compile for training and inference
    "word_tagging",  # the decoding a saved tagger's pipeline shares with the tagging application
    "text_segmentation",  # raw text to sentences of words, for Tagger and the saved pipeline alike
    "pipeline_cont_transformer",  # the tagger's pipeline, saved with it for remote code
]
LAYERS = [
    ("core", ["basis", "integrators", "ode_block", "transform", "choices"]),
    ("model families", ["families"]),
    ("models", MODELS),
    ("training scaffold and shared mechanisms", ["training", "compression", "measuring"]),
    ("applications", ["tagging", "language_modeling", "image_models"]),
    ("tools", ["tools"]),
]
RANK = {
    ("image_models" if name == "image_models" else f"cont_transformer.{name}".rstrip(".")): rank
    for rank, (_, names) in enumerate(LAYERS)
    for name in names
}


def layer_of(module: str) -> int | None:
    """The rank of ``module``'s layer, None outside the package (torch, transformers, ...)."""
    if module.split(".")[0] not in PACKAGES:
        return None
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in RANK and (prefix != "cont_transformer" or end == len(parts)):
            return RANK[prefix]
    raise AssertionError(f"{module}: not in a layer of tests/test_layers.py (add it to LAYERS)")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """``(line, absolute module)`` of every import in ``path``, relative ones resolved."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # ``from . import x`` may name a submodule: judge each name as one.
            found += [(node.lineno, f"{base}.{alias.name}" if not node.module else base) for alias in node.names]
    return found


def package_files() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def test_every_module_has_a_layer():
    for path in package_files():
        layer_of(module_name(path))


def test_no_module_imports_a_higher_layer():
    violations = []
    for path in package_files():
        own = layer_of(module_name(path))
        for line, imported in imported_modules(path):
            target = layer_of(imported)
            if target is not None and target > own:
                violations.append(
                    f"{path.relative_to(ROOT)}:{line} ({LAYERS[own][0]}) imports {imported} ({LAYERS[target][0]})"
                )
    assert not violations, "\n".join(violations)


def test_no_module_of_the_package_root_forms_an_import_circle():
    """Among the models layer's modules (what a saved folder carries), no chain of imports
    (function-level ones included) leads back to the module it starts from."""
    models = RANK["cont_transformer.auto"]
    below = {module_name(path) for path in package_files() if layer_of(module_name(path)) == models}
    graph = {
        module: {imported for _, imported in imported_modules(ROOT / (module.replace(".", "/") + ".py"))} & below
        for module in below
        if module != "cont_transformer"
    }

    def circle(start: str) -> list[str] | None:
        stack = [(start, [start])]
        seen = set()
        while stack:
            module, path = stack.pop()
            for target in sorted(graph.get(module, ())):
                if target == start:
                    return [*path, start]
                if target not in seen:
                    seen.add(target)
                    stack.append((target, [*path, target]))
        return None

    circles = [" -> ".join(found) for module in sorted(graph) if (found := circle(module))]
    assert not circles, "\n".join(circles)


def test_no_tool_imports_an_application():
    """``cont_transformer/tools/`` holds only what serves every model family: an application's
    own tools (its benchmark cases, its baselines) live in the application."""
    applications = tuple(f"{name}." for name in APPLICATIONS)
    violations = [
        f"{path.relative_to(ROOT)}:{line} imports {imported}"
        for path in sorted((ROOT / "cont_transformer" / "tools").rglob("*.py"))
        for line, imported in imported_modules(path)
        if f"{imported}.".startswith(applications)
    ]
    assert not violations, "\n".join(violations)


# Lowest first: a module that loads an application is reported before those above it.
ENTRY_MODULES = [
    "cont_transformer",
    "cont_transformer.basis",
    "cont_transformer.integrators",
    "cont_transformer.ode_block",
    "cont_transformer.transform",
    "cont_transformer.modeling_cont_transformer",
    "cont_transformer.modeling_ode_resnet",
    "cont_transformer.measuring",
    "cont_transformer.training.scaffold",
    *sorted(f"cont_transformer.tools.{path.stem}" for path in (ROOT / "cont_transformer" / "tools").glob("[!_]*.py")),
]

# One fresh process imports the modules in order and records the modules each import
# added (one process per module would cost the suite seconds of torch imports each).
PROBE = """
import importlib, json, sys
loaded = {}
for name in sys.argv[1:]:
    before = set(sys.modules)
    importlib.import_module(name)
    loaded[name] = sorted(set(sys.modules) - before)
print(json.dumps(loaded))
"""


@pytest.fixture(scope="module")
def loaded_by_import() -> dict[str, list[str]]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *ENTRY_MODULES],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


@pytest.mark.parametrize("module", ENTRY_MODULES)
def test_importing_a_lower_layer_loads_no_application(module, loaded_by_import):
    applications = [name for name in loaded_by_import[module] if name.startswith(APPLICATIONS)]
    assert not applications, f"import {module} loads {applications}"


def test_the_top_level_conveniences_load_on_first_use():
    import cont_transformer
    from cont_transformer.tagging.tag import Tagger, tag
    from cont_transformer.tagging.tokenization import build_tokenizer

    assert cont_transformer.tag is tag and cont_transformer.Tagger is Tagger
    assert cont_transformer.build_tokenizer is build_tokenizer
    assert {"tag", "Tagger", "build_tokenizer"} <= set(cont_transformer.__all__) <= set(dir(cont_transformer))
    assert isinstance(cont_transformer.__version__, str)
    with pytest.raises(AttributeError, match="no_such_name"):
        cont_transformer.no_such_name  # noqa: B018


def run_fresh(code: str) -> str:
    """The last line ``code`` prints, run by a fresh interpreter in the source tree."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    result = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()[-1]


CORE = [
    "cont_transformer.basis",
    "cont_transformer.integrators",
    "cont_transformer.ode_block",
    "cont_transformer.transform",
    "cont_transformer.compression",
]
# What importing the core may load of the package: the core, the package's lazy __init__ and
# the registration's watch for transformers (``auto``, which imports nothing of either).
CORE_LOADS = {"cont_transformer", "cont_transformer.auto", "cont_transformer.choices", *CORE}
NOT_FOR_THE_CORE = (
    "transformers",
    "datasets",
    "cont_transformer.tagging",
    "cont_transformer.language_modeling",
    "cont_transformer.training",
    "cont_transformer.tools",
    "image_models",
)


def test_the_core_loads_no_transformers_and_nothing_above_it():
    loaded = json.loads(
        run_fresh(f"import json, sys\nimport {', '.join(CORE)}\nprint(json.dumps(sorted(sys.modules)))")
    )
    assert not [name for name in loaded if name.startswith(NOT_FOR_THE_CORE)]
    assert {name for name in loaded if name.split(".")[0] == "cont_transformer"} == CORE_LOADS


# Inference: tagging a text or a file and compressing a saved model.
INFERENCE = ["cont_transformer.tagging.tag", "cont_transformer.tagging.tag_files", "cont_transformer.tools.compression"]


def test_inference_loads_no_training_scaffold():
    """Loading and tagging with a saved model, or compressing one, imports nothing of
    ``cont_transformer/training/``: the file I/O it shares with training (``safe_files``,
    ``model_folders``) and ``compiling`` sit at the models layer."""
    loaded = json.loads(
        run_fresh(f"import json, sys\nimport {', '.join(INFERENCE)}\nprint(json.dumps(sorted(sys.modules)))")
    )
    assert set(INFERENCE) <= set(loaded)
    assert not [name for name in loaded if name.startswith("cont_transformer.training")]


def test_the_shared_file_io_sits_at_the_models_layer():
    models = next(rank for rank, (name, _) in enumerate(LAYERS) if name == "models")
    for module in ("cont_transformer.safe_files", "cont_transformer.model_folders", "cont_transformer.compiling"):
        assert layer_of(module) <= models, module
    # The crash-safe writing imports nothing of the package: every layer may use it.
    assert not [
        name
        for _, name in imported_modules(ROOT / "cont_transformer" / "safe_files.py")
        if name.split(".")[0] in PACKAGES
    ]


def test_augmentation_loads_no_training_scaffold_and_no_datasets():
    loaded = json.loads(
        run_fresh("import json, sys\nimport image_models.augmentation\nprint(json.dumps(sorted(sys.modules)))")
    )
    assert not [name for name in loaded if name.startswith(("cont_transformer.training", "datasets"))]


# Whether both kinds are registered, with the Auto classes and for remote code.
REGISTERED = """
from transformers import (AutoConfig, AutoModel, AutoModelForImageClassification, AutoModelForMaskedLM,
                          AutoModelForTokenClassification)
from transformers.models.auto.configuration_auto import CONFIG_MAPPING
from transformers.models.auto.image_processing_auto import IMAGE_PROCESSOR_MAPPING
def registered():
    if "cont_transformer" not in CONFIG_MAPPING and "ode_resnet" not in CONFIG_MAPPING:
        return False
    transformer, resnet = AutoConfig.for_model("cont_transformer"), AutoConfig.for_model("ode_resnet")
    from cont_transformer.modeling_cont_transformer import (ContTransformerForMaskedLM,
        ContTransformerForTokenClassification, ContTransformerModel)
    from cont_transformer.modeling_ode_resnet import OdeResNetForImageClassification, OdeResNetModel
    from cont_transformer.image_processing_ode_resnet import OdeResNetImageProcessor
    assert type(AutoModelForMaskedLM.from_config(transformer)) is ContTransformerForMaskedLM
    assert type(AutoModelForTokenClassification.from_config(transformer)) is ContTransformerForTokenClassification
    assert type(AutoModel.from_config(transformer)) is ContTransformerModel
    assert type(AutoModelForImageClassification.from_config(resnet)) is OdeResNetForImageClassification
    assert type(AutoModel.from_config(resnet)) is OdeResNetModel
    assert IMAGE_PROCESSOR_MAPPING[type(resnet)]["pil"] is OdeResNetImageProcessor
    assert ContTransformerModel._auto_class == OdeResNetModel._auto_class == "AutoModel"
    assert ContTransformerForMaskedLM._auto_class == "AutoModelForMaskedLM"
    assert ContTransformerForTokenClassification._auto_class == "AutoModelForTokenClassification"
    assert type(transformer)._auto_class == type(resnet)._auto_class == "AutoConfig"
    assert OdeResNetForImageClassification._auto_class == "AutoModelForImageClassification"
    return True
"""


@pytest.mark.parametrize(
    "imports",
    [
        "import cont_transformer",
        "import cont_transformer.configuration_cont_transformer",
        "import cont_transformer.configuration_ode_resnet",
        "import cont_transformer.tools.compression",
        "import image_models.training",
        "import cont_transformer.basis\nimport transformers",  # the core first, transformers after it
        "import transformers\nimport cont_transformer.basis",  # transformers first
    ],
)
def test_importing_the_package_or_any_module_of_it_registers_the_models(imports):
    assert run_fresh(f"{imports}\n{REGISTERED}\nprint(registered())") == "True"


WATCHING = "watching = lambda: any(type(f).__module__ == 'cont_transformer.auto' for f in sys.meta_path)\n"


def test_importing_the_core_alone_registers_nothing_and_imports_no_transformers():
    code = (
        f"import sys\nimport cont_transformer.basis\n{WATCHING}before = ('transformers' in sys.modules, watching())\n"
        "import transformers\nprint(*before, watching())"
    )
    # The watch for transformers waits on sys.meta_path, and leaves once it has registered.
    assert run_fresh(code) == "False True False"
