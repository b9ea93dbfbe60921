"""The layers of docs/design.md §1: a module imports only from its own layer or below.

Statically, every import statement in the package (``ast``, function-level imports
included) points to its own layer or a lower one, and no tool imports an application (the
tools serve every model family through the registry, §9). Dynamically, in fresh
processes: importing the core, the models, the harnesses, the training scaffold or any
tool loads no application (``cont_transformer.tagging``, ``image_models``); importing the
core alone loads no transformers either, nor any module of the package above it (every
name of ``cont_transformer/__init__.py`` loads lazily); ``image_models.augmentation``
loads neither the training scaffold nor ``datasets``; and importing the package or any of
its modules registers both model kinds with the Auto classes (``cont_transformer.runtime.auto``):
at once when that import loads transformers, and when transformers is imported after the
core otherwise.

Each fresh process is forked from one server process (conftest's ``fresh``) that has imported
torch and the libraries under it and nothing of transformers, datasets or the package, which
it checks: a process per check, without each paying seconds to import torch.
"""

import ast
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("cont_transformer", "image_models")
APPLICATIONS = ("cont_transformer.tagging", "cont_transformer.language_modeling", "image_models")

# Lowest first. A module's layer is that of the longest prefix of its dotted name listed here.
MODELS = [
    "configuration_cont_transformer",
    "configuration_ode_resnet",
    "modeling_cont_transformer",
    "modeling_ode_resnet",
    "image_processing_ode_resnet",
    "word_representation",
    "transformer_rate",  # the rate the continuous transformer's ODE block integrates
    "card_texts",  # what the model cards say
    "config_record",  # the config fields a model's weights were saved with
    "tagger_files",  # a tagger's data beside config.json: labels, tag combinations, lemma lexicon
    "pretrained",
    "model_card",
    # What a saved tagger's pipeline shares with the tagging application:
    "word_encoding",  # words to token ids, each word whole
    "sentence_windows",  # windows over long sentences
    "lemmas",  # lemma edit scripts (learned, applied, chosen among) and the lemma lexicon
    "column_decoding",  # outputs to CoNLL-U columns
    "text_segmentation",  # raw text to sentences of words, for Tagger and the saved pipeline alike
    "learned_segmentation",  # a segmenter learned from a treebank, carried with the pipeline
    "processing_cont_transformer",  # the tagger's processor: text to tensors and back, the one inference step
    "pipeline_cont_transformer",  # the tagger's pipeline, saved with it for remote code
]
LAYERS = [
    ("core", ["checks", "basis", "integrators", "ode_block", "transform", "choices"]),
    ("models", MODELS),
    ("runtime", ["runtime"]),
    ("training scaffold", ["training"]),
    ("text", ["text"]),
    ("applications", ["tagging", "language_modeling", "image_models"]),
    ("tools", ["tools"]),
    ("benchmarks", ["benchmarks"]),
    # The package's __init__: the public face, every name lazy, and the Auto classes' registration.
    ("package face", [""]),
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


def _import_module_call(node: ast.AST) -> ast.Call | None:
    """``node`` if it calls ``import_module`` (``importlib.import_module`` or the name
    imported from importlib) or ``__import__``."""
    if not isinstance(node, ast.Call):
        return None
    called = node.func
    name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", None)
    return node if name in ("import_module", "__import__") else None


def _literal(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """``(line, absolute module)`` of every import in ``path``, relative ones resolved: import
    statements, and ``importlib.import_module`` calls with a literal module name (relative to
    ``__package__`` or ``__name__``)."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (call := _import_module_call(node)) is not None and (name := _literal(call.args[0] if call.args else None)):
            level = len(name) - len(name.lstrip("."))
            anchor = package[: len(package) - level + 1] if level else []
            found.append((node.lineno, ".".join([*anchor, *([name.lstrip(".")] if name.lstrip(".") else [])])))
        elif isinstance(node, ast.Import):
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


def import_graph() -> dict[str, set[str]]:
    """Each package module and the package modules it imports (function-level imports
    included; a name imported from a module counts as that module)."""
    modules = {module_name(path) for path in package_files()}
    graph = {}
    for path in package_files():
        targets = set()
        for _, imported in imported_modules(path):
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported:
                targets.add(imported)
        graph[module_name(path)] = targets - {module_name(path)}
    return graph


def test_no_import_circles():
    """No two modules reach each other through imports, at any level of the code (Tarjan's
    strongly connected components over the static import graph)."""
    graph = import_graph()
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert not circles, "\n".join(" <-> ".join(circle) for circle in circles)


def test_the_text_applications_never_import_each_other():
    """``tagging/`` and ``language_modeling/`` share only what lies below them (``text/``)."""
    siblings = ("cont_transformer.tagging", "cont_transformer.language_modeling")
    violations = [
        f"{path.relative_to(ROOT)}:{line} imports {imported}"
        for own, other in (siblings, siblings[::-1])
        for path in sorted((ROOT / Path(*own.split("."))).rglob("*.py"))
        for line, imported in imported_modules(path)
        if f"{imported}.".startswith(f"{other}.")
    ]
    assert not violations, "\n".join(violations)


def test_dynamic_imports_name_their_module():
    """Every ``import_module`` call of the library names its module literally (so the layer
    and circle checks above see it), except the package faces' lazy tables (``__init__.py``,
    the top of their layers)."""
    hidden = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in package_files()
        if path.name != "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if (call := _import_module_call(node)) is not None and not (call.args and _literal(call.args[0]))
    ]
    assert not hidden, "import_module of a module named at run time: " + ", ".join(hidden)


def test_the_checks_see_literal_import_module_calls(tmp_path, monkeypatch):
    """A module that imports another through ``importlib`` counts as importing it."""
    folder = tmp_path / "cont_transformer" / "tagging"
    folder.mkdir(parents=True)
    (folder / "probe.py").write_text(
        "import importlib\nfrom importlib import import_module\n"
        "def f():\n    importlib.import_module('cont_transformer.tools.cli')\n"
        "    import_module('.columns', __package__)\n    import_module('..basis', __package__)\n"
    )
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert {name for _, name in imported_modules(folder / "probe.py")} == {
        "importlib",
        "cont_transformer.tools.cli",
        "cont_transformer.tagging.columns",
        "cont_transformer.basis",
    }


def test_no_tool_imports_an_application():
    """``cont_transformer/tools/`` holds only what serves every model family: an application's
    own tools live in the application, and the benchmark cases in cont_transformer/benchmarks/."""
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
    "cont_transformer.runtime.measuring",
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
def loaded_by_import(fresh) -> dict[str, list[str]]:
    return json.loads(fresh(PROBE, *ENTRY_MODULES))


@pytest.mark.parametrize("module", ENTRY_MODULES)
def test_importing_a_lower_layer_loads_no_application(module, loaded_by_import):
    applications = [name for name in loaded_by_import[module] if name.startswith(APPLICATIONS)]
    assert not applications, f"import {module} loads {applications}"


def test_the_top_level_conveniences_load_on_first_use():
    import cont_transformer
    from cont_transformer.tagging.tag import Tagger, tag
    from cont_transformer.text.tokenization import build_tokenizer

    assert cont_transformer.tag is tag and cont_transformer.Tagger is Tagger
    assert cont_transformer.build_tokenizer is build_tokenizer
    assert {"tag", "Tagger", "build_tokenizer"} <= set(cont_transformer.__all__) <= set(dir(cont_transformer))
    assert isinstance(cont_transformer.__version__, str)
    with pytest.raises(AttributeError, match="no_such_name"):
        cont_transformer.no_such_name  # noqa: B018


CORE = [
    "cont_transformer.basis",
    "cont_transformer.integrators",
    "cont_transformer.ode_block",
    "cont_transformer.transform",
    "cont_transformer.runtime.compressed_copies",
]
# What importing the core may load of the package: the core, the package's lazy __init__ and
# the registration's watch for transformers (``auto``, which imports nothing of either).
CORE_LOADS = {
    "cont_transformer",
    "cont_transformer.runtime.auto",
    "cont_transformer.runtime",
    "cont_transformer.checks",
    "cont_transformer.choices",
    *CORE,
}
NOT_FOR_THE_CORE = (
    "transformers",
    "datasets",
    "cont_transformer.tagging",
    "cont_transformer.language_modeling",
    "cont_transformer.training",
    "cont_transformer.tools",
    "image_models",
)


def test_the_core_loads_no_transformers_and_nothing_above_it(fresh):
    loaded = json.loads(fresh(f"import json, sys\nimport {', '.join(CORE)}\nprint(json.dumps(sorted(sys.modules)))"))
    assert not [name for name in loaded if name.startswith(NOT_FOR_THE_CORE)]
    assert {name for name in loaded if name.split(".")[0] == "cont_transformer"} == CORE_LOADS


# Inference: tagging a text or a file and compressing a saved model.
INFERENCE = ["cont_transformer.tagging.tag", "cont_transformer.tagging.tag_files", "cont_transformer.tools.compression"]


def test_inference_loads_no_training_scaffold(fresh):
    """Loading and tagging with a saved model, or compressing one, imports nothing of
    ``cont_transformer/training/``: the file I/O it shares with training (``safe_files``,
    ``model_folders``) and ``compiling`` sit in ``runtime/``, below the scaffold."""
    loaded = json.loads(
        fresh(f"import json, sys\nimport {', '.join(INFERENCE)}\nprint(json.dumps(sorted(sys.modules)))")
    )
    assert set(INFERENCE) <= set(loaded)
    assert not [name for name in loaded if name.startswith("cont_transformer.training")]


def test_the_shared_file_io_sits_below_the_training_scaffold():
    training = next(rank for rank, (name, _) in enumerate(LAYERS) if name == "training scaffold")
    for module in ("safe_files", "model_folders", "compiling"):
        assert layer_of(f"cont_transformer.runtime.{module}") < training, module
    # The crash-safe writing imports nothing of the package: every layer may use it.
    assert not [
        name
        for _, name in imported_modules(ROOT / "cont_transformer" / "runtime" / "safe_files.py")
        if name.split(".")[0] in PACKAGES
    ]


def test_augmentation_loads_no_training_scaffold_and_no_datasets(fresh):
    loaded = json.loads(
        fresh("import json, sys\nimport image_models.augmentation\nprint(json.dumps(sorted(sys.modules)))")
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
        "import image_models.trainer",
        "import cont_transformer.basis\nimport transformers",  # the core first, transformers after it
        "import transformers\nimport cont_transformer.basis",  # transformers first
    ],
)
def test_importing_the_package_or_any_module_of_it_registers_the_models(imports, fresh):
    assert fresh(f"{imports}\n{REGISTERED}\nprint(registered())") == "True"


@pytest.mark.parametrize("module", ["cont_transformer.tools.compression", "image_models.trainer"])
def test_tools_and_applications_register_the_models(module, fresh):
    assert fresh(REGISTERED + f"import {module}\nprint(registered())") == "True"


WATCHING = "watching = lambda: any(type(f).__module__ == 'cont_transformer.runtime.auto' for f in sys.meta_path)\n"


def test_importing_the_core_alone_registers_nothing_and_imports_no_transformers(fresh):
    code = (
        f"import sys\nimport cont_transformer.basis\n{WATCHING}before = ('transformers' in sys.modules, watching())\n"
        "import transformers\nprint(*before, watching())"
    )
    # The watch for transformers waits on sys.meta_path, and leaves once it has registered.
    assert fresh(code) == "False True False"
