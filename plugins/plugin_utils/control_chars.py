# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Control characters written as visible text (ESC becomes \\x1b), so that a host name or a probe's message cannot
move a terminal's cursor, ring its bell or hide text in a report; invisible and bidirectional format characters written
as <U+XXXX> (U+202E becomes <U+202E>), so that no name or reason shows as another ("goo<U+200B>d" is not "good").
Pure: stdlib only."""
from __future__ import annotations

import re
from typing import Any

from ..module_utils.probe_output_text import CONTROL_CHARACTERS

# What ends a line of a message (a module's stderr, a traceback): CRLF, LF or a lone CR. On a terminal line each
# becomes LINE_JOINER, never a raw line break, so that no text can start a line that looks like Ansible's own.
LINE_BREAKS = re.compile("\r\n|\n|\r")
LINE_JOINER = " / "
# Characters a reader cannot see, or that reorder what is seen: every format character (Unicode category Cf: the
# bidirectional embeddings, overrides and isolates, zero width space / joiners, word joiner, invisible operators, BOM,
# interlinear annotation, tags), the line and paragraph separators U+2028/U+2029, and the other invisible ones: the
# combining grapheme joiner, the Hangul fillers, the Khmer inherent vowels, the Mongolian and standard variation
# selectors. A test holds this against unicodedata's Cf.
INVISIBLE_CHARACTERS = (
    "\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    "\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f\U000e0100-\U000e01ef")
INVISIBLE = re.compile("[%s]" % INVISIBLE_CHARACTERS)
# Everything escape_control writes visibly: the control characters and the invisible ones.
_SHOWN_ESCAPED = re.compile("[%s%s]" % (CONTROL_CHARACTERS.pattern[1:-1], INVISIBLE_CHARACTERS))


def _visible(char: str) -> str:
    return "\\x%02x" % ord(char) if CONTROL_CHARACTERS.match(char) else "<U+%04X>" % ord(char)


def escape_control(text: str, keep: str = "\t\n") -> str:
    """text with every control character but those in keep written as \\xNN, every invisible one as <U+XXXX>."""
    # Nearly every text of a report has nothing to escape: printable ASCII is told at once (every invisible character
    # is outside ASCII), the rest by one search.
    if (text.isascii() and text.isprintable()) or _SHOWN_ESCAPED.search(text) is None:
        return text
    return _SHOWN_ESCAPED.sub(lambda match: match.group() if match.group() in keep else _visible(match.group()), text)


def terminal_text(value: Any) -> str:
    """One line for the terminal (a warning, a summary or gate line): its lines joined with " / " (blank ones
    dropped), every other control character written as \\xNN and every invisible one as <U+XXXX>."""
    text = "" if value is None else str(value)
    if "\n" in text or "\r" in text:
        text = LINE_JOINER.join(line.strip(" \t") for line in LINE_BREAKS.split(text) if line.strip(" \t"))
    return escape_control(text, keep="\t")
