#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: calibrate_baseline
short_description: Write a GPU SKU's baseline from a stored run of healthy hosts
version_added: "0.1.0"
description:
  - Judges the stored run C(<results_dir>/<run_id>/) as M(gpufleet.validation.report) does, takes its healthy hosts of
    the SKU O(sku) (verdict none of fail, error, unreachable; no check failing or in error except for want of a
    reference), and writes C(<output_dir>/<sku>.yaml) with each headline metric's known-good value calibrated.
  - A calibrated value is the median over the hosts of each host's median over its GPUs, of the value the judge compares.
    Its source names the run, the hosts and the spread (the largest deviation of a host from the median, relative to it).
  - Refused, writing nothing, with fewer than 3 healthy hosts, a metric whose spread is above its drift tolerance (the
    outlying hosts and their values named), or a median below a datasheet floor of the SKU (a known_good entry with
    method C(datasheet_floor), in the starting file or the collection's own).
  - Starts from the SKU's baseline in O(baselines_dir) (or the collection's) and replaces only the calibrated known_good
    keys. A GPU that no baseline matches gets a new file, its exact match block built from what the hosts report and
    the facts no result says taken from O(facts).
  - The file is checked to load (schemas/baseline.schema.json) before it is written, atomically, never through a link,
    never into the collection's own C(baselines/) folder, and never over an existing file unless O(replace).
  - Runs entirely in its action plugin on the controller; nothing runs on the managed hosts.
options:
  run_id:
    description:
      - The run to calibrate from; C(latest) is the run C(<results_dir>/latest) points at.
    type: str
    default: latest
  sku:
    description:
      - The baseline id to calibrate (the file's name without C(.yaml)), e.g. C(h100-sxm); for a GPU no baseline knows,
        the id of the new file.
    type: str
    required: true
  hosts:
    description:
      - The hosts to calibrate from; empty, every healthy host of the SKU in the run. A named host that is not in the
        run, not of the SKU or not healthy refuses the calibration.
    type: list
    elements: str
    default: []
  output_dir:
    description:
      - The folder to write C(<sku>.yaml) into (made when missing); judge with it as C(gpufleet_baselines_dir).
    type: path
    required: true
  replace:
    description:
      - Replace an existing C(<output_dir>/<sku>.yaml).
    type: bool
    default: false
  baselines_dir:
    description:
      - The baselines the run is judged with and the SKU's starting file is taken from. Defaults to the collection's
        C(baselines/).
    type: path
  rules_file:
    description:
      - The rules file. Defaults to the collection's rules (each probe's C(rules.yaml), listed in C(docs/rules.yaml)).
    type: path
  rule_overrides:
    description:
      - Per host, overrides of the default rules (as for M(gpufleet.validation.report)); each host's run stored its own,
        and these go on top.
    type: dict
    default: {}
  facts:
    description:
      - For a GPU no baseline knows, what no result says, as baseline fields. Required C(form_factor), C(nvlink_links)
        and C(pcie) (C(gen), C(width), C(source)); optional C(name), C(description), C(gpus_per_node), C(datasheet),
        C(network), C(notes), C(firmware). Not used when the SKU has a baseline.
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    description: Calibrates and says what would be written (RV(baseline_yaml)), writes nothing.
extends_documentation_fragment:
  - gpufleet.validation.controller_action
  - gpufleet.validation.controller_action.results_dir
"""

EXAMPLES = r"""
- name: Calibrate the H100 baseline from the newest run of a batch of healthy nodes
  gpufleet.validation.calibrate_baseline:
    results_dir: results
    sku: h100-sxm
    output_dir: site-baselines
"""

RETURN = r"""
path:
  description: The file written (in check mode, the file that would be written).
  returned: success
  type: str
  sample: /srv/validation/site-baselines/h100-sxm.yaml
run_id:
  description: The run calibrated from (as given, where C(latest) could not be followed).
  returned: always
  type: str
hosts:
  description: The healthy hosts whose medians make each value.
  returned: always
  type: list
  elements: str
left_out:
  description: The hosts of the SKU left out, each with why (its verdict, or its failing check).
  returned: always
  type: dict
keys:
  description:
    - Per known_good key calibrated, its metric id, C(value) (the median), C(unit), C(spread_pct), C(tolerance_pct),
      C(values) (each host's value) and C(refused) (why it was not calibrated, or empty).
  returned: always
  type: dict
refused:
  description: Why nothing was written (empty when the file was written).
  returned: always
  type: list
  elements: str
lines:
  description: What was calibrated, left out and refused, one line each, for the person at the terminal.
  returned: always
  type: list
  elements: str
baseline_yaml:
  description: The text of the file written or, in check mode, that would be written.
  returned: success
  type: str
"""

from ansible_collections.gpufleet.validation.plugins.module_utils.controller_only import refuse_on_host
from ansible_collections.gpufleet.validation.plugins.module_utils.calibrate_baseline_spec import CALIBRATE_BASELINE_ARGUMENT_SPEC


def main():
    refuse_on_host("calibrate_baseline", CALIBRATE_BASELINE_ARGUMENT_SPEC)


if __name__ == "__main__":
    main()
