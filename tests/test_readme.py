"""The README is a user's door: its ```bash and ```python blocks, in order, run on a fresh
checkout's files.

* The quickstart's block (the sample recipe, ``tag.py``, ``compress.py``), then the Python
  blocks on the model it trained, run for real in a temporary folder holding links to
  ``scripts/`` and ``recipes/``, so the checkout stays clean; the figures and outputs the
  README quotes next to them are compared with what they produce.
* The long commands (those reading ``UD_DIR`` or ``../shared/data``, training word
  vectors, the English and German recipes, pretraining, the GPU's) are not run: each is
  parsed as its script would parse it, without running (the recipe through
  ``read_recipe``, the flags through the script's own parser), and the folder its comment
  names (``-> runs/X``) is the one the recipe writes.
* The setup lines (``pip install``, ``export``, the suite's own ``pytest``) are not run; the
  extras they name exist in pyproject.toml.
"""

import ast
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from cont_transformer.language_modeling.arguments import PretrainingArguments
from cont_transformer.tagging.arguments import TrainingArguments
from cont_transformer.training.recipes import RECIPE_SUFFIX, argument_parser, read_recipe
from image_models.arguments import ImageTrainingArguments

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"^```(bash|python)\n(.*?)^```", re.MULTILINE | re.DOTALL)
SETUP = re.compile(r"^(pip install|export |pytest|bash \.ci/)")
LONG = re.compile(r"UD_DIR|\.\./shared/data|train_word_vectors\.py|pretrain\.py|recipes/(en|de)_")
# The scripts whose arguments are a dataclass (parse_arguments) and their extra flags' source.
DATACLASS_SCRIPTS = {
    "train_pos.py": (TrainingArguments, "_evaluation_flags"),
    "pretrain.py": (PretrainingArguments, None),
    "train_image.py": (ImageTrainingArguments, None),
}


def blocks() -> list[tuple[str, str]]:
    """The README's ```bash and ```python blocks, in order: (language, text)."""
    return [(match[1], match[2]) for match in BLOCK.finditer(README)]


def commands(text: str) -> list[str]:
    """A bash block's commands: continuation lines joined, blank lines left out."""
    return [line.strip() for line in text.replace("\\\n", " ").splitlines() if line.strip()]


def kind_of(text: str) -> str:
    """``setup``, ``long`` or ``quick`` (run for real) for a bash block."""
    lines = commands(text)
    if all(SETUP.match(line) for line in lines):
        return "setup"
    return "long" if any(LONG.search(line) for line in lines) else "quick"


def long_commands() -> list[str]:
    return [
        line
        for language, text in blocks()
        if language == "bash" and kind_of(text) == "long"
        for line in commands(text)
        if not SETUP.match(line)
    ]


def load_script(name: str):
    spec = importlib.util.spec_from_file_location(f"readme_{Path(name).stem}", ROOT / "scripts" / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_has_a_quickstart_and_long_commands():
    kinds = [kind_of(text) for language, text in blocks() if language == "bash"]
    assert kinds.count("quick") == 1 and "long" in kinds and "setup" in kinds
    assert sum(language == "python" for language, _ in blocks()) >= 2


@pytest.mark.parametrize("line", long_commands(), ids=lambda line: " ".join(shlex.split(line, comments=True)[-2:]))
def test_a_long_command_parses_without_running(line):
    """The script's own parser takes every flag on the line, and its recipe loads; the
    folder the comment names is the one it writes."""
    words = shlex.split(line, comments=True)
    while words[0] in ("accelerate", "launch", "python"):
        words.pop(0)
    script, argv = Path(words[0]).name, words[1:]
    assert (ROOT / "scripts" / script).is_file(), line
    module = load_script(script)
    written = None
    if script in DATACLASS_SCRIPTS:
        kind, extra = DATACLASS_SCRIPTS[script]
        recipe = {}
        if argv and argv[0].endswith(RECIPE_SUFFIX):
            recipe = read_recipe(ROOT / argv.pop(0), kind)  # the recipe's keys and values, checked
        parser = argument_parser(kind)
        if extra:
            getattr(module, extra)(parser)
        flags = vars(parser.parse_args(argv))  # argparse only: no data or model is read
        written = flags["output_dir"] if "--output-dir" in argv else recipe.get("output_dir")
    else:
        written = module.parse_args(argv).output_dir  # the script's argparse, which runs nothing
    target = re.search(r"-> (runs/[\w.-]+)", line)
    if target:
        assert written == target[1], line


def test_the_setup_lines_name_real_extras():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    named = set(re.findall(r"\.\[(\w+)\]", "\n".join(text for language, text in blocks() if language == "bash")))
    named |= set(re.findall(r'"\.\[(\w+)\]"', README))
    assert named and named <= set(extras)


def as_session(code: str) -> str:
    """``code`` with each top-level expression's value printed (repr), as a Python session
    shows it, so the outputs the README quotes can be compared."""
    tree = ast.parse(code)
    for index, node in enumerate(tree.body):
        if isinstance(node, ast.Expr) and not (
            isinstance(node.value, ast.Call) and getattr(node.value.func, "id", None) == "print"
        ):
            call = ast.Call(
                ast.Name("print", ast.Load()), [ast.Call(ast.Name("repr", ast.Load()), [node.value], [])], []
            )
            tree.body[index] = ast.Expr(call)
    return ast.unparse(ast.fix_missing_locations(tree))


def run(argv: list[str], cwd: Path, env: dict) -> str:
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert result.returncode == 0, f"{argv[-1][:200]}\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    return result.stdout


@pytest.mark.slow
def test_the_quickstart_and_the_python_blocks_run_in_order(tmp_path):
    for name in ("scripts", "recipes"):
        (tmp_path / name).symlink_to(ROOT / name)
    bin_dir = str(Path(sys.executable).parent)  # `python` and `accelerate` of this interpreter
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",  # nothing from the Hub: the README's models are local folders
    }
    before = sorted(path.name for path in ROOT.iterdir())
    outputs = []
    for language, text in blocks():
        if language == "bash" and kind_of(text) == "quick":
            outputs.append(run(["bash", "-euo", "pipefail", "-c", text], tmp_path, env))
        elif language == "python":
            outputs.append(run([sys.executable, "-c", as_session(text)], tmp_path, env))
    quickstart, stanza_shape, pipeline_block, processor_block = outputs

    # The training run: the figures the README gives next to its command.
    metrics = json.loads((tmp_path / "runs" / "pos" / "metrics.json").read_text())
    xpos, baseline = (float(x) for x in re.search(r"dev XPOS ([\d.]+)% against ([\d.]+)%", README).groups())
    assert abs(100 * metrics["best"]["xpos"] - xpos) < 1.0
    assert abs(100 * metrics["baseline_accuracy"] - baseline) < 0.1
    assert (tmp_path / "runs" / "pos" / "best" / "config.json").is_file()
    # tag.py: CoNLL-U of both sentences, the multiword token split.
    assert "# text = Tom didn't see it!" in quickstart and "2-3\tdidn't" in quickstart
    # compress.py: K and N_T halved, both models scored on the sample's dev split.
    assert "accuracy –" not in quickstart and quickstart.count("accuracy 9") == 2
    compressed = json.loads((tmp_path / "runs" / "pos-k4" / "config.json").read_text())
    assert (compressed["num_basis"], compressed["num_steps"]) == (4, 4)
    # The stanza-shaped block: the words the README's comments name; the CoNLL-U it wrote reads back.
    assert "['did', \"n't\"]" in stanza_shape and "Tom didn't see it!" in stanza_shape
    assert (tmp_path / "tagged.conllu").is_file()
    # The pipeline block: its first entry as the README shows it.
    comment = re.search(r"^# (\[\{'entity': 'NNP'.*?\}), \.\.\.\]$", re.sub(r"\n#   ", " ", README), re.MULTILINE)[1]
    shown, given = ast.literal_eval(comment + "]")[0], ast.literal_eval(pipeline_block.strip())[0]
    assert {**given, "score": round(given["score"], 3)} == shown  # the score as the README rounds it
    # The processor block: every column of the words, decoded.
    assert all(f"'{column}': [" in processor_block for column in ("lemma", "upos", "xpos", "feats"))
    assert sorted(path.name for path in ROOT.iterdir()) == before  # the checkout stays clean
