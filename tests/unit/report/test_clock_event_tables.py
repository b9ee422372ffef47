"""The per-GPU throttle history tables of the load and health dossier sections: seconds per clock-event reason, the
window's share, slowdown time flagged, an unread counter n/a with its reason; a result without the counters shows none."""
import copy
import json
import os
import shutil
import sys

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.health.view import health_view
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.load.view import load_view

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
RIG_RUN = os.path.join(ROOT, "docs", "examples", "h200x2", "20261130T054132Z-520925", "localhost")
NOT_SUPPORTED = {"unavailable": "nvmlDeviceGetFieldValues NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN (271): "
                                "not supported by this GPU (NVML: return code 3)"}


def _entry(seconds, share=None):
    entry = {"ns": int(seconds * 1e9), "s": seconds, "source": "nvmlDeviceGetFieldValues a field (1)"}
    if share is not None:
        entry["share_pct"] = share
    return entry


def _rig(probe):
    with open(os.path.join(RIG_RUN, "%s.json" % probe)) as handle:
        return json.load(handle)["data"]


def test_the_load_section_shows_each_gpus_seconds_and_share_in_the_window():
    data = _rig("load")
    assert len(load_view(data)["tables"]) == 3  # a result from before the counters: no table
    data = copy.deepcopy(data)
    data["gpus"][0]["clock_event_durations_window"] = {"window_s": 60.0, "reasons": {
        "sw_power_cap": _entry(48.0, 80.0), "sync_boost": _entry(0.0, 0.0), "sw_thermal_slowdown": _entry(0.0, 0.0),
        "hw_thermal_slowdown": _entry(12.0, 20.0), "hw_power_brake_slowdown": NOT_SUPPORTED}}
    data["gpus"][1]["clock_event_durations_window"] = {"unavailable": "no NVML device has the UUID"}
    view = load_view(data)
    clock_events = view["tables"][1]
    assert clock_events["columns"][:3] == ["GPU", "window_s", "sw_power_cap"]
    first, second = clock_events["rows"]
    assert [cell.text for cell in first] == ["GPU 0", "60 s", "48 s (80 %)", "0 s (0 %)", "0 s (0 %)", "12 s (20 %)", "n/a"]
    assert first[5].flag == "bad" and first[2].flag == "" and "not supported" in first[6].note
    assert second[2].text == "n/a" and second[2].note == "no NVML device has the UUID"


def test_the_health_section_shows_the_seconds_since_the_driver_loaded():
    data = copy.deepcopy(_rig("health"))
    assert health_view(data)["tables"][0]["rows"] == []
    data["gpus"][0]["clock_event_durations"] = {"since": "driver_load", "uptime_s": 7200.0, "reasons": {
        "sw_power_cap": _entry(120.0), "sync_boost": _entry(0.0), "sw_thermal_slowdown": _entry(0.0),
        "hw_thermal_slowdown": _entry(3.0), "hw_power_brake_slowdown": _entry(0.0)}}
    row = health_view(data)["tables"][0]["rows"][0]
    assert [cell.text for cell in row][:3] == ["GPU 0", "7200 s", "120 s"]
    assert row[5].text == "3 s" and row[5].flag == "warn" and row[5].note == "nvmlDeviceGetFieldValues a field (1)"


def test_both_tables_reach_the_rendered_dossier(tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "report"))
    from test_dossiers_people_read import RECORDED, RECORDED_RUN, _render  # pylint: disable=import-error,import-outside-toplevel
    shutil.copytree(os.path.join(RECORDED, RECORDED_RUN), str(tmp_path / RECORDED_RUN))
    host_dir = tmp_path / RECORDED_RUN / "localhost"
    for name in os.listdir(str(host_dir)):
        if name.endswith((".html", ".md")):
            os.remove(str(host_dir / name))
    reasons = {"sw_power_cap": _entry(120.0), "sync_boost": _entry(0.0), "sw_thermal_slowdown": _entry(0.0),
               "hw_thermal_slowdown": _entry(0.0), "hw_power_brake_slowdown": NOT_SUPPORTED,
               "hw_slowdown": {"unavailable": "NVML has no duration counter for hw_slowdown"}}
    policies = {policy: _entry(0.0) for policy in ("power", "thermal", "sync_boost", "board_limit", "low_utilization", "reliability")}
    for probe, key, value in (
            ("health", "clock_event_durations", {"since": "driver_load", "uptime_s": 7200.0, "reasons": reasons,
                                                 "violation_status": policies}),
            ("load", "clock_event_durations_window", {"window_s": 60.0, "reasons": {
                name: dict(entry, s=entry["s"] / 2.5, share_pct=round(100 * entry["s"] / 2.5 / 60, 3)) if "s" in entry else entry
                for name, entry in reasons.items()},
                "violation_status": {policy: dict(entry, share_pct=0.0) for policy, entry in policies.items()}})):
        path = host_dir / ("%s.json" % probe)
        envelope = json.loads(path.read_text())
        for gpu in envelope["data"]["gpus"]:
            gpu[key] = value
        path.write_text(json.dumps(envelope))
    unused_run, judgement, written = _render(str(tmp_path), RECORDED_RUN, "localhost")
    markdown, page = written["localhost/dossier.md"], written["localhost/dossier.html"]
    assert "### Time in each clock-event reason since the driver loaded" in markdown
    assert "| GPU 0 | 7200 s | 120 s | 0 s | 0 s | 0 s | n/a \\[1\\] |" in markdown  # [1]: the reason, stated once below
    assert "| GPU 0 | 60 s | 48 s (80 %) | 0 s (0 %) |" in markdown
    assert "<h3>Time in each clock-event reason during the load window" in page
    verdict = judgement.hosts["localhost"]
    assert [check.status for check in verdict.checks if check.id == "health.clock_event_durations"] == ["pass"]
    assert [check.status for check in verdict.checks if check.id == "load.clock_event_durations"] == ["pass"]
