"""The judge core and the report core know no probe (issue 33): no probe's name, as a whole word, in their code.

A probe is named by its script (probes/<name>.py). The cores are plugin_utils/judge/*.py and the report's own modules
(report/*.py, run_judgement.py, result_fields.py, store/), what they stand on and the run glue over them
(issue 47: metric_spec.py, collection_info.py, rules_and_baselines.py, ...); what they need of a probe its package
declares (plugin_utils/probes/<name>/), e.g. the machine facts of the probe that describes the machine
(judge/machine_facts.py), and a caller hands on (store/previous.py is told the describing probe).
Docstrings and comments may name a probe as an example; strings and names in the code may not. A name after a dot is
part of a dotted name, not the probe's ("baselines.load", json.load).
"""
from __future__ import annotations

import ast
import glob
import io
import os
import re
import tokenize

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLUGIN_UTILS = os.path.join(ROOT, "plugins", "plugin_utils")
# Files that still name a probe, each with who takes it out; the list only shrinks (test_the_waived_files_still_need_it).
WAIVED = ()


def probe_names():
    return sorted(os.path.splitext(os.path.basename(path))[0] for path in glob.glob(os.path.join(ROOT, "probes", "*.py")))


def core_files():
    found = glob.glob(os.path.join(PLUGIN_UTILS, "judge", "*.py")) + glob.glob(os.path.join(PLUGIN_UTILS, "report", "*.py"))
    found += [os.path.join(PLUGIN_UTILS, name) for name in ("run_judgement.py", "result_fields.py")]
    # what the judge and the probes stand on, and the run glue over them (tests/unit/test_layers.py)
    found += [os.path.join(PLUGIN_UTILS, name) for name in ("metric_spec.py", "collection_info.py",
                                                            "unreadable_result.py", "rules_and_baselines.py",
                                                            "unjudged_probes.py", "unmatched_kinds.py")]
    found += glob.glob(os.path.join(PLUGIN_UTILS, "store", "*.py"))
    return sorted(os.path.relpath(path, PLUGIN_UTILS) for path in found)


def _docstring_lines(source):
    lines = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


def probe_mentions(source, names):
    """(line, probe, the token) of each probe name in the code: strings and names, not docstrings, comments or a name
    after a dot."""
    word = re.compile(r"(?<![\w.])(%s)(?!\w)" % "|".join(re.escape(name) for name in names))
    docstrings = _docstring_lines(source)
    found, previous = [], None
    texts = (tokenize.STRING, tokenize.NAME, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING))
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        after_dot = previous is not None and previous.string == "."
        if token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
            previous = token
        if token.type not in texts or (token.type == tokenize.NAME and after_dot):
            continue
        if token.type == tokenize.STRING and token.start[0] in docstrings:
            continue
        found.extend((token.start[0], match.group(1), token.string[:60]) for match in word.finditer(token.string))
    return found


def _mentions_in(relative):
    with open(os.path.join(PLUGIN_UTILS, relative), encoding="utf-8") as handle:
        return probe_mentions(handle.read(), probe_names())


def test_the_mention_finder_finds_a_probe_in_code_and_not_in_a_docstring_or_a_comment():
    source = '"""health is an example."""\n# membw too\nX = "health"\nY = json.load(f)\nZ = load\nW = "baselines.load"\n'
    assert [(line, name) for line, name, unused in probe_mentions(source, ["health", "load", "membw"])] == [(3, "health"), (5, "load")]


def test_the_judge_and_report_cores_name_no_probe():
    assert len(probe_names()) >= 12 and "health" in probe_names()
    found = {relative: _mentions_in(relative) for relative in core_files() if relative not in WAIVED}
    assert {relative: mentions for relative, mentions in found.items() if mentions} == {}


def test_the_waived_files_still_need_it():
    """A waived file that was moved, or names no probe any more, leaves WAIVED."""
    stale = [relative for relative in WAIVED if relative not in core_files() or not _mentions_in(relative)]
    assert stale == []


def test_the_cores_import_no_probes_package():
    """A name after a dot is not a mention (json.load), but an import of a probe's package is: probes.<probe>."""
    package = re.compile(r"\bprobes\.(%s)\b" % "|".join(re.escape(name) for name in probe_names()))
    found = {}
    for relative in core_files():
        with open(os.path.join(PLUGIN_UTILS, relative), encoding="utf-8") as handle:
            lines = [number for number, line in enumerate(handle, 1) if line.lstrip().startswith(("from ", "import ")) and package.search(line)]
        if lines:
            found[relative] = lines
    assert found == {}
