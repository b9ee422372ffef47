# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a loaded baseline came from: the collection's own baselines/ or the user's folder (gpufleet_baselines_dir), and
whether a user's file replaced a shipped SKU id. The loader (rules_and_baselines.load_baselines) records it under
ORIGIN_KEY in each loaded baseline (the schema refuses that key in a file, so a file cannot claim another origin);
every sentence that names a baseline's file names it through baseline_file.

Pure Python.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Optional

ORIGIN_KEY = "loaded_from"
USER_FOLDER_VARIABLE = "gpufleet_baselines_dir"


def origin(folder: str, file_name: str, shipped: bool, replaces_shipped: bool) -> Dict[str, Any]:
    """The record of one loaded file: its folder and name, whether it is the collection's, whether it replaced one."""
    return {"folder": folder, "file": file_name, "shipped": shipped, "replaces_shipped": replaces_shipped}


def shown_path(folder: str, file_name: str, shipped: bool) -> str:
    """baselines/h200-sxm.yaml for the collection's file; the user's folder joined with the file name for theirs."""
    return "baselines/%s" % file_name if shipped else os.path.join(folder, file_name)


def baseline_file(baseline: Optional[Mapping[str, Any]]) -> str:
    """The file a loaded baseline came from, in words: "baselines/h200-sxm.yaml", or for a user's file
    "/srv/fleet/baselines/h200-sxm.yaml (gpufleet_baselines_dir, in place of the shipped baselines/h200-sxm.yaml)"."""
    baseline = baseline or {}
    found = baseline.get(ORIGIN_KEY)
    if not isinstance(found, Mapping) or found.get("shipped", True):
        return "baselines/%s.yaml" % baseline.get("id")
    path = shown_path(found["folder"], found["file"], False)
    if found.get("replaces_shipped"):
        return "%s (%s, in place of the shipped baselines/%s.yaml)" % (path, USER_FOLDER_VARIABLE, baseline.get("id"))
    return "%s (%s)" % (path, USER_FOLDER_VARIABLE)
