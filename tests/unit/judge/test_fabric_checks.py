"""The fabric probe's checks on hand-written results in Contract 1's shape (fabric_results.py): each check passes the
healthy 8 x NDR 400 HGX H200 node, fails (or warns) its fault naming the port, and skips with the reason where there is
nothing to judge (the 1-GPU VM without an RDMA device, a baseline that does not say, a slice of the board)."""
import copy
import os

import pytest
import yaml

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.rules import RuleContext
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.settings import fleet_minorities
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.fabric.judging import JUDGING
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.health.machine_shape import MachineShape

import fabric_results as results
import helpers


def fabric_rules():
    with open(os.path.join(helpers.ROOT, "docs", "rules.yaml"), encoding="utf-8") as handle:
        return {rule["id"]: rule for rule in yaml.safe_load(handle)["rules"] if rule["probe"] == "fabric"}


RULES = fabric_rules()
BASELINES = {baseline["id"]: baseline for baseline in helpers.baselines()}
BARE_METAL = MachineShape(platform="bare_metal", platform_evidence="bare metal: no hypervisor flag", bus_gpus=[{}] * 8,
                          expected_gpus=8, expected_source="baselines/h200-sxm.yaml gpus_per_node (bare metal)")
VM_SLICE = MachineShape(platform="vm", platform_evidence="the CPU's hypervisor flag is set", bus_gpus=[{}], expected_gpus=1,
                        expected_source="the 1 GPU on this virtual machine's PCI bus", in_vm=True)


def context(shape=BARE_METAL, sku="h200-sxm", earlier=None, envelope=None):
    return RuleContext(host="hgx1", sku=sku, baseline=BASELINES.get(sku), expected_gpus=shape.expected_gpus if shape else None,
                       expected_gpus_source=shape.expected_source if shape else "", machine=shape, earlier_envelopes=earlier or {},
                       envelope=envelope or {})


def judged(check_id, result, ctx=None):
    rule = dict(copy.deepcopy(RULES["fabric.%s" % check_id]), overridden=[])
    return JUDGING.checks[RULES["fabric.%s" % check_id]["check"]]("hgx1", result["data"], rule, ctx or context(envelope=result))


def statuses(checks):
    return [check.status for check in checks]


def failing(checks, status="fail"):
    return [check for check in checks if check.status == status]


def test_every_fabric_rule_names_a_check_of_the_package_and_has_title_action_remedy():
    assert set(RULES) == {"fabric.%s" % name for name in JUDGING.checks}
    for rule in RULES.values():
        assert rule["title"] and rule["action"] and rule["remedy"], rule["id"]


# --- the healthy node passes every check -------------------------------------------------------------------------

@pytest.mark.parametrize("check_id", ["port_state", "port_rate", "rdma_port_count", "gpudirect", "gpu_nic_affinity",
                                      "hca_firmware", "ethernet_link", "rdma_bandwidth"])
def test_the_healthy_hgx_h200_node_passes(check_id):
    checks = judged(check_id, results.hgx_h200_healthy())
    assert checks and set(statuses(checks)) == {"pass"}, [check.reason for check in checks]


def test_the_healthy_node_is_counted_against_the_baseline():
    [count] = judged("rdma_port_count", results.hgx_h200_healthy())
    assert count.value == 8 and count.reference == 8
    assert count.reason.startswith("8 of 8 active InfiniBand ports at >= 400 Gb/s (baselines/h200-sxm.yaml network.rdma_ports_per_node")


# --- a port down, a port at half rate ----------------------------------------------------------------------------

def test_a_port_down_fails_naming_mlx5_3_port_1():
    checks = judged("port_state", results.port_down())
    [down] = failing(checks)
    assert statuses(checks).count("pass") == 7
    assert down.reason.startswith("mlx5_3 port 1 is DOWN, physical state Polling (not ACTIVE/LinkUp)")
    [count] = judged("rdma_port_count", results.port_down())
    assert count.status == "fail" and count.value == 7
    assert "not counted: mlx5_3 port 1 (DOWN/Polling, 10 Gb/sec (4X SDR))" in count.reason
    # a port that is down has no rate to judge: port_state says why, port_rate does not fail it twice
    assert "fail" not in statuses(judged("port_rate", results.port_down()))


def test_a_port_disabled_on_purpose_or_ignored_is_a_skip_not_a_failure():
    result = results.port_down()
    results.port(result, "mlx5_3").update(phys_state="Disabled")
    assert [check.status for check in judged("port_state", result) if "mlx5_3" in check.reason] == ["skip"]
    rule = dict(RULES["fabric.port_state"], params={"ignore_ports": ["mlx5_3/1"]}, overridden=["params"])
    checks = JUDGING.checks["port_state"]("hgx1", results.port_down()["data"], rule, context())
    assert "fail" not in statuses(checks) and "in the rule's ignore_ports" in failing(checks, "skip")[0].reason


def test_a_port_at_half_rate_fails_naming_it():
    [slow] = failing(judged("port_rate", results.half_rate()))
    assert slow.reason.startswith("mlx5_5 port 1 at 200 Gb/sec (2X NDR), expected 400 Gb/s: it carries 50 % of what it should")
    assert slow.value == 200.0 and slow.reference == 400.0 and "baselines/h200-sxm.yaml network.rate_gbitps" in slow.reference_source
    [count] = judged("rdma_port_count", results.half_rate())
    assert count.status == "fail" and "mlx5_5 port 1 (200 Gb/sec (2X NDR))" in count.reason


def test_a_port_in_the_other_link_layer_is_not_counted_and_says_so():
    result = results.hgx_h200_healthy()
    results.port(result, "mlx5_7")["link_layer"] = "Ethernet"
    [count] = judged("rdma_port_count", result)
    assert count.status == "fail" and "mlx5_7 port 1 (link layer Ethernet, not InfiniBand" in count.reason
    assert [check.status for check in judged("port_rate", result) if "mlx5_7" in check.reason] == ["skip"]


# --- where the baseline or the machine says nothing: skip, never fail -----------------------------------------------

def test_a_baseline_without_a_network_block_skips_count_rate_and_affinity():
    ctx = context(sku="a100-sxm-80gb")
    for check_id in ("port_rate", "rdma_port_count", "gpu_nic_affinity"):
        [check] = judged(check_id, results.half_rate(), ctx)
        assert check.status == "skip" and "baselines/a100-sxm-80gb.yaml) does not say network." in check.reason, check.reason
    ctx = context(sku="unknown-sku")
    [check] = judged("rdma_port_count", results.hgx_h200_healthy(), ctx)
    assert check.status == "skip" and "no SKU identified" in check.reason


def test_the_1_gpu_vm_without_rdma_is_skipped_with_the_reason_never_failed():
    vm = results.vm_without_rdma()
    ctx = context(shape=VM_SLICE)
    found = {check_id: judged(check_id, vm, ctx) for check_id in JUDGING.checks if "fabric.%s" % check_id in RULES}
    assert not [check.reason for checks in found.values() for check in checks if check.status in ("fail", "warn", "error")]
    assert found["port_state"][0].reason == "no RDMA device on this host (/sys/class/infiniband is empty or absent)"
    assert found["rdma_port_count"][0].reason.startswith(
        "this host is a virtual machine slice of the board (the CPU's hypervisor flag is set): it has the NICs it was given, not "
        "the board's")
    assert found["gpudirect"][0].reason.startswith("no RDMA device on this host")
    assert found["gpu_nic_affinity"][0].status == "skip" and "virtual machine slice" in found["gpu_nic_affinity"][0].reason
    assert found["rdma_bandwidth"][0].reason == "RDMA bandwidth was not measured: no RDMA device"
    assert found["ethernet_link"][0].status == "pass" and found["ethernet_link"][0].reason.startswith("eth0 is up with a carrier")


def test_a_vm_slice_with_fewer_nics_than_the_board_is_a_skip_but_a_bare_metal_board_without_them_fails():
    two = results.hgx_h200_healthy()
    two["data"]["rdma_devices"] = two["data"]["rdma_devices"][:2]
    [check] = judged("rdma_port_count", two, context(shape=VM_SLICE))
    assert check.status == "skip" and "2 RDMA port(s) here, not held to the board's 8" in check.reason
    none = results.vm_without_rdma()
    [check] = judged("rdma_port_count", none, context(shape=BARE_METAL))
    assert check.status == "fail" and "no RDMA device on this host although the board should have them" in check.reason


def test_a_host_of_unknown_platform_or_fewer_gpus_than_the_board_is_not_counted():
    unknown = MachineShape(platform="unknown", platform_evidence="not known whether this is a virtual machine", bus_gpus=None,
                           expected_gpus=8, expected_source="baselines/h200-sxm.yaml gpus_per_node")
    [check] = judged("rdma_port_count", results.port_down(), context(shape=unknown))
    assert check.status == "skip" and "not known to be the SKU's whole board" in check.reason
    handed = MachineShape(platform="bare_metal", platform_evidence="bare metal", bus_gpus=[{}] * 8, expected_gpus=6,
                          expected_source="less the 2 bound to vfio-pci")
    [check] = judged("rdma_port_count", results.port_down(), context(shape=handed))
    assert check.status == "skip" and "should have 6 of the board's 8 GPUs" in check.reason
    [check] = judged("rdma_port_count", results.port_down(), RuleContext(host="x", sku="h200-sxm", baseline=BASELINES["h200-sxm"]))
    assert check.status == "skip" and "no health result" in check.reason


# --- counters between runs ---------------------------------------------------------------------------------------

def test_symbol_errors_rising_500_an_hour_fail_naming_the_port_and_5_an_hour_pass():
    earlier, now = results.symbol_errors_rising()
    checks = judged("symbol_error_rate", now, context(earlier={"fabric": earlier}, envelope=now))
    [bad] = failing(checks)
    assert bad.reason.startswith("mlx5_2 port 1 symbol_error rose by 1000 since 20261203T100000Z-000001, 2 h earlier: 500 an hour "
                                 "(1100 since boot)")
    assert bad.value == 500.0 and bad.reference == 120.0 and "max_per_hour" in bad.reference_source
    assert statuses(checks).count("pass") == 7
    [downed] = failing(judged("link_downed_rising", now, context(earlier={"fabric": earlier}, envelope=now)), "warn")
    assert downed.reason.startswith("mlx5_2 port 1 since 20261203T100000Z-000001, 2 h earlier: link_downed +1 (0.5 an hour)")
    [rising] = failing(judged("counters_rising", now, context(earlier={"fabric": earlier}, envelope=now)), "warn")
    assert "mlx5_2 port 1" in rising.reason and "port_rcv_errors +7" in rising.reason


def test_counters_since_boot_alone_are_context_not_judged():
    now = results.symbol_errors_rising()[1]
    [check] = judged("symbol_error_rate", now, context(envelope=now))
    assert check.status == "skip"
    assert check.reason.startswith("no earlier fabric result of this host to compare the counters with; since boot (context, not "
                                   "judged): mlx5_0 port 1 symbol_error 30; mlx5_1 port 1 symbol_error 30; mlx5_2 port 1 "
                                   "symbol_error 1100;")
    [check] = judged("link_downed_rising", now, context(envelope=now))
    assert check.status == "skip" and "mlx5_2 port 1 link_downed 2" in check.reason


def test_a_counter_lower_than_before_was_reset_and_gives_no_rate():
    earlier, now = results.symbol_errors_rising()
    results.port(now, "mlx5_2")["counters"]["symbol_error"] = 3
    checks = judged("symbol_error_rate", now, context(earlier={"fabric": earlier}, envelope=now))
    assert "fail" not in statuses(checks)
    assert "mlx5_2 port 1 symbol_error = 3, lower than the earlier run's 100: the counters were reset" in checks[2].reason


def test_a_saturated_symbol_error_counter_warns():
    earlier, now = results.symbol_errors_rising()
    results.port(earlier, "mlx5_2")["counters"]["symbol_error"] = 65535
    results.port(now, "mlx5_2")["counters"]["symbol_error"] = 65535
    [stuck] = failing(judged("symbol_error_rate", now, context(earlier={"fabric": earlier}, envelope=now)), "warn")
    assert "stuck at 65535" in stuck.reason


# --- RoCE GIDs, GPUDirect, affinity, firmware --------------------------------------------------------------------

def test_a_roce_port_without_gids_fails_naming_it_and_infiniband_ports_skip():
    checks = judged("roce_gids", results.roce_without_gids())
    [bad] = failing(checks)
    assert bad.reason.startswith("mlx5_4 port 1 (RoCE) has no GID") and "ibp156s0" in bad.reason
    assert statuses(checks).count("pass") == 7
    [skip] = judged("roce_gids", results.hgx_h200_healthy())
    assert skip.status == "skip" and skip.reason.startswith("no RoCE port (every RDMA port is InfiniBand)")


def test_nvidia_peermem_missing_on_a_node_with_rdma_devices_fails_with_the_remedy():
    [check] = judged("gpudirect", results.peermem_missing())
    assert check.status == "fail" and "nvidia_peermem is not loaded (not in /proc/modules nor /sys/module)" in check.reason
    assert "modprobe nvidia-peermem" in check.reason
    dmabuf = results.peermem_missing()
    dmabuf["data"]["gpudirect"]["dmabuf"]["open_kernel_module"] = True
    [check] = judged("gpudirect", dmabuf)
    assert check.status == "pass" and "the dma-buf path is available" in check.reason


def test_a_new_kernel_with_the_proprietary_module_is_no_dma_buf_path():
    """Only NVIDIA's open kernel module exports GPU memory as dma-buf: a kernel of 5.12 or later alone passed before."""
    result = results.peermem_missing()
    assert result["data"]["gpudirect"]["dmabuf"]["kernel_supports"] is True
    [check] = judged("gpudirect", result)
    assert check.status == "fail"
    result["data"]["gpudirect"]["dmabuf"]["open_kernel_module"] = {"unavailable": "/proc/driver/nvidia/version could not be read"}
    [check] = judged("gpudirect", result)
    assert check.status != "pass"


def test_a_gpu_whose_nearest_nic_is_across_the_root_complex_fails_on_the_board_and_skips_on_a_slice():
    result = results.hgx_h200_healthy()
    result["data"]["gpus"][4]["nearest_nic"] = {"rdma_device": "mlx5_5", "pci_address": results.NIC_ADDRESSES[5],
                                                "relation": "same_numa_node"}
    [bad] = failing(judged("gpu_nic_affinity", result))
    assert bad.reason.startswith("GPU 0000:9a:00.0: nearest NIC mlx5_5 (0000:ad:00.0) is on the GPU's NUMA node; the board "
                                 "should have one on the GPU's PCIe switch")
    [skip] = judged("gpu_nic_affinity", result, context(shape=VM_SLICE))
    assert skip.status == "skip"


def test_hca_firmware_differing_within_the_node_warns_naming_the_hcas_and_is_a_setting():
    [check] = judged("hca_firmware", results.firmware_differs())
    assert check.status == "warn"
    assert check.reason.startswith("MT4129 HCAs run 2 firmware versions: mlx5_6 on 28.37.1014; mlx5_0, mlx5_1, mlx5_2, mlx5_3, "
                                   "mlx5_4, mlx5_5, mlx5_7 on 28.39.1002")
    settings = {setting.setting_id: setting for setting in JUDGING.settings(results.firmware_differs()["data"])}
    assert settings["fabric.hca_firmware"].value == "28.37.1014, 28.39.1002"
    assert settings["fabric.hca_firmware"].where == "HCA type MT4129"
    healthy = {setting.setting_id: setting.value for setting in JUDGING.settings(results.hgx_h200_healthy()["data"])}
    assert healthy == {"fabric.hca_firmware": "28.39.1002", "fabric.hca_board_id": "MT_0000000838"}


def test_a_baseline_pin_of_the_hca_firmware_warns_when_the_node_runs_another():
    pinned = copy.deepcopy(BASELINES["h200-sxm"])
    pinned["network"]["hca_firmware"] = {"value": {"MT4129": "28.41.1000"}, "source": "the fleet's qualified firmware"}
    ctx = RuleContext(host="hgx1", sku="h200-sxm", baseline=pinned, machine=BARE_METAL, expected_gpus=8)
    [check] = judged("hca_firmware", results.hgx_h200_healthy(), ctx)
    assert check.status == "warn" and "run firmware 28.39.1002; the baseline pins 28.41.1000" in check.reason


# --- Ethernet, bandwidth ---------------------------------------------------------------------------------------------

def test_a_physical_nic_without_carrier_warns_with_its_name_and_virtual_ones_are_not_judged():
    result = results.hgx_h200_healthy()
    result["data"]["ethernet"][0].update(operstate="down", carrier=False)
    checks = judged("ethernet_link", result)
    assert statuses(checks) == ["warn"] and checks[0].reason.startswith("eno1 (ixgbe, 0000:05:00.0) is down without a carrier")


def test_mtu_differing_across_rdma_backed_nics_warns():
    result = results.roce_without_gids()
    for interface in result["data"]["ethernet"][1:]:
        interface.update(virtual=False, kind="physical", mtu=9000)
    result["data"]["ethernet"][3]["mtu"] = 1500
    [check] = judged("ethernet_mtu", result)
    assert check.status == "warn" and "ibp60s0 on 1500" in check.reason
    [skip] = judged("ethernet_mtu", results.hgx_h200_healthy())
    assert skip.status == "skip"  # IPoIB interfaces are virtual: no physical RDMA-backed interface to compare


def test_rdma_bandwidth_below_90_percent_of_the_port_fails_naming_the_run_and_no_tool_skips():
    result = results.hgx_h200_healthy()
    result["data"]["rdma_bandwidth"]["runs"][5]["bandwidth_gbitps"] = 301.0   # mlx5_2, CUDA memory
    [slow] = failing(judged("rdma_bandwidth", result))
    assert slow.reason.startswith("mlx5_2 port 1, cuda memory (GPU 2), loopback: 301.0 Gb/s (peak 395.0) on a 400 Gb/s port, "
                                  "floor 360 Gb/s (90 %)")
    result["data"]["rdma_bandwidth"] = {"tool": {"unavailable": "ib_write_bw (perftest) is not installed"}, "runs": [], "skipped": None}
    [skip] = judged("rdma_bandwidth", result)
    assert skip.status == "skip" and skip.reason == "RDMA bandwidth was not measured: ib_write_bw (perftest) is not installed"
    errored = results.hgx_h200_healthy()
    errored["data"]["rdma_bandwidth"]["runs"][1] = {"rdma_device": "mlx5_0", "port": 1, "memory": "cuda", "gpu_index": 0,
                                                    "mode": "loopback", "error": "couldn't allocate MR"}
    assert "error" in statuses(judged("rdma_bandwidth", errored))


def test_a_port_the_runner_did_not_measure_is_a_skip_with_its_words_not_an_error():
    result = results.hgx_h200_healthy()
    result["data"]["rdma_bandwidth"]["runs"].append({"rdma_device": "mlx5_0", "port": 2, "memory": "host", "gpu_index": None,
                                                     "mode": "loopback", "not_run": "port 2 is DOWN, not ACTIVE: not measured"})
    checks = judged("rdma_bandwidth", result)
    [skip] = [check for check in checks if check.status != "pass"]
    assert skip.status == "skip" and skip.reason == "mlx5_0 port 2, host memory, loopback: not measured: port 2 is DOWN, not ACTIVE: not measured"


def test_the_metrics_are_each_ports_bandwidth_of_each_memory_kind_in_gbit_s_keyed_by_the_port():
    metrics = {(metric.metric_id, metric.device): metric for metric in JUDGING.metrics(results.hgx_h200_healthy()["data"])}
    assert len(metrics) == 16 and all(metric.gpu_uuid is None and metric.gpu_index is None for metric in metrics.values())
    assert metrics["fabric.rdma_write_cuda_gbitps", "mlx5_7/1"].value == 380.5 and metrics["fabric.rdma_write_cuda_gbitps", "mlx5_7/1"].unit == "Gb/s"
    assert metrics["fabric.rdma_write_host_gbitps", "mlx5_0/1"].value == 390.5
    assert metrics["fabric.rdma_write_host_gbitps", "mlx5_7/1"].value == 383.5
    assert JUDGING.metrics(results.vm_without_rdma()["data"]) == []


def test_a_run_that_names_no_port_or_failed_gives_no_metric():
    result = results.hgx_h200_healthy()
    runs = result["data"]["rdma_bandwidth"]["runs"]
    runs[0]["port"] = None
    runs[1]["error"] = "couldn't allocate MR"
    devices = {(metric.metric_id, metric.device) for metric in JUDGING.metrics(result["data"])}
    assert len(devices) == 14
    assert ("fabric.rdma_write_host_gbitps", "mlx5_0/1") not in devices and ("fabric.rdma_write_cuda_gbitps", "mlx5_0/1") not in devices


def test_a_host_whose_hcas_run_another_firmware_than_most_of_its_sku_is_named_in_the_settings_table():
    hosts = {"node%02d" % index: ("h200-sxm", JUDGING.settings(results.hgx_h200_healthy()["data"])) for index in range(5)}
    hosts["node05"] = ("h200-sxm", JUDGING.settings(results.firmware_differs()["data"]))
    [minority] = fleet_minorities(hosts)
    assert minority.sentence() == ("HCA firmware: 1 of 6 h200-sxm hosts have 28.37.1014, 28.39.1002 (node05); "
                                   "5 have 28.39.1002")
