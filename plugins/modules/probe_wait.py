#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: probe_wait
short_description: Wait on the host for a probe job that gpufleet.validation.probe started
version_added: "0.1.0"
description:
  - Blocks on the host until the probe's detached job ends or O(wait) seconds pass, whichever comes first, and
    returns the job's result once it has ended (removing it from the host).
  - The action plugin of M(gpufleet.validation.probe) calls it; it is not meant for playbooks.
  - A job whose runner is gone without a result (killed, or its directory cleaned) fails with a message saying so,
    instead of being waited for until the probe's time limit.
author:
  - gpufleet.validation contributors (@gpufleet)
options:
  job_id:
    description:
      - The job id that M(gpufleet.validation.probe) returned (32 hexadecimal digits).
    type: str
    required: true
  job_dir:
    description:
      - The job directory that M(gpufleet.validation.probe) returned.
    type: path
    required: true
  wait:
    description:
      - Longest time in seconds to block before returning with RV(finished=false).
    type: float
    default: 15
notes:
  - Reads only the job's own files in O(job_dir), never through a symlink.
attributes:
  check_mode:
    support: full
    description: >-
      Only reads the job's state (the result of a finished job is moved to its taken name once returned, for a wait
      asked again, and removed by a later job's start a day later).
  diff_mode:
    support: none
    description: Produces no diff.
"""

EXAMPLES = r"""
- name: Wait up to 15 s for a probe job (what the probe action plugin does)
  gpufleet.validation.probe_wait:
    job_id: 0123456789abcdef0123456789abcdef
    job_dir: ~/.ansible_async
    wait: 15
"""

RETURN = r"""
finished:
  description: Whether the job has ended; RV(result) is set when it has.
  returned: success
  type: bool
  sample: true
result:
  description: What M(gpufleet.validation.probe) would have returned had it run the probe in the foreground (its
    C(envelope), C(status) and C(raw_output)), or C(failed) and C(msg) when the runner failed.
  returned: when finished
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.validation.plugins.module_utils.probe_job import wait_answer

MAX_WAIT_S = 600


def main():
    module = AnsibleModule(
        argument_spec=dict(job_id=dict(type="str", required=True), job_dir=dict(type="path", required=True),
                           wait=dict(type="float", default=15)),
        supports_check_mode=True,
    )
    wait_s = min(max(module.params["wait"], 0.0), MAX_WAIT_S)
    answer = wait_answer(module.params["job_dir"], module.params["job_id"], wait_s)
    if answer.pop("failed", False):
        module.fail_json(**answer)
    module.exit_json(changed=False, **answer)


if __name__ == "__main__":
    main()
