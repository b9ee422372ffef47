"""Write each probe's parameter table into its docs page, from its spec (plugins/plugin_utils/probes/<name>/params.json).

    python tools/params_tables.py          # rewrite the tables between the markers
    python tools/params_tables.py --check  # exit 1 naming each page whose table differs from the spec

A page holds the table between ``<!-- parameters: <probe> -->`` and ``<!-- /parameters: <probe> -->``; the page of a
probe is docs/<probe>.md, or the page listed in PAGES. tests/unit/tools/test_params_tables.py fails when a table
differs from its spec.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "probes"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # generated_file, however the tool is loaded

# pylint: disable=wrong-import-position
from probelib.params import SPEC_FILE, describe, parameters  # noqa: E402
from generated_file import Generated, main as generated_main, stale  # noqa: E402

SPECS = os.path.join(ROOT, "plugins", "plugin_utils", "probes")
DOCS = os.path.join(ROOT, "docs")
PAGES = {"collective_hosts": "collective.md"}  # a probe documented on another probe's page
START = "<!-- parameters: %s -->"
END = "<!-- /parameters: %s -->"


def probes() -> List[str]:
    return sorted(name for name in os.listdir(SPECS) if os.path.isfile(os.path.join(SPECS, name, SPEC_FILE)))


def page_of(probe: str) -> str:
    return os.path.join(DOCS, PAGES.get(probe, probe + ".md"))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(probe: str) -> str:
    """The Markdown table of the probe's parameters, in the spec's order."""
    with open(os.path.join(SPECS, probe, SPEC_FILE), encoding="utf-8") as handle:
        known: Dict[str, Any] = parameters(json.load(handle))
    if not known:
        return "The probe takes no parameters (`probe_params: {%s: {...}}` must stay empty)." % probe
    lines = ["`probe_params: {%s: {...}}` (generated from `plugins/plugin_utils/probes/%s/params.json` by "
             "`tools/params_tables.py`):" % (probe, probe), "",
             "| parameter | type and range | default | meaning |", "|---|---|---|---|"]
    for name, schema in known.items():
        lines.append("| `%s` | %s | `%s` | %s |" % (name, _cell(describe(schema)), _cell(json.dumps(schema["default"])),
                                                    _cell(schema.get("description", ""))))
    return "\n".join(lines)


def rewritten(text: str, probe: str) -> str:
    """The page's text with the probe's table between its markers; ValueError when the markers are not there once."""
    start, end = START % probe, END % probe
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise ValueError("the page must hold %s ... %s once" % (start, end))
    head, rest = text.split(start, 1)
    return "%s%s\n%s\n%s%s" % (head, start, table(probe), end, rest.split(end, 1)[1])


SOURCES = "the probes' specs (params.json)"


def files() -> List[Generated]:
    return [Generated(page_of(probe), "the %s table of %s" % (probe, os.path.relpath(page_of(probe), ROOT)),
                      lambda text, probe=probe: rewritten(text, probe)) for probe in probes()]


def differing() -> List[str]:
    """A sentence for each page whose table differs from its probe's spec (or lacks its markers)."""
    return stale(files(), SOURCES)


def main(argv: List[str]) -> int:
    return generated_main(argv, __file__, __doc__, files, SOURCES)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
