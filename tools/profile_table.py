"""Write README.md's profile table from the probes' declarations (plugins/plugin_utils/probes/<probe>/run.py).

    python tools/profile_table.py          # rewrite the table between the markers
    python tools/profile_table.py --check  # exit 1 when README's table differs from the declarations

Each probe declares the profiles it belongs to and the parameters each gives it; the registry derives the profiles
from them (registry.profiles). README.md holds the table between ``<!-- profiles -->`` and ``<!-- /profiles -->``;
tests/unit/tools/test_profile_table.py fails when it differs.
"""
from __future__ import annotations

import json
import os
import sys
from typing import List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "collections"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # generated_file, however the tool is loaded

# pylint: disable=wrong-import-position
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import profile_params, profiles  # noqa: E402
from generated_file import Generated, main as generated_main, stale  # noqa: E402

README = os.path.join(ROOT, "README.md")
START = "<!-- profiles -->"
END = "<!-- /profiles -->"


def _given(profile: str, probe: str) -> str:
    params = profile_params(profile, probe)
    return "%s: %s" % (probe, ", ".join("`%s: %s`" % (name, json.dumps(value)) for name, value in params.items())) if params else ""


def table() -> str:
    """The Markdown table: each declared profile, its probes in the order they run, what it gives them."""
    lines = ["| profile | its probes, in the order they run | parameters it gives them |", "| --- | --- | --- |"]
    for profile, probes in profiles().items():
        given = [found for found in (_given(profile, probe) for probe in probes) if found]
        lines.append("| `%s` | %s | %s |" % (profile, ", ".join(probes), "; ".join(given) or "their defaults"))
    return "\n".join(lines)


def rewritten(text: str) -> str:
    """README's text with the table between its markers; ValueError when the markers are not there once."""
    if text.count(START) != 1 or text.count(END) != 1 or text.index(START) > text.index(END):
        raise ValueError("README.md must hold %s ... %s once" % (START, END))
    head, rest = text.split(START, 1)
    return "%s%s\n%s\n%s%s" % (head, START, table(), END, rest.split(END, 1)[1])


SOURCES = "the probes' declarations"


def files() -> List[Generated]:
    return [Generated(README, "README.md's profile table", rewritten)]


def differs() -> bool:
    return bool(stale(files(), SOURCES))


def main(argv: List[str]) -> int:
    return generated_main(argv, __file__, __doc__, files, SOURCES)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
