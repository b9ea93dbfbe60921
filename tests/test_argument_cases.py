"""Arguments that could run silently wrong: --max-steps wins over
--num-train-epochs, contradictory column flags, a resume to fewer steps than done, JSON booleans
where numbers belong, image labels outside a data set's classes; each refused in one line naming
the flag, key or file, with a non-zero exit."""

import gzip
import json
import pickle

import numpy as np
import pytest
from hostile import load_script, one_error_line, toy_trainer

from cont_transformer.runtime.safe_files import OutputFolderError, release_output_folder
from cont_transformer.tagging.arguments import TrainingArguments
from cont_transformer.tools.cli import run_cli
from cont_transformer.training.recipes import parse_arguments
from image_models.data import load_image_dataset

TINY = ["--hidden-size", "16", "--intermediate-size", "16", "--char-hidden-size", "8", "--num-basis", "2"]
TINY += ["--refine-steps", "none", "--warmup-steps", "0"]


def refused(main, argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        run_cli(main, argv)
    assert exit_info.value.code == 2
    return one_error_line(capsys)


def toy_argv(tmp_path, *flags):
    """test_scaffold's toy run as flags (64 examples, batches of 16: 4 steps an epoch)."""
    toy = {"output-dir": tmp_path / "run", "batch-size": 16, "eval-steps": 4, "save-steps": 4, "num-basis": 4}
    return [item for name, value in toy.items() for item in (f"--{name}", str(value))] + [
        "--refine-steps",
        "none",
        *flags,
    ]


def test_max_steps_wins_over_num_train_epochs_as_in_transformers(tmp_path, caplog):
    ToyTrainer, _ = toy_trainer()
    from test_scaffold import ToyArguments

    args, _ = parse_arguments(ToyArguments, toy_argv(tmp_path, "--num-train-epochs", "3", "--max-steps", "5"))
    assert args.max_steps == 5 and args.num_train_epochs is None
    assert "--num-train-epochs 3.0 is ignored: --max-steps is given" in caplog.text
    metrics = ToyTrainer(args).run()  # 3 epochs would be 12 steps of 16 of the 64 examples
    assert metrics["step"] == 5
    assert json.loads((tmp_path / "run" / "run.json").read_text())["arguments"]["num_train_epochs"] is None
    # A recipe's max_steps gives way to the flag --num-train-epochs; both in the recipe: max_steps.
    recipe = tmp_path / "recipe.json"
    recipe.write_text(json.dumps({"max_steps": 7}))
    args, _ = parse_arguments(ToyArguments, [str(recipe), *toy_argv(tmp_path, "--num-train-epochs", "2")])
    assert args.num_train_epochs == 2 and args.max_steps == ToyArguments.max_steps
    recipe.write_text(json.dumps({"max_steps": 7, "num_train_epochs": 2}))
    args, _ = parse_arguments(ToyArguments, [str(recipe), *toy_argv(tmp_path)])
    assert args.max_steps == 7 and args.num_train_epochs is None


def test_contradictory_column_flags_are_refused(tmp_path, capsys):
    output = tmp_path / "pos"
    argv = ["--columns", "upos", "--tag-column", "xpos", "--output-dir", str(output)]
    line = refused(load_script("train_pos").main, argv, capsys)
    assert line == (
        "error: tag_column: --tag-column xpos is not among --columns upos; add it to --columns or leave --tag-column out"
    )
    assert not output.exists()
    recipe = tmp_path / "columns.json"
    recipe.write_text(json.dumps({"columns": "upos,feats", "tag_column": "xpos"}))
    assert "--tag-column xpos is not among --columns upos,feats" in refused(
        load_script("train_pos").main, [str(recipe)], capsys
    )
    # Agreeing flags, and --columns alone (its primary column chosen as documented), parse.
    from cont_transformer.tagging.arguments import preset_defaults

    argv = ["--columns", "upos,xpos", "--tag-column", "upos"]
    args, _ = parse_arguments(TrainingArguments, argv, preset_defaults=preset_defaults)
    assert args.tag_column == "upos"
    args, _ = parse_arguments(TrainingArguments, ["--columns", "upos"], preset_defaults=preset_defaults)
    assert args.columns == "upos"


def test_a_resume_to_fewer_steps_than_done_is_refused_and_touches_nothing(tmp_path, capsys):
    output = tmp_path / "pos"
    train_pos = load_script("train_pos").main
    run_cli(
        train_pos, [*TINY, "--max-steps", "4", "--eval-steps", "2", "--save-steps", "2", "--output-dir", str(output)]
    )
    capsys.readouterr()
    before = {path.name: path.read_bytes() for path in output.iterdir() if path.is_file()}
    argv = [*TINY, "--max-steps", "3", "--eval-steps", "2", "--save-steps", "2", "--output-dir", str(output)]
    line = refused(train_pos, [*argv, "--resume-from-checkpoint", "latest"], capsys)
    assert line.startswith(f"error: --max-steps: the run would end at step 3, but {output / 'checkpoints' / 'step-4'}")
    assert "has done 4 steps" in line
    assert {path.name: path.read_bytes() for path in output.iterdir() if path.is_file()} == before  # run.json too
    release_output_folder(output)
    # The toy trainer the same way, and with --num-train-epochs named when it set the length.
    ToyTrainer, toy = toy_trainer()
    ToyTrainer(toy(tmp_path, max_steps=8)).run()
    run_json = (tmp_path / "run" / "run.json").read_bytes()
    with pytest.raises(OutputFolderError, match="^--num-train-epochs: the run would end at step 4, but .*step-8"):
        ToyTrainer(toy(tmp_path, max_steps=8, num_train_epochs=1, resume_from_checkpoint="latest"))
    assert (tmp_path / "run" / "run.json").read_bytes() == run_json
    release_output_folder(tmp_path / "run")


@pytest.mark.parametrize(
    ("key", "value", "wanted"),
    [("max_steps", True, "a whole number"), ("learning_rate", False, "a number"), ("output_dir", True, "a value")],
)
def test_json_booleans_where_numbers_belong_are_refused(tmp_path, capsys, key, value, wanted):
    recipe = tmp_path / "recipe.json"
    recipe.write_text(json.dumps({key: value}))
    line = refused(load_script("train_pos").main, [str(recipe)], capsys)
    assert line.startswith(f"error: {recipe}: {key}: {json.dumps(value)} is a boolean; this argument takes {wanted}")


def test_json_booleans_still_set_switches(tmp_path):
    recipe = tmp_path / "recipe.json"
    recipe.write_text(json.dumps({"do_predict": True, "compression_report": False, "push_to_hub": False}))
    args, _ = parse_arguments(TrainingArguments, [str(recipe)])
    assert args.do_predict is True and args.compression_report is False and args.push_to_hub is None


@pytest.mark.parametrize(
    ("flags", "wanted"),
    [
        (["--best-num-basis", "32"], "best_num_basis: 32 is more than --num-basis 16"),
        (["--num-steps", "4", "--best-num-steps", "8"], "best_num_steps: 8 is more than --num-steps 4"),
        (["--best-num-basis", "0"], "best_num_basis: must be an integer >= 1"),
    ],
)
def test_the_compressed_best_model_must_be_smaller(flags, wanted):
    with pytest.raises(ValueError, match=f"^{wanted}"):
        parse_arguments(TrainingArguments, ["--num-basis", "16", *flags])


def write_idx(path, array):
    array = np.asarray(array, dtype=np.uint8)
    header = bytes([0, 0, 0x08, array.ndim]) + np.array(array.shape, dtype=">u4").tobytes()
    path.write_bytes(gzip.compress(header + array.tobytes()))


def test_image_labels_outside_the_data_sets_classes_are_refused(tmp_path, capsys):
    rng = np.random.default_rng(0)
    for prefix, count in (("train", 30), ("t10k", 10)):
        labels = np.arange(count) % 10
        if prefix == "train":
            labels[7] = 200  # one damaged label among MNIST's ten digits
        write_idx(tmp_path / f"{prefix}-images-idx3-ubyte.gz", rng.integers(0, 256, (count, 6, 6)))
        write_idx(tmp_path / f"{prefix}-labels-idx1-ubyte.gz", labels)
    labels_file = tmp_path / "train-labels-idx1-ubyte.gz"
    with pytest.raises(ValueError, match=f"^{labels_file}: label 200 is outside the data set's classes"):
        load_image_dataset(tmp_path)
    argv = ["--dataset", str(tmp_path), "--output-dir", str(tmp_path / "out"), "--epochs", "1"]
    line = refused(load_script("train_image").main, argv, capsys)
    assert line.startswith(f"error: {labels_file}: label 200 is outside the data set's classes: it would make 201")
    # CIFAR batches with their meta file: a label beyond the classes it names.
    cifar = tmp_path / "cifar"
    cifar.mkdir()
    rows = rng.integers(0, 256, (2, 3072), dtype=np.uint8)
    for name, labels in [(f"data_batch_{i}", [0, 1]) for i in range(1, 5)] + [("data_batch_5", [2, 10])]:
        (cifar / name).write_bytes(pickle.dumps({b"data": rows, b"labels": labels}))
    (cifar / "test_batch").write_bytes(pickle.dumps({b"data": rows, b"labels": [0, 1]}))
    names = [f"class{i}".encode() for i in range(10)]
    (cifar / "batches.meta").write_bytes(pickle.dumps({b"label_names": names}))
    with pytest.raises(ValueError, match=f"^{cifar / 'data_batch_5'}: label 10 is outside the data set's classes 0..9"):
        load_image_dataset(cifar)


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (["--refine-steps", "a,b"], "error: refine_steps: comma-separated step numbers (or 'none'), got 'a,b'"),
        (["--seed", "-1"], "error: seed: must lie in [0, 2**32) (numpy's and torch's seeds), got -1"),
        (["--seed", str(2**32)], f"error: seed: must lie in [0, 2**32) (numpy's and torch's seeds), got {2**32}"),
        (["--word-dropout", "nan"], "error: word_dropout: must be a finite number >= 0, got nan"),
        (["--model-name-or-path", "/nope"], "error: model_name_or_path: no such folder: /nope"),
        (["--model-name-or-path", "./runs/nope"], "error: model_name_or_path: no such folder: ./runs/nope"),
    ],
)
def test_bad_values_are_refused_at_parse_time_naming_the_flag(tmp_path, capsys, flags, line):
    output = tmp_path / "pos"
    assert refused(load_script("train_pos").main, [*flags, "--output-dir", str(output)], capsys) == line
    assert not output.exists()  # nothing read, nothing trained


def test_a_hub_id_is_not_taken_for_a_missing_folder():
    from cont_transformer.text.pretrained_encoder import check_model_location

    check_model_location("someone/tagger")  # left to transformers (no network here)
    with pytest.raises(FileNotFoundError, match="^model_name_or_path: no such folder: someone/tagger/best$"):
        check_model_location("someone/tagger/best")


def test_the_arguments_read_no_folder_and_take_a_saved_model_s_choices_when_given_its_config(tmp_path):
    from cont_transformer.configuration_cont_transformer import ContTransformerConfig
    from cont_transformer.tagging.arguments import TrainingArguments

    missing = str(tmp_path / "no-such-folder")
    args = TrainingArguments(output_dir=str(tmp_path / "run"), model_name_or_path=missing, refine_steps="10")
    assert args.sizes_pending and args.final_num_steps is None  # nothing read yet
    saved = ContTransformerConfig(basis="piecewise_linear", num_basis=5, num_steps=4, scheme="rk4", time_horizon=2.0)
    args.adopt_saved(saved)
    assert (args.basis, args.scheme, args.time_horizon, args.final_num_basis, args.final_num_steps) == (
        "piecewise_linear",
        "rk4",
        2.0,
        9,
        8,
    )
    assert (args.refinement_schedule.initial_num_basis, args.refinement_schedule.initial_num_steps) == (5, 4)
    compressing = TrainingArguments(
        output_dir=str(tmp_path / "run"), model_name_or_path=missing, refine_steps="none", best_num_basis=8
    )
    with pytest.raises(ValueError, match="^best_num_basis: 8 is more than --num-basis 5; it compresses the model$"):
        compressing.adopt_saved(saved)


@pytest.mark.slow
def test_a_lemma_only_tagger_trains_and_tags(tmp_path, capsys):
    output = tmp_path / "lemma"
    argv = [*TINY, "--columns", "lemma", "--max-steps", "4", "--eval-steps", "2", "--save-steps", "2"]
    run_cli(load_script("train_pos").main, [*argv, "--output-dir", str(output)])
    best = json.loads((output / "metrics.json").read_text())["best"]
    # Lemmas are scored as strings (several edit scripts give one lemma), the split too.
    assert best["accuracy"] == best["lemmas"]
    seen, unseen, num_unseen = best["accuracy_seen"], best["accuracy_unseen"], best["num_unseen_words"]
    words = best["num_words"]
    assert seen * (words - num_unseen) + (unseen or 0) * num_unseen == pytest.approx(best["lemmas"] * words)
    from cont_transformer.tagging.tag import Tagger

    words = Tagger.from_pretrained(output, device="cpu")([["The", "dogs", "saw", "birds", "."]]).sentences[0].words
    assert all(word.lemma for word in words) and all(word.upos is None and word.xpos is None for word in words)
