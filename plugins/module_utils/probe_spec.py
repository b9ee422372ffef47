# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The argument spec of gpufleet.validation.probe, shared by the module and its action plugin."""
from __future__ import annotations

from ansible_collections.gpufleet.validation.plugins.module_utils.results_dir import DEFAULT_RESULTS_DIR

# The longest time limit a probe may be given: a day. A longer one would let one stalled probe hold a nightly run past
# the next night (docs/security.md, "Bounded inputs").
PROBE_TIMEOUT_LIMIT_S = 86400

PROBE_ARGUMENT_SPEC = dict(
    name=dict(type="str", required=True),
    python=dict(type="str"),
    timeout=dict(type="int"),
    profile=dict(type="str"),
    params=dict(type="dict", default={}),
    results_dir=dict(type="path", default=DEFAULT_RESULTS_DIR),
    run_id=dict(type="str", required=True),
    progress_interval=dict(type="int", default=15),
    # Set by the action plugin, never by a task: the packed probe, where its detached job lives on the host, how long
    # the start waits for the job to end before it answers (a short probe comes back in that one round trip), and the
    # Python discovery to run first ({candidates, timeout, proven}) on a host whose Python this playbook run has not found.
    archive_data=dict(type="str", no_log=True),
    job_dir=dict(type="path"),
    first_wait=dict(type="float"),
    discover=dict(type="dict"),
    # the controller's value for this start, written back by the probe into its envelope (probe_envelope.NONCE_VARIABLE)
    nonce=dict(type="str", no_log=False),
)

# Set by the probe role on the controller, never passed to the module: they belong to the run's store.
PROBE_STORE_ARGUMENT_SPEC = dict(
    resume=dict(type="bool", default=False),
    host_inputs=dict(type="dict", default={}),
    # Tried first, before the usual places, when python is not set (gpufleet.validation.find_python's candidates).
    python_candidates=dict(type="list", elements="str", default=[]),
    # True where Slurm shows the host's node allocated or mixed (a job runs there): a probe that declares it may disturb a
    # job is not run, one that cannot runs with its declared quiet parameters (docs/acting.md).
    beside_a_job=dict(type="bool", default=False),
)
