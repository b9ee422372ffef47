"""Write each probe's parameter table into its docs page, from its spec (plugins/plugin_utils/probes/<name>/params.json).

    python tools/params_tables.py          # rewrite the tables between the markers
    python tools/params_tables.py --check  # exit 1 naming each page whose table differs from the spec

A page holds the table between ``<!-- parameters: <probe> -->`` and ``<!-- /parameters: <probe> -->``; the page of a
probe is docs/<probe>.md, or the page listed in PAGES. tests/unit/tools/test_params_tables.py fails when a table
differs from its spec.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from typing import Any, Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "probes"))
from probelib.params import SPEC_FILE, describe, parameters  # noqa: E402  pylint: disable=wrong-import-position

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


def differing() -> List[str]:
    """The probes whose page's table differs from the spec (or lacks its markers), each with the page."""
    found = []
    for probe in probes():
        with open(page_of(probe), encoding="utf-8") as handle:
            text = handle.read()
        try:
            if rewritten(text, probe) != text:
                found.append("%s: %s" % (probe, os.path.relpath(page_of(probe), ROOT)))
        except ValueError as exc:
            found.append("%s: %s %s" % (probe, os.path.relpath(page_of(probe), ROOT), exc))
    return found


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="only say which pages differ (exit 1)")
    if parser.parse_args(argv).check:
        found = differing()
        print("\n".join(found) or "every parameter table is the spec's")
        return 1 if found else 0
    for probe in probes():
        with open(page_of(probe), encoding="utf-8") as handle:
            text = handle.read()
        updated = rewritten(text, probe)
        if updated != text:
            _write_atomically(page_of(probe), updated)
    return 0


def _write_atomically(path: str, text: str) -> None:
    """A fresh temporary file beside the page, then renamed over it: never written through a link."""
    descriptor, tmp = tempfile.mkstemp(prefix=".params-", suffix=".md", dir=os.path.dirname(path))
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
