"""The fabric checks on what the fabric probe itself records from the sysfs trees of tests/unit/probes/fabric_trees.py
(not on hand-written results): the healthy HGX H200 node passes, a port down, a port at half rate and symbol errors
rising between two runs are named, and the 1-GPU VM fails nothing."""
import copy
import os
import sys

import fabric
import fabric_results as results
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.fabric.judging import JUDGING
from test_fabric_checks import RULES, VM_SLICE, context

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "probes"))
from fabric_trees import HDR, Port, hgx_h200, one_gpu_vm  # noqa: E402  pylint: disable=wrong-import-position

NO_PERFTEST = {"tool": {"unavailable": "ib_write_bw (perftest) is not installed: apt install perftest"}, "runs": [],
               "skipped": "ib_write_bw (perftest) is not installed: apt install perftest: nothing measured"}
DRIVERS = {"veth1a2b3c": "veth", "docker0": "bridge", "bond0": "bonding", "bond0.100": "802.1Q VLAN Support", "tun0": "tun"}


def recorded(tree, started=results.STARTED, run_id="20261203T100000Z-000001"):
    result = fabric.collect({}, tree.roots(), DRIVERS.get, lambda *args, **kwargs: copy.deepcopy(NO_PERFTEST),
                            lambda gpus: {})
    assert result.status == "ok", result.reason
    return results.envelope(result.data, started=started, run_id=run_id)


def every_check(envelope, ctx=None):
    checks = []
    for rule_id, rule in sorted(RULES.items()):
        rule = dict(copy.deepcopy(rule), overridden=[])
        checks += JUDGING.checks[rule["check"]]("hgx1", envelope["data"], rule, ctx or context(envelope=envelope))
    return checks


def not_passing(checks):
    return sorted((check.id, check.status, check.reason) for check in checks if check.status not in ("pass", "skip"))


def test_the_healthy_node_as_the_probe_records_it_fails_nothing(tmp_path):
    checks = every_check(recorded(hgx_h200(tmp_path)))
    assert not_passing(checks) == []
    passed = {check.id for check in checks if check.status == "pass"}
    assert {"fabric.port_state", "fabric.port_rate", "fabric.rdma_port_count", "fabric.gpudirect", "fabric.gpu_nic_affinity",
            "fabric.hca_firmware"} <= passed


def test_a_port_down_as_the_probe_records_it_fails_naming_the_port(tmp_path):
    down = Port(state="1: DOWN", phys_state="2: Polling", rate="10 Gb/sec (4X SDR)", lid="0xffff")
    found = not_passing(every_check(recorded(hgx_h200(tmp_path, ports={3: down}))))
    assert [(check_id, status) for check_id, status, reason in found if "mlx5_3" in reason][:1] == [("fabric.port_state", "fail")]


def test_a_port_at_half_rate_as_the_probe_records_it_fails(tmp_path):
    found = not_passing(every_check(recorded(hgx_h200(tmp_path, ports={5: Port(rate=HDR)}))))
    assert any(check_id == "fabric.port_rate" and status == "fail" and "mlx5_5" in reason for check_id, status, reason in found)


def test_symbol_errors_rising_between_two_recorded_runs_fail(tmp_path):
    earlier = recorded(hgx_h200(tmp_path / "first", ports={2: Port(counters={"symbol_error": 3})}),
                       started="2026-12-03T08:00:00+00:00", run_id="20261203T080000Z-000001")
    now = recorded(hgx_h200(tmp_path / "second", ports={2: Port(counters={"symbol_error": 412})}))
    found = not_passing(every_check(now, context(earlier={"fabric": earlier}, envelope=now)))
    assert any(check_id == "fabric.symbol_error_rate" and status == "fail" and "mlx5_2" in reason for check_id, status, reason in found)


def test_the_one_gpu_vm_as_the_probe_records_it_fails_nothing(tmp_path):
    envelope = recorded(one_gpu_vm(tmp_path))
    assert not_passing(every_check(envelope, context(shape=VM_SLICE, envelope=envelope))) == []
