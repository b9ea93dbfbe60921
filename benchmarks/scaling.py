"""Tagging on worker processes: ``scripts/tag.py --processes N`` against ``--processes 1``,
in words per wall second of a fresh process (loading included) and as ``tag.py`` reports
its tagging (loading left out), with byte-identical output and the peak PSS of the whole
process tree; a JSON report and a PNG plot.

The text is a CoNLL-U file's raw text (its ``# text`` lines), ``--repeat`` times over, so
that tagging outweighs loading. The logic lives in :mod:`cont_transformer.benchmarks.scaling`.

With ``--ray N``, the same text's paragraphs as rows go through Ray Data's ``map_batches``
with :class:`~cont_transformer.tagging.dataset_tagging.TagTexts` on N actors of one CPU each
(``ray.init(num_cpus=N)``, local mode), a fresh process too, against the same rows tagged by
``TagTexts`` in one process (each row's CoNLL-U, byte for byte), and its words per wall
second against ``tag.py --processes N``.

    OMP_NUM_THREADS=1 python benchmarks/scaling.py runs/gum \\
        --conllu ../shared/data/ud/UD_English-GUM/en_gum-ud-dev.conllu --processes 1 2 \\
        --output-dir runs/scaling
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import torch

from cont_transformer.benchmarks.scaling import measure_scaling, plot_scaling, repeated_text
from cont_transformer.runtime.measuring import machine_info

ROOT = Path(__file__).resolve().parents[1]
# Against the first count given (1): words per wall second at least this many times as
# high, peak PSS of the process tree at most this many times as high.
TARGETS = {2: {"speedup": 1.8, "pss_ratio": 1.5}}
RAY_TARGET = 0.8  # Ray's words per wall second against tag.py --processes N, on N actors


def tag_rows(model_dir: str, text: Path, output: Path, ray_actors: int) -> None:
    """The paragraphs of ``text`` as rows tagged by ``TagTexts``: on ``ray_actors`` Ray
    actors, or in this process (0); their CoNLL-U, in row order, into ``output``."""
    from cont_transformer.tagging.dataset_tagging import TagTexts

    rows = [{"row": i, "text": t} for i, t in enumerate(text.read_text(encoding="utf-8").split("\n\n"))]
    if ray_actors:
        import ray

        env = {name: os.environ[name] for name in ("PYTHONPATH", "OMP_NUM_THREADS") if name in os.environ}
        ray.init(num_cpus=ray_actors, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": env})
        tagged = ray.data.from_items(rows).map_batches(
            TagTexts, fn_constructor_args=(model_dir,), batch_size=64, concurrency=ray_actors, num_cpus=1
        )
        conllu = [row["conllu"] for row in sorted(tagged.take_all(), key=lambda row: row["row"])]
        ray.shutdown()
    else:
        conllu = TagTexts(model_dir)({"text": [row["text"] for row in rows]})["conllu"]
    output.write_text("".join(conllu), encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model_dir", help="a tagger's folder or a training run's folder")
    parser.add_argument("--conllu", required=True, help="the CoNLL-U file whose raw text is tagged")
    parser.add_argument("--repeat", type=int, default=4, help="copies of the text (default: 4)")
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2], help="counts to measure (default: 1 2)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each count, alternating (default: 3)")
    parser.add_argument("--output-dir", default="runs/scaling", help="scaling.json and scaling.png go here")
    parser.add_argument("--ray", type=int, metavar="N", help="also Ray Data on N actors (needs ray[data])")
    parser.add_argument("--rows-job", nargs=3, metavar=("TEXT", "OUTPUT", "ACTORS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rows_job:  # one measured run of tag_rows, in a process of its own
        tag_rows(args.model_dir, Path(args.rows_job[0]), Path(args.rows_job[1]), int(args.rows_job[2]))
        return

    output_dir = Path(args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as work:
        text = Path(work) / "input.txt"
        text.write_text(repeated_text(args.conllu, args.repeat), encoding="utf-8")

        def command(n: int, output: Path) -> list[str]:
            tag = [sys.executable, str(ROOT / "scripts" / "tag.py"), args.model_dir, "--input", str(text)]
            return [*tag, "--output", str(output), "--processes", str(n), "--no-progress"]

        report = measure_scaling(command, args.processes, Path(work), runs=args.runs, env=env)
        if args.ray:

            def rows_command(actors: int, output: Path) -> list[str]:
                rows_job = ["--rows-job", str(text), str(output), str(actors)]
                return [sys.executable, str(Path(__file__).resolve()), args.model_dir, "--conllu", "-", *rows_job]

            rows = measure_scaling(rows_command, [0, args.ray], Path(work), runs=args.runs, env=env)["results"]
            against = next(r for r in report["results"] if r["processes"] == args.ray)
            report["ray"] = {
                "actors": args.ray,
                "one_process": rows[0],
                "ray": rows[1],
                "identical_output": rows[1]["identical_output"],
                "against_tag_py": rows[1]["words_per_wall_s"] / against["words_per_wall_s"],
                "target": RAY_TARGET,
            }
    report |= {
        "title": f"scripts/tag.py --processes N on {Path(args.conllu).name} x{args.repeat} (raw text)",
        "command": "scripts/tag.py MODEL_DIR --input TEXT --output OUTPUT --processes N --no-progress",
        "model_dir": args.model_dir,
        "conllu": args.conllu,
        "repeat": args.repeat,
        "machine": machine_info(torch.device("cpu")) | {"load_average_before": list(load_before)},
        "targets": {str(n): target for n, target in TARGETS.items()},
    }
    for entry in report["results"]:
        target = TARGETS.get(entry["processes"])
        if target:
            entry["targets_met"] = {
                "speedup": entry["speedup"] >= target["speedup"],
                **(
                    {"tagging_speedup": entry["tagging_speedup"] >= target["speedup"]}
                    if "tagging_speedup" in entry
                    else {}
                ),
                "pss_ratio": entry["pss_ratio"] <= target["pss_ratio"],
                "identical_output": entry["identical_output"],
            }
    (output_dir / "scaling.json").write_text(json.dumps(report, indent=2) + "\n")
    plot_scaling(report, output_dir / "scaling.png")
    for entry in report["results"]:
        print(
            f"{entry['processes']} processes: {entry['words_per_wall_s']:,.0f} words/wall s "
            f"({entry['speedup']:.2f}x; tagging as tag.py reports it "
            f"{entry.get('tagging_words_per_wall_s', float('nan')):,.0f}, "
            f"{entry.get('tagging_speedup', float('nan')):.2f}x), peak PSS {entry['peak_pss_bytes'] / 2**20:,.0f} MiB "
            f"({entry['pss_ratio']:.2f}x), identical output: {entry['identical_output']}"
        )
    if args.ray:
        ray_entry = report["ray"]["ray"]
        print(
            f"Ray, {args.ray} actors: {ray_entry['words_per_wall_s']:,.0f} words/wall s "
            f"({report['ray']['against_tag_py']:.2f}x tag.py --processes {args.ray}), peak PSS "
            f"{ray_entry['peak_pss_bytes'] / 2**20:,.0f} MiB, identical to one process: {ray_entry['identical_output']}"
        )


if __name__ == "__main__":
    main()
