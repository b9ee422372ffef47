"""Settings compared with the previous run (a change is a warn with before and after) and with the SKU's other hosts."""
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.settings import (
    Setting,
    fleet_minorities,
    minority_checks,
    settings_drift,
)

UNREAD = {"unavailable": "MaxPayload is in PCI config space past the 64 bytes readable without root"}


def payload(where, value):
    return Setting("tuning.pcie_max_payload_bytes", "PCIe MaxPayload", value, where, "B")


def swappiness(value):
    return Setting("tuning.vm_swappiness", "vm.swappiness", value)


def test_an_unchanged_host_setting_passes_with_its_value():
    [check] = settings_drift("h", "tuning", [swappiness(60)], [swappiness(60)], "r1")
    assert (check.id, check.status, check.value, check.reference) == ("drift.tuning.vm_swappiness", "pass", 60, 60)
    assert check.reason == "vm.swappiness 60, unchanged since run r1"


def test_a_changed_setting_is_a_warn_with_before_and_after():
    [check] = settings_drift("h", "tuning", [swappiness(10)], [swappiness(60)], "r1")
    assert check.status == "warn" and (check.value, check.reference) == (10, 60)
    assert check.reason == "vm.swappiness changed since run r1: 60 -> 10"


def test_per_device_settings_name_each_device_that_changed_and_count_the_rest():
    before = [payload("root port 0000:15:01.0", 256), payload("GPU 0000:17:00.0", 256), payload("GPU 0000:18:00.0", 256)]
    now = [payload("root port 0000:15:01.0", 256), payload("GPU 0000:17:00.0", 128), payload("GPU 0000:18:00.0", 256)]
    [check] = settings_drift("h", "tuning", now, before, "r1")
    assert check.status == "warn" and check.value == 1 and check.unit == "changed"
    assert check.reason == "PCIe MaxPayload changed since run r1: GPU 0000:17:00.0: 256 B -> 128 B"
    [same] = settings_drift("h", "tuning", before, before, "r1")
    assert same.status == "pass" and same.reason == "PCIe MaxPayload unchanged since run r1 on 3 (256 B)"


def test_a_device_that_came_or_went_is_a_change_but_a_host_field_missing_once_is_not():
    [check] = settings_drift("h", "tuning", [payload("bridge 0000:16:00.0", 256)], [], "r1")
    assert check.status == "warn" and "bridge 0000:16:00.0: new (256 B)" in check.reason
    [check] = settings_drift("h", "health", [Setting("torch_version", "torch version", "2.11")], [], "r1")
    assert check.status == "skip" and check.reason == "torch version not comparable with run r1: unknown in that run"


def test_a_setting_unreadable_in_one_run_is_not_comparable_and_says_why():
    [check] = settings_drift("h", "tuning", [payload("GPU 0000:17:00.0", UNREAD)], [payload("GPU 0000:17:00.0", 256)], "r1")
    assert check.status == "skip"
    assert "GPU 0000:17:00.0: unknown in this run (MaxPayload is in PCI config space past the 64 bytes" in check.reason


def test_a_long_text_change_names_the_words_that_went_and_came():
    old = "BOOT_IMAGE=/vmlinuz root=UUID=1234 ro quiet splash processor.max_cstate=5 iommu=pt nvidia.NVreg_x=1 more words"
    new = old.replace("processor.max_cstate=5", "processor.max_cstate=1")
    [check] = settings_drift("h", "health", [Setting("kernel_cmdline", "kernel command line", new)],
                             [Setting("kernel_cmdline", "kernel command line", old)], "r1")
    assert check.reason == "kernel command line changed since run r1: -processor.max_cstate=5 +processor.max_cstate=1"


def fleet(values, group="rtx-pro-6000"):
    return {host: (group, [payload("GPU 0000:17:00.0", value)]) for host, value in values.items()}


def test_hosts_unlike_most_of_their_sku_are_named_with_the_majority():
    hosts = dict(("node%02d" % index, 256) for index in range(21))
    hosts.update({"node21": 128, "node22": 128, "node23": 128})
    [minority] = fleet_minorities(fleet(hosts))
    assert minority.sentence() == ("PCIe MaxPayload: 3 of 24 rtx-pro-6000 hosts have 128 B (node21, node22, node23); "
                                   "21 have 256 B")
    checks = minority_checks([minority])
    assert sorted(checks) == ["node21", "node22", "node23"]
    [check] = checks["node21"]
    assert check.id == "fleet.settings" and check.status == "warn"
    assert "PCIe MaxPayload 128 B where 21 of 24 rtx-pro-6000 hosts have 256 B" in check.reason


def test_no_majority_no_minority_and_too_few_hosts_are_not_compared():
    assert fleet_minorities(fleet({"a": 256, "b": 128, "c": 512, "d": 256})) == []
    assert fleet_minorities(fleet({"a": 256, "b": 128})) == []
    assert fleet_minorities(fleet({"a": 256, "b": 256, "c": 256})) == []


def test_a_value_of_each_hosts_own_is_not_held_to_the_majority():
    hosts = {name: ("h200", [Setting("kernel_cmdline", "kernel command line", "root=UUID=%s" % name, fleet_compared=False)])
             for name in ("a", "b", "c", "d")}
    hosts["a"] = ("h200", hosts["a"][1])
    assert fleet_minorities(hosts) == []


def test_hosts_of_different_skus_are_compared_within_their_own_sku():
    hosts = fleet({"a": 256, "b": 256, "c": 256})
    hosts.update(fleet({"d": 128, "e": 128, "f": 128}, group="h200-sxm"))
    assert fleet_minorities(hosts) == []
