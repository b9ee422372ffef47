# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible's linear strategy, where a worker process that dies costs its host, not the run."""
from __future__ import annotations

DOCUMENTATION = r"""
name: linear_per_host
author: gpufleet.validation contributors (@gpufleet)
short_description: The linear strategy, where a controller worker that dies costs its host, not the run
version_added: 0.1.0
description:
  - Runs tasks as C(linear) does.
  - With C(linear), a worker process that dies (killed, out of memory) ends the whole run with C(A worker was found in
    a dead state); no other host is probed and no report is written. Here the host whose worker died is UNREACHABLE
    with the cause (the signal or exit status); for the collection's probe task, the probe it was at is stored as
    C(unreachable) with that cause, and the other hosts and the report go on (docs/connections.md).
  - The probe play of C(validate.yml) uses it.
notes:
  - Built on ansible-core 2.19's strategy internals (its workers list and result queue), which this collection pins.
"""

import signal
import time

from ansible import constants as C
from ansible.executor.task_result import _WireTaskResult
from ansible.plugins.strategy.linear import StrategyModule as LinearStrategy
from ansible.template import Templar
from ansible.utils.display import Display

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.lost_worker import record_lost_worker

display = Display()

PROBE_ACTIONS = ("gpufleet.validation.probe",)


def worker_death(exitcode):
    """A dead worker's exit code in words: 'killed by SIGKILL', 'exited with status 1'."""
    if exitcode < 0:
        try:
            return "killed by %s" % signal.Signals(-exitcode).name
        except ValueError:
            return "killed by signal %d" % -exitcode
    return "exited with status %d" % exitcode


class StrategyModule(LinearStrategy):

    def _wait_on_pending_results(self, iterator):
        """linear's wait, except that a dead worker's host gets a result instead of the run an AnsibleError."""
        results = []
        while self._pending_results > 0 and not self._tqm._terminated:
            self._answer_for_dead_workers()
            results.extend(self._process_pending_results(iterator))
            if self._pending_results > 0:
                time.sleep(C.DEFAULT_INTERNAL_POLL_INTERVAL)
        return results

    def _queue_task(self, host, task, task_vars, play_context):
        """linear's, after waiting here for a free worker slot: linear's own wait would start the next host in the slot
        of a worker that died, whose host's result would then never come (and the run never end)."""
        while not any(worker is None or not worker.is_alive() for worker in self._workers):
            self._answer_for_dead_workers()
            time.sleep(C.DEFAULT_INTERNAL_POLL_INTERVAL)
        self._answer_for_dead_workers()
        super()._queue_task(host, task, task_vars, play_context)

    def _answer_for_dead_workers(self):
        for index, worker in enumerate(self._workers):
            if worker is None or not worker.exitcode:  # alive (None) or ended well (0)
                continue
            self._workers[index] = None
            host, task = worker._host, worker._task
            if not self._waits_for(host, task):
                worker.close()  # it died after its result came: that result stands
                continue
            message = "the controller's worker process for %s died (%s) during task %r" % (
                host.name, worker_death(worker.exitcode), task.get_name())
            stored = self._store_lost_probe(host, task, worker_death(worker.exitcode))
            if stored:
                message += "; probe %s is stored as unreachable with that cause" % stored
            display.warning(message)
            wire = _WireTaskResult(host_name=host.name, task_uuid=task._uuid, task_fields=task.dump_attrs(),
                                   return_data={"unreachable": True, "changed": False, "msg": message})
            with self._results_lock:
                self._results.append(self._convert_wire_task_result_to_raw(wire))
            worker.close()

    def _waits_for(self, host, task):
        """Whether the result of this host's task has still to come (the queue's entry is dropped when it is processed)."""
        if (host.name, task._uuid) not in self._queued_task_cache:
            return False
        with self._results_lock:
            return not any(result.host.name == host.name and result.task._uuid == task._uuid for result in self._results)

    def _store_lost_probe(self, host, task, cause):
        """For the probe task: store the probe the worker was at as unreachable; its name, or None."""
        if task.action not in PROBE_ACTIONS:
            return None
        queued = self._queued_task_cache.get((host.name, task._uuid)) or {}
        try:
            templar = Templar(loader=self._loader, variables=queued.get("task_vars") or {})
            probes = templar.template(task.loop) if task.loop else [templar.template(task.args["name"])]
            return record_lost_worker(templar.template(task.args["results_dir"]), templar.template(task.args["run_id"]),
                                      host.name, [str(probe) for probe in probes], cause)
        except Exception as exc:  # pylint: disable=broad-exception-caught
            display.warning("the probe %s's dead worker was at could not be stored: %s" % (host.name, exc))
            return None
