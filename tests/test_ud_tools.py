"""UD's own tools (``udtools``, the ``dev`` extra) on what the package writes and scores:
``tag.py``'s CoNLL-U passes UD's validator at the format levels (1 and 2, which need no
language's tables) for raw text, CoNLL-U and tokens in, and the package's CoNLL 2018 scorer
(``tagging/metrics/conll18``) counts as UD's ``udeval`` does."""

import argparse
import io

import pytest

from cont_transformer.tagging.conllu_document import ConlluDocument
from cont_transformer.tagging.metrics.conll18.ud_eval import ROWS, counts
from cont_transformer.tagging.tag import Tagger
from cont_transformer.tagging.tag_files import tag_file

udtools = pytest.importorskip("udtools", reason="UD's tools: pip install -e '.[dev]'")
udeval = pytest.importorskip("udtools.udeval")

TEXT = (
    'The old dog didn\'t see the bird. "Why?" she asked (quietly).\n\n'
    "A new paragraph, with 3.5 dogs and e.g. https://example.org/a_b -- it ends here!\n"
)
TOKENS = "The old dog did n't see the bird .\nWhy ?\n"
# A treebank's sentence: a whole tree, a multiword token, SpaceAfter, a sentence-level comment.
GOLD = """# newdoc id = d1
# sent_id = d1-1
# text = The old dog didn't see the bird.
1\tThe\tthe\tDET\tDT\tDefinite=Def|PronType=Art\t3\tdet\t_\t_
2\told\told\tADJ\tJJ\tDegree=Pos\t3\tamod\t_\t_
3\tdog\tdog\tNOUN\tNN\tNumber=Sing\t6\tnsubj\t_\t_
4-5\tdidn't\t_\t_\t_\t_\t_\t_\t_\t_
4\tdid\tdo\tAUX\tVBD\tMood=Ind|Tense=Past|VerbForm=Fin\t6\taux\t_\t_
5\tn't\tnot\tPART\tRB\tPolarity=Neg\t6\tadvmod\t_\t_
6\tsee\tsee\tVERB\tVB\tVerbForm=Inf\t0\troot\t_\t_
7\tthe\tthe\tDET\tDT\tDefinite=Def|PronType=Art\t8\tdet\t_\t_
8\tbird\tbird\tNOUN\tNN\tNumber=Sing\t6\tobj\t_\tSpaceAfter=No
9\t.\t.\tPUNCT\t.\t_\t6\tpunct\t_\t_

# sent_id = d1-2
# text = Why?
1\tWhy\twhy\tADV\tWRB\tPronType=Int\t0\troot\t_\tSpaceAfter=No
2\t?\t?\tPUNCT\t.\t_\t1\tpunct\t_\t_

"""
# A tagger predicts no tree: its HEAD is "_", which level 2 reports (and only that).
NO_TREE = ["invalid-head", "unknown-head"]


@pytest.fixture(scope="module")
def tagger(sample_run_60) -> Tagger:
    """The sample recipe's tagger (lemma, UPOS, XPOS and features, varying by word)."""
    return Tagger.from_pretrained(sample_run_60, device="cpu")


def tagged(tagger, tmp_path, text: str, input_format: str) -> str:
    """What tag.py writes as CoNLL-U for ``text`` given as ``input_format``."""
    source = tmp_path / f"in.{input_format}"
    source.write_text(text, encoding="utf-8")
    output = tmp_path / f"out.{input_format}.conllu"
    tag_file(tagger, source, output, input_format=input_format, progress=False)
    return output.read_text(encoding="utf-8")


def validate(tmp_path, conllu: str, level: int, exclude: list[str] = ()) -> str:
    """UD's validator (``udvalidate --lang ud --level LEVEL``) on ``conllu``: its report,
    which ends ``*** PASSED ***`` when it passes."""
    path = tmp_path / "validated.conllu"
    path.write_text(conllu, encoding="utf-8")
    report = io.StringIO()
    args = argparse.Namespace(exclude=list(exclude), max_err=0)
    state = udtools.Validator(lang="ud", level=level, args=args, output=report).validate_files([str(path)])
    return report.getvalue() + str(state)


@pytest.mark.parametrize(("text", "input_format"), [(TEXT, "text"), (TOKENS, "tokens"), (GOLD, "conllu")])
def test_tag_output_passes_uds_validator_at_the_format_levels(tagger, tmp_path, text, input_format):
    output = tagged(tagger, tmp_path, text, input_format)
    assert any(c != "_" for line in output.splitlines() if "\t" in line for c in line.split("\t")[2:6])
    assert validate(tmp_path, output, 1).endswith("*** PASSED ***")
    if input_format == "conllu":  # the gold tree comes back as read: level 2 in full
        assert validate(tmp_path, output, 2).endswith("*** PASSED ***")
        assert validate(tmp_path, GOLD, 2).endswith("*** PASSED ***")
    else:
        assert validate(tmp_path, output, 2, NO_TREE).endswith("*** PASSED ***")
        assert "invalid-head" in validate(tmp_path, output, 2)  # the exclusion hides a real report


def udeval_counts(gold: str, system: str) -> dict[str, dict[str, int]]:
    """udeval's rows (the package's names) as ``{"correct", "gold", "system", "aligned"}``."""
    options = {"no_empty_nodes": False, "multiple_roots_okay": True}
    loaded = [udeval.load_conllu(io.StringIO(text), name, options) for text, name in ((gold, "g"), (system, "s"))]
    scores = udeval.evaluate(*loaded)
    return {
        row: {
            "correct": scores[row].correct,
            "gold": scores[row].gold_total,
            "system": scores[row].system_total,
            "aligned": scores[row].aligned_total,
        }
        for row in ROWS
    }


def with_heads(conllu: str) -> str:
    """``conllu`` with a HEAD on every word (0, ``root``), as udeval needs one to read a file."""
    lines = []
    for line in conllu.split("\n"):
        fields = line.split("\t")
        if len(fields) == 10 and fields[0].isdigit():
            fields[6:8] = ["0", "root"]
        lines.append("\t".join(fields))
    return "\n".join(lines)


def test_the_scorer_counts_as_udeval(tagger, tmp_path):
    # The gold text split by the package's rules, then by whitespace into other sentences:
    # words that do not align, a multiword token against one word, tags right and wrong.
    by_rules = tagged(tagger, tmp_path, ConlluDocument(GOLD).text(), "text")
    by_spaces = tagged(tagger, tmp_path, "The old dog\ndidn't see the bird. Why ?\n", "tokens")
    for system in (by_rules, by_spaces):
        assert counts(GOLD, system) == udeval_counts(GOLD, with_heads(system))
    mismatched = counts(GOLD, by_spaces)
    assert mismatched["Words"]["correct"] < mismatched["Words"]["gold"] and mismatched["Sentences"]["correct"] == 0
    assert 0 < mismatched["UPOS"]["correct"] < mismatched["UPOS"]["aligned"]
    with pytest.raises(udeval.UDError, match="Cannot parse HEAD '_'"):
        udeval_counts(GOLD, by_rules)  # why the package keeps its own copy: a tagger writes no HEAD
