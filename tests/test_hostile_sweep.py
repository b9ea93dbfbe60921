"""What a hostile sweep of the merged tree found: a link as tag.py's output, compression
targets far past the model, a language model scored as a tagger, a non-text input to the
Tagger, a recipe's bad run length under a good flag."""

import json

import pytest
from hostile import load_script, run_compress, save_tagger

from cont_transformer.runtime.compressed_copies import MAX_GROWTH, check_choices
from cont_transformer.tagging.tag import Tagger
from cont_transformer.training.recipes import scale_schedule


def test_a_link_to_a_file_as_output_writes_the_file_and_stays_a_link(tmp_path, tiny_tagger):
    folder = save_tagger(tmp_path / "tagger", tiny_tagger)
    (tmp_path / "in.txt").write_text("the dog barks .\n")
    target, link = tmp_path / "target.tsv", tmp_path / "link.tsv"
    target.write_text("old\n")
    link.symlink_to(target)
    load_script("tag").main(
        [str(folder), "--input", str(tmp_path / "in.txt"), "--input-format", "tokens", "--output", str(link)]
        + ["--format", "tsv", "--quiet"]
    )
    assert link.is_symlink() and link.resolve() == target
    assert "dog\t" in target.read_text() and "old" not in target.read_text()


def test_a_target_far_past_the_model_is_refused_naming_the_flag(tiny_tagger_config):
    config = tiny_tagger_config()
    for name, value in (
        ("num_basis", MAX_GROWTH * config.num_basis + 1),
        ("num_steps", MAX_GROWTH * config.num_steps + 1),
    ):
        with pytest.raises(ValueError, match=f"^{name}: {value} is more than {MAX_GROWTH} times"):
            check_choices(config, **{name: value})
    check_choices(config, num_basis=2 * config.num_basis)  # growth within the bound stays allowed


def test_compress_refuses_the_tagger_scores_of_a_model_that_is_no_tagger(tmp_path, tiny_tagger, capsys):
    from cont_transformer import ContTransformerConfig, ContTransformerForMaskedLM

    folder = save_tagger(tmp_path / "tagger", tiny_tagger)
    language_model = ContTransformerForMaskedLM(ContTransformerConfig.from_pretrained(folder))
    language_model.save_pretrained(tmp_path / "lm")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (tmp_path / "lm" / name).write_bytes((folder / name).read_bytes())
    gold = tmp_path / "dev.conllu"
    gold.write_text("1\tthe\tthe\tDET\tDT\t_\t0\troot\t_\t_\n\n")
    line = run_compress(
        [str(tmp_path / "lm"), "--num-basis", "2", "--output-dir", str(tmp_path / "out")] + ["--eval-file", str(gold)],
        capsys,
    )
    assert "eval_file" in line and "not a tagger" in line
    assert not (tmp_path / "out" / "model.safetensors").exists()


@pytest.mark.parametrize("bad", [None, 123, b"the dog"])
def test_the_tagger_names_what_it_takes(tmp_path, tiny_tagger, bad):
    tagger = Tagger.from_pretrained(save_tagger(tmp_path / "tagger", tiny_tagger))
    with pytest.raises(TypeError, match=f"a str, not {type(bad).__name__}"):
        tagger(bad)


def test_a_recipes_bad_length_is_not_scaled_from_when_the_flag_gives_one():
    assert scale_schedule({"max_steps": -5, "warmup_steps": 4}, 2) == {}
    assert scale_schedule({"max_steps": 10, "warmup_steps": 4}, 5) == {"warmup_steps": 2}
    assert json.dumps(scale_schedule({"max_steps": None}, 5)) == "{}"
