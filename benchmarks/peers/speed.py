"""Side-by-side speed of the peer taggers on one dev file, in one process, one thread.

The taggers (each optional; what is given is measured): spaCy (``--spacy-model``, the
``model-best`` of spacy_ud.py), UDPipe 1 (``--udpipe-model``, the model of udpipe1.py),
ours (``--ours NAME=FOLDER[:bf16|:float32]``, repeatable) and our compression line
(``--line FOLDER[:dtype]`` compressed in process to each ``--line-settings K,N_T``).

Every tagger is loaded first (its load seconds reported) and warmed up (one untimed pass
of each kind on the first 50 sentences). Then ``--rounds`` rounds: in each,
every tagger does a **gold-token pass** and a **raw-text pass**, the order of the taggers
rotated by one each round and gold/raw alternating first, so slow drifts of a shared
machine fall on all alike. Per pass, ``time.process_time()`` and ``time.perf_counter()``;
reported: the median over rounds of words per CPU second and per wall second.

* Gold-token pass: the dev CoNLL-U with LEMMA/UPOS/XPOS/FEATS blanked (``Conllu.blanked``)
  in, a CoNLL-U string out; timed from that string to that string (reading, tagging,
  writing) for every tagger. spaCy: Docs of the gold words and spaces (spacy_ud.py's
  ``make_docs``), ``nlp.pipe(docs, batch_size=256)``, ``Conllu.with_tags``. UDPipe:
  ``Pipeline(model, "conllu", DEFAULT, NONE, "conllu").process``. Ours: what
  ``scripts/tag.py --input-format conllu`` does, ``tag_file`` (its streaming reader, the
  model, its CoNLL-U writer).
* Raw-text pass: one text per ``# newdoc`` of the dev file, its sentences' ``# text``
  joined by one space (paragraph breaks and the gold SpaceAfter between sentences are not
  kept); a CoNLL-U string out. spaCy: ``nlp.pipe(texts)`` (its tokenizer, then the
  pipeline; the pipeline has no sentence splitter, so each text is one sentence unless
  ``doc.sents`` is set). Ours: what ``scripts/tag.py`` does with the texts as one input,
  a blank line between them (``tag_file``: segmentation, the model, CoNLL-U). UDPipe: not measured
  (its model is trained with tokenizer ``none``: it has no tokenizer).
  Words per second count the gold words of the same text, so they compare with the gold pass.

Accuracy: each tagger's outputs scored against gold with the package's CoNLL 2018 scorer
(``cont_transformer.tagging.scoring``, as score.py): UPOS, XPOS, UFeats, AllTags, Lemmas
(F1; on gold tokens it is the accuracy), and Tokens/Sentences/Words F1 for raw text.

Peak memory (after the rounds; the children side by side, one per core): per tagger, a child
process of this script (``--memory-of``) imports every library of the run, loads that tagger
alone, does the gold pass once and reports its peak RSS: ``VmHWM`` of ``/proc/self/status``
(the kernel carries ``ru_maxrss`` over ``exec``, so a child forked from this large process
would report this one's size; ``ru_maxrss`` where there is no ``/proc``). A child that only
imports the libraries gives the floor. A point of the line compresses the loaded model, so
its peak holds that model too.

Writes under ``--output-dir``: ``speed.json`` (everything, with the command, versions,
CPU model and load average), ``speed.md`` (tables) and ``speed.png`` (accuracy against
words per CPU second; our compression settings joined by a line).

    OMP_NUM_THREADS=1 python benchmarks/peers/speed.py --dev-file .../en_gum-ud-dev.conllu \\
        --spacy-model runs/peers/spacy/model/model-best --udpipe-model runs/peers/udpipe1/udpipe1.model \\
        --ours ours=runs/pos-en:bf16 --line runs/pos-en:bf16 --line-settings 16,16 8,8 4,4 \\
        --rounds 3 --output-dir runs/peers/speed
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from common import Conllu, existing_file
from speed_report import COLUMNS, UNITS, environment, git_state, markdown, plot

DTYPES = ("bf16", "float32")
SPACY_BATCH = 256
FLOOR = "floor"
WARM_UP_SENTENCES, WARM_UP_CHARACTERS = 50, 2000


@dataclass
class Peer:
    """A loaded tagger: its two passes (CoNLL-U text -> CoNLL-U text; texts -> CoNLL-U text)."""

    key: str  # the --memory-of name
    name: str  # the table's tagger column
    setting: str
    gold_pass: Callable[[str], str]
    raw_pass: Callable[[list[str]], str] | None
    columns: tuple[str, ...]  # the scored columns it predicts
    raw_note: str | None = None
    line: tuple[int, int] | None = None  # (K, N_T) of a point of our line
    load: dict = field(default_factory=dict)


# --- arguments ---------------------------------------------------------------------------


def folder_and_dtype(parser: argparse.ArgumentParser, value: str, option: str) -> tuple[Path, str | None]:
    """``FOLDER[:bf16|:float32]`` -> (folder, dtype name or None: as saved)."""
    folder, _, dtype = value.rpartition(":")
    if not folder or dtype not in DTYPES:
        folder, dtype = value, None
    if not Path(folder).is_dir():
        parser.error(f"{option} {value}: {folder} is not a model folder")
    return Path(folder), dtype


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dev-file", required=True, help="gold CoNLL-U (GUM dev)")
    parser.add_argument("--spacy-model", metavar="DIR", help="spaCy's model-best (spacy_ud.py)")
    parser.add_argument("--udpipe-model", metavar="FILE", help="UDPipe 1 model (udpipe1.py)")
    parser.add_argument(
        "--ours", action="append", default=[], metavar="NAME=FOLDER[:bf16|:float32]", help="our tagger (repeatable)"
    )
    parser.add_argument("--line", metavar="FOLDER[:bf16|:float32]", help="our model compressed to --line-settings")
    parser.add_argument(
        "--line-settings", nargs="+", default=["16,16", "8,8", "4,4"], metavar="K,N_T", help="(default: %(default)s)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds, median reported (default: %(default)s)")
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--memory-of", help=argparse.SUPPRESS)  # a child: one tagger's peak RSS
    args = parser.parse_args(argv)
    args.dev_file = existing_file(parser, args.dev_file, "--dev-file")
    if args.spacy_model is not None and not (Path(args.spacy_model) / "meta.json").is_file():
        parser.error(f"--spacy-model {args.spacy_model}: not a spaCy model folder (no meta.json)")
    if args.udpipe_model is not None:
        args.udpipe_model = existing_file(parser, args.udpipe_model, "--udpipe-model")
    ours = {}
    for spec in args.ours:
        name, equals, value = spec.partition("=")
        if not equals or not name or not value:
            parser.error(f"--ours {spec}: expected NAME=FOLDER[:bf16|:float32]")
        if name in ours:
            parser.error(f"--ours {spec}: the name {name!r} is given twice")
        ours[name] = folder_and_dtype(parser, value, "--ours")
    args.ours = ours
    args.line = None if args.line is None else folder_and_dtype(parser, args.line, "--line")
    settings = []
    for setting in args.line_settings:
        try:
            k, n = (int(v) for v in setting.split(","))
        except ValueError:
            parser.error(f"--line-settings {setting}: expected K,N_T (two integers)")
        if k < 1 or n < 1:
            parser.error(f"--line-settings {setting}: K and N_T must be >= 1")
        settings.append((k, n))
    args.line_settings = settings
    if args.rounds < 1:
        parser.error(f"--rounds {args.rounds}: must be >= 1")
    if args.spacy_model is None and args.udpipe_model is None and not ours and args.line is None:
        parser.error("no tagger: give --spacy-model, --udpipe-model, --ours or --line")
    return args


# --- texts ------------------------------------------------------------------------------


def raw_texts(gold: Conllu) -> list[str]:
    """One text per ``# newdoc`` (the whole file if it has none): its sentences' ``# text``
    joined by one space."""
    texts: list[list[str]] = []
    for line in gold.lines:
        if line.startswith("# newdoc") or (not texts and line.startswith("# text = ")):
            texts.append([])
        if line.startswith("# text = "):
            texts[-1].append(line[len("# text = ") :].strip())
    if sum(map(len, texts)) != len(gold.sentences):
        raise ValueError(f"{gold.name}: {len(gold.sentences) - sum(map(len, texts))} sentences have no '# text = '")
    return [" ".join(sentences) for sentences in texts if sentences]


# --- the taggers ------------------------------------------------------------------------


def spacy_raw_conllu(docs) -> str:
    """spaCy Docs of raw texts as CoNLL-U (the package's writer): one sentence per Doc, or
    per ``doc.sents`` when a component set sentence starts; whitespace tokens left out."""
    from spacy_ud import conllu_feats

    from cont_transformer.tagging.conllu_document import format_text_sentence

    blocks, number = [], 0
    for doc in docs:
        sentences = doc.sents if doc.has_annotation("SENT_START") else [doc[:]]
        for span in sentences:
            tokens = [t for t in span if not t.is_space]
            if not tokens:
                continue
            number += 1
            columns = {
                "lemma": [t.lemma_ or "_" for t in tokens],
                "upos": [t.pos_ or "_" for t in tokens],
                "xpos": [t.tag_ or "_" for t in tokens],
                "feats": [conllu_feats(str(t.morph)) for t in tokens],
            }
            spans = [(t.idx, t.idx + len(t.text)) for t in tokens]
            blocks.append(format_text_sentence(str(number), doc.text, spans, columns, first=number == 1))
    return "".join(blocks)


def load_spacy(folder: str) -> Peer:
    import spacy
    from spacy_ud import conllu_feats, make_docs

    nlp = spacy.load(folder)

    def gold_pass(text: str) -> str:
        conllu = Conllu(text)
        docs = nlp.pipe(make_docs(nlp.vocab, conllu, annotated=False), batch_size=SPACY_BATCH)
        tags = [[(t.lemma_, t.pos_, t.tag_, conllu_feats(str(t.morph))) for t in doc] for doc in docs]
        return conllu.with_tags(tags)

    def raw_pass(texts: list[str]) -> str:
        return spacy_raw_conllu(nlp.pipe(texts, batch_size=SPACY_BATCH))

    sentences = "doc.sents" if "senter" in nlp.pipe_names or "parser" in nlp.pipe_names else "one per text"
    return Peer(
        "spacy",
        f"spaCy {spacy.__version__}",
        f"{Path(folder).name}, batch {SPACY_BATCH}",
        gold_pass,
        raw_pass,
        tuple(COLUMNS),
        raw_note=f"spaCy's tokenizer; sentences: {sentences}",
    )


def load_udpipe(path: Path) -> Peer:
    from udpipe1 import udpipe

    model = udpipe.Model.load(str(path))
    if model is None:
        raise ValueError(f"--udpipe-model {path}: not a UDPipe model")
    pipeline = udpipe.Pipeline(model, "conllu", udpipe.Pipeline.DEFAULT, udpipe.Pipeline.NONE, "conllu")

    def gold_pass(text: str, model=model) -> str:  # the pipeline points into the model: keep it alive
        error = udpipe.ProcessingError()
        output = pipeline.process(text, error)
        if error.occurred():
            raise ValueError(f"--udpipe-model {path}: tagging failed: {error.message}")
        return output

    return Peer(
        "udpipe",
        "UDPipe 1",
        "default tagger",
        gold_pass,
        None,
        tuple(COLUMNS),
        raw_note="not measured: the model was trained with tokenizer 'none' (udpipe1.py), so it has no tokenizer",
    )


def torch_dtype(name: str | None):
    import torch

    return {None: None, "bf16": torch.bfloat16, "float32": torch.float32}[name]


def our_peer(key: str, name: str, setting: str, tagger, line: tuple[int, int] | None = None) -> Peer:
    from cont_transformer.tagging.tag_files import tag_file

    def tagged(text: str, input_format: str) -> str:
        """What ``scripts/tag.py --input-format FORMAT`` writes for ``text``."""
        pieces: list[str] = []
        tag_file(tagger, None, os.devnull, input_format=input_format, progress=False, text=text, also=pieces.append)
        return "".join(pieces)

    def gold_pass(text: str) -> str:
        return tagged(text, "conllu")

    def raw_pass(texts: list[str]) -> str:
        return tagged("\n\n".join(texts), "text")  # a blank line between documents: paragraphs

    columns = tuple(c for c in COLUMNS if c in tagger.columns)
    if {"upos", "xpos", "feats"} <= set(tagger.columns):
        columns = (*columns, "alltags")
    return Peer(key, name, setting, gold_pass, raw_pass, columns, raw_note="our segmenter", line=line)


def model_setting(model, dtype: str | None) -> str:
    config = model.config
    return f"K={config.num_basis}, N_T={config.num_steps}, {dtype or str(next(model.parameters()).dtype)[6:]}"


def load_ours(name: str, folder: Path, dtype: str | None) -> Peer:
    from cont_transformer import Tagger

    tagger = Tagger.from_pretrained(folder, device="cpu", dtype=torch_dtype(dtype))
    return our_peer(f"ours:{name}", name, model_setting(tagger.model, dtype), tagger)


def load_line(folder: Path, dtype: str | None, settings: list[tuple[int, int]]) -> list[Peer]:
    """Our model compressed in process to each (K, N_T): compressed in float32, then cast to
    ``dtype`` (None: the precision ``Tagger.from_pretrained`` picks here,
    ``inference_dtype``). Each point's load time is the compression's (the base model's
    load is timed once, as ``line base``)."""
    import torch

    from cont_transformer import Tagger
    from cont_transformer.pretrained import inference_dtype
    from cont_transformer.runtime.compressed_copies import compressed_copy

    base = Tagger.from_pretrained(folder, device="cpu", dtype=torch.float32)
    cast = torch_dtype(dtype) or inference_dtype(torch.device("cpu"))
    peers = []
    for k, n in settings:
        start = time.process_time(), time.perf_counter()
        try:
            model = compressed_copy(base.model, num_basis=k, num_steps=n)
        except ValueError as err:
            raise ValueError(f"--line-settings {k},{n}: {err}") from err
        if cast is not None:
            model = model.to(cast)
        tagger = Tagger(model, base.tokenizer, column=base.column)
        peer = our_peer(f"line:{k},{n}", f"ours ({folder.name})", model_setting(model, dtype), tagger, (k, n))
        peer.load = elapsed(start)
        peers.append(peer)
    return peers


def elapsed(start: tuple[float, float]) -> dict:
    return {"cpu_seconds": time.process_time() - start[0], "seconds": time.perf_counter() - start[1]}


def load_peers(args: argparse.Namespace, only: str | None = None) -> list[Peer]:
    """Every tagger of the command line (or the one of key ``only``), each with its load times."""
    wanted = (
        ([("spacy", lambda: [load_spacy(args.spacy_model)])] if args.spacy_model else [])
        + ([("udpipe", lambda: [load_udpipe(args.udpipe_model)])] if args.udpipe_model else [])
        + [(f"ours:{n}", lambda n=n, f=f, d=d: [load_ours(n, f, d)]) for n, (f, d) in args.ours.items()]
    )
    if args.line is not None:
        folder, dtype = args.line
        for k, n in args.line_settings:
            if only == f"line:{k},{n}":
                wanted.append((only, lambda s=(k, n): load_line(folder, dtype, [s])))
        if only is None:
            wanted.append(("line", lambda: load_line(folder, dtype, args.line_settings)))
    peers = []
    for key, load in wanted:
        if only is not None and key != only:
            continue
        start = time.process_time(), time.perf_counter()
        loaded = load()
        times = elapsed(start)
        for peer in loaded:
            peer.load = {"base": times, "compression": peer.load} if peer.line else times
        peers.extend(loaded)
    if only is not None and not peers:
        raise ValueError(f"--memory-of {only}: no such tagger on this command line")
    return peers


def import_libraries(args: argparse.Namespace) -> None:
    """Import every library the run uses (the floor of the memory children)."""
    if args.spacy_model:
        import spacy  # noqa: F401
        import spacy_ud  # noqa: F401
    if args.udpipe_model:
        import udpipe1  # noqa: F401
    import torch

    torch.set_num_threads(1)
    if args.ours or args.line:
        from cont_transformer import Document, Tagger  # noqa: F401
        from cont_transformer.runtime.compressed_copies import compressed_copy  # noqa: F401
    from cont_transformer.tagging.scoring import score  # noqa: F401


# --- measuring ---------------------------------------------------------------------------


def pass_order(peers: list[Peer], round_index: int) -> list[tuple[Peer, str]]:
    """Round ``round_index``'s passes: the taggers rotated by the round, gold first in even rounds."""
    shift = round_index % len(peers)
    kinds = ("gold", "raw") if round_index % 2 == 0 else ("raw", "gold")
    return [(peer, kind) for peer in peers[shift:] + peers[:shift] for kind in kinds]


def timed(function: Callable, argument) -> tuple[str, float, float]:
    gc.collect()
    cpu, wall = time.process_time(), time.perf_counter()
    output = function(argument)
    return output, time.process_time() - cpu, time.perf_counter() - wall


def warm_up(peers: list[Peer], gold: Conllu, texts: list[str]) -> None:
    """One untimed pass of each kind on the first ``WARM_UP_SENTENCES`` sentences (the first
    text's first ``WARM_UP_CHARACTERS``), so that first-call costs stay out of round one."""
    sentences = gold.sentences[:WARM_UP_SENTENCES]
    sample = Conllu("\n".join(gold.lines[: sentences[-1][-1] + 1]) + "\n").blanked()
    for peer in peers:
        peer.gold_pass(sample)
        if peer.raw_pass is not None:
            peer.raw_pass([texts[0][:WARM_UP_CHARACTERS]])


def measure(peers: list[Peer], blanked: str, texts: list[str], rounds: int) -> dict[str, dict]:
    """Per tagger key: the CPU and wall seconds of each pass kind in each round, and its outputs."""
    results = {p.key: {"gold": {"cpu": [], "wall": []}, "raw": {"cpu": [], "wall": []}, "output": {}} for p in peers}
    for round_index in range(rounds):
        for peer, kind in pass_order(peers, round_index):
            function, argument = (peer.gold_pass, blanked) if kind == "gold" else (peer.raw_pass, texts)
            if function is None:
                continue
            output, cpu, wall = timed(function, argument)
            entry = results[peer.key]
            entry[kind]["cpu"].append(cpu)
            entry[kind]["wall"].append(wall)
            entry["output"][kind] = output
            print(f"round {round_index + 1}: {peer.key} {kind}: {cpu:.2f} CPU s, {wall:.2f} s", file=sys.stderr)
    return results


def accuracy(gold_text: str, output: str, columns: tuple[str, ...], units: bool, name: str) -> dict:
    """F1 in % of each scored column (None for a column the tagger does not predict), and of
    tokens, sentences and words when ``units``."""
    from cont_transformer.tagging.conllu_document import ConlluDocument
    from cont_transformer.tagging.scoring import score

    result = score(ConlluDocument(gold_text, "gold"), ConlluDocument(output, name), tuple(COLUMNS))
    values = {title: 100 * result[c]["f1"] if c in columns else None for c, title in COLUMNS.items()}
    if units:
        values = {**{title: 100 * result[u]["f1"] for u, title in UNITS.items()}, **values}
    return values


def speeds(times: dict, words: int) -> dict | None:
    if not times["cpu"]:
        return None
    return {
        "words_per_cpu_second": words / statistics.median(times["cpu"]),
        "words_per_second": words / statistics.median(times["wall"]),
        "cpu_seconds": times["cpu"],
        "seconds": times["wall"],
    }


def peak_memory(argv: list[str], keys: list[str]) -> dict[str, float]:
    """Peak RSS in MiB of a child of this script per key (``--memory-of``)."""
    import cont_transformer

    root = str(Path(cont_transformer.__file__).resolve().parents[1])
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
    }

    def child(key: str) -> float:
        command = [sys.executable, str(Path(__file__).resolve()), *argv, "--memory-of", key]
        result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        if result.returncode != 0:
            raise ValueError(f"--memory-of {key}: the child failed: {' '.join(result.stderr.split()[-40:])}")
        return json.loads(result.stdout.strip().splitlines()[-1])["peak_mib"]

    # Peak RSS is not a time: the children run side by side, one per core.
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        peaks = dict(zip(keys, pool.map(child, keys)))
    for key, peak in peaks.items():
        print(f"peak memory of {key}: {peak:.0f} MiB", file=sys.stderr)
    return peaks


def memory_child(args: argparse.Namespace) -> None:
    """Import the libraries, load the one tagger (none for the floor), tag the gold pass once,
    print the peak RSS."""
    import_libraries(args)
    if args.memory_of != FLOOR:
        gold = Conllu.read(args.dev_file)
        for peer in load_peers(args, only=args.memory_of):
            peer.gold_pass(gold.blanked())
    print(json.dumps({"key": args.memory_of, "peak_mib": peak_rss_mib()}))


def peak_rss_mib() -> float:
    """This process's peak resident set size in MiB (see the module docstring)."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> dict:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    if args.memory_of is not None:
        memory_child(args)
        return {}
    output_dir = Path(args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    load_start = os.getloadavg()
    import_libraries(args)
    gold = Conllu.read(args.dev_file)
    blanked, texts, words = gold.blanked(), raw_texts(gold), gold.num_words()
    peers = load_peers(args)
    for peer in peers:
        print(f"loaded {peer.key}: {peer.load}", file=sys.stderr)
    warm_up(peers, gold, texts)
    results = measure(peers, blanked, texts, args.rounds)
    gold_text = "\n".join(gold.lines) + "\n"
    taggers = []
    for peer in peers:
        result = results[peer.key]
        entry = {
            "key": peer.key,
            "name": peer.name,
            "setting": peer.setting,
            "line": peer.line,
            "load": peer.load,
            "gold": {
                **speeds(result["gold"], words),
                "words": words,
                "accuracy": accuracy(gold_text, result["output"]["gold"], peer.columns, False, f"{peer.key} gold"),
            },
            "raw": None,
            "raw_note": peer.raw_note,
        }
        if peer.raw_pass is not None:
            output = result["output"]["raw"]
            entry["raw"] = {
                **speeds(result["raw"], words),
                "words": words,
                "system_words": Conllu(output).num_words(),
                "accuracy": accuracy(gold_text, output, peer.columns, True, f"{peer.key} raw"),
            }
        taggers.append(entry)
    del peers, results
    gc.collect()
    peaks = peak_memory(argv, [FLOOR, *(t["key"] for t in taggers)])
    for tagger in taggers:
        tagger["peak_mib"] = peaks[tagger["key"]]
    record = {
        "command": shlex.join(["python", "benchmarks/peers/speed.py", *argv]),
        "git": git_state(),
        "dev_file": str(args.dev_file),
        "gold_words": words,
        "gold_sentences": len(gold.sentences),
        "raw_texts": len(texts),
        "rounds": args.rounds,
        "line": None if args.line is None else f"{args.line[0]}{':' + args.line[1] if args.line[1] else ''}",
        "environment": environment(),
        "load_average": {"start": load_start, "end": os.getloadavg()},
        "floor_peak_mib": peaks[FLOOR],
        "taggers": taggers,
        "notes": {
            "gold": "dev CoNLL-U with LEMMA/UPOS/XPOS/FEATS blanked in, CoNLL-U out: reading, tagging, writing timed",
            "raw": "one text per # newdoc, its sentences' # text joined by one space; words counted are gold words",
            "peak_mib": "peak RSS (VmHWM) of a child that imports the run's libraries, loads one tagger, tags the gold "
            "pass once (a point of the line: the saved model is loaded, then compressed, so the peak holds it too)",
            "speed": "median over rounds of gold words / process_time (CPU) and / perf_counter (wall)",
        },
    }
    (output_dir / "speed.json").write_text(json.dumps(record, indent=2) + "\n")
    (output_dir / "speed.md").write_text(markdown(record))
    plot(record, output_dir / "speed.png")
    print(markdown(record))
    return record


if __name__ == "__main__":
    for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[variable] = "1"  # one thread, before torch or numpy loads (children inherit it)
    from cont_transformer.tools.cli import run_cli

    run_cli(main)
