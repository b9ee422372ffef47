# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Control characters written as visible text (ESC becomes \\x1b), so that a host name or a probe's message cannot
move a terminal's cursor, ring its bell or hide text in a report. Pure: stdlib only."""
from __future__ import annotations

import re
from typing import Any

from ..module_utils.probe_output_text import CONTROL_CHARACTERS

# What ends a line of a message (a module's stderr, a traceback): CRLF, LF or a lone CR. On a terminal line each
# becomes LINE_JOINER, never a raw line break, so that no text can start a line that looks like Ansible's own.
LINE_BREAKS = re.compile("\r\n|\n|\r")
LINE_JOINER = " / "


def escape_control(text: str, keep: str = "\t\n") -> str:
    """text with every control character but those in keep written as \\xNN."""
    if CONTROL_CHARACTERS.search(text) is None:  # nearly every text of a report: no substitution to build
        return text
    return CONTROL_CHARACTERS.sub(
        lambda match: match.group() if match.group() in keep else "\\x%02x" % ord(match.group()), text)


def terminal_text(value: Any) -> str:
    """One line for the terminal (a warning, a summary or gate line): its lines joined with " / " (blank ones
    dropped) and every other control character written as \\xNN, so no raw control character is left."""
    text = "" if value is None else str(value)
    if "\n" in text or "\r" in text:
        text = LINE_JOINER.join(line.strip(" \t") for line in LINE_BREAKS.split(text) if line.strip(" \t"))
    return escape_control(text, keep="\t")
