"""Validate an envelope and its probe data against the collection's JSON Schemas.

Every validator is built here, over one registry of every schema in schemas/ under its $id (its file name), so a
``$ref`` such as ``common.schema.json#/$defs/unavailable`` resolves from the files and never from the network; the
tests validate through the same functions."""
from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache

from ...module_utils.envelope_statuses import MEASURED_STATUSES
from ..collection_info import collection_root

MAX_PROBLEMS = 20
SCHEMA_SUFFIX = ".schema.json"


class SchemaToolMissing(RuntimeError):
    pass


def schemas_dir(root: str | None = None) -> str:
    return os.path.join(root or collection_root(), "schemas")


@lru_cache(maxsize=None)
def load_schema(file_name: str, root: str | None = None) -> dict:
    path = os.path.join(schemas_dir(root), file_name)
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _draft202012():
    try:
        from jsonschema import Draft202012Validator
        from referencing import Registry
        from referencing.jsonschema import DRAFT202012
    except ImportError as exc:
        raise SchemaToolMissing("the controller's Python lacks jsonschema (pip install jsonschema): %s" % exc)
    return Draft202012Validator, Registry, DRAFT202012


@lru_cache(maxsize=None)
def schema_registry(root: str | None = None):
    """One ``referencing.Registry`` of every schemas/*.schema.json, each under its $id and its file name; nothing is
    retrieved from elsewhere (an unknown reference is an error, not a download)."""
    unused_validator, registry_class, draft = _draft202012()
    resources = []
    for file_name in sorted(os.listdir(schemas_dir(root))):
        if file_name.endswith(SCHEMA_SUFFIX):
            resource = draft.create_resource(load_schema(file_name, root))
            resources.extend((uri, resource) for uri in sorted({file_name, resource.id() or file_name}))
    return registry_class().with_resources(resources).crawl()


def _validator(schema: dict, root: str | None = None):
    validator_class = _draft202012()[0]
    return validator_class(schema, registry=schema_registry(root), format_checker=validator_class.FORMAT_CHECKER)


def schema_validator(file_name: str, root: str | None = None):
    """The validator of schemas/<file_name>, resolving through the registry. The schema itself is not checked against
    the draft 2020-12 metaschema here (a probe worker would pay for it on every host): schema_file_problems does that
    once per run, in check_inputs, and the unit tests do it for every shipped schema."""
    return _schema_validator(file_name, root)


# Keyed by both arguments always: lru_cache keys schema_validator(name) and schema_validator(name, None) apart.
@lru_cache(maxsize=None)
def _schema_validator(file_name: str, root: str | None):
    return _validator(load_schema(file_name, root), root)


def schema_file_problems(root: str | None = None) -> list:
    """Every schemas/*.schema.json that is not JSON or not a sound draft 2020-12 schema, in words ([] when all are)."""
    validator_class = _draft202012()[0]
    problems = []
    for file_name in sorted(os.listdir(schemas_dir(root))):
        if not file_name.endswith(SCHEMA_SUFFIX):
            continue
        try:
            validator_class.check_schema(load_schema(file_name, root))
        except ValueError as exc:
            problems.append("schemas/%s is not JSON: %s" % (file_name, exc))
        except Exception as exc:  # pylint: disable=broad-exception-caught  # jsonschema's SchemaError and its kin
            problems.append("schemas/%s is not a sound draft 2020-12 schema: %s" % (file_name, " ".join(str(exc).split())[:300]))
    return problems


def where_in(prefix: str, path) -> str:
    text = prefix
    for part in path:
        text += "[%d]" % part if isinstance(part, int) else ".%s" % part
    return text


def _deepest(error):
    """For "not valid under any of anyOf", the alternative that came closest says what is really wrong."""
    while error.context:
        error = max(error.context, key=lambda candidate: len(candidate.absolute_path))
    return error


def schema_errors(document, schema: dict | str, root: str | None = None) -> list[tuple[tuple, str]]:
    """Every way ``document`` breaks ``schema`` (a loaded schema, or the file name of one in schemas/): (where, as the
    path of keys and list positions, what), in the order of where."""
    validator = schema_validator(schema, root) if isinstance(schema, str) else _validator(schema, root)
    errors = [_deepest(error) for error in validator.iter_errors(document)]
    errors.sort(key=lambda error: list(map(str, error.absolute_path)))
    return [(tuple(error.absolute_path), error.message[:200]) for error in errors]


def bounded(problems: list[str]) -> list[str]:
    """The first MAX_PROBLEMS problems, and how many more there were."""
    if len(problems) > MAX_PROBLEMS:
        return problems[:MAX_PROBLEMS] + ["... and %d more" % (len(problems) - MAX_PROBLEMS)]
    return problems


def schema_problems(document, schema: dict | str, prefix: str, root: str | None = None) -> list[str]:
    """Every way ``document`` breaks ``schema`` (a loaded schema, or the file name of one in schemas/), as sentences."""
    return bounded(["at %s: %s" % (where_in(prefix, path), message) for path, message in schema_errors(document, schema, root)])


def envelope_problems(envelope, root: str | None = None) -> list[str]:
    """Every way ``envelope`` breaks the envelope schema or, where its status promises data, its probe's schema."""
    problems = schema_problems(envelope, "envelope" + SCHEMA_SUFFIX, "envelope", root)
    if problems:
        return problems
    # An unavailable probe may have measured nothing at all; what it did write must still be sound.
    if envelope["status"] in MEASURED_STATUSES or (envelope["status"] == "unavailable" and envelope["data"]):
        problems = schema_problems(envelope["data"], envelope["probe"] + SCHEMA_SUFFIX, "data", root)
    return problems


def schemas_digest(root: str | None = None) -> str:
    """sha256 over every schemas/*.schema.json (name and bytes, in name order): which schemas a stored result was
    validated against (the envelope's schemas_sha256)."""
    return _schemas_digest(root)


@lru_cache(maxsize=None)
def _schemas_digest(root: str | None) -> str:
    digest = hashlib.sha256()
    directory = schemas_dir(root)
    for file_name in sorted(os.listdir(directory)):
        if file_name.endswith(SCHEMA_SUFFIX):
            with open(os.path.join(directory, file_name), "rb") as handle:
                content = handle.read()
            digest.update(b"%d:%s\0%d:" % (len(file_name), file_name.encode("utf-8"), len(content)))
            digest.update(content)
    return digest.hexdigest()


def stored_envelope_problems(envelope, root: str | None = None) -> list[str]:
    """envelope_problems of a result read back from the store, skipped where the result says it was validated against
    these very schemas when it was stored (schemas_sha256): the store's results are the writer's (the report trusts a
    run's own results so too), and validating a host of 8 GPUs costs about 30 ms, most of a nightly report's judging
    time when every host's previous night is read (docs/scale.md)."""
    if isinstance(envelope, dict) and envelope.get("schemas_sha256") == schemas_digest(root):
        return []
    return envelope_problems(envelope, root)
