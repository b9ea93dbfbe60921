"""Every UD treebank of a folder: this package and UDPipe 1, each trained on the treebank's
train split, scored on its dev split with the CoNLL 2018 scorer, side by side.

For each treebank (every ``UD_*`` folder holding a ``*-ud-train*.conllu`` and a
``*-ud-dev.conllu`` file, and the pairs of ``benchmarks/multilingual.json``, such as
German-LIT selected on German-GSD dev), in separate processes, one thread each:

* ``ours``: ``scripts/train_pos.py recipes/ud.json`` (the recipe that fits the treebank's
  size) into ``OUTPUT/CODE/ours`` and ``scripts/train_segmenter.py`` into the same folder;
  then ``scripts/tag.py`` on the dev file's gold words (LEMMA, UPOS, XPOS and FEATS
  blanked) and on its raw text (the ``# text`` lines, a blank line at each
  ``# newpar``/``# newdoc``).
* ``udpipe1``: ``benchmarks/peers/udpipe1.py``, UDPipe 1's tagger and lemmatizer with its
  default options on the same gold words, and its tokenizer (``--tokenizer``, its default
  options unless ``--udpipe-tokenizer-options``) on the raw text, whose words the tagger
  then tags.

Each step writes its outputs and a JSON record (CPU seconds of its process tree) under
``OUTPUT/CODE/``; a step whose record exists is not run again, so the command resumes where
it stopped, and the two steps may run at once in two processes. CPU minutes are the
training's: the tagger's and the segmenter's (ours), the tagger's and the tokenizer's
(UDPipe 1). The scores (gold words: UPOS, XPOS, UFeats, AllTags, Lemmas; raw text: Words,
Sentences, UPOS) go to ``OUTPUT/scores.json`` and a markdown table per language to
``OUTPUT/scores.md``, with UDPipe 2's published test-split figures (release 2.17, with
multilingual BERT) beside them where ``--udpipe2`` gives the file. A column that the
treebank's dev split leaves empty is shown as a dash.

    OMP_NUM_THREADS=1 python benchmarks/multilingual.py --data-dir ../shared/data/ud \\
        --output-dir runs/multilingual [--treebanks tr_imst el_gdt] [--steps ours udpipe1] \\
        [--udpipe2 ../shared/data/udpipe2-ud217.md]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

from cont_transformer.tagging.conllu_document import ConlluDocument
from cont_transformer.tagging.scoring import score

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "peers"))
from common import Conllu  # the peers' CoNLL-U helpers, beside this script

GOLD_ROWS = {"upos": "UPOS", "xpos": "XPOS", "feats": "UFeats", "alltags": "AllTags", "lemma": "Lemmas"}
RAW_ROWS = {"words": "Words", "sentences": "Sentences", "upos": "UPOS"}
STEPS = ("ours", "udpipe1")
GOLD_COLUMNS = {"upos": 3, "xpos": 4, "feats": 5, "lemma": 2}  # CoNLL-U field of each scored column


def treebanks(data_dir: Path, extra: dict) -> dict[str, dict[str, Path]]:
    """Code -> ``{"train", "dev", "folder"}``: the release folders under ``data_dir`` with
    a train and a dev split, and ``extra``'s pairs (paths relative to ``data_dir``)."""
    found = {}
    for folder in sorted(data_dir.glob("UD_*")):
        train = sorted(folder.glob("*-ud-train*.conllu"))
        dev = sorted(folder.glob("*-ud-dev.conllu"))
        if train and dev:
            code = train[0].name.split("-ud-")[0]
            found[code] = {"train": train, "dev": dev[0], "folder": folder}
    for code, pair in extra.items():
        train, dev = data_dir / pair["train"], data_dir / pair["dev"]
        if train.is_file() and dev.is_file():
            found[code] = {"train": [train], "dev": dev, "folder": train.parent}
    return found


def run_step(record_path: Path, command: list[str], log: Path) -> dict:
    """Run ``command`` (unless ``record_path`` exists), its output in ``log``; the record
    holds its wall and CPU seconds (the process tree's user + system time)."""
    if record_path.is_file():
        return json.loads(record_path.read_text())
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(log, "w") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}); see {log}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    record = {"command": command, "wall_s": round(time.perf_counter() - start, 1), "cpu_s": round(cpu, 1)}
    record_path.write_text(json.dumps(record, indent=2) + "\n")
    return record


def train_flags(entry: dict[str, Path]) -> list[str]:
    return ["--train-file", *map(str, entry["train"]), "--dev-file", str(entry["dev"])]


def run_ours(entry: dict[str, Path], out: Path) -> dict:
    model, python = out / "ours", sys.executable
    train = run_step(
        out / "ours.train.json",
        [python, "scripts/train_pos.py", "recipes/ud.json", *train_flags(entry), "--output-dir", str(model)],
        out / "ours.train.log",
    )
    segmenter = run_step(
        out / "ours.segmenter.json",
        [python, "scripts/train_segmenter.py", *train_flags(entry), "--output-dir", str(model)],
        out / "ours.segmenter.log",
    )
    blanked = out / "dev.blanked.conllu"
    blanked.write_text(Conllu.read(entry["dev"]).blanked(), encoding="utf-8")
    raw = out / "dev.txt"
    raw.write_text(ConlluDocument.read(entry["dev"]).text(), encoding="utf-8")
    tag = [python, "scripts/tag.py", str(model), "--quiet", "--no-progress"]
    gold = run_step(
        out / "ours.gold.json",
        [*tag, "--input", str(blanked), "--input-format", "conllu", "--output", str(out / "ours.gold.conllu")],
        out / "ours.gold.log",
    )
    text = run_step(
        out / "ours.raw.json",
        [*tag, "--input", str(raw), "--output", str(out / "ours.raw.conllu")],
        out / "ours.raw.log",
    )
    return {"train": train, "segmenter": segmenter, "gold": gold, "raw": text}


def run_udpipe1(entry: dict[str, Path], out: Path, tokenizer_options: str) -> dict:
    """UDPipe 1's tagger on the gold words, and its tokenizer on the raw text, whose words
    the tagger then tags (``udpipe1.raw.tagged.conllu``)."""
    folder = out / "udpipe1"
    command = [sys.executable, "benchmarks/peers/udpipe1.py", *train_flags(entry), "--output-dir", str(folder)]
    train = run_step(out / "udpipe1.train.json", command, out / "udpipe1.log")
    tokenizer = run_step(
        out / "udpipe1.tokenizer.json",
        [*command, "--tokenizer", "--tokenizer-options", tokenizer_options],
        out / "udpipe1.tokenizer.log",
    )
    tagged = folder / "udpipe1.raw.tagged.conllu"
    if not tagged.is_file():
        from ufal import udpipe  # a peer, measured here only

        model = udpipe.Model.load(str(folder / "udpipe1.model"))
        pipeline = udpipe.Pipeline(model, "conllu", udpipe.Pipeline.DEFAULT, udpipe.Pipeline.NONE, "conllu")
        error = udpipe.ProcessingError()
        output = pipeline.process((folder / "udpipe1.raw.conllu").read_text(encoding="utf-8"), error)
        if error.occurred():
            raise RuntimeError(f"UDPipe 1 could not tag its tokenizer's output: {error.message}")
        tagged.write_text(output, encoding="utf-8")
    return {"train": train, "tokenizer": tokenizer}


def empty_columns(gold: Path) -> set[str]:
    """The scored columns that ``gold`` leaves ``_`` on every word."""
    filled = set()
    for sentence in Conllu.read(gold).words():
        for fields in sentence:
            filled |= {column for column, index in GOLD_COLUMNS.items() if fields[index] != "_"}
    return set(GOLD_COLUMNS) - filled


def scores(gold: Path, predicted: Path, rows: dict[str, str], empty: set[str]) -> dict[str, float | None]:
    result = score(ConlluDocument.read(gold), ConlluDocument.read(predicted), tuple(rows))
    shown = {}
    for row, title in rows.items():
        missing = row in empty or (row == "alltags" and {"upos", "xpos", "feats"} <= empty)
        shown[title] = None if missing else round(100 * result[row]["f1"], 2)
    return shown


def udpipe2_figures(path: Path | None) -> dict[str, dict[str, dict[str, str]]]:
    """``language-treebank`` -> mode -> column -> figure, from UDPipe 2's published table."""
    if path is None or not path.is_file():
        return {}
    figures: dict[str, dict[str, dict[str, str]]] = {}
    header: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells and cells[0] == "Model":
            header = cells
        elif header and len(cells) == len(header) and re.match(r"[a-z_]+-[a-z]+-ud-", cells[0]):
            name = cells[0].split("-ud-")[0]
            figures.setdefault(name, {})[cells[1]] = dict(zip(header, cells))
    return figures


def udpipe2_name(entry: dict[str, Path]) -> str:
    """``UD_Old_East_Slavic-Birchbark`` -> ``old_east_slavic-birchbark``."""
    return entry["folder"].name.removeprefix("UD_").lower()


def table(code: str, entry: dict[str, Path], result: dict, udpipe2: dict) -> list[str]:
    lines = [f"### {entry['folder'].name} (`{code}`)", ""]
    lines.append("| tagger | " + " | ".join(GOLD_ROWS.values()) + " | raw: Words | Sentences | UPOS | CPU min |")
    lines.append("|---|" + "---:|" * (len(GOLD_ROWS) + 4))

    def cell(value):
        return "–" if value is None else f"{value:.2f}"

    for name in ("ours", "udpipe1"):
        row = result.get(name)
        if not row:
            continue
        gold = [cell(row["gold"].get(title)) for title in GOLD_ROWS.values()]
        raw = [cell(row.get("raw", {}).get(title)) for title in RAW_ROWS.values()] if row.get("raw") else ["", "", ""]
        lines.append(f"| {name} | " + " | ".join(gold + raw) + f" | {row['cpu_min']:.1f} |")
    published = udpipe2.get(udpipe2_name(entry), {})
    if published:
        gold_row = published.get("Gold tokenization", {})
        raw_row = published.get("Raw text", {})
        gold = [gold_row.get({"Lemmas": "Lemma"}.get(t, t), "") for t in GOLD_ROWS.values()]
        raw = [raw_row.get(t, "") for t in ("Words", "Sents", "UPOS")]
        lines.append("| UDPipe 2 + mBERT (published, UD 2.17 test) | " + " | ".join(gold + raw) + " | |")
    return [*lines, ""]


def summary(found: dict, all_scores: dict) -> list[str]:
    """One row per treebank, each cell ``ours / UDPipe 1`` (gold words; raw text), and the
    mean UPOS margin over the treebanks both have scored."""
    columns = [("gold", t) for t in GOLD_ROWS.values()] + [("raw", "Words"), ("raw", "Sentences")]
    lines = [
        "| treebank | " + " | ".join(("raw " if mode == "raw" else "") + t for mode, t in columns) + " | CPU min |",
        "|---|" + "---:|" * (len(columns) + 1),
    ]
    margins = []

    def pair(mode: str, title: str, ours: dict, peer: dict) -> str:
        a, b = ours.get(mode, {}).get(title), peer.get(mode, {}).get(title)
        if a is None and b is None:
            return "–"
        return f"{'' if a is None else f'{a:.2f}'} / {'' if b is None else f'{b:.2f}'}"

    for code, result in all_scores.items():
        ours, peer = result.get("ours", {}), result.get("udpipe1", {})
        cells = [pair(mode, title, ours, peer) for mode, title in columns]
        cpu = f"{ours.get('cpu_min', 0):.1f} / {peer.get('cpu_min', 0):.1f}"
        lines.append(f"| {found[code]['folder'].name.removeprefix('UD_')} | " + " | ".join(cells) + f" | {cpu} |")
        if ours.get("gold", {}).get("UPOS") is not None and peer.get("gold", {}).get("UPOS") is not None:
            margins.append(ours["gold"]["UPOS"] - peer["gold"]["UPOS"])
    if margins:
        lines.append("")
        lines.append(
            f"Mean UPOS margin, ours - UDPipe 1, over {len(margins)} treebanks: {sum(margins) / len(margins):+.2f}"
        )
    return [*lines, ""]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=os.environ.get("UD_DIR"), help="folder of UD_* folders ($UD_DIR)")
    parser.add_argument("--output-dir", default="runs/multilingual")
    parser.add_argument("--treebanks", nargs="+", help="treebank codes (default: every one found)")
    parser.add_argument("--steps", nargs="+", choices=STEPS, default=list(STEPS), help="what to run")
    parser.add_argument(
        "--udpipe-tokenizer-options", default="", help="UDPipe 1's tokenizer options (default: its own defaults)"
    )
    parser.add_argument("--udpipe2", help="UDPipe 2's published table (../shared/data/udpipe2-ud217.md)")
    args = parser.parse_args(argv)
    if not args.data_dir or not Path(args.data_dir).is_dir():
        parser.error(f"--data-dir {args.data_dir}: no such folder (or set UD_DIR)")
    extra = json.loads((ROOT / "benchmarks" / "multilingual.json").read_text())
    found = treebanks(Path(args.data_dir), extra)
    codes = args.treebanks or sorted(found)
    unknown = [code for code in codes if code not in found]
    if unknown:
        parser.error(f"--treebanks: {', '.join(unknown)} not found under {args.data_dir}")
    output = Path(args.output_dir)
    udpipe2 = udpipe2_figures(Path(args.udpipe2) if args.udpipe2 else None)
    for code in codes:
        entry, out = found[code], output / code
        out.mkdir(parents=True, exist_ok=True)
        empty = empty_columns(entry["dev"])
        if "ours" in args.steps:
            steps = run_ours(entry, out)
            result = {
                "gold": scores(entry["dev"], out / "ours.gold.conllu", GOLD_ROWS, empty),
                "raw": scores(entry["dev"], out / "ours.raw.conllu", RAW_ROWS, empty),
                "cpu_min": (steps["train"]["cpu_s"] + steps["segmenter"]["cpu_s"]) / 60,
            }
            (out / "ours.scores.json").write_text(json.dumps(result, indent=2) + "\n")
            print(json.dumps({code: {"ours": result}}), flush=True)
        if "udpipe1" in args.steps:
            steps = run_udpipe1(entry, out, args.udpipe_tokenizer_options)
            result = {
                "gold": scores(entry["dev"], out / "udpipe1" / "udpipe1.dev.conllu", GOLD_ROWS, empty),
                "raw": scores(entry["dev"], out / "udpipe1" / "udpipe1.raw.tagged.conllu", RAW_ROWS, empty),
                "cpu_min": (steps["train"]["cpu_s"] + steps["tokenizer"]["cpu_s"]) / 60,
            }
            (out / "udpipe1.scores.json").write_text(json.dumps(result, indent=2) + "\n")
            print(json.dumps({code: {"udpipe1": result}}), flush=True)
    # Every treebank scored so far, by this command or an earlier one (the steps may run apart).
    all_scores = {
        code: {
            step: json.loads((output / code / f"{step}.scores.json").read_text())
            for step in STEPS
            if (output / code / f"{step}.scores.json").is_file()
        }
        for code in sorted(found)
    }
    all_scores = {code: result for code, result in all_scores.items() if result}
    (output / "scores.json").write_text(json.dumps(all_scores, indent=2) + "\n")
    lines = ["## Every treebank: ours / UDPipe 1 (dev)", "", *summary(found, all_scores)]
    lines += [line for code, result in all_scores.items() for line in table(code, found[code], result, udpipe2)]
    (output / "scores.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
