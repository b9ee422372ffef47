"""membw and hostbw run their together phase for real on the CPU path: worker processes started by the together runner,
released at its barrier, their records schema-valid and judged (the CPU path is skipped with its numbers, never judged as
a GPU). With two CPU "devices" the alone phase runs on the first only unless alone_devices is all."""
import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.hostbw.together_checks import hostbw_together_uplink
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.membw.together_checks import membw_together_bandwidth
from ansible_collections.gpufleet.validation.plugins.plugin_utils.rules_and_baselines import load_rules
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator

import hostbw
import membw
from probe_runs import run_probe
from probelib.measure import devices as device_module
from probelib.measure import opening
from probelib.params import probe_defaults

torch = pytest.importorskip("torch")

SMALL_MEMBW = {"device": "cpu", "sizes_mib": [1, 4, 16], "target_point_ms": 10.0}
SMALL_HOSTBW = {"device": "cpu", "cpu_buffer_mib": 16}
READ_DEVICES = device_module.measured_devices


def rule(rule_id):
    return next(found for found in load_rules()["rules"] if found["id"] == rule_id)


def assert_ran_together(together, task, devices=(0, 0)):
    assert together["task"] == task
    assert [(worker["device_index"], worker["slot"], worker["status"]) for worker in together["workers"]] == [
        (device, devices[:index].count(device), "ok") for index, device in enumerate(devices)], together["workers"]
    assert together["released_together"] is True and together["start_spread_ms"] < 1000.0
    assert all(worker["workers_on_device"] == devices.count(worker["device_index"]) for worker in together["workers"])


def test_membw_with_two_workers_on_the_cpu_copies_together_and_is_skipped_with_its_numbers(tmp_path):
    envelope = run_probe(tmp_path, "membw", dict(SMALL_MEMBW, workers_per_gpu=2), timeout=300)
    assert envelope["status"] == "ok", envelope["reason"]
    data = envelope["data"]
    schema_validator("membw.schema.json").validate(data)
    together = data["together"]
    assert_ran_together(together, "probe_packages.membw.together:copy_worker")
    reference = together["alone_reference"]
    assert reference["device_index"] == 0 and reference["buffer_mib"] == data["devices"][0]["repeats"]["size_mib"] == 16
    assert reference["bandwidth_gbps"] == data["devices"][0]["repeats"]["median_gbps"] and "other_sizes" not in reference
    for worker in together["workers"]:
        result = worker["result"]
        assert result["buffer_mib"] == 16 and result["copy_verified"] is True and len(result["repeats_gbps"]) == 3
        assert result["bandwidth_gbps"] > 0 and result["share_bytes"] == result["free_bytes_at_start"] // 2
    checks = membw_together_bandwidth("localhost", data, rule("membw.together_bandwidth"), None)
    assert [check.status for check in checks] == ["skip", "skip"]
    assert checks[1].reason.startswith("CPU worker 1: ") and "not a GPU measurement" in checks[1].reason


def test_hostbw_with_two_workers_on_the_cpu_copies_together_and_is_skipped_with_its_numbers(tmp_path):
    envelope = run_probe(tmp_path, "hostbw", dict(SMALL_HOSTBW, workers_per_gpu=2), timeout=300)
    assert envelope["status"] == "ok", envelope["reason"]
    data = envelope["data"]
    schema_validator("hostbw.schema.json").validate(data)
    together = data["together"]
    assert_ran_together(together, "probe_packages.hostbw.together:copy_worker")
    assert together["alone_reference"]["h2h_gbps"] == data["devices"][0]["results"][0]["median_gbps"]
    for worker in together["workers"]:
        result = worker["result"]
        assert result["h2h_gbps"] > 0 and result["h2h"]["data_check"]["ok"] is True and result["size_mib"] == 16
        assert result["uplink_sharers"] == 2 and result["uplink_gpus"] == [0]
    checks = hostbw_together_uplink("localhost", data, rule("hostbw.together_uplink"), None)
    assert [check.status for check in checks] == ["skip", "skip"] and "crosses no PCIe uplink" in checks[0].reason


def two_cpus(torch_module, requested="auto"):
    """measured_devices on a host with two CPU "devices" (index 0 and 1): the phases run as on a 2-GPU host."""
    (cpu,) = READ_DEVICES(torch_module, "cpu")
    return [cpu, dict(cpu, index=1)]


@pytest.mark.parametrize("alone_devices, alone", [("first", [0]), ("all", [0, 1])])
def test_membw_measures_the_first_device_alone_unless_told_all_and_every_device_together(monkeypatch, alone_devices, alone):
    monkeypatch.setattr(opening, "measured_devices", two_cpus)  # membw opens its devices there
    params = dict(probe_defaults("membw"), **SMALL_MEMBW)
    params.update(alone_devices=alone_devices, repeats=2)
    result = membw.collect(params)
    assert result.status == "ok", result.reason
    assert [entry["device"]["index"] for entry in result.data["devices"]] == alone
    assert_ran_together(result.data["together"], "probe_packages.membw.together:copy_worker", (0, 1))
    assert result.data["plan"]["alone_devices"] == alone_devices
    schema_validator("membw.schema.json").validate(result.data)


def test_hostbw_measures_the_first_device_alone_and_every_device_together(monkeypatch):
    monkeypatch.setattr(device_module, "measured_devices", two_cpus)  # hostbw imports it when it collects
    result = hostbw.collect(dict(probe_defaults("hostbw"), **SMALL_HOSTBW))
    assert result.status == "ok", result.reason
    assert [entry["index"] for entry in result.data["devices"]] == [0]
    assert_ran_together(result.data["together"], "probe_packages.hostbw.together:copy_worker", (0, 1))
    workers = result.data["together"]["workers"]
    assert [worker["result"]["uplink_sharers"] for worker in workers] == [1, 1]
    assert [worker["result"]["device"]["index"] for worker in workers] == [0, 1]
    schema_validator("hostbw.schema.json").validate(result.data)
