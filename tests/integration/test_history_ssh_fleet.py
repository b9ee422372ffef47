"""Issue 48 point 6 on the SSH test fleet: a 30-night history with a returning fault and a flapping host, each night
judged by the real `ansible-playbook playbooks/report.yml` (which updates the run index and runs the trend checks), and
on the last night each is named by its trend check and nothing else is.

Night 0 is one real `validate.yml` run against three hosts of network namespaces (tests/fleet/netns_fleet.py); nights
1 to 29 are copies of its stored results under nightly run ids a day apart, with the faults injected in the copies:
- a returning fault on host A: its tuning probe ends in error on nights 8, 16 and 29 only (a root cause, the
  tuning.probe_status check), with the nights between back in service;
- flapping on host B: its tuning probe ends in error on every other night from night 20 (20, 22, ..., 28) and is in
  service on the nights between, the last one among them (so that night has no fault to come back).

These hosts have no GPU. Their profile runs the tuning probe alone (it promises no headline), so a healthy host's
measured verdict is warn (host.gpu_measured: no GPU measured), which the trend checks count as in service; a profile
with a headline would leave every CPU host not_validated, never back in service. For the same reason B's flapping is
between warn and error, not between pass and warn as on a GPU host. Slow decay and the slowest of a group need the GPU
headline metrics these hosts do not have: tests/unit/history/test_trend_history.py covers them (and the other two) on
real H200 recordings, in process.
"""
import json
import os
import re
import subprocess
import sys
from datetime import datetime, timedelta

FLEET_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fleet")
if FLEET_DIR not in sys.path:
    sys.path.insert(0, FLEET_DIR)

from faults import runs  # noqa: E402  pylint: disable=wrong-import-position

NIGHTS = 30
RETURNING_NIGHTS = (8, 16, 29)
FLAPPING_NIGHTS = (20, 22, 24, 26, 28)
PROFILE = ("-e", json.dumps({"gpufleet_profiles": {"tuning_only": ["tuning"]}, "gpufleet_profile": "tuning_only", "gpufleet_gate": False}))
# What a copy keeps of the real run: the store's records and the probes' results; the report writes the rest again.
KEPT_HOST_FILES = ("inputs.json", "writer.json", "tuning.json")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")


def _shifted(value, old_run_id, new_run_id, days):
    """value with the real run's id replaced and every ISO 8601 time moved on by days."""
    if isinstance(value, dict):
        return {key: _shifted(item, old_run_id, new_run_id, days) for key, item in value.items()}
    if isinstance(value, list):
        return [_shifted(item, old_run_id, new_run_id, days) for item in value]
    if value == old_run_id:
        return new_run_id
    if isinstance(value, str) and TIMESTAMP.match(value):
        moment = datetime.fromisoformat(value.replace("Z", "+00:00")) + timedelta(days=days)
        return moment.isoformat().replace("+00:00", "Z" if value.endswith("Z") else "+00:00")
    return value


def _write_json(path, value):
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(value, handle, indent=2)


def _copy_night(results, real_run_id, night, hosts, faults):
    """The real run stored again as night `night` (a day later each), with faults {host: reason} injected."""
    started = datetime.strptime(real_run_id[:16], "%Y%m%dT%H%M%SZ") + timedelta(days=night)
    run_id = "%s-n%02d" % (started.strftime("%Y%m%dT%H%M%SZ"), night)
    source, target = os.path.join(results, real_run_id), os.path.join(results, run_id)
    os.makedirs(target)
    record = _shifted(runs.load_json(os.path.join(source, "run.json")), real_run_id, run_id, night)
    _write_json(os.path.join(target, "run.json"), dict(record, sequence=record["sequence"] + night))
    for host in hosts:
        os.makedirs(os.path.join(target, host))
        for name in KEPT_HOST_FILES:
            value = _shifted(runs.load_json(os.path.join(source, host, name)), real_run_id, run_id, night)
            if name == "tuning.json" and host in faults:
                value.update(status="error", reason=faults[host], data={})
            _write_json(os.path.join(target, host, name), value)
    return run_id


def _report(fleet, results, run_id):
    argv = [runs.ANSIBLE_PLAYBOOK, "playbooks/report.yml", "-i", fleet.inventory_path, "-e", "gpufleet_run_id=%s" % run_id,
            "-e", "gpufleet_results_dir=%s" % results, "-e", "gpufleet_gate=false"]
    completed = subprocess.run(argv, cwd=runs.ROOT, capture_output=True, text=True, timeout=runs.PLAYBOOK_TIMEOUT_S, check=False)
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-4000:]


def test_a_returning_fault_and_a_flapping_host_are_named_and_nothing_else(netns_fleet, tmp_path):
    fleet = netns_fleet(hosts=3, prefix="hxssh")
    returning, flapping, steady = fleet.names
    results = str(tmp_path / "results")
    code, output = runs.run_validate(fleet, results, *PROFILE)
    assert code == 0, output
    real_run_id = os.readlink(os.path.join(results, "latest"))
    real = runs.load_json(os.path.join(results, real_run_id, "fleet.json"))["hosts"]
    assert {host: entry["measured_verdict"] for host, entry in real.items()} == {host: "warn" for host in fleet.names}

    run_ids = [real_run_id]
    for night in range(1, NIGHTS):
        faults = {}
        if night in RETURNING_NIGHTS:
            faults[returning] = "the probe's own error on night %d (injected: a fault that returns)" % night
        if night in FLAPPING_NIGHTS:
            faults[flapping] = "the probe's own error on night %d (injected: a flapping host)" % night
        run_ids.append(_copy_night(results, real_run_id, night, fleet.names, faults))
        _report(fleet, results, run_ids[-1])

    nights = {night: runs.load_json(os.path.join(results, run_id, "fleet.json"))["hosts"] for night, run_id in enumerate(run_ids)}
    last = nights[NIGHTS - 1]
    assert _fired(last) == {(returning, "history.returning_fault"), (flapping, "history.flapping")}
    check = next(check for check in last[returning]["checks"] if check["id"] == "history.returning_fault")
    assert "tuning.probe_status came back 2 times after the host was back in service (%s, %s, and this run)" % (
        run_ids[8], run_ids[16]) in check["reason"], check
    assert last[returning]["verdict"] == "fail" and last[returning]["reasons"][0].startswith("history.returning_fault: ")
    outcome = runs.load_json(os.path.join(results, run_ids[-1], "outcomes", returning + ".json"))
    assert outcome["root_actions"][0] == "service" and outcome["root_cause"].startswith("history.returning_fault: "), outcome
    check = next(check for check in last[flapping]["checks"] if check["id"] == "history.flapping")
    assert "its verdict changed 9 times in the last 10 runs" in check["reason"], check
    assert (last[flapping]["measured_verdict"], last[flapping]["verdict"]) == ("warn", "warn")
    assert (last[steady]["measured_verdict"], last[steady]["verdict"]) == ("warn", "warn")
    # the fault escalates only on its second return; flapping is named from the 4th change in 10 runs (night 23) on
    assert [night for night, hosts in nights.items() if (returning, "history.returning_fault") in _fired(hosts)] == [29]
    assert [night for night, hosts in nights.items() if (flapping, "history.flapping") in _fired(hosts)] == list(range(23, NIGHTS))
    assert not any(_fired(hosts) for night, hosts in nights.items() if night < 23)

    with open(os.path.join(results, "history.html"), encoding="utf-8") as handle:
        page = handle.read()
    row = page.split('<a href="%s/index.html">' % run_ids[-1], 1)[1].split("</tr>", 1)[0]
    trends_cell = row.rsplit("<td>", 1)[1]
    assert set(re.findall(r'<a href="[^"]+/dossier.html">([^<]+)</a>', trends_cell)) == {returning, flapping}, trends_cell
    assert "<code>history.returning_fault</code>" in trends_cell and "<code>history.flapping</code>" in trends_cell


def _fired(hosts):
    """{(host, check id)} of the trend checks that warn or fail in a night's fleet.json hosts."""
    return {(host, check["id"]) for host, entry in hosts.items() for check in entry["checks"]
            if check["id"].startswith("history.") and check["status"] in ("warn", "fail")}
