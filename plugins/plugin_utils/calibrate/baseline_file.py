"""The calibrated baseline file: the SKU's starting baseline (its match, datasheet, network ...) with each calibrated
known_good key replaced, or for a GPU no baseline knows a new file from its hosts' match block and the facts the user
states; its YAML text; and the proof that the loader takes it (rules_and_baselines.load_baselines, the one loader).
"""
from __future__ import annotations

import copy
import os
import tempfile
from typing import Any, Dict, List, Mapping, Optional, Tuple

import yaml

from ..judge.datasheet_floors import floors_of
from ..judge.units import to_judged_unit
from ..rules_and_baselines import load_baselines
from ..store.atomic import write_text_atomically

# What a new SKU's file needs that no result says (schemas/baseline.schema.json): the user states them (facts).
STATED_FACTS = ("form_factor", "nvlink_links", "pcie")
OPTIONAL_FACTS = ("name", "description", "gpus_per_node", "datasheet", "network", "notes", "firmware")


def new_document(sku: str, gpu_name: str, match: Dict[str, Any], facts: Mapping[str, Any]) -> Tuple[Optional[Dict[str, Any]], str]:
    """(the new SKU's document without known_good values, "") or (None, what the facts lack or hold too much of)."""
    missing = [name for name in STATED_FACTS if name not in facts]
    unknown = sorted(name for name in facts if name not in STATED_FACTS + OPTIONAL_FACTS)
    if missing or unknown:
        return None, ("no baseline knows this GPU, so the new file needs what no result says: give %s in the facts "
                      "(gpufleet_calibrate_facts), e.g. {form_factor: sxm, nvlink_links: 18, pcie: {gen: 5, width: 16, "
                      "source: <datasheet>}}; optional: %s%s" % (
                          ", ".join(STATED_FACTS), ", ".join(OPTIONAL_FACTS),
                          "; not a baseline field: %s" % ", ".join(unknown) if unknown else ""))
    document: Dict[str, Any] = {"id": sku, "name": facts.get("name") or gpu_name, "form_factor": facts["form_factor"],
                                "match": match, "gpus_per_node": facts.get("gpus_per_node"),
                                "nvlink_links": facts["nvlink_links"], "pcie": copy.deepcopy(facts["pcie"])}
    for name in ("description", "network", "notes", "firmware"):
        if name in facts:
            document[name] = copy.deepcopy(facts[name])
    document["datasheet"] = copy.deepcopy(facts.get("datasheet") or {})
    document["known_good"] = {}
    return document, ""


def floors(*documents: Optional[Mapping[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """{known_good key: {value, unit, source}} of every floor ratio that covers the loaded baselines' SKU
    (judge/datasheet_floors.py), whether their entry for it is a floor, a measurement or absent; the highest of each
    key kept."""
    found: Dict[str, Dict[str, Any]] = {}
    for document in documents:
        for key, floor in floors_of(dict(document or {})).items():
            value, unit = to_judged_unit(float(floor["value"]), floor["unit"])
            if key not in found or value > found[key]["value"]:
                found[key] = {"value": value, "unit": unit, "source": floor["source"]}
    return found


def with_known_good(start: Mapping[str, Any], entries: Mapping[str, Dict[str, Any]]) -> Dict[str, Any]:
    """The start document with each of entries' known_good keys replaced (the rest of the file as it was)."""
    document = copy.deepcopy(dict(start))
    known_good = dict(document.get("known_good") or {})
    known_good.update(copy.deepcopy(dict(entries)))
    document["known_good"] = known_good
    return document


def yaml_text(document: Mapping[str, Any], header: List[str]) -> str:
    body = yaml.safe_dump(dict(document), sort_keys=False, allow_unicode=True, width=116, default_flow_style=False)
    return "".join("# %s\n" % line for line in header) + body


def load_problems(sku: str, text: str) -> List[str]:
    """What the loader says of the text as <sku>.yaml in a folder of its own ([] when it loads as that SKU)."""
    with tempfile.TemporaryDirectory(prefix="gpufleet-calibrate-") as folder:
        write_text_atomically(os.path.join(folder, sku + ".yaml"), text)
        loaded, problems = load_baselines(folder)
    if problems:
        return problems
    return [] if [baseline["id"] for baseline in loaded] == [sku] else ["the written file does not load as %s" % sku]
