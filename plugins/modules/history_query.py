#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: history_query
short_description: Ask the run index of a results directory how hosts and GPUs fared over many runs
version_added: "0.1.0"
description:
  - Answers one of three questions from the run index C(<results_dir>/.gpufleet-history.sqlite3) (docs/history.md,
    "Queries"), opened read-only; the index is made by every report and by C(playbooks/history.yml).
  - C(metric) is a host's metric over time, one row per run and GPU (or device, or the host itself) with the columns
    C(run_id), C(started), C(host), C(gpu_uuid), C(gpu_index), C(device), C(value), C(unit).
  - C(failures) is the hosts whose verdict was one of O(verdicts) in more than O(more_than) runs, one row per host with
    the columns C(host), C(runs), C(first_run_id), C(first_started), C(last_run_id), C(last_started), C(root_checks)
    (the root causes' checks of those runs, the most often seen first), the hosts with the most such runs first.
  - C(gpu) is every run a GPU was in, on which host, one row per run and host with the columns C(run_id), C(started),
    C(host), C(gpu_index), C(status); a GPU reported by two hosts (a replayed or copied result) shows as two hosts in
    one run, or as a host it moved to.
  - Rows are in run order (when the run started, then its run id). The answer is returned as rows and as text, CSV or
    JSON, and written to O(dest) when given, atomically and never through a symbolic link.
  - Runs entirely in its action plugin on the controller; nothing runs on the managed hosts.
options:
  query:
    description:
      - Which question to answer.
    type: str
    required: true
    choices: [metric, failures, gpu]
  host:
    description:
      - The host (its inventory name), for O(query=metric).
    type: str
  metric:
    description:
      - The metric id, as the judge names it (for example C(membw.bandwidth_gbps) or C(health.idle_power_w)), for
        O(query=metric).
    type: str
  gpu_uuid:
    description:
      - A GPU's UUID. Required for O(query=gpu); with O(query=metric), only that GPU's values.
    type: str
  since:
    description:
      - Only the runs that started at or after this ISO 8601 date (C(2026-12-01)) or time (C(2026-12-01T06:00:00Z); no
        zone is UTC).
    type: str
  until:
    description:
      - Only the runs that started on or before this ISO 8601 date (the whole day) or time.
    type: str
  verdicts:
    description:
      - For O(query=failures), the verdicts counted, each one of C(fail), C(error), C(unreachable), C(not_validated),
        C(warn), C(pass); when not given, C(fail).
    type: list
    elements: str
  more_than:
    description:
      - For O(query=failures), only the hosts with more than this many such runs; when not given, 0 (every host with one).
    type: int
  format:
    description:
      - The text of the answer (RV(text), O(dest)); a list value (C(root_checks)) is one CSV cell, its items joined by a space.
    type: str
    default: csv
    choices: [csv, json]
  dest:
    description:
      - A file on the controller the answer's text is written to (replaced atomically; a symbolic link there is refused).
    type: path
attributes:
  check_mode:
    support: full
    description: Answers the query; writes no O(dest).
extends_documentation_fragment:
  - gpufleet.validation.controller_action
  - gpufleet.validation.controller_action.results_dir
"""

EXAMPLES = r"""
- name: One host's HBM bandwidth over every run, as CSV
  gpufleet.validation.history_query:
    results_dir: results
    query: metric
    host: gpu-r01-n007
    metric: membw.bandwidth_gbps
    dest: /tmp/gpu-r01-n007-membw.csv

- name: Hosts that failed more than twice since the first of December
  gpufleet.validation.history_query:
    query: failures
    more_than: 2
    since: "2026-12-01"
    format: json
  register: failed_often

- name: Every run a GPU was in, and on which host
  gpufleet.validation.history_query:
    query: gpu
    gpu_uuid: GPU-5c6b3f0e-8d3c-2a41-9b1e-0f6a7d2c4e11
"""

RETURN = r"""
path:
  description: The index file read.
  returned: always
  type: str
  sample: /srv/validation/results/.gpufleet-history.sqlite3
columns:
  description: The query's columns, in order (each row's keys, the CSV header).
  returned: always
  type: list
  elements: str
rows:
  description: The answer, one dict per row with the keys RV(columns) names.
  returned: success
  type: list
  elements: dict
count:
  description: How many rows.
  returned: success
  type: int
text:
  description: The rows as CSV (a header line first) or JSON (a list of objects), as O(format) says.
  returned: success
  type: str
lines:
  description: What was done, one line each, for the person at the terminal.
  returned: success
  type: list
  elements: str
"""

from ansible_collections.gpufleet.validation.plugins.module_utils.controller_only import refuse_on_host
from ansible_collections.gpufleet.validation.plugins.module_utils.history_query_spec import HISTORY_QUERY_ARGUMENT_SPEC


def main():
    refuse_on_host("history_query", HISTORY_QUERY_ARGUMENT_SPEC)


if __name__ == "__main__":
    main()
