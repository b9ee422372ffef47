# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build what every probe worker needs once, in ansible-playbook's main process, before the workers fork."""
from __future__ import annotations

DOCUMENTATION = r"""
name: warm_workers
author: gpufleet.validation contributors (@gpufleet)
type: aggregate
short_description: Build the probe workers' imports and schema validators once, before Ansible forks them
version_added: 0.1.0
description:
  - Ansible forks a new worker process for every task on every host, and a worker starts with what the main process
    holds. Without this callback each probe worker imports the probes' declarations and jsonschema and builds the
    schema validators itself, about 0.35 CPU-s per host on a 2-vCPU controller.
  - This callback builds them in the main process when the playbook starts, so every worker inherits them. It changes
    no result and prints nothing; what it cannot build (no jsonschema, a broken declaration) is shown at C(-vvv) and
    left for the worker to report.
  - The repository's C(ansible.cfg) enables it; elsewhere add it to C(callbacks_enabled).
requirements:
  - Enable it in C(callbacks_enabled) (C(ANSIBLE_CALLBACKS_ENABLED)).
"""

from ansible.plugins.callback import CallbackBase

from ansible_collections.gpufleet.validation.plugins.plugin_utils.worker_warmup import warm_worker_caches


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "gpufleet.validation.warm_workers"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_start(self, playbook):
        for skipped in warm_worker_caches():
            self._display.vvv("gpufleet.validation.warm_workers: not built before the workers fork: %s" % skipped)
