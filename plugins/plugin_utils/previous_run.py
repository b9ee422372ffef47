"""Find each host's previous result: the newest earlier run in the results directory that holds the host."""
from __future__ import annotations

import json
import os
import re
from typing import Dict, Iterable, List, Optional, Tuple

from .result_paths import RUN_ID_PATTERN, host_dir_name

_TIMESTAMPED_RUN_ID = re.compile(r"^(\d{8}T\d{6}Z)")
MEASURED_STATUSES = ("ok", "partial")


def _run_order_key(results_dir: str, run_id: str) -> Tuple[int, str]:
    """Runs named by the playbook start with a UTC timestamp; other names are ordered by modification time."""
    match = _TIMESTAMPED_RUN_ID.match(run_id)
    if match:
        return 1, match.group(1) + run_id
    return 0, "%020.6f" % os.stat(os.path.join(results_dir, run_id)).st_mtime


def earlier_runs(results_dir: str, run_id: str) -> List[str]:
    """Run ids other than ``run_id``, newest first; links (such as ``latest``) and odd names are skipped."""
    results_dir = os.path.abspath(results_dir)
    if not os.path.isdir(results_dir):
        return []
    with os.scandir(results_dir) as entries:
        runs = [entry.name for entry in entries
                if entry.name != run_id and RUN_ID_PATTERN.match(entry.name) and entry.is_dir(follow_symlinks=False)]
    current = _run_order_key(results_dir, run_id) if os.path.isdir(os.path.join(results_dir, run_id)) else None
    runs.sort(key=lambda name: _run_order_key(results_dir, name), reverse=True)
    if current is not None:
        runs = [name for name in runs if _run_order_key(results_dir, name) < current]
    return runs


def _reached_envelopes(host_path: str) -> Dict[str, dict]:
    envelopes = {}
    try:
        names = sorted(os.listdir(host_path))
    except OSError:
        return envelopes
    for name in names:
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(host_path, name), encoding="utf-8") as handle:
                envelope = json.load(handle)
        except (OSError, ValueError):
            continue
        if isinstance(envelope, dict) and envelope.get("status") != "unreachable":
            envelopes[name[:-len(".json")]] = envelope
    # Drift needs something measured: a run where every probe failed or was unavailable is passed over.
    if not any(envelope.get("status") in MEASURED_STATUSES for envelope in envelopes.values()):
        return {}
    return envelopes


def previous_results(results_dir: str, run_id: str, hosts: Iterable[str],
                     max_runs: int = 400) -> Tuple[Dict[str, Dict[str, dict]], Dict[str, str]]:
    """For each host, the envelopes of the newest earlier run where a probe of it measured something, and its run id.

    Looks at no more than ``max_runs`` earlier runs, so that a years-old results directory stays cheap.
    """
    envelopes: Dict[str, Dict[str, dict]] = {}
    run_ids: Dict[str, str] = {}
    pending = {host: host_dir_name(host) for host in hosts}
    for earlier in earlier_runs(results_dir, run_id)[:max_runs]:
        if not pending:
            break
        for host, dir_name in list(pending.items()):
            host_path = os.path.join(os.path.abspath(results_dir), earlier, dir_name)
            if os.path.islink(host_path) or not os.path.isdir(host_path):
                continue
            found = _reached_envelopes(host_path)
            if found:
                envelopes[host] = found
                run_ids[host] = earlier
                del pending[host]
    return envelopes, run_ids


def most_common_run(run_ids: Dict[str, str]) -> Optional[str]:
    counts: Dict[str, int] = {}
    for run in run_ids.values():
        counts[run] = counts.get(run, 0) + 1
    return max(sorted(counts), key=lambda run: counts[run]) if counts else None
