# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run's rows of the index, read from the files the report and the act store with the run: fleet.json (every host's
verdict, checks, metric values and settings), outcomes/<host>.json (its root cause and what was done about it) and
slurm-actions.json (what acting in Slurm did). The one source of the index's rows: the report's update and the rebuild
both call run_rows, so they write the same rows for the same files. fleet.json is read a host at a time
(fleet_stream.py), never whole. Pure: the store reads the files."""
from __future__ import annotations

import json
import math
import os
import stat
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

from ..act.outcome import outcome_problem
from ..act.slurm_record import record_problem
from ..judge.verdict import STATUS_ORDER
from ..store.paths import FLEET_JSON_FILE, OUTCOMES_DIR, SLURM_ACTIONS_FILE, is_outcome_file_name
from ..store.read import read_json_below
from ..store.safe_fs import DIRECTORY_FLAGS, open_regular_at
from ..store.run_order import id_time
from .fleet_stream import fleet_members

# fleet.json of a large run is far larger than a probe's result: 10,000 hosts' checks, metric values and settings.
FLEET_JSON_LIMIT_BYTES = 4 * 2 ** 30
OUTCOME_LIMIT_BYTES = 2 ** 20
SLURM_ACTIONS_LIMIT_BYTES = 256 * 2 ** 20
# The worst first, for a GPU's status: what exports.STATUS_SEVERITY ranks, without importing the report.
_GPU_STATUS_RANK = {"skip": 0, "pass": 1, "warn": 2, "error": 3, "fail": 4}
# What the rows read of a host's outcome (_host_rows, _started).
_OUTCOME_KEYS = ("root_cause", "root_actions", "action", "run_started")
# The stored files a run's rows are read from, each a name in the run directory.
SOURCE_FILES = (FLEET_JSON_FILE, OUTCOMES_DIR, SLURM_ACTIONS_FILE)


def source_of(run_path: str) -> Optional[str]:
    """The identity of the files a run's rows are read from (device, inode, size and modification time of fleet.json, the
    outcomes directory, whose time changes with every outcome renamed into it, and slurm-actions.json), or None for a
    run without fleet.json (not judged yet). Equal identities: the rows read from the files are the same."""
    parts = []
    for name in SOURCE_FILES:
        try:
            found = os.stat(os.path.join(run_path, name), follow_symlinks=False)
        except FileNotFoundError:
            if name == FLEET_JSON_FILE:
                return None
            parts.append("%s=-" % name)
            continue
        if name == FLEET_JSON_FILE and not stat.S_ISREG(found.st_mode):
            return None
        parts.append("%s=%d:%d:%d:%d" % (name, found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns))
    return ";".join(parts)


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _flag(value: Any) -> Optional[int]:
    return None if value is None else int(bool(value))


def _text(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def _strings(value: Any) -> List[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _statistics_rows(run_id: str, statistics: Any) -> Iterator[Tuple[Any, ...]]:
    """The rows of fleet.json's fleet_statistics ({group: {metric id: {median, mad, count, hosts, unit}}})."""
    for group, metrics in sorted(statistics.items()) if isinstance(statistics, Mapping) else ():
        for metric_id, entry in sorted(metrics.items()) if isinstance(metrics, Mapping) else ():
            if isinstance(entry, Mapping):
                yield (run_id, group, metric_id, _number(entry.get("median")), _number(entry.get("mad")), _count(entry.get("count")),
                       _count(entry.get("hosts")), _text(entry.get("unit")))


def _count(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _outcomes(run_path: str) -> Tuple[Dict[str, Mapping[str, Any]], List[str]]:
    """({host: its stored outcome}, why each outcome that was not read was not)."""
    folder = os.path.join(run_path, OUTCOMES_DIR)
    try:
        names = sorted(entry.name for entry in os.scandir(folder) if is_outcome_file_name(entry.name))
    except FileNotFoundError:
        return {}, []
    found, problems = {}, []
    for name in names:
        try:
            document = read_json_below(folder, name, OUTCOME_LIMIT_BYTES)
        except (OSError, ValueError) as exc:
            problems.append("%s/%s: %s" % (OUTCOMES_DIR, name, exc))
            continue
        problem = outcome_problem(document)
        if problem:
            problems.append("%s/%s: %s" % (OUTCOMES_DIR, name, problem))
        else:  # only what the rows read: 10,000 hosts' outcomes are held while fleet.json is read
            found[document["host"]] = {key: document[key] for key in _OUTCOME_KEYS if key in document}
    return found, problems


def _slurm_rows(run_id: str, run_path: str) -> Tuple[List[Tuple[Any, ...]], List[str]]:
    try:
        record = read_json_below(run_path, SLURM_ACTIONS_FILE, SLURM_ACTIONS_LIMIT_BYTES)
    except FileNotFoundError:
        return [], []
    except (OSError, ValueError) as exc:
        return [], ["%s: %s" % (SLURM_ACTIONS_FILE, exc)]
    problem = record_problem(record)
    if problem:
        return [], ["%s: %s" % (SLURM_ACTIONS_FILE, problem)]
    entries = [("drain", entry) for entry in record["drained"]] + [("resume", entry) for entry in record["resumed"]]
    return [(run_id, position, action, _text(entry.get("host")), _text(entry.get("node")), _text(entry.get("reason")),
             _text(entry.get("at")), _flag(entry.get("confirmed")), _flag(entry.get("intake")))
            for position, (action, entry) in enumerate(pair for pair in entries if isinstance(pair[1], Mapping))], []


def _roots(checks: List[Mapping[str, Any]]) -> List[Mapping[str, Any]]:
    """The root causes as the outcome's root_actions lists them (report/verdicts.root_actions): the checks that do not
    pass and follow from none, worst first."""
    roots = [check for check in checks if check.get("status") in STATUS_ORDER and not check.get("because")]
    return sorted(roots, key=lambda check: STATUS_ORDER[check["status"]])


def _gpu_rows(run_id: str, host: str, entry: Mapping[str, Any]) -> List[Tuple[Any, ...]]:
    gpus: Dict[str, Tuple[Optional[int], Optional[str]]] = {}
    for item in list(entry.get("checks") or []) + list(entry.get("metrics") or []):
        uuid = item.get("gpu_uuid") if isinstance(item, Mapping) else None
        if not isinstance(uuid, str) or not uuid:
            continue
        index, status = gpus.get(uuid, (None, None))
        if index is None and isinstance(item.get("gpu_index"), int):
            index = item["gpu_index"]
        found = item.get("status")
        if found in _GPU_STATUS_RANK and (status is None or _GPU_STATUS_RANK[found] > _GPU_STATUS_RANK[status]):
            status = found
        gpus[uuid] = (index, status)
    return [(run_id, host, uuid, index, status) for uuid, (index, status) in sorted(gpus.items())]


def _host_rows(run_id: str, started: Optional[str], host: str, entry: Mapping[str, Any],
               outcome: Optional[Mapping[str, Any]]) -> Iterator[Tuple[str, Tuple[Any, ...]]]:
    """(table, row) of one host of fleet.json, its outcome beside it where one was stored."""
    checks = [check for check in entry.get("checks") or [] if isinstance(check, Mapping)]
    roots = _roots(checks)
    actions = list((outcome or {}).get("root_actions") or [])
    action = (outcome or {}).get("action") if isinstance((outcome or {}).get("action"), Mapping) else {}
    reasons = [reason for reason in entry.get("reasons") or [] if isinstance(reason, str)]
    root_cause = outcome["root_cause"] if outcome is not None else (reasons[0] if reasons else "")
    yield "hosts", (run_id, host, started, entry.get("verdict"), root_cause, roots[0]["id"] if roots else None,
                    actions[0] if actions else (roots[0].get("action") or None if roots else None), _text(entry.get("sku")),
                    _json(entry.get("groups") or []), _flag(entry.get("refused_by_gate")), _json(reasons),
                    _text((entry.get("dossier") or {}).get("html")), _text(action.get("scheduler")), _text(action.get("node")),
                    _text(action.get("planned")), _flag(action.get("done")), _text(action.get("why")),
                    _text(entry.get("measured_verdict")) or entry.get("verdict"), _json(_strings(entry.get("lowest_of_group"))))
    for position, check in enumerate(roots):
        yield "causes", (run_id, host, position, check.get("id"), check.get("status"), _text(check.get("probe")),
                         _text(check.get("gpu_uuid")), check.get("gpu_index"), _text(check.get("device")),
                         actions[position] if position < len(actions) else (check.get("action") or None), _text(check.get("reason")))
    for row in _gpu_rows(run_id, host, entry):
        yield "gpus", row
    for metric in entry.get("metrics") or []:
        yield "metrics", (run_id, host, metric.get("id"), _text(metric.get("probe")), _text(metric.get("gpu_uuid")),
                          metric.get("gpu_index"), _text(metric.get("device")), _number(metric.get("value")), _text(metric.get("unit")))
    for setting in entry.get("settings") or []:
        yield "settings", (run_id, host, setting.get("id"), setting.get("where") or "", _json(setting.get("value")),
                           _text(setting.get("unit")))


def _started(run_id: str, outcomes: Mapping[str, Mapping[str, Any]]) -> Optional[str]:
    """When the run started (ISO 8601 UTC): its hosts' outcomes say, else the time a playbook-named run id starts with."""
    found = sorted(outcome["run_started"] for outcome in outcomes.values() if outcome.get("run_started"))
    if found:
        return found[0]
    named = id_time(run_id)
    return named.replace(" ", "T") + "Z" if named else None


def _fleet_json_events(run_path: str) -> Iterator[Tuple[str, str, Any]]:
    """fleet_stream.fleet_members of the run's fleet.json, opened never through a link and refused over its limit."""
    directory = os.open(run_path, DIRECTORY_FLAGS)
    try:
        handle = open_regular_at(directory, FLEET_JSON_FILE, FLEET_JSON_LIMIT_BYTES, os.path.join(os.path.basename(run_path), FLEET_JSON_FILE))
    finally:
        os.close(directory)
    with handle:
        yield from fleet_members(handle, os.path.join(run_path, FLEET_JSON_FILE))


def run_rows(run_id: str, run_path: str, source: str, problems: List[str]) -> Iterator[Tuple[str, Tuple[Any, ...]]]:
    """(table, row) of the run, read from its stored files: each host's rows as fleet.json is read, a host at a time,
    then the run's row and its Slurm actions. Appends to problems why each other file that was not read was not. Raises
    OSError or ValueError when fleet.json cannot be read, possibly after rows were given (the caller then drops them:
    the run is not indexed). source: source_of(run_path), taken before."""
    outcomes, outcome_problems = _outcomes(run_path)
    slurm, slurm_problems = _slurm_rows(run_id, run_path)
    problems += outcome_problems + slurm_problems
    started = _started(run_id, outcomes)
    members: Dict[str, Any] = {}
    host_count = 0
    for kind, name, value in _fleet_json_events(run_path):
        if kind != "host":
            members[name] = value
            continue
        host_count += 1
        if isinstance(value, Mapping):
            yield from _host_rows(run_id, started, name, value, outcomes.get(name))
    gate = members.get("gate") if isinstance(members.get("gate"), Mapping) else {}
    yield "runs", (run_id, started, _text(members.get("previous_run_id")), _json(members.get("collection_versions") or []),
                   _flag(gate.get("enforced")), _flag(gate.get("passed")), host_count, source)
    for row in slurm:
        yield "slurm_actions", row
    for row in _statistics_rows(run_id, members.get("fleet_statistics")):
        yield "statistics", row
