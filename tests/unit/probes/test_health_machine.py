"""The health probe's machine section read from fake /sys and /proc trees: the NVIDIA GPUs on the PCI bus with their
driver, device minor and whether NVML lists them; NVSwitches; the hypervisor flag; DMI."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from machine_trees import HGX_ADDRESSES, machine_section, machine_tree  # noqa: E402

from probe_packages.health.machine import read_hypervisor_flag  # noqa: E402


def test_every_gpu_on_the_bus_with_its_driver_minor_and_nvml_index(tmp_path):
    gpus = [(address, "nvidia", minor) for minor, address in enumerate(HGX_ADDRESSES[:3])]
    gpus.append(("0000:5d:00.0", None, None))
    nvml = {address: index for index, address in enumerate(HGX_ADDRESSES[:2])}
    section = machine_section(tmp_path, gpus, nvml, nvswitches=4, dmi={"sys_vendor": "Supermicro", "product_name": "SYS-821GE"})
    found = section["pci_gpus"]
    assert [gpu["address"] for gpu in found] == ["0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0"]
    assert found[0] == {"address": "0000:18:00.0", "device_id": "0x2335", "class": "0x030200", "driver": "nvidia",
                        "device_minor": 0, "nvml_index": 0, "in_nvml": True}
    assert (found[2]["in_nvml"], found[2]["nvml_index"], found[2]["device_minor"]) == (False, None, 2)
    assert (found[3]["driver"], found[3]["device_minor"], found[3]["in_nvml"]) == (None, None, False)
    assert section["pci_nvswitch_count"] == 4
    assert section["cpu_hypervisor_flag"] is False
    assert section["dmi"]["sys_vendor"] == "Supermicro" and section["dmi"]["product_name"] == "SYS-821GE"


def test_a_vm_without_dmi_and_an_unusable_nvml(tmp_path):
    nvml = {"unavailable": "NVML is not usable, so whether it lists each GPU is unknown: no driver"}
    section = machine_section(tmp_path, [("0000:00:06.0", None, None)], nvml, hypervisor=True)
    assert section["cpu_hypervisor_flag"] is True
    assert "no DMI tables" in section["dmi"]["unavailable"]
    assert section["pci_gpus"][0]["in_nvml"] == nvml and section["pci_gpus"][0]["nvml_index"] is None


def test_no_gpu_on_the_bus(tmp_path):
    section = machine_section(tmp_path, [], {})
    assert section["pci_gpus"] == [] and section["pci_nvswitch_count"] == 0


def test_an_unreadable_bus_is_an_unavailable_field(tmp_path):
    roots = machine_tree(tmp_path, [])
    os.rename(os.path.join(roots.sys, "bus"), os.path.join(roots.sys, "gone"))
    from probe_packages.health.machine import machine_evidence
    section = machine_evidence(roots, {})
    assert "could not be read" in section["pci_gpus"]["unavailable"]


def test_a_cpu_without_a_flags_line(tmp_path):
    (tmp_path / "cpuinfo").write_text("processor\t: 0\nisa\t: rv64imafdc\n")
    try:
        read_hypervisor_flag(str(tmp_path))
    except ValueError as exc:
        assert "no flags line" in str(exc)
    else:
        raise AssertionError("a cpuinfo without flags must not read as bare metal")


def test_the_probe_records_the_machine_and_it_matches_the_schema(tmp_path):
    from probe_runs import run_probe
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
    envelope = run_probe(tmp_path, "health", {"cuda_init": False}, python=sys.executable)
    machine = envelope["data"]["machine"]
    assert isinstance(machine["pci_gpus"], list) and isinstance(machine["cpu_hypervisor_flag"], bool)
    schema_validator("health.schema.json").validate(envelope["data"])
