"""Whether a rule's field path ("a.b.c", or "gpus[].a.b" for every element of a list) can exist in a probe's data,
by its JSON Schema: a path the schema rules out is a typo, refused before anything runs (docs/judge.md, "Rules that
match nothing").

A path is ruled out only where the schema proves it: every alternative (anyOf, oneOf, allOf, $ref) of the value
reached so far is an object that does not allow the next key (additionalProperties false and no property or pattern
of that name) or is not a list where the path says []. An open object lets any path below it through.
"""
from __future__ import annotations

import difflib
import re
from typing import Any, List, Optional, Tuple

from .schemas import SCHEMA_SUFFIX, schema_registry

ALTERNATIVES = ("anyOf", "oneOf", "allOf")
KEYS_NAMED = 12  # of the keys the schema allows where a path breaks, in the message


def _steps(path: str) -> List[Tuple[str, bool]]:
    """("gpus", True), ("mig_mode", False) ... : each key, and whether the path goes into the list's elements."""
    return [(part[:-2], True) if part.endswith("[]") else (part, False) for part in path.split(".")]


def _alternatives(node: Any, resolver) -> List[Tuple[dict, Any]]:
    """The subschemas a value under node may be described by, $ref followed, anyOf/oneOf/allOf spread out."""
    found: List[Tuple[dict, Any]] = []
    pending = [(node, resolver)]
    while pending:
        current, current_resolver = pending.pop()
        if not isinstance(current, dict):
            continue
        if "$ref" in current:
            resolved = current_resolver.lookup(current["$ref"])
            pending.append((resolved.contents, resolved.resolver))
        for key in ALTERNATIVES:
            pending.extend((item, current_resolver) for item in current.get(key, []))
        found.append((current, current_resolver))
    return found


def _child(alternatives: List[Tuple[dict, Any]], key: str) -> Tuple[Optional[List[Tuple[Any, Any]]], List[str]]:
    """(subschemas of key under these alternatives, or None when one of them is open; the keys they name)."""
    children, named = [], []
    for node, resolver in alternatives:
        if node.get("type") not in (None, "object") and "properties" not in node:
            continue
        properties = node.get("properties") or {}
        named.extend(properties)
        if key in properties:
            children.append((properties[key], resolver))
            continue
        patterns = [schema for pattern, schema in (node.get("patternProperties") or {}).items() if re.search(pattern, key)]
        if patterns:
            children.extend((schema, resolver) for schema in patterns)
            continue
        extra = node.get("additionalProperties", True)
        if extra is True or (extra is not False and not isinstance(extra, dict)):
            if "properties" in node or "patternProperties" in node or node.get("type") == "object":
                return None, named
            continue
        if isinstance(extra, dict):
            children.append((extra, resolver))
    return children, sorted(set(named))


def path_problem(probe: str, path: str) -> Optional[str]:
    """Why path names no field of the probe's data by its schema, or None when it may exist."""
    resolver = schema_registry().resolver(base_uri=probe + SCHEMA_SUFFIX)
    resolved = resolver.lookup(probe + SCHEMA_SUFFIX)
    current = [(resolved.contents, resolved.resolver)]
    walked = ""
    for key, into_list in _steps(path):
        children, named = _child([found for node, node_resolver in current for found in _alternatives(node, node_resolver)], key)
        if children is None:
            return None
        if not children:
            close = difflib.get_close_matches(key, named, 3)
            shown = ", ".join(named[:KEYS_NAMED]) + (", ..." if len(named) > KEYS_NAMED else "")
            return "the %s data has no field %s%s (%sthere: %s)" % (
                probe, key, " under " + walked if walked else "", "did you mean %s? " % " or ".join(close) if close else "",
                shown or "no fields")
        walked = "%s.%s" % (walked, key) if walked else key
        if into_list:
            items = [(node["items"], node_resolver) for child, child_resolver in children
                     for node, node_resolver in _alternatives(child, child_resolver) if isinstance(node.get("items"), dict)]
            if not items:
                return "the %s data's %s is not a list, so %s[] names nothing" % (probe, walked, walked)
            current, walked = items, walked + "[]"
        else:
            current = children
    return None
