"""A probe's parameter spec (its params.json) on the host: found, read, its defaults, and values checked against it.

The spec is the controller's plugins/plugin_utils/probes/<name>/params.json: a JSON Schema of the probe's parameters
object in a closed subset of keywords (type, enum, minimum, exclusiveMinimum, maximum, exclusiveMaximum, multipleOf,
minLength, items, minItems, uniqueItems, minProperties, propertyNames, additionalProperties; default and description).
The probe's zip carries it as probe_packages/<name>/params.json; a repository checkout has it at
../plugins/plugin_utils/probes/<name>/params.json from probes/; a hand-made copy of probes/ beside the script. The
controller checks the same values with jsonschema
(plugins/plugin_utils/probe_kit/param_spec.py) and a test pins that both agree.
Runs on Python >= 3.9 with the standard library only.
"""
from __future__ import annotations

import json
import math
import os
from typing import Any, Dict, List, Mapping, Optional

SPEC_FILE = "params.json"
HERE = os.path.dirname(os.path.abspath(__file__))
# Where the spec lies beside the probe library: packed in the zip; in a checkout of the collection; beside the script in
# a copy of probes/ made by hand (the dossier's lines to run a probe again put it there as <name>.params.json).
SPEC_PLACES = (os.path.join(os.path.dirname(HERE), "probe_packages", "{name}", SPEC_FILE),
               os.path.join(os.path.dirname(os.path.dirname(HERE)), "plugins", "plugin_utils", "probes", "{name}", SPEC_FILE),
               os.path.join(os.path.dirname(HERE), "{name}.params.json"))
TYPES = ("boolean", "integer", "number", "string", "array", "object", "null")


class ParameterError(ValueError):
    """A parameter the probe does not know, of the wrong type or out of its range."""


def require(condition: bool, message: str) -> None:
    """The one check a plan makes across parameters (e.g. max_iterations >= min_iterations): refuse with message."""
    if not condition:
        raise ParameterError(message)


def load_spec(probe: str, places: Optional[List[str]] = None) -> Dict[str, Any]:
    """The parsed spec of probe, from the first of places that holds it."""
    tried = [place.format(name=probe) for place in (places or SPEC_PLACES)]
    for path in tried:
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                return json.load(handle)
    raise ParameterError("the probe %s has no parameter spec (looked for %s)" % (probe, ", ".join(tried)))


def parameters(spec: Mapping[str, Any]) -> Dict[str, Dict[str, Any]]:
    """{name: its schema}, in the spec's order."""
    return dict(spec.get("properties") or {})


def defaults(spec: Mapping[str, Any]) -> Dict[str, Any]:
    """{name: default} of every parameter (a fresh copy: a plan may change what it is given)."""
    return {name: json.loads(json.dumps(schema["default"])) for name, schema in parameters(spec).items()}


def unknown_problem(name: Any, spec: Mapping[str, Any]) -> str:
    return "unknown parameter %r (known: %s)" % (name, ", ".join(sorted(parameters(spec))) or "none")


def problems(spec: Mapping[str, Any], given: Mapping[str, Any]) -> List[str]:
    """Why the given parameters break the spec: unknown names, then each value against its schema (empty: sound)."""
    known = parameters(spec)
    found = [unknown_problem(name, spec) for name in sorted(given, key=str) if name not in known]
    for name in known:
        if name in given:
            found.extend("parameter %r%s" % (name, problem) for problem in value_problems(known[name], given[name], ""))
    return found


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), type(value).__name__)


def is_type(value: Any, name: str) -> bool:
    """JSON Schema's type, save that an integer is never a float (2.0) and a number is finite."""
    kind = _kind(value)
    if name == "number":
        return kind in ("integer", "number") and math.isfinite(value)
    return kind == name


def _same(left: Any, right: Any) -> bool:
    """JSON equality: 1 equals 1.0, true never equals 1."""
    return _key(left) == _key(right)


def _key(value: Any) -> str:
    if _kind(value) in ("integer", "number"):
        return repr(float(value))
    return json.dumps(value, sort_keys=True)


def _is_number(value: Any) -> bool:
    return _kind(value) in ("integer", "number")


def _bound_problems(schema: Mapping[str, Any], value: Any) -> List[str]:
    found = []
    for keyword, holds, words in (("minimum", lambda limit: value >= limit, ">= %r"),
                                  ("exclusiveMinimum", lambda limit: value > limit, "> %r"),
                                  ("maximum", lambda limit: value <= limit, "<= %r"),
                                  ("exclusiveMaximum", lambda limit: value < limit, "< %r")):
        if keyword in schema and not holds(schema[keyword]):
            found.append(" must be %s, not %r" % (words % schema[keyword], value))
    step = schema.get("multipleOf")
    if step is not None:
        quotient = value / step if isinstance(value, float) or isinstance(step, float) else None
        if (value % step != 0) if quotient is None else (not math.isfinite(quotient) or int(quotient) != quotient):
            found.append(" must be a multiple of %r, not %r" % (step, value))
    return found


def _array_problems(schema: Mapping[str, Any], value: List[Any], where: str) -> List[str]:
    found = []
    if len(value) < schema.get("minItems", 0):
        found.append("%s must hold at least %d item(s), not %d" % (where, schema["minItems"], len(value)))
    if schema.get("uniqueItems") and len({_key(item) for item in value}) != len(value):
        found.append("%s must not list an item twice: %r" % (where, value))
    if "items" in schema:
        for position, item in enumerate(value):
            found.extend(value_problems(schema["items"], item, "%s[%d]" % (where, position)))
    return found


def _object_problems(schema: Mapping[str, Any], value: Dict[Any, Any], where: str) -> List[str]:
    found = []
    if len(value) < schema.get("minProperties", 0):
        found.append("%s must hold at least %d entry(ies), not %d" % (where, schema["minProperties"], len(value)))
    for key in sorted(value, key=str):
        if "propertyNames" in schema:
            found.extend(value_problems(schema["propertyNames"], key, "%s key %r" % (where, key)))
        if "additionalProperties" in schema:
            found.extend(value_problems(schema["additionalProperties"], value[key], "%s[%r]" % (where, key)))
    return found


def value_problems(schema: Mapping[str, Any], value: Any, where: str) -> List[str]:
    """Why value breaks schema, each a phrase that follows what is checked (where: the path inside the parameter)."""
    types = schema.get("type")
    names = [types] if isinstance(types, str) else list(types or [])
    if names and not any(is_type(value, name) for name in names):
        return ["%s must be %s, not %s %r" % (where, " or ".join(names), _kind(value), value)]
    if "enum" in schema and not any(_same(value, option) for option in schema["enum"]):
        return ["%s must be one of %s, not %r" % (where, ", ".join(json.dumps(option) for option in schema["enum"]), value)]
    if _is_number(value):
        return ["%s%s" % (where, problem) for problem in _bound_problems(schema, value)]
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        return ["%s must hold at least %d character(s), not %r" % (where, schema["minLength"], value)]
    if isinstance(value, list):
        return _array_problems(schema, value, where)
    if isinstance(value, dict):
        return _object_problems(schema, value, where)
    return []


def describe(schema: Mapping[str, Any]) -> str:
    """The type and range of a parameter in words: "integer >= 1", "string: auto, cuda or cpu"."""
    types = schema.get("type")
    words = " or ".join([types] if isinstance(types, str) else list(types or []))
    if "enum" in schema:
        return "%s: %s" % (words, " | ".join(json.dumps(option) for option in schema["enum"]))
    bounds = [words % schema[key] for key, words in (("minimum", ">= %r"), ("exclusiveMinimum", "> %r"),
                                                     ("maximum", "<= %r"), ("exclusiveMaximum", "< %r"),
                                                     ("multipleOf", "a multiple of %r")) if key in schema]
    if "items" in schema:
        bounds.append("of %s" % describe(schema["items"]))
    if "additionalProperties" in schema:
        bounds.append("objects of %s" % describe(schema["additionalProperties"]))
    return " ".join([words] + bounds) if bounds else words


def probe_defaults(probe: str) -> Dict[str, Any]:
    """The defaults of probe's own spec, found as load_spec finds it."""
    return defaults(load_spec(probe))
