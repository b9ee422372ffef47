"""The controller's reader of a probe's parameter spec (plugins/plugin_utils/probes/<name>/params.json), and the check
of parameters against it with jsonschema before anything runs.

The spec is a JSON Schema of the probe's parameters object in the closed keyword subset params_spec.schema.json allows
(each parameter: type, range, default, description). The probe reads the same file on the host (probes/probelib/params.py,
standard library only); tests/unit/engine/test_param_spec.py pins that both sides accept and refuse the same values.
"""
from __future__ import annotations

import json
import math
import os
from functools import lru_cache
from typing import Any, Dict, List, Mapping, Optional

from ..collection_info import collection_root
from ..probe_archive import params_spec_path

SPEC_SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "params_spec.schema.json")
SHOWN_KEYWORDS = ("description", "default")  # left out when a refusal shows what a parameter allows


def _is_integer(unused_checker: Any, value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(unused_checker: Any, value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@lru_cache(maxsize=None)
def _validator_class() -> Any:
    """Draft 2020-12, save that an integer is never a float (2.0) and a number is finite: the host's reading."""
    from jsonschema import Draft202012Validator, validators  # pylint: disable=import-outside-toplevel
    checker = Draft202012Validator.TYPE_CHECKER.redefine_many({"integer": _is_integer, "number": _is_number})
    return validators.extend(Draft202012Validator, type_checker=checker)


@lru_cache(maxsize=None)
def _load(path: str) -> Dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def load_spec(probe: str, root: Optional[str] = None) -> Dict[str, Any]:
    """The parsed params.json of probe (a shared object: do not change it)."""
    return _load(params_spec_path(probe, root or collection_root()))


def spec_parameters(probe: str, root: Optional[str] = None) -> Dict[str, Dict[str, Any]]:
    """{parameter: its schema}, in the spec's order."""
    return dict(load_spec(probe, root).get("properties") or {})


def defaults(probe: str, root: Optional[str] = None) -> Dict[str, Any]:
    return {name: schema["default"] for name, schema in spec_parameters(probe, root).items()}


def allowed(schema: Mapping[str, Any]) -> str:
    """What a parameter allows, as its schema's JSON without the words: {"type": "integer", "minimum": 1}."""
    return json.dumps({key: value for key, value in schema.items() if key not in SHOWN_KEYWORDS}, sort_keys=True)


def value_problems(schema: Mapping[str, Any], value: Any) -> List[str]:
    """jsonschema's reasons why value breaks one parameter's schema (empty: sound)."""
    validator = _validator_class()(dict(schema))
    return [" ".join(error.message.split())[:200] for error in sorted(validator.iter_errors(value), key=lambda error: list(error.path))]


def params_problems(probe: str, given: Mapping[str, Any], where: str, root: Optional[str] = None) -> List[str]:
    """Why given (a mapping of parameter name to value) breaks probe's spec; where names it (probe_params.<probe>)."""
    known = spec_parameters(probe, root)
    problems = ["%s.%s: no such parameter of the %s probe (known: %s)" % (where, name, probe, ", ".join(sorted(known)) or "none")
                for name in sorted(given, key=str) if name not in known]
    for name, schema in known.items():
        if name in given:
            problems.extend("%s.%s: %s (allowed: %s; default %s)" % (where, name, problem, allowed(schema), json.dumps(schema["default"]))
                            for problem in value_problems(schema, given[name]))
    return problems


def spec_problems(probe: str, root: Optional[str] = None) -> List[str]:
    """Why probe's params.json is unsound: against params_spec.schema.json, and each default against its own schema."""
    from jsonschema import Draft202012Validator  # pylint: disable=import-outside-toplevel
    spec = load_spec(probe, root)
    problems = ["%s params.json: %s at /%s" % (probe, error.message[:200], "/".join(map(str, error.path)))
                for error in Draft202012Validator(_load(SPEC_SCHEMA)).iter_errors(spec)]
    if not problems:
        problems = ["%s params.json: the default of %s: %s" % (probe, name, problem)
                    for name, schema in spec_parameters(probe, root).items() for problem in value_problems(schema, schema["default"])]
    return problems
