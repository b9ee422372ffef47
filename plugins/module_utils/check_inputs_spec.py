# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The argument spec of gpufleet.validation.check_inputs, shared by the module's docs stub and its action plugin."""
from __future__ import annotations

INPUTS_ARGUMENT_SPEC = dict(
    hosts=dict(type="list", elements="str", required=True),
)
