"""Every number a probe schema gives a physical unit has a maximum, the one of plugin_utils/store/unit_limits.py, so a
result holding 1e308 W is a schema error of that probe, stored as error with its path (issue 32: one host's 1e308 W
crashed the whole report in the judge's statistics)."""
from __future__ import annotations

import copy
import glob
import json
import os

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.results import store_result
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import load_schema
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.unit_limits import (
    DEFINITION_UNITS, UNIT_LIMITS, unit_of_field)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCUMENT_SCHEMAS = {"baseline.schema.json", "envelope.schema.json", "fleet.schema.json", "rule_overrides.schema.json",
                    "rules.schema.json"}  # not probe results: the judge's own inputs and outputs
PROBE_SCHEMAS = sorted(name for name in (os.path.basename(path) for path in glob.glob(os.path.join(ROOT, "schemas", "*.schema.json")))
                       if name not in DOCUMENT_SCHEMAS)
NUMERIC = {"number", "integer"}
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "health_h200x2_ok_by_hand_anonymised.json")


def _resolve(ref: str, schema_name: str):
    file_name, unused_hash, pointer = ref.partition("#")
    node = load_schema(file_name or schema_name)
    for part in pointer.strip("/").split("/"):
        node = node[part]
    return node, file_name or schema_name


def _unbounded(node, limit, schema_name, where, seen=()):
    """Where a field's schema lets a number above limit through (following anyOf, items and $ref, not nested fields)."""
    if not isinstance(node, dict):
        return []
    found = []
    types = node.get("type")
    types = set(types) if isinstance(types, list) else {types}
    if NUMERIC & types and not (
            node.get("maximum", float("inf")) <= limit or node.get("exclusiveMaximum", float("inf")) <= limit):
        found.append(where)
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for alternative in node.get(key, []):
            found += _unbounded(alternative, limit, schema_name, where, seen)
    if isinstance(node.get("items"), dict):
        found += _unbounded(node["items"], limit, schema_name, where + "[]", seen)
    ref = node.get("$ref")
    if ref and ref not in seen and "maximum" not in node:
        target, target_schema = _resolve(ref, schema_name)
        found += _unbounded(target, limit, target_schema, where + " -> " + ref, seen + (ref,))
    return found


def _fields(node, where=""):
    """(name, schema, path) of every field and definition in a schema."""
    if isinstance(node, list):
        for item in node:
            yield from _fields(item, where)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in ("properties", "$defs") and isinstance(value, dict):
                for name, schema in value.items():
                    yield (name, key, schema, "%s/%s" % (where, name))
            yield from _fields(value, "%s/%s" % (where, key) if key not in ("properties", "$defs") else where)


@pytest.mark.parametrize("name", PROBE_SCHEMAS)
def test_every_number_with_a_unit_has_that_units_maximum(name):
    unbounded = []
    for field, kind, schema, where in _fields(load_schema(name)):
        unit = DEFINITION_UNITS.get(field) if kind == "$defs" else unit_of_field(field)
        if unit:
            unbounded += _unbounded(schema, UNIT_LIMITS[unit][0], name, where)
    assert not unbounded, "numbers with a unit but no maximum (plugin_utils/store/unit_limits.py): %s" % unbounded


@pytest.mark.parametrize("field, unit", [("power_draw_w", "w"), ("sm_clock_mhz_median", "mhz"), ("temperature_c_max", "c"),
                                         ("repeats_gbps", "gbps"), ("time_per_iteration_us", "us"), ("gpu_count", None),
                                         ("cpus", None)])
def test_the_unit_of_a_field_is_the_last_unit_word_of_its_name(field, unit):
    assert unit_of_field(field) == unit


@pytest.fixture
def health():
    with open(FIXTURE, encoding="utf-8") as handle:
        return json.load(handle)


@pytest.mark.parametrize("path, value, words", [
    (("power", "draw_w"), 1e308, "1e+308 is greater than the maximum of 5000"),
    (("clocks", "sm_mhz"), 10 ** 18, "is greater than the maximum of 100000"),
    (("temperature", "gpu_c"), 5000, "5000 is greater than the maximum of 200"),
])
def test_a_gpu_reading_beyond_any_hardware_is_a_schema_error_with_its_path(tmp_path, health, path, value, words):
    broken = copy.deepcopy(health)
    broken["data"]["gpus"][1][path[0]][path[1]] = value
    stored = store_result(str(tmp_path / "health.json"), broken)
    assert stored["status"] == "error"
    assert "data.gpus[1].%s.%s" % path in stored["reason"] and words in stored["reason"], stored["reason"]
    assert json.loads((tmp_path / "health.raw").read_text()) == broken
