# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bytes a probe wrote, as text that Ansible's module JSON can carry, and what is wrong with them as text.

Pure Python (standard library only). Ansible refuses a module result holding a string that is not valid UTF-8 (a
lone surrogate such as ``"\\ud800"``, or bytes decoded with ``surrogateescape``), so nothing leaves the module unless
it passed through ``transportable`` or ``carryable``.
"""
from __future__ import annotations

import re

# The control characters, C0 (U+0000-U+001F), DEL and C1 (U+0080-U+009F): one definition for the module and the
# controller's reports (plugins/plugin_utils/control_chars.py).
CONTROL_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f]")
# What ordinary multi-line text holds: not a problem in a probe's result.
TEXT_WHITESPACE = "\t\n\r"


def is_control(char):
    return char not in TEXT_WHITESPACE and CONTROL_CHARACTERS.match(char) is not None


def is_surrogate(char):
    return 0xD800 <= ord(char) <= 0xDFFF


def transportable(data):
    """Bytes as text: valid UTF-8 as itself, every byte that is not UTF-8 as the four characters ``\\xNN``."""
    return data.decode("utf-8", "backslashreplace")


def escaped(text):
    """Text with lone surrogates as ``\\udXXX`` and control characters as ``\\xNN`` or ``\\uXXXX``, for messages."""
    out = []
    for char in text:
        if is_surrogate(char):
            out.append("\\u%04x" % ord(char))
        elif is_control(char):
            out.append("\\x%02x" % ord(char) if ord(char) < 0x100 else "\\u%04x" % ord(char))
        else:
            out.append(char)
    return "".join(out)


def carryable(value):
    """``value`` (JSON-like) with every string, key or value, that UTF-8 cannot encode given its lone surrogates as
    ``\\udXXX``; every other string is left as it is."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return "".join("\\u%04x" % ord(char) if is_surrogate(char) else char for char in value)
    if isinstance(value, dict):
        return dict((carryable(key), carryable(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return [carryable(item) for item in value]
    return value


def utf8_problem(data):
    """Where ``data`` stops being UTF-8, in words (byte offset, line and column), or None when it is UTF-8."""
    try:
        data.decode("utf-8")
        return None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        return "byte 0x%02x at offset %d (line %d, column %d) is not UTF-8 (%s)" % (
            data[exc.start], exc.start, line, column, exc.reason)


def json_string_problem(document):
    """The first string of a parsed JSON document (key or value) that holds a lone surrogate or a control character,
    named by its path, e.g. ``data.platform.relevant_environment.NCCL_SOCKET_IFNAME holds a lone surrogate U+DCFF``;
    None when every string is clean."""
    stack = [("", document)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            for key in sorted(value, key=str, reverse=True):
                key_path = "%s.%s" % (path, escaped(key)) if path else escaped(key)
                problem = _string_problem(key)
                if problem:
                    return "the key %s %s" % (key_path, problem)
                stack.append((key_path, value[key]))
        elif isinstance(value, list):
            for index in range(len(value) - 1, -1, -1):
                stack.append(("%s[%d]" % (path, index), value[index]))
        elif isinstance(value, str):
            problem = _string_problem(value)
            if problem:
                return "%s %s" % (path or "the document", problem)
    return None


def _string_problem(text):
    for char in text:
        if is_surrogate(char):
            return "holds a lone surrogate U+%04X" % ord(char)
        if is_control(char):
            return "holds the control character U+%04X" % ord(char)
    return None
