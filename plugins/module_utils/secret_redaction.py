# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Take the values of secret-looking environment variables, and credential-shaped values, out of what a probe wrote,
before it leaves the host; the controller applies the credential shapes again before it stores or shows a result.

Pure Python (standard library only). A variable is secret-looking when its name holds one of SECRET_NAME_PARTS
(case-insensitive, anywhere in the name: ``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``PGPASSWORD``). Its value is
replaced by ``<redacted: $NAME>``:

- wherever it appears, when it has at least MIN_FREE_STANDING_CHARS characters;
- whatever its length, where it is printed as the variable's value (``NAME=value``, ``NAME: value``,
  ``'NAME': 'value'``, ``"NAME": "value"``, the ways environment dumps print it). A shorter value elsewhere is left
  alone: values such as ``1``, ``true`` or ``user`` (``XDG_SESSION_CLASS``) occur in ordinary output, and replacing
  them everywhere would garble every message while protecting no real credential.

A value is also a secret by its shape, whatever variable carries it (``NCCL_IB_HCA=ghp_...``):

- a token with a known credential prefix (TOKEN_SHAPES: GitHub ``ghp_`` ``gho_`` ``ghs_`` ``ghu_`` ``ghr_``
  ``github_pat_``, Hugging Face ``hf_``, AWS ``AKIA`` / ``ASIA``, Slack ``xox?-``, ``sk-``, GitLab ``glpat-``, a JWT
  ``eyJ...``) is replaced by CREDENTIAL_MARKER wherever it appears in any text;
- a whole environment value that is a long high-entropy string (is_high_entropy) is a secret like a secret-named
  variable's. Hex strings (digests), UUIDs (``GPU-...``, ``MIG-...``) and paths are never high-entropy here: results
  are full of them.

probes/probelib/secret_shapes.py is the probes' copy of these shapes (they run without the collection); a test pins it.
"""
from __future__ import annotations

import json
import math
import re

SECRET_NAME_PARTS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "KEY", "CRED", "AUTH", "COOKIE",
                     "PRIVATE", "SESSION", "SIGNATURE")
MIN_FREE_STANDING_CHARS = 8
# What may follow a short value printed as NAME=value: the end of the text, white space, a quote or a separator.
_VALUE_END = r"(?=$|[\s'\",;}\])])"


CREDENTIAL_MARKER = "<redacted: a credential-shaped value>"
TOKEN_SHAPES = (
    r"(?<![A-Za-z0-9_])(?:"
    r"gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|hf_[A-Za-z0-9]{20,}|(?:AKIA|ASIA)[A-Z0-9]{16}"
    r"|xox[a-z]-[A-Za-z0-9-]{10,}|sk-[A-Za-z0-9_-]*[A-Za-z0-9]{20}[A-Za-z0-9_-]*|glpat-[A-Za-z0-9_-]{20,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"
    r")(?![A-Za-z0-9_])")
TOKEN = re.compile(TOKEN_SHAPES)
# A URL's password, whatever variable or text holds it: scheme://user:PASSWORD@host (group 2 is the password).
URL_PASSWORD_SHAPE = r"(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@'\"<>]*:)([^\s/?#@'\"<>]+)(?=@)"
URL_PASSWORD = re.compile(URL_PASSWORD_SHAPE)
HIGH_ENTROPY_MIN_CHARS = 32
HIGH_ENTROPY_MIN_RUN = 16  # the longest stretch of letters and digits: identifiers are cut by _ . - into short words
HIGH_ENTROPY_MIN_BITS = 3.5  # Shannon entropy per character of the whole value
_HIGH_ENTROPY_CHARS = re.compile(r"^[A-Za-z0-9+/=_.~-]+$")
_NEVER_HIGH_ENTROPY = re.compile(
    r"^(?:[A-Za-z]+-)*[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$|^(?:0x)?[0-9a-fA-F]+$|^[./~]")
_ALNUM_RUN = re.compile(r"[A-Za-z0-9]+")


def _bits_per_char(text):
    counts = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    return -sum(count / float(len(text)) * math.log(count / float(len(text)), 2) for count in counts.values())


def is_high_entropy(value):
    """Whether a whole value looks like a generated secret: 32 or more characters of a key's alphabet, with upper and
    lower case letters and digits, a stretch of 16 letters and digits, and at least 3.5 bits a character; never a
    hex string, a UUID or a path."""
    value = value.strip()
    if len(value) < HIGH_ENTROPY_MIN_CHARS or not _HIGH_ENTROPY_CHARS.match(value) or _NEVER_HIGH_ENTROPY.match(value):
        return False
    if not (re.search("[a-z]", value) and re.search("[A-Z]", value) and re.search("[0-9]", value)):
        return False
    if max(len(run) for run in _ALNUM_RUN.findall(value)) < HIGH_ENTROPY_MIN_RUN:
        return False
    return _bits_per_char(value) >= HIGH_ENTROPY_MIN_BITS


def looks_like_credential(value):
    """Whether a value (an environment variable's) holds a credential-shaped token or is one by its entropy."""
    return isinstance(value, str) and (TOKEN.search(value) is not None or URL_PASSWORD.search(value) is not None
                                       or is_high_entropy(value))


def redact_tokens(text):
    """text with every credential-shaped token, and every URL's password, replaced by CREDENTIAL_MARKER."""
    if URL_PASSWORD.search(text) is not None:
        text = URL_PASSWORD.sub(lambda match: match.group(1) + CREDENTIAL_MARKER, text)
    return TOKEN.sub(CREDENTIAL_MARKER, text) if TOKEN.search(text) is not None else text


_ENVIRONMENT_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


def redact_credentials(value):
    """``value`` (JSON-like) with credential-shaped tokens replaced in every string, keys included, and the value of
    every environment-variable-like key (``NCCL_IB_HCA``) that is high-entropy as a whole replaced too."""
    if isinstance(value, str):
        return redact_tokens(value)
    if isinstance(value, dict):
        return dict((redact_tokens(key) if isinstance(key, str) else key,
                     CREDENTIAL_MARKER if (isinstance(key, str) and isinstance(item, str) and _ENVIRONMENT_NAME.match(key)
                                           and is_high_entropy(item)) else redact_credentials(item))
                    for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return [redact_credentials(item) for item in value]
    return value


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
        secrets = [(name, value) for name, value in environ.items()
                   if value and (is_secret_name(name) or looks_like_credential(value))]
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
        self.tokens_redacted = False  # whether a credential-shaped token was found and redacted

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
        shaped = redact_tokens(text)  # after the variables: a token that a variable holds is named by it
        if shaped != text:
            self.tokens_redacted = True
        return shaped

    def deep(self, value):
        """``value`` (JSON-like) with ``text`` applied to every string in it, keys included."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return dict((self.deep(key), self.deep(item)) for key, item in value.items())
        if isinstance(value, (list, tuple)):
            return [self.deep(item) for item in value]
        return value
