# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse a judge input file (baseline, rules, overrides) as plain YAML data: bounded size, no aliases, no duplicate keys."""
from __future__ import annotations

import os

import yaml

# The collection's largest input (docs/rules.yaml, its rules as one file) is about 14 KiB; 1 MiB is seventy times that, room for any
# hand-written file, and small enough that parsing and validating one stays well under a second.
MAX_INPUT_BYTES = 1024 * 1024


class PlainYamlLoader(yaml.SafeLoader):  # pylint: disable=too-many-ancestors
    """SafeLoader without anchors and aliases (an alias bomb of 4 KB expands to gigabytes) or duplicate keys."""

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.events.AliasEvent):
            raise yaml.composer.ComposerError(None, None, "found the alias *%s: anchors and aliases are not allowed in "
                                              "this file, write each value out" % event.anchor, event.start_mark)
        if getattr(event, "anchor", None) is not None:
            raise yaml.composer.ComposerError(None, None, "found the anchor &%s: anchors and aliases are not allowed in "
                                              "this file, write each value out" % event.anchor, event.start_mark)
        return super().compose_node(parent, index)


def _construct_mapping(loader, node, deep=False):
    seen = set()
    for key_node, unused_value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError("while constructing a mapping", node.start_mark,
                                                    "found duplicate key %r" % (key,), key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


PlainYamlLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_plain_yaml(path: str, max_bytes: int = MAX_INPUT_BYTES):
    """Parse one YAML file; raises ValueError naming the file when it is unreadable, too large or not plain YAML."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            content = handle.read(max_bytes + 1)
    except OSError as exc:
        raise ValueError("%s cannot be read: %s" % (path, exc.strerror or exc)) from exc
    if len(content) > max_bytes:
        raise ValueError("%s is %d bytes, larger than the %d bytes (%s) a baseline, rules or overrides file may be"
                         % (path, max(size, len(content)), max_bytes, _size_words(max_bytes)))
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError("%s is not UTF-8: %s" % (path, exc)) from exc
    try:
        return yaml.load(text, Loader=PlainYamlLoader)  # nosec B506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ValueError("%s is not valid YAML: %s" % (path, " ".join(str(exc).split()))) from exc


def _size_words(count: int) -> str:
    return "%g MiB" % (count / 1024.0 / 1024.0) if count >= 1024 * 1024 else "%g KiB" % (count / 1024.0)
