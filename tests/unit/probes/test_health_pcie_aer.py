"""PCIe AER counters from sysfs trees built of files in the kernel's format (tests/fixtures/sysfs/aer/README.md)."""
import os

from probelib.system.aer import collect_pcie_aer, parse_aer_counters

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "sysfs", "aer")


def fixture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return handle.read()


def test_parser_reads_the_total_and_the_non_zero_counters():
    assert parse_aer_counters(fixture("correctable_zero.txt"), "TOTAL_ERR_COR") == {"total": 0, "counters": {}}
    assert parse_aer_counters(fixture("correctable_marginal_link.txt"), "TOTAL_ERR_COR") == {
        "total": 58, "counters": {"RxErr": 41, "BadTLP": 3, "BadDLLP": 12, "Timeout": 2}}
    assert parse_aer_counters(fixture("nonfatal_completion_timeout.txt"), "TOTAL_ERR_NONFATAL") == {
        "total": 1, "counters": {"CmpltTO": 1}}
    assert parse_aer_counters(fixture("nonfatal_zero_4_19.txt"), "TOTAL_ERR_NONFATAL") == {"total": 0, "counters": {}}


def test_parser_sums_the_counters_when_no_total_line_is_there():
    assert parse_aer_counters("RxErr 2\nBadTLP 1\nnot a line\n", "TOTAL_ERR_COR") == {"total": 3, "counters": {"RxErr": 2, "BadTLP": 1}}


def _device(tree, path, vendor, device_class, aer=("correctable_zero.txt", "nonfatal_zero.txt", "fatal_zero.txt")):
    directory = tree / "devices" / path
    directory.mkdir(parents=True)
    (directory / "vendor").write_text(vendor + "\n")
    (directory / "class").write_text(device_class + "\n")
    for name, text in zip(("aer_dev_correctable", "aer_dev_nonfatal", "aer_dev_fatal"), aer):
        if text:
            (directory / name).write_text(fixture(text))
    link = tree / "bus" / "pci" / "devices" / os.path.basename(path)
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(directory, link.parent), link)


def _hgx_like_tree(tree):
    root, switch_up = "pci0000:00/0000:00:01.0", "pci0000:00/0000:00:01.0/0000:01:00.0"
    _device(tree, root, "0x1022", "0x060400")
    _device(tree, switch_up, "0x1000", "0x060400")
    _device(tree, switch_up + "/0000:02:00.0", "0x1000", "0x060400")
    _device(tree, switch_up + "/0000:02:00.0/0000:03:00.0", "0x10de", "0x030200",
            ("correctable_marginal_link.txt", "nonfatal_completion_timeout.txt", "fatal_zero.txt"))
    _device(tree, switch_up + "/0000:02:01.0", "0x1000", "0x060400")
    _device(tree, switch_up + "/0000:02:01.0/0000:04:00.0", "0x15b3", "0x020700")
    _device(tree, "pci0000:00/0000:00:14.0", "0x8086", "0x0c0330")                       # USB, all zero: not listed
    _device(tree, "pci0000:00/0000:00:17.0", "0x8086", "0x010601", ("correctable_marginal_link.txt", "", ""))  # SATA with errors
    _device(tree, "pci0000:00/0000:00:1c.0", "0x8086", "0x060400")                       # a bridge above nothing of interest
    _device(tree, "pci0000:00/0000:00:1f.0", "0x8086", "0x060100", (None, None, None))   # no AER statistics at all


def test_gpus_nics_and_their_bridges_are_listed_and_other_devices_only_with_errors(tmp_path):
    _hgx_like_tree(tmp_path)
    result = collect_pcie_aer(str(tmp_path))
    listed = {device["pci_address"]: device for device in result["devices"]}
    assert sorted(listed) == ["0000:00:01.0", "0000:00:17.0", "0000:01:00.0", "0000:02:00.0", "0000:02:01.0",
                              "0000:03:00.0", "0000:04:00.0"]
    assert result["devices_with_aer"] == 9
    gpu = listed["0000:03:00.0"]
    assert (gpu["role"], gpu["below"]) == ("gpu", None)
    assert gpu["correctable"] == {"total": 58, "counters": {"RxErr": 41, "BadTLP": 3, "BadDLLP": 12, "Timeout": 2}}
    assert gpu["nonfatal"] == {"total": 1, "counters": {"CmpltTO": 1}}
    assert gpu["fatal"] == {"total": 0, "counters": {}}
    assert (listed["0000:02:01.0"]["role"], listed["0000:02:01.0"]["below"]) == ("bridge", "nic")
    assert listed["0000:04:00.0"]["role"] == "nic"
    sata = listed["0000:00:17.0"]
    assert sata["role"] == "other" and sata["correctable"]["total"] == 58
    assert sata["nonfatal"] == {"unavailable": "no aer_dev_nonfatal file"}


def test_a_host_without_aer_statistics_says_why(tmp_path):
    _device(tmp_path, "pci0000:00/0000:00:02.0", "0x1af4", "0x020000", (None, None, None))   # a virtio NIC in a VM
    result = collect_pcie_aer(str(tmp_path))
    assert set(result) == {"unavailable"} and "no PCI device here has AER statistics" in result["unavailable"]
    assert set(collect_pcie_aer(str(tmp_path / "absent"))) == {"unavailable"}
