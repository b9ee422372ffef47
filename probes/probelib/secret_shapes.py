"""Credential-shaped values, recognised where a probe records an environment variable's value, so that a token in an
allow-listed variable (``NCCL_IB_HCA=ghp_...``) never leaves the host: the variable is shown as set, its value as
CREDENTIAL_MARKER.

The probes' copy of the shapes in plugins/module_utils/secret_redaction.py (probes run without the collection);
tests/unit/test_secret_shapes.py pins the two to each other.
"""
from __future__ import annotations

import math
import re
from typing import Dict, Mapping

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
HIGH_ENTROPY_MIN_RUN = 16
HIGH_ENTROPY_MIN_BITS = 3.5
_HIGH_ENTROPY_CHARS = re.compile(r"^[A-Za-z0-9+/=_.~-]+$")
_NEVER_HIGH_ENTROPY = re.compile(
    r"^(?:[A-Za-z]+-)*[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$|^(?:0x)?[0-9a-fA-F]+$|^[./~]")
_ALNUM_RUN = re.compile(r"[A-Za-z0-9]+")


def _bits_per_char(text: str) -> float:
    counts: Dict[str, int] = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    return -sum(count / len(text) * math.log(count / len(text), 2) for count in counts.values())


def is_high_entropy(value: str) -> bool:
    value = value.strip()
    if len(value) < HIGH_ENTROPY_MIN_CHARS or not _HIGH_ENTROPY_CHARS.match(value) or _NEVER_HIGH_ENTROPY.match(value):
        return False
    if not (re.search("[a-z]", value) and re.search("[A-Z]", value) and re.search("[0-9]", value)):
        return False
    if max(len(run) for run in _ALNUM_RUN.findall(value)) < HIGH_ENTROPY_MIN_RUN:
        return False
    return _bits_per_char(value) >= HIGH_ENTROPY_MIN_BITS


def looks_like_credential(value: str) -> bool:
    return isinstance(value, str) and (TOKEN.search(value) is not None or URL_PASSWORD.search(value) is not None
                                       or is_high_entropy(value))


def shown_environment(environ: Mapping[str, str]) -> Dict[str, str]:
    """The variables as recorded: each value, or CREDENTIAL_MARKER for one that looks like a credential."""
    return {name: CREDENTIAL_MARKER if looks_like_credential(value) else value for name, value in environ.items()}
