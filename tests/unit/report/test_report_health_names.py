"""The health summary reads the field names of health.schema.json and no others: an old or made-up name reads as not
reported, and each column shows the field the schema names for it."""
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.health.view import (
    GPU_COLUMNS, device_node_rows, fabric_cell, gpu_row, health_view, processes_table)


def _texts(cells):
    return [cell.text for cell in cells]


def test_a_gpu_in_field_names_the_schema_does_not_have_reads_as_not_reported():
    old = {"index": 0, "name": "NVIDIA H200", "uuid": "GPU-1", "serial": "1", "pci_bus_id": "0000:18:00.0",
           "memory_used_mib": 512, "memory_total_mib": 143771, "clocks": {"sm_mhz": 345, "sm_max_mhz": 1980, "mem_mhz": 2619},
           "temperature_c": 31, "ecc": {"mode": "enabled", "volatile_uncorrectable": 2},
           "remapped_rows": {"pending_remap": True, "failed": True},
           "pcie": {"gen_current": 1, "gen_max": 5, "width_current": 8, "width_max": 16}, "persistence": True, "mig": "disabled"}
    row = dict(zip(GPU_COLUMNS, _texts(gpu_row(old))))
    assert row["name"] == "NVIDIA H200" and row["SM clock now / max"] == "345 / — MHz"
    for column in ("PCI bus", "memory", "memory clock now / max", "temperature", "ECC mode", "ECC volatile uncorrectable",
                   "remapped rows pending", "remapped rows failed", "PCIe gen now / max", "PCIe width now / max", "persistence",
                   "MIG"):
        assert row[column] == "—", column


def test_each_gpu_column_reads_the_field_the_schema_names(fleet):
    gpu = fleet.health_data["gpus"][1]
    row = dict(zip(GPU_COLUMNS, _texts(gpu_row(gpu))))
    assert row == {
        "GPU": "1", "name": "NVIDIA H200", "UUID": gpu["uuid"], "serial": "1653023000001", "PCI bus": "0000:2a:00.0",
        "memory": "0 / 143771 MiB", "SM clock now / max": "1980 / 1980 MHz", "memory clock now / max": "3201 / 3201 MHz",
        "power draw / limit": "75 / 700 W", "temperature": "33 °C", "ECC mode": "enabled", "ECC volatile uncorrectable": "2",
        "remapped rows pending": "no", "remapped rows failed": "no", "PCIe gen now / max": "Gen 5 / 5",
        "PCIe width now / max": "x8 / x16", "NVLink active / supported": "18 / 18",
        "NVLink errors replay / recovery / CRC": "—", "NVSwitch fabric": "—", "persistence": "enabled",
        "MIG": "n/a"}


def test_device_nodes_read_drivers_for_major_and_expected_majors(fleet):
    rows = device_node_rows(fleet.health_data["device_nodes"])
    assert [_texts(row["cells"]) for row in rows["rows"]] == [
        ["/dev/nvidia0", "195", "0", "nvidia, nvidiactl", "195", "yes"],
        ["/dev/nvidia1", "195", "1", "nvidia, nvidiactl", "195", "yes"],
        ["/dev/nvidia-uvm", "504", "0", "none", "509", "no: MISMATCH"]]
    assert rows["mismatches"] == ["/dev/nvidia-uvm has major 504 but /proc/devices says nvidia-uvm is 509"]
    node = {"path": "/dev/nvidia-uvm", "major": 504, "minor": 0, "proc_devices_name": "nvidia-uvm", "expected_major": 509, "match": False}
    old = device_node_rows({"nodes": [node], "mismatches": ["a sentence without its path"]})
    assert [_texts(row["cells"]) for row in old["rows"]] == [["/dev/nvidia-uvm", "504", "0", "—", "—", "—"]]
    assert old["mismatches"] == []


def test_the_processes_are_the_compute_and_graphics_lists_nvml_gave(fleet):
    table = processes_table(fleet.health_data["gpus"])
    assert table["columns"] == ["gpu", "type", "pid", "name", "used_memory_mib"]
    assert [_texts(row) for row in table["rows"]] == [["GPU 0", "compute", "4242", "python3", "498 MiB"],
                                                      ["GPU 1", "compute", "4243", "python3", "498 MiB"]]
    assert processes_table([{"index": 0, "processes": [{"pid": 1, "name": "old"}]}])["rows"] == []


def test_the_facts_and_kernel_log_come_from_software_platform_and_kernel_log_only(fleet):
    view = health_view(fleet.health_data)
    facts = {label: cell.text for label, cell in view["facts"]}
    assert facts["driver version"] == "580.159.04" and facts["CPU"] == "Intel(R) Xeon(R) Platinum 8480+"
    assert [_texts(row)[0] for row in view["xid"]["table"]["rows"]] == ["79"]
    old = health_view({"driver": {"driver_version": "550.54.15"}, "platform": {"cpu_model": "Xeon"},
                       "xid_events": {"source": "dmesg", "events": [{"xid": 13}]}})
    facts = {label: cell.text for label, cell in old["facts"]}
    assert facts["driver version"] == "—" and facts["CPU"] == "—"
    assert old["xid"]["reason"] == "not reported"


def test_nvlink_error_and_fabric_cells():
    gpu = {"nvlink_errors": {"links": [], "totals": {"replay": 2, "recovery": 0, "crc_flit": 5, "crc_data": 1,
                                                     "ecc_data": {"unavailable": "not supported"}, "links_counted": 18}},
           "fabric": {"state": "completed", "status": "success", "clique_id": 7}}
    cells = dict(zip(GPU_COLUMNS, gpu_row(gpu)))
    errors, fabric = cells["NVLink errors replay / recovery / CRC"], cells["NVSwitch fabric"]
    assert (errors.text, errors.flag) == ("2 / 0 / 6", "warn")
    assert (fabric.text, fabric.flag) == ("completed, success, clique 7", "")
    gpu = {"nvlink_errors": {"unavailable": "no NVLink error counters: NVML supports no NVLink on this GPU"},
           "fabric": {"state": "not_started", "status": "success", "clique_id": 0}}
    cells = dict(zip(GPU_COLUMNS, gpu_row(gpu)))
    errors, fabric = cells["NVLink errors replay / recovery / CRC"], cells["NVSwitch fabric"]
    assert (errors.text, errors.flag) == ("n/a", "na") and "supports no NVLink" in errors.note
    assert (fabric.text, fabric.flag) == ("not started", "bad")
    not_supported = fabric_cell({"state": "not_supported", "reason": "NVML answers Not Supported"})
    assert (not_supported.text, not_supported.note) == ("not supported", "NVML answers Not Supported")
    assert fabric_cell({"state": "completed", "status": "timeout", "clique_id": 1}).flag == "bad"
