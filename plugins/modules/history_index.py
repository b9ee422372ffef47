#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: history_index
short_description: Rebuild the run index of a results directory from its stored runs
version_added: "0.1.0"
description:
  - Brings the run index C(<results_dir>/.gpufleet-history.sqlite3) (SQLite, WAL; docs/history.md) to the runs stored
    in O(results_dir). Each run's rows (its hosts' verdicts, root causes and actions, every metric value and setting
    the judge compared, each GPU, what acting in Slurm did) are read from the files its report and act stored with it
    (C(fleet.json), C(outcomes/), C(slurm-actions.json)), as M(gpufleet.validation.report) does after each run.
  - With O(rebuild) every run is read again; without, only the runs not indexed yet or whose files changed. Either way
    an indexed run whose directory or C(fleet.json) is gone is dropped, and an index of another schema version is
    emptied and made again, never read.
  - An index file that is not an SQLite database is removed and made again (said in RV(problems)). The index, its
    C(-wal) and its C(-shm) are never written through a symbolic link; one that is a link fails the task, saying which.
  - Safe beside reports of the same results directory running at the same time; each run is written in one transaction.
  - Runs entirely in its action plugin on the controller; nothing runs on the managed hosts.
options:
  rebuild:
    description:
      - Read every stored run again, whatever the index holds; false reads only what changed.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: Says how many judged runs the index would hold; writes nothing.
extends_documentation_fragment:
  - gpufleet.validation.controller_action
  - gpufleet.validation.controller_action.results_dir
"""

EXAMPLES = r"""
- name: Rebuild the run index from every stored run
  gpufleet.validation.history_index:
    results_dir: results
"""

RETURN = r"""
path:
  description: The index file.
  returned: always
  type: str
  sample: /srv/validation/results/.gpufleet-history.sqlite3
indexed:
  description: The runs read into the index by this task.
  returned: success
  type: list
  elements: str
dropped:
  description: The runs taken out of the index, their directory or C(fleet.json) gone.
  returned: success
  type: list
  elements: str
runs:
  description: The runs the index holds after the task (in check mode, the judged runs it would hold).
  returned: success
  type: int
problems:
  description: Each run or stored file that could not be read (the run keeps what it had, or is not indexed), and an
    index that was not a database.
  returned: success
  type: list
  elements: str
lines:
  description: What was done, one line each, for the person at the terminal.
  returned: always
  type: list
  elements: str
"""

from ansible_collections.gpufleet.validation.plugins.module_utils.controller_only import refuse_on_host
from ansible_collections.gpufleet.validation.plugins.module_utils.history_index_spec import HISTORY_INDEX_ARGUMENT_SPEC


def main():
    refuse_on_host("history_index", HISTORY_INDEX_ARGUMENT_SPEC)


if __name__ == "__main__":
    main()
