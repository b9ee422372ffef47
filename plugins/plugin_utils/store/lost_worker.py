"""Record the probe a host was running when the controller's worker process for that host died.

Ansible forks one worker per host and task; the probe task's worker runs all of a host's probes (its loop). When that
worker dies (killed, out of memory), nothing it was doing is stored, so the report would judge the host on the results
stored before as if they were all. ``record_lost_worker`` stores the first probe of the host's list that this playbook
run has no result of (and no finished result a resume keeps) as ``unreachable``, naming the cause; the probes after it were not attempted. Called in
ansible-playbook's main process (plugins/strategy/linear_per_host.py).
"""
from __future__ import annotations

import os
from typing import Optional, Sequence

from ...module_utils.probe_envelope import failure_envelope
from ..collection_info import collection_version
from .paths import host_dir, result_file_name
from .results import store_result_at
from .run_dir import claimed_host_dir, finished_earlier, playbook_writer, process_started_epoch


def _written_by_this_run(host_fd: int, probe: str, started: Optional[float]) -> bool:
    try:
        written = os.stat(result_file_name(probe), dir_fd=host_fd, follow_symlinks=False).st_mtime
    except FileNotFoundError:
        return False
    return started is None or written >= started


def record_lost_worker(results_dir: str, run_id: str, host: str, probes: Sequence[str], cause: str) -> Optional[str]:
    """Store the probe the dead worker was at as unreachable with ``cause``; the probe's name, or None when every probe
    of the list has a result of this playbook run (the worker died after its last probe)."""
    writer = playbook_writer(True, in_main_process=True)
    started = process_started_epoch(writer.get("pid_start_ticks"))
    shown = host_dir(results_dir, run_id, host)
    with claimed_host_dir(results_dir, run_id, host, writer) as host_fd:
        for probe in probes:
            if _written_by_this_run(host_fd, probe, started) or finished_earlier(host_fd, probe, writer, shown) is not None:
                continue  # stored by this playbook run, or a finished result a resume keeps
            reason = ("the controller's worker process for this host died (%s) while probe %s was started or waited "
                      "for, so its result is lost and the host's later probes were not attempted; stage: the controller; "
                      "see the controller's log (an out-of-memory kill?) and run the host again" % (cause, probe))
            envelope = dict(failure_envelope(probe, host, "unreachable", reason), run_id=run_id,
                            collection_version=collection_version())
            store_result_at(host_fd, probe, envelope, None, shown)
            return probe
    return None
