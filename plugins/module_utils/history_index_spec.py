# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The argument spec of gpufleet.validation.history_index, shared by the module's docs stub and its action plugin."""
from __future__ import annotations

from ansible_collections.gpufleet.validation.plugins.module_utils.results_dir import DEFAULT_RESULTS_DIR

HISTORY_INDEX_ARGUMENT_SPEC = dict(
    results_dir=dict(type="path", default=DEFAULT_RESULTS_DIR),
    rebuild=dict(type="bool", default=True),
)
