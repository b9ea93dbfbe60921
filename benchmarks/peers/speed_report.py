"""The record of ``speed.py`` written out: the machine and checkout it ran on, the markdown
tables and the plot (accuracy against words per CPU second, our compression settings
joined by a line)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

COLUMNS = {"upos": "UPOS", "xpos": "XPOS", "feats": "UFeats", "alltags": "AllTags", "lemma": "Lemmas"}
UNITS = {"tokens": "Tokens", "sentences": "Sentences", "words": "Words"}


def environment() -> dict:
    import torch

    versions = {"python": platform.python_version(), "torch": torch.__version__}
    for module, name in (
        ("spacy", "spacy"),
        ("transformers", "transformers"),
        ("cont_transformer", "cont_transformer"),
    ):
        if module in sys.modules:
            versions[name] = getattr(sys.modules[module], "__version__", None)
    if "ufal.udpipe" in sys.modules:
        versions["ufal.udpipe"] = "{0.major}.{0.minor}.{0.patch}".format(sys.modules["ufal.udpipe"].Version.current())
    from cont_transformer.runtime.measuring import cpu_model

    return {
        "versions": versions,
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
    }


def git_state() -> dict | None:
    """The commit of the package's checkout and whether it has changes (None outside git)."""
    import cont_transformer

    root = Path(cont_transformer.__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        status = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return {"commit": commit.stdout.strip(), "changed": bool(status.stdout.strip())}


def ratio(value: float | None, reference: float | None) -> float | None:
    return None if value is None or not reference else value / reference


def rows(record: dict) -> list[dict]:
    """One row per tagger with the table's values (None where not measured)."""
    spacy = next((t for t in record["taggers"] if t["key"] == "spacy"), None)
    result = []
    for tagger in record["taggers"]:
        gold, raw = tagger["gold"], tagger["raw"]
        row = {"tagger": tagger["name"], "setting": tagger["setting"], **gold["accuracy"]}
        row["gold_wps"] = gold["words_per_cpu_second"]
        row["gold_ratio"] = ratio(row["gold_wps"], spacy and spacy["gold"]["words_per_cpu_second"])
        row["raw_wps"] = raw and raw["words_per_cpu_second"]
        row["raw_ratio"] = ratio(row["raw_wps"], spacy and spacy["raw"] and spacy["raw"]["words_per_cpu_second"])
        row["peak_mib"] = tagger["peak_mib"]
        result.append(row)
    return result


def cell(value, digits: int = 2) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    return f"{value:,.0f}" if digits == 0 else f"{value:.{digits}f}"


def markdown(record: dict) -> str:
    words = record["gold_words"]
    lines = [
        f"# Peer taggers side by side: {Path(record['dev_file']).name}",
        "",
        f"`{record['command']}`",
        "",
        (
            f"{words:,} gold words; {record['rounds']} rounds, median; one thread; CPU {record['environment']['cpu']}; "
            f"load average {record['load_average']['start'][0]:.2f} at start, {record['load_average']['end'][0]:.2f} at end. "
            f"Peak MiB: a child that loads the tagger alone and tags the gold pass once "
            f"(the libraries alone: {record['floor_peak_mib']:.0f} MiB)."
        ),
        "",
        (
            "| tagger | setting | UPOS | XPOS | UFeats | AllTags | Lemmas | gold words/CPU-s | ratio to spaCy "
            "| raw words/CPU-s | ratio to spaCy | peak MiB |"
        ),
        "|---|---|" + "---:|" * 10,
    ]
    for row in rows(record):
        values = [row[t] for t in COLUMNS.values()]
        lines.append(
            f"| {row['tagger']} | {row['setting']} | "
            + " | ".join(cell(v) for v in values)
            + f" | {cell(row['gold_wps'], 0)} | {cell(row['gold_ratio'])} | {cell(row['raw_wps'], 0)} "
            f"| {cell(row['raw_ratio'])} | {cell(row['peak_mib'], 0)} |"
        )
    lines += [
        "",
        "Raw text (one text per `# newdoc`, sentences joined by a space), F1 against gold:",
        "",
        "| tagger | setting | " + " | ".join([*UNITS.values(), *COLUMNS.values()]) + " | words/s wall | note |",
        "|---|---|" + "---:|" * (len(UNITS) + len(COLUMNS) + 1) + "---|",
    ]
    for tagger in record["taggers"]:
        raw = tagger["raw"] or {
            "accuracy": dict.fromkeys([*UNITS.values(), *COLUMNS.values()]),
            "words_per_second": None,
        }
        lines.append(
            f"| {tagger['name']} | {tagger['setting']} | "
            + " | ".join(cell(v) for v in raw["accuracy"].values())
            + f" | {cell(raw['words_per_second'], 0)} | {tagger['raw_note'] or ''} |"
        )
    lines += [
        "",
        "| tagger | setting | load CPU s | gold words/s wall |",
        "|---|---|---:|---:|",
    ]
    for tagger in record["taggers"]:
        load = tagger["load"]
        load_cpu = (
            load["base"]["cpu_seconds"] + load["compression"]["cpu_seconds"] if "base" in load else load["cpu_seconds"]
        )
        lines.append(
            f"| {tagger['name']} | {tagger['setting']} | {load_cpu:.1f} | {cell(tagger['gold']['words_per_second'], 0)} |"
        )
    return "\n".join(lines) + "\n"


def plot(record: dict, path: Path) -> None:
    """AllTags against words per CPU second: gold tokens (left), raw text (right)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(13, 5.5))
    for axis, kind, title in ((axes[0], "gold", "gold tokens"), (axes[1], "raw", "raw text (F1)")):
        line = []
        for index, tagger in enumerate(record["taggers"]):
            result = tagger[kind]
            if result is None or result["accuracy"]["AllTags"] is None:
                continue
            x, y = result["words_per_cpu_second"], result["accuracy"]["AllTags"]
            if tagger["line"]:
                k, n = tagger["line"]
                line.append((x, y, f"K={k}, N_T={n}"))
                continue
            axis.scatter([x], [y], zorder=3, color=f"C{index % 10}")  # a tagger's colour in both panels
            label = f"{tagger['name']}\n{tagger['setting']}"
            axis.annotate(label, (x, y), textcoords="offset points", xytext=(6, 4), fontsize=8).set_in_layout(False)
        if line:
            xs, ys, _ = zip(*line)
            axis.plot(xs, ys, "o-", color="black", zorder=2, label=f"ours compressed ({record['line']})")
            for x, y, label in line:
                axis.annotate(label, (x, y), textcoords="offset points", xytext=(6, -12), fontsize=8)
            axis.legend(loc="best", fontsize=8)
        axis.set_xscale("log")
        axis.margins(x=0.3, y=0.1)
        axis.set_xlabel("words per CPU second (one thread, log scale)")
        axis.set_ylabel("AllTags (%)")
        axis.set_title(f"{Path(record['dev_file']).name}, {title}")
        axis.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


# --- main --------------------------------------------------------------------------------
