"""transformers' Trainer and run_ner.py flags: each is accepted with its meaning
(the parsed arguments, the plan, the run), or refused in one line naming it and saying why."""

import json
from dataclasses import dataclass

import pytest
import torch
from hostile import load_script, one_error_line, toy_trainer

from cont_transformer.ode_block import OdeBlock
from cont_transformer.runtime.model_folders import CHECKPOINTS_DIR
from cont_transformer.tagging.arguments import TrainingArguments, preset_defaults
from cont_transformer.tools.cli import run_cli
from cont_transformer.training.recipes import parse_arguments
from cont_transformer.training.scaffold import enable_activation_checkpointing


def tagger_arguments(*argv):
    return parse_arguments(TrainingArguments, list(argv), preset_defaults=preset_defaults)[0]


def refused(argv, capsys) -> str:
    """``train_pos.py *argv``: exit status 2 and its one error line."""
    with pytest.raises(SystemExit) as exit_info:
        run_cli(load_script("train_pos").main, argv)
    assert exit_info.value.code == 2
    return one_error_line(capsys)


# --- accepted, as parsed ---------------------------------------------------------------
@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--eval_strategy", "epoch"], {"eval_strategy": "epoch"}),
        (["--eval-strategy", "steps"], {"eval_strategy": "steps"}),
        (["--evaluation_strategy", "no"], {"eval_strategy": "no"}),  # transformers 4's spelling
        (["--save_strategy", "epoch"], {"save_strategy": "epoch"}),
        (["--save_strategy", "no"], {"save_strategy": "no"}),
        (["--lr_scheduler_type", "inverse_sqrt"], {"lr_scheduler_type": "inverse_sqrt"}),
        # The sample preset runs 300 steps: a tenth of them warm up (rounded up, as transformers does).
        (["--warmup_ratio", "0.1"], {"warmup_ratio": 0.1, "warmup_steps": 30}),
        (["--warmup_ratio", "0.1", "--max-steps", "95"], {"warmup_steps": 10}),
        (["--per_device_eval_batch_size", "32"], {"per_device_eval_batch_size": 32}),
        (["--logging_dir", "tb"], {"logging_dir": "tb"}),
        (["--run_name", "gum-k16"], {"run_name": "gum-k16"}),
        (["--load_best_model_at_end"], {"load_best_model_at_end": True}),
        (["--load_best_model_at_end", "true"], {"load_best_model_at_end": True}),
        (["--metric_for_best_model", "accuracy"], {"metric_for_best_model": "accuracy"}),
        (["--dataloader_num_workers", "0"], {"dataloader_num_workers": 0}),
        (["--gradient_checkpointing"], {"gradient_checkpointing": True}),
        (["--activation_checkpointing"], {"gradient_checkpointing": True}),  # transformers 5's spelling
        (["--use_cpu"], {"use_cpu": True}),
        (["--max_seq_length", "64"], {"max_length": 64}),
        (["--dataset_name", "sample"], {"treebank": "sample", "max_steps": 300}),
        # run_ner.py's UD data set: the treebank en_gum, with the paper's defaults (not the sample's).
        (
            ["--dataset_name", "universal_dependencies", "--dataset_config_name", "en_gum"],
            {"treebank": "en_gum", "dataset_config_name": None, "max_steps": 35000},
        ),
        (
            ["--dataset-name", "universal-dependencies/universal_dependencies", "--dataset-config-name", "de_hdt"],
            {"treebank": "de_hdt"},
        ),
    ],
)
def test_a_trainer_flag_is_accepted_with_its_meaning(argv, expected):
    args = tagger_arguments(*argv)
    assert {name: getattr(args, name) for name in expected} == expected


def test_a_ud_configuration_is_found_under_the_data_dir(tmp_path):
    folder = tmp_path / "UD_Basque-BDT"
    folder.mkdir()
    (folder / "eu_bdt-ud-train.conllu").write_text("")
    args = tagger_arguments(
        "--dataset_name", "universal_dependencies", "--dataset_config_name", "eu_bdt", "--data-dir", str(tmp_path)
    )
    assert args.treebank == str(folder)


def test_a_recipe_takes_the_trainer_spellings(tmp_path):
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"eval_strategy": "epoch", "max_seq_length": 40, "warmup_ratio": 0.5}))
    args = tagger_arguments(str(recipe), "--max-steps", "20")
    assert (args.eval_strategy, args.max_length, args.warmup_steps) == ("epoch", 40, 10)
    # A flag beats the recipe's other warm-up; both as flags are refused.
    assert tagger_arguments(str(recipe), "--warmup-steps", "3").warmup_steps == 3
    recipe.write_text(json.dumps({"warmup_steps": 7}))
    assert tagger_arguments(str(recipe), "--warmup_ratio", "0.1").warmup_steps == 30


def test_the_other_trainers_keep_their_own_flags():
    from cont_transformer.language_modeling.arguments import PretrainingArguments
    from image_models.arguments import ImageTrainingArguments
    from image_models.arguments import preset_defaults as image_defaults

    # The language model's own --dataset-name / --dataset-config-name (and --dataset-config).
    model = parse_arguments(
        PretrainingArguments,
        ["--dataset_name", "wikitext", "--dataset-config", "wikitext-2-raw-v1", "--lr_scheduler_type", "inverse_sqrt"],
    )[0]
    assert (model.dataset_name, model.dataset_config_name, model.lr_scheduler_type) == (
        "wikitext",
        "wikitext-2-raw-v1",
        "inverse_sqrt",
    )
    ratio = parse_arguments(
        PretrainingArguments, ["--text-files", "a.txt", "--warmup_ratio", "0.25", "--max-steps", "8"]
    )
    assert ratio[0].warmup_steps == 2
    # The image trainer: --dataset_name is its --dataset, it evaluates and saves per epoch.
    images = parse_arguments(
        ImageTrainingArguments,
        ["--dataset_name", "ylecun/mnist", "--eval_strategy", "epoch", "--save_strategy", "no"],
        preset_defaults=image_defaults,
    )[0]
    assert (images.dataset, images.eval_strategy, images.save_strategy) == ("ylecun/mnist", "epoch", "no")
    for argv, flag in [
        (["--eval_strategy", "steps"], "eval_strategy"),
        (["--warmup_ratio", "0.1"], "warmup_ratio"),
        (["--lr_scheduler_type", "linear"], "lr_scheduler_type"),
        (["--per_device_eval_batch_size", "8"], "per_device_eval_batch_size"),
    ]:
        with pytest.raises(ValueError, match=f"^{flag}: "):
            parse_arguments(ImageTrainingArguments, ["--dataset", "x", *argv], preset_defaults=image_defaults)
    with pytest.raises(ValueError, match="^per_device_eval_batch_size: "):
        parse_arguments(PretrainingArguments, ["--text-files", "a.txt", "--per_device_eval_batch_size", "8"])


def test_cadence_logging_and_devices_do_not_change_the_identity_of_a_run():
    plain = tagger_arguments().identity()
    flags = tagger_arguments(
        "--eval_strategy", "epoch", "--save_strategy", "no", "--logging_dir", "tb", "--run_name", "r",
        "--per_device_eval_batch_size", "8", "--gradient_checkpointing", "--use_cpu", "--lr_scheduler_type",
        "inverse_sqrt", "--metric_for_best_model", "accuracy",
    ).identity()  # fmt: skip
    assert flags == plain  # a run may resume with any of them changed
    ratio = tagger_arguments("--warmup_ratio", "0.1").identity()
    assert ratio["warmup_ratio"] == 0.1 and "warmup_steps" not in ratio  # the steps follow the run's length


# --- refused, in one line ----------------------------------------------------------------
@pytest.mark.parametrize(
    "argv, flag, why",
    [
        (["--lr_scheduler_type", "cosine"], "lr_scheduler_type", "inverse_sqrt"),
        (["--lr_scheduler_type", "linear"], "lr_scheduler_type", "cool-down"),
        (["--load_best_model_at_end", "false"], "load_best_model_at_end", "always keeps the best model in best/"),
        (["--no_load_best_model_at_end"], "load_best_model_at_end", "cannot be turned off"),
        (["--dataloader_num_workers", "4"], "dataloader_num_workers", "0 only"),
        (["--save_strategy", "best"], "save_strategy", "best/"),
        (["--eval_strategy", "sometimes"], "eval_strategy", "steps, epoch, no"),
        (["--warmup_ratio", "1.5"], "warmup_ratio", "between 0 and 1"),
        (["--warmup_ratio", "0.1", "--warmup_steps", "10"], "warmup_ratio", "not both"),
        (["--per_device_eval_batch_size", "0"], "per_device_eval_batch_size", ">= 1"),
        (["--dataset_name", "universal_dependencies"], "dataset_config_name", "e.g. en_gum"),
        (["--dataset_config_name", "en_gum"], "dataset_config_name", "universal_dependencies"),
        (["--dataset_name", "universal_dependencies", "--dataset_config_name", "en_nope"], "dataset_config_name", ""),
        (["--dataset_name", "universal_dependencies", "--dataset_config_name", "../x"], "dataset_config_name", ""),
        (["--torch_compile_mode", "warp"], "torch_compile_mode", "max-autotune"),
    ],
)
def test_a_flag_that_cannot_apply_is_refused_in_one_line(argv, flag, why, capsys):
    line = refused(argv, capsys)
    assert line.startswith(f"error: {flag}: ") and why in line


def test_only_the_trainers_selection_metric_selects(tmp_path, capsys):
    """--metric_for_best_model loss: refused when the trainer starts, before its folder or data."""
    output = tmp_path / "run"
    line = refused(["--metric_for_best_model", "loss", "--output-dir", str(output)], capsys)
    assert line.startswith("error: metric_for_best_model: ") and "accuracy" in line
    assert not output.exists()
    ToyTrainer, toy = toy_trainer()
    for name in ("accuracy", "eval_accuracy"):  # transformers' spelling of the same metric
        ToyTrainer(toy(tmp_path, output_dir=str(tmp_path / name), metric_for_best_model=name))


# --- accepted, as run --------------------------------------------------------------------
def history_steps(metrics):
    return [entry["step"] for entry in metrics["history"]]


def checkpoint_steps(output_dir):
    folder = output_dir / CHECKPOINTS_DIR
    return sorted(int(p.name.split("-")[1]) for p in folder.glob("step-*")) if folder.is_dir() else []


@pytest.mark.parametrize(
    "strategies, evaluated, saved",
    [
        ({}, [5, 10, 12], [6, 12]),  # steps: every --eval-steps / --save-steps, and at the end
        ({"eval_strategy": "epoch", "save_strategy": "epoch"}, [4, 8, 12], [4, 8, 12]),  # 64 examples / 16
        ({"eval_strategy": "no", "save_strategy": "no"}, [12], []),  # one evaluation at the end, no checkpoint
    ],
)
def test_the_strategies_set_the_cadence(tmp_path, strategies, evaluated, saved):
    ToyTrainer, toy = toy_trainer()
    args = toy(tmp_path, eval_steps=5, save_steps=6, refine_steps="none", save_total_limit=5, **strategies)
    metrics = ToyTrainer(args).run()
    assert history_steps(metrics) == evaluated
    assert checkpoint_steps(tmp_path / "run") == saved
    assert (tmp_path / "run" / "best").is_dir()  # the best model either way


def test_warmup_ratio_counts_the_planned_steps(tmp_path):
    """With --num-train-epochs the run's length is known once the data is: the warm-up follows."""
    ToyTrainer, toy = toy_trainer()

    @dataclass
    class WarmedToy(type(toy(tmp_path))):
        warmup_steps: int = 0

    values = vars(toy(tmp_path, refine_steps="none"))
    trainer = ToyTrainer(WarmedToy(**{**values, "refine_steps": "none", "num_train_epochs": 2.0, "warmup_ratio": 0.3}))
    assert (trainer.plan.max_steps, trainer.args.warmup_steps) == (8, 3)  # ceil(0.3 x 2 epochs of 4 steps)
    recorded = json.loads((tmp_path / "run" / "run.json").read_text())["arguments"]
    assert recorded["warmup_ratio"] == 0.3 and "warmup_steps" not in recorded


def test_gradient_checkpointing_recomputes_the_ode_steps(tmp_path, tiny_tagger):
    model = tiny_tagger().train()
    input_ids = torch.tensor([[1, 4, 5, 6, 2]])
    labels = torch.tensor([[-100, 0, 1, 2, -100]])
    torch.manual_seed(0)
    model(input_ids=input_ids, labels=labels).loss.backward()
    plain = [p.grad.clone() for p in model.parameters() if p.grad is not None]
    model.zero_grad()
    enable_activation_checkpointing(model)
    assert all(block.gradient_checkpointing for block in model.modules() if isinstance(block, OdeBlock))
    torch.manual_seed(0)
    model(input_ids=input_ids, labels=labels).loss.backward()
    checkpointed = [p.grad for p in model.parameters() if p.grad is not None]
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(plain, checkpointed))

    # The scaffold turns it on for the model it trains, and refuses a model without it.
    ToyTrainer, toy = toy_trainer()

    class CheckpointedToy(ToyTrainer):
        def build_model(self):
            model = super().build_model()
            model.supports_gradient_checkpointing = True
            model.activation_checkpointing_enable = lambda: setattr(model.block, "gradient_checkpointing", True)
            return model

    trainer = CheckpointedToy(toy(tmp_path, gradient_checkpointing=True, output_dir=str(tmp_path / "a")))
    assert trainer.accelerator.unwrap_model(trainer.model).block.gradient_checkpointing
    trainer.run()
    with pytest.raises(ValueError, match="^gradient_checkpointing: ToyModel does not support it"):
        ToyTrainer(toy(tmp_path, gradient_checkpointing=True, output_dir=str(tmp_path / "b")))


def test_use_cpu_trains_on_the_cpu(tmp_path):
    ToyTrainer, toy = toy_trainer()
    assert ToyTrainer(toy(tmp_path, use_cpu=True)).accelerator.device.type == "cpu"


def test_logging_dir_and_run_name_place_the_trackers_files(tmp_path):
    pytest.importorskip("tensorboard")
    ToyTrainer, toy = toy_trainer()
    ToyTrainer(toy(tmp_path, report_to="tensorboard", logging_dir=str(tmp_path / "tb"), run_name="toy-1")).run()
    assert list((tmp_path / "tb" / "toy-1").glob("events.out.tfevents.*"))
    assert not (tmp_path / "run" / "logs").exists()


def test_per_device_eval_batch_size_sets_the_evaluation_batches(tmp_path):
    from cont_transformer.tagging.trainer import PosTrainer

    ToyTrainer, toy = toy_trainer()
    assert ToyTrainer(toy(tmp_path)).eval_batch_size == 16  # default: the training batch
    args = tagger_arguments(
        "--output-dir", str(tmp_path / "pos"), "--per_device_eval_batch_size", "7", "--max-steps", "2",
        "--refine-steps", "none", "--hidden-size", "16", "--intermediate-size", "16", "--char-hidden-size", "8",
    )  # fmt: skip
    trainer = PosTrainer(args)
    assert trainer.eval_batch_size == 7
    sizes = {len(batch["input_ids"]) for batch in trainer.eval_loader}
    assert max(sizes) == 7
