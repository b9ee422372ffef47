"""The schemas reference what they share (schemas/common.schema.json) instead of copying it, and every $ref resolves
through the one registry the collection validates with, from the files alone."""
import collections
import glob
import json
import os

import pytest
from referencing.exceptions import Unresolvable

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import (
    load_schema, schema_file_problems, schema_problems, schema_registry, schema_validator)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMAS = sorted(os.path.basename(path) for path in glob.glob(os.path.join(ROOT, "schemas", "*.schema.json")))
COMMON = "common.schema.json"
COMMON_REF = COMMON + "#/$defs/"


def refs(node):
    """Every $ref anywhere in node."""
    if isinstance(node, list):
        return [ref for value in node for ref in refs(value)]
    if not isinstance(node, dict):
        return []
    return ([node["$ref"]] if "$ref" in node else []) + [ref for value in node.values() for ref in refs(value)]


def canonical(definition):
    return json.dumps({key: value for key, value in definition.items() if key != "description"}, sort_keys=True)


@pytest.mark.parametrize("name", SCHEMAS)
def test_every_ref_resolves_through_the_registry(name):
    schema_validator(name)  # a sound draft 2020-12 schema
    resolver = schema_registry().resolver(base_uri=load_schema(name)["$id"])
    for ref in sorted(set(refs(load_schema(name)))):
        resolver.lookup(ref)


def test_every_schema_is_registered_under_its_id_and_file_name():
    registry = schema_registry()
    for name in SCHEMAS:
        assert load_schema(name)["$id"] == name
        assert registry.contents(name) == load_schema(name)


def test_nothing_is_fetched_from_elsewhere():
    with pytest.raises(Unresolvable):
        schema_registry().resolver().lookup("https://json-schema.org/draft/2020-12/common.schema.json#/$defs/unavailable")
    elsewhere = {"$schema": "https://json-schema.org/draft/2020-12/schema",
                 "properties": {"x": {"$ref": "elsewhere.schema.json#/$defs/x"}}}
    with pytest.raises(Unresolvable):
        schema_problems({"x": 1}, elsewhere, "doc")


def test_a_schema_given_as_a_document_resolves_the_common_definitions_too():
    """As the judge loads rules, baselines and overrides schemas itself and hands them over."""
    schema = load_schema("rules.schema.json")
    assert COMMON_REF + "finite" in refs(schema)
    rule = {"id": "health.gpu_count", "probe": "health", "check": "gpu_count", "severity": "fail", "description": "GPUs."}
    assert schema_problems({"rules": [rule]}, schema, "rules") == []
    assert schema_problems({"rules": [rule], "x": float("inf")}, schema, "rules")


def test_unavailable_is_defined_once():
    for name in SCHEMAS:
        if name != COMMON:
            assert "unavailable" not in load_schema(name).get("$defs", {}), name
            assert "#/$defs/unavailable" not in refs(load_schema(name)), name


def test_no_definition_is_copied_between_schemas():
    seen = collections.defaultdict(set)
    for name in SCHEMAS:
        for definition in load_schema(name).get("$defs", {}).values():
            seen[canonical(definition)].add(name)
    copied = {definition: names for definition, names in seen.items() if len(names) > 1}
    assert not copied, copied
    common = {canonical(definition) for definition in load_schema(COMMON)["$defs"].values()}
    for name in SCHEMAS:
        if name != COMMON:
            for key, definition in load_schema(name).get("$defs", {}).items():
                assert canonical(definition) not in common, (name, key)


def test_every_common_definition_is_shared_by_two_schemas():
    """Used by two schemas or more, directly or through another common definition."""
    common = load_schema(COMMON)["$defs"]
    inside = {key: {ref.rsplit("/", 1)[1] for ref in refs(definition)} for key, definition in common.items()}
    users = collections.defaultdict(set)
    for name in SCHEMAS:
        if name == COMMON:
            continue
        pending = [ref[len(COMMON_REF):] for ref in refs(load_schema(name)) if ref.startswith(COMMON_REF)]
        while pending:
            key = pending.pop()
            if name not in users[key]:
                users[key].add(name)
                pending.extend(inside[key])
    assert {key: sorted(users[key]) for key in common if len(users[key]) < 2} == {}


def test_every_shipped_schema_is_a_sound_draft_2020_12_schema():
    # the probe workers no longer check the metaschema per host: check_inputs does it once per run, and this test
    assert schema_file_problems() == []


def test_a_broken_schema_file_is_named_before_anything_runs(tmp_path):
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "good.schema.json").write_text('{"type": "object"}')
    (tmp_path / "schemas" / "bad.schema.json").write_text('{"type": "objekt"}')
    (tmp_path / "schemas" / "torn.schema.json").write_text('{"type": ')
    problems = schema_file_problems(str(tmp_path))
    assert [problem.split(" ", 1)[0] for problem in problems] == ["schemas/bad.schema.json", "schemas/torn.schema.json"]
    assert "not a sound draft 2020-12 schema" in problems[0] and "is not JSON" in problems[1]
