"""Validate an envelope and its probe data against the collection's JSON Schemas."""
from __future__ import annotations

import json
import os
from functools import lru_cache

from ..module_utils.envelope_statuses import MEASURED_STATUSES
from .probe_archive import collection_root

MAX_PROBLEMS = 20


class SchemaToolMissing(RuntimeError):
    pass


def schemas_dir(root: str | None = None) -> str:
    return os.path.join(root or collection_root(), "schemas")


@lru_cache(maxsize=None)
def load_schema(file_name: str, root: str | None = None) -> dict:
    path = os.path.join(schemas_dir(root), file_name)
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _validator(schema: dict):
    try:
        from jsonschema import Draft202012Validator
    except ImportError as exc:
        raise SchemaToolMissing("the controller's Python lacks jsonschema (pip install jsonschema): %s" % exc)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def _where(prefix: str, path) -> str:
    text = prefix
    for part in path:
        text += "[%d]" % part if isinstance(part, int) else ".%s" % part
    return text


def _deepest(error):
    """For "not valid under any of anyOf", the alternative that came closest says what is really wrong."""
    while error.context:
        error = max(error.context, key=lambda candidate: len(candidate.absolute_path))
    return error


def schema_problems(document, schema: dict, prefix: str) -> list[str]:
    errors = [_deepest(error) for error in _validator(schema).iter_errors(document)]
    errors.sort(key=lambda error: list(map(str, error.absolute_path)))
    problems = ["at %s: %s" % (_where(prefix, error.absolute_path), error.message[:200]) for error in errors]
    if len(problems) > MAX_PROBLEMS:
        problems = problems[:MAX_PROBLEMS] + ["... and %d more" % (len(problems) - MAX_PROBLEMS)]
    return problems


def envelope_problems(envelope, root: str | None = None) -> list[str]:
    """Every way ``envelope`` breaks the envelope schema or, where its status promises data, its probe's schema."""
    problems = schema_problems(envelope, load_schema("envelope.schema.json", root), "envelope")
    if problems:
        return problems
    # An unavailable probe may have measured nothing at all; what it did write must still be sound.
    if envelope["status"] in MEASURED_STATUSES or (envelope["status"] == "unavailable" and envelope["data"]):
        problems = schema_problems(envelope["data"], load_schema(envelope["probe"] + ".schema.json", root), "data")
    return problems
