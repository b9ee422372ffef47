# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Take the values of secret-looking environment variables out of what a probe wrote, before it leaves the host.

Pure Python (standard library only). A variable is secret-looking when its name holds one of SECRET_NAME_PARTS
(case-insensitive, anywhere in the name: ``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``PGPASSWORD``). Its value is
replaced by ``<redacted: $NAME>``:

- wherever it appears, when it has at least MIN_FREE_STANDING_CHARS characters;
- whatever its length, where it is printed as the variable's value (``NAME=value``, ``NAME: value``,
  ``'NAME': 'value'``, ``"NAME": "value"``, the ways environment dumps print it). A shorter value elsewhere is left
  alone: values such as ``1``, ``true`` or ``user`` (``XDG_SESSION_CLASS``) occur in ordinary output, and replacing
  them everywhere would garble every message while protecting no real credential.
"""
from __future__ import annotations

import json
import re

SECRET_NAME_PARTS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "KEY", "CRED", "AUTH", "COOKIE",
                     "PRIVATE", "SESSION", "SIGNATURE")
MIN_FREE_STANDING_CHARS = 8
# What may follow a short value printed as NAME=value: the end of the text, white space, a quote or a separator.
_VALUE_END = r"(?=$|[\s'\",;}\])])"


def is_secret_name(name):
    upper = name.upper()
    return any(part in upper for part in SECRET_NAME_PARTS)


def marker(name):
    return "<redacted: $%s>" % name


def _spellings(value):
    """The value as it shows in text: as decoded here (bytes that are not UTF-8 as \\xNN) and as a JSON string."""
    text = value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    spellings = [text, json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]]
    return sorted(set(spellings), key=len, reverse=True)


class SecretRedactor(object):
    """Redacts the secret-looking variables of one environment (a mapping of name to value) from text."""

    def __init__(self, environ):
        secrets = [(name, value) for name, value in environ.items() if value and is_secret_name(name)]
        # Longest first, so a value that contains another one is replaced whole.
        secrets.sort(key=lambda pair: len(pair[1]), reverse=True)
        self._replacements = []
        for name, value in secrets:
            shown = name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            for spelling in _spellings(value):
                assignment = re.compile(r"(\b%s\b['\"]?\s*[=:]\s*['\"]?)%s%s"
                                        % (re.escape(shown), re.escape(spelling), _VALUE_END))
                free = spelling if len(spelling) >= MIN_FREE_STANDING_CHARS else None
                self._replacements.append((assignment, free, shown))
        self.redacted = set()  # names of the variables whose values were found and redacted

    def text(self, text):
        if not text:
            return text
        for assignment, free, name in self._replacements:
            replacement = marker(name)
            redacted = assignment.sub(lambda match, replacement=replacement: match.group(1) + replacement, text)
            if free is not None:
                redacted = redacted.replace(free, replacement)
            if redacted != text:
                self.redacted.add(name)
                text = redacted
        return text

    def deep(self, value):
        """``value`` (JSON-like) with ``text`` applied to every string in it, keys included."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return dict((self.deep(key), self.deep(item)) for key, item in value.items())
        if isinstance(value, (list, tuple)):
            return [self.deep(item) for item in value]
        return value
