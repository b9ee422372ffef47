"""tools/compare_health_with_smi.py against a 2-GPU H200 `nvidia-smi -q -x` (driver 580 style) and health.json."""
import copy
import json
import os

import pytest

from tool_module import load_tool

tool = load_tool("compare_health_with_smi")

GPU_XML = """
\t<gpu id="00000000:00:{device:02X}.0">
\t\t<product_name>NVIDIA H200</product_name>
\t\t<product_brand>NVIDIA</product_brand>
\t\t<product_architecture>Hopper</product_architecture>
\t\t<display_attached>No</display_attached>
\t\t<display_active>Disabled</display_active>
\t\t<persistence_mode>Enabled</persistence_mode>
\t\t<addressing_mode>None</addressing_mode>
\t\t<mig_mode>
\t\t\t<current_mig>Disabled</current_mig>
\t\t\t<pending_mig>Disabled</pending_mig>
\t\t</mig_mode>
\t\t<mig_devices>
\t\t\tNone
\t\t</mig_devices>
\t\t<accounting_mode>Disabled</accounting_mode>
\t\t<accounting_mode_buffer_size>4000</accounting_mode_buffer_size>
\t\t<driver_model>
\t\t\t<current_dm>N/A</current_dm>
\t\t\t<pending_dm>N/A</pending_dm>
\t\t</driver_model>
\t\t<serial>{serial}</serial>
\t\t<uuid>{uuid}</uuid>
\t\t<minor_number>{index}</minor_number>
\t\t<vbios_version>96.00.A5.00.1A</vbios_version>
\t\t<multigpu_board>No</multigpu_board>
\t\t<board_id>0x{device:x}00</board_id>
\t\t<board_part_number>692-2G520-0282-000</board_part_number>
\t\t<gpu_part_number>2335-885-A1</gpu_part_number>
\t\t<gpu_fru_part_number>N/A</gpu_fru_part_number>
\t\t<inforom_version>
\t\t\t<img_version>G520.0282.02.02</img_version>
\t\t\t<oem_object>2.1</oem_object>
\t\t\t<ecc_object>7.16</ecc_object>
\t\t\t<pwr_object>N/A</pwr_object>
\t\t</inforom_version>
\t\t<gpu_operation_mode>
\t\t\t<current_gom>N/A</current_gom>
\t\t\t<pending_gom>N/A</pending_gom>
\t\t</gpu_operation_mode>
\t\t<c2c_mode>N/A</c2c_mode>
\t\t<gpu_virtualization_mode>
\t\t\t<virtualization_mode>Pass-Through</virtualization_mode>
\t\t\t<host_vgpu_mode>N/A</host_vgpu_mode>
\t\t\t<vgpu_heterogeneous_mode>N/A</vgpu_heterogeneous_mode>
\t\t</gpu_virtualization_mode>
\t\t<gpu_reset_status>
\t\t\t<reset_required>No</reset_required>
\t\t\t<drain_and_reset_recommended>No</drain_and_reset_recommended>
\t\t</gpu_reset_status>
\t\t<gsp_firmware_version>580.159.04</gsp_firmware_version>
\t\t<pci>
\t\t\t<pci_bus>00</pci_bus>
\t\t\t<pci_device>{device:02X}</pci_device>
\t\t\t<pci_domain>0000</pci_domain>
\t\t\t<pci_base_class>3</pci_base_class>
\t\t\t<pci_sub_class>2</pci_sub_class>
\t\t\t<pci_device_id>233510DE</pci_device_id>
\t\t\t<pci_bus_id>00000000:00:{device:02X}.0</pci_bus_id>
\t\t\t<pci_sub_system_id>18BF10DE</pci_sub_system_id>
\t\t\t<pci_gpu_link_info>
\t\t\t\t<pcie_gen>
\t\t\t\t\t<max_link_gen>5</max_link_gen>
\t\t\t\t\t<current_link_gen>5</current_link_gen>
\t\t\t\t\t<device_current_link_gen>5</device_current_link_gen>
\t\t\t\t\t<max_device_link_gen>5</max_device_link_gen>
\t\t\t\t\t<max_host_link_gen>5</max_host_link_gen>
\t\t\t\t</pcie_gen>
\t\t\t\t<link_widths>
\t\t\t\t\t<max_link_width>16x</max_link_width>
\t\t\t\t\t<current_link_width>16x</current_link_width>
\t\t\t\t</link_widths>
\t\t\t</pci_gpu_link_info>
\t\t\t<pci_bridge_chip>
\t\t\t\t<bridge_chip_type>N/A</bridge_chip_type>
\t\t\t\t<bridge_chip_fw>N/A</bridge_chip_fw>
\t\t\t</pci_bridge_chip>
\t\t\t<replay_counter>0</replay_counter>
\t\t\t<replay_rollover_counter>0</replay_rollover_counter>
\t\t\t<tx_util>0 KB/s</tx_util>
\t\t\t<rx_util>0 KB/s</rx_util>
\t\t\t<atomic_caps_outbound>N/A</atomic_caps_outbound>
\t\t\t<atomic_caps_inbound>N/A</atomic_caps_inbound>
\t\t</pci>
\t\t<fan_speed>N/A</fan_speed>
\t\t<performance_state>P0</performance_state>
\t\t<clocks_event_reasons>
\t\t\t<clocks_event_reason_gpu_idle>Active</clocks_event_reason_gpu_idle>
\t\t\t<clocks_event_reason_applications_clocks_setting>Not Active</clocks_event_reason_applications_clocks_setting>
\t\t\t<clocks_event_reason_sw_power_cap>Not Active</clocks_event_reason_sw_power_cap>
\t\t\t<clocks_event_reason_hw_slowdown>Not Active</clocks_event_reason_hw_slowdown>
\t\t\t<clocks_event_reason_hw_thermal_slowdown>Not Active</clocks_event_reason_hw_thermal_slowdown>
\t\t\t<clocks_event_reason_hw_power_brake_slowdown>Not Active</clocks_event_reason_hw_power_brake_slowdown>
\t\t\t<clocks_event_reason_sync_boost>Not Active</clocks_event_reason_sync_boost>
\t\t\t<clocks_event_reason_sw_thermal_slowdown>Not Active</clocks_event_reason_sw_thermal_slowdown>
\t\t\t<clocks_event_reason_display_clocks_setting>Not Active</clocks_event_reason_display_clocks_setting>
\t\t</clocks_event_reasons>
\t\t<sparse_operation_mode>N/A</sparse_operation_mode>
\t\t<fb_memory_usage>
\t\t\t<total>143771 MiB</total>
\t\t\t<reserved>615 MiB</reserved>
\t\t\t<used>1 MiB</used>
\t\t\t<free>143155 MiB</free>
\t\t</fb_memory_usage>
\t\t<bar1_memory_usage>
\t\t\t<total>262144 MiB</total>
\t\t\t<used>1 MiB</used>
\t\t\t<free>262143 MiB</free>
\t\t</bar1_memory_usage>
\t\t<cc_protected_memory_usage>
\t\t\t<total>0 MiB</total>
\t\t\t<used>0 MiB</used>
\t\t\t<free>0 MiB</free>
\t\t</cc_protected_memory_usage>
\t\t<compute_mode>Default</compute_mode>
\t\t<utilization>
\t\t\t<gpu_util>0 %</gpu_util>
\t\t\t<memory_util>0 %</memory_util>
\t\t\t<encoder_util>0 %</encoder_util>
\t\t\t<decoder_util>0 %</decoder_util>
\t\t\t<jpeg_util>0 %</jpeg_util>
\t\t\t<ofa_util>0 %</ofa_util>
\t\t</utilization>
\t\t<ecc_mode>
\t\t\t<current_ecc>Enabled</current_ecc>
\t\t\t<pending_ecc>Enabled</pending_ecc>
\t\t</ecc_mode>
\t\t<ecc_errors>
\t\t\t<volatile>
\t\t\t\t<sram_correctable>0</sram_correctable>
\t\t\t\t<sram_uncorrectable_parity>0</sram_uncorrectable_parity>
\t\t\t\t<sram_uncorrectable_secded>0</sram_uncorrectable_secded>
\t\t\t\t<dram_correctable>0</dram_correctable>
\t\t\t\t<dram_uncorrectable>0</dram_uncorrectable>
\t\t\t</volatile>
\t\t\t<aggregate>
\t\t\t\t<sram_correctable>0</sram_correctable>
\t\t\t\t<sram_uncorrectable_parity>0</sram_uncorrectable_parity>
\t\t\t\t<sram_uncorrectable_secded>0</sram_uncorrectable_secded>
\t\t\t\t<dram_correctable>0</dram_correctable>
\t\t\t\t<dram_uncorrectable>0</dram_uncorrectable>
\t\t\t\t<sram_threshold_exceeded>No</sram_threshold_exceeded>
\t\t\t</aggregate>
\t\t\t<aggregate_uncorrectable_sram_sources>
\t\t\t\t<sram_l2>0</sram_l2>
\t\t\t\t<sram_sm>0</sram_sm>
\t\t\t\t<sram_microcontroller>0</sram_microcontroller>
\t\t\t\t<sram_pcie>0</sram_pcie>
\t\t\t\t<sram_other>0</sram_other>
\t\t\t</aggregate_uncorrectable_sram_sources>
\t\t</ecc_errors>
\t\t<retired_pages>
\t\t\t<multiple_single_bit_retirement>
\t\t\t\t<retired_count>N/A</retired_count>
\t\t\t\t<retired_pagelist>N/A</retired_pagelist>
\t\t\t</multiple_single_bit_retirement>
\t\t\t<double_bit_retirement>
\t\t\t\t<retired_count>N/A</retired_count>
\t\t\t\t<retired_pagelist>N/A</retired_pagelist>
\t\t\t</double_bit_retirement>
\t\t\t<pending_blacklist>N/A</pending_blacklist>
\t\t\t<pending_retirement>N/A</pending_retirement>
\t\t</retired_pages>
\t\t<remapped_rows>
\t\t\t<remapped_row_corr>0</remapped_row_corr>
\t\t\t<remapped_row_unc>0</remapped_row_unc>
\t\t\t<remapped_row_pending>No</remapped_row_pending>
\t\t\t<remapped_row_failure>No</remapped_row_failure>
\t\t\t<row_remapper_histogram>
\t\t\t\t<row_remapper_histogram_max>2560 bank(s)</row_remapper_histogram_max>
\t\t\t\t<row_remapper_histogram_high>0 bank(s)</row_remapper_histogram_high>
\t\t\t\t<row_remapper_histogram_partial>0 bank(s)</row_remapper_histogram_partial>
\t\t\t\t<row_remapper_histogram_low>0 bank(s)</row_remapper_histogram_low>
\t\t\t\t<row_remapper_histogram_none>0 bank(s)</row_remapper_histogram_none>
\t\t\t</row_remapper_histogram>
\t\t</remapped_rows>
\t\t<temperature>
\t\t\t<gpu_temp>{temp} C</gpu_temp>
\t\t\t<gpu_temp_tlimit>{tlimit} C</gpu_temp_tlimit>
\t\t\t<gpu_temp_max_tlimit_threshold>-8 C</gpu_temp_max_tlimit_threshold>
\t\t\t<gpu_temp_slow_tlimit_threshold>-2 C</gpu_temp_slow_tlimit_threshold>
\t\t\t<gpu_temp_max_gpu_tlimit_threshold>0 C</gpu_temp_max_gpu_tlimit_threshold>
\t\t\t<gpu_target_temperature>N/A</gpu_target_temperature>
\t\t\t<memory_temp>{memtemp} C</memory_temp>
\t\t\t<gpu_temp_max_mem_tlimit_threshold>N/A</gpu_temp_max_mem_tlimit_threshold>
\t\t</temperature>
\t\t<supported_gpu_target_temp>
\t\t\t<gpu_target_temp_min>N/A</gpu_target_temp_min>
\t\t\t<gpu_target_temp_max>N/A</gpu_target_temp_max>
\t\t</supported_gpu_target_temp>
\t\t<gpu_power_readings>
\t\t\t<power_state>P0</power_state>
\t\t\t<average_power_draw>{power} W</average_power_draw>
\t\t\t<instant_power_draw>{power} W</instant_power_draw>
\t\t\t<current_power_limit>700.00 W</current_power_limit>
\t\t\t<requested_power_limit>700.00 W</requested_power_limit>
\t\t\t<default_power_limit>700.00 W</default_power_limit>
\t\t\t<min_power_limit>200.00 W</min_power_limit>
\t\t\t<max_power_limit>700.00 W</max_power_limit>
\t\t</gpu_power_readings>
\t\t<gpu_memory_power_readings>
\t\t\t<average_power_draw>N/A</average_power_draw>
\t\t\t<instant_power_draw>N/A</instant_power_draw>
\t\t</gpu_memory_power_readings>
\t\t<module_power_readings>
\t\t\t<power_state>P0</power_state>
\t\t\t<average_power_draw>N/A</average_power_draw>
\t\t\t<instant_power_draw>N/A</instant_power_draw>
\t\t\t<current_power_limit>N/A</current_power_limit>
\t\t\t<requested_power_limit>N/A</requested_power_limit>
\t\t\t<default_power_limit>N/A</default_power_limit>
\t\t\t<min_power_limit>N/A</min_power_limit>
\t\t\t<max_power_limit>N/A</max_power_limit>
\t\t</module_power_readings>
\t\t<power_smoothing>N/A</power_smoothing>
\t\t<clocks>
\t\t\t<graphics_clock>{clock} MHz</graphics_clock>
\t\t\t<sm_clock>{clock} MHz</sm_clock>
\t\t\t<mem_clock>3201 MHz</mem_clock>
\t\t\t<video_clock>765 MHz</video_clock>
\t\t</clocks>
\t\t<applications_clocks>
\t\t\t<graphics_clock>1980 MHz</graphics_clock>
\t\t\t<mem_clock>3201 MHz</mem_clock>
\t\t</applications_clocks>
\t\t<default_applications_clocks>
\t\t\t<graphics_clock>1980 MHz</graphics_clock>
\t\t\t<mem_clock>3201 MHz</mem_clock>
\t\t</default_applications_clocks>
\t\t<deferred_clocks>
\t\t\t<mem_clock>N/A</mem_clock>
\t\t</deferred_clocks>
\t\t<max_clocks>
\t\t\t<graphics_clock>1980 MHz</graphics_clock>
\t\t\t<sm_clock>1980 MHz</sm_clock>
\t\t\t<mem_clock>3201 MHz</mem_clock>
\t\t\t<video_clock>1545 MHz</video_clock>
\t\t</max_clocks>
\t\t<max_customer_boost_clocks>
\t\t\t<graphics_clock>1980 MHz</graphics_clock>
\t\t</max_customer_boost_clocks>
\t\t<clock_policy>
\t\t\t<auto_boost>N/A</auto_boost>
\t\t\t<auto_boost_default>N/A</auto_boost_default>
\t\t</clock_policy>
\t\t<voltage>
\t\t\t<graphics_volt>670.000 mV</graphics_volt>
\t\t</voltage>
\t\t<fabric>
\t\t\t<state>Completed</state>
\t\t\t<status>Success</status>
\t\t</fabric>
\t\t<processes>
\t\t</processes>
\t\t<accounted_processes>
\t\t</accounted_processes>
\t\t<capabilities>
\t\t\t<egm>disabled</egm>
\t\t</capabilities>
\t</gpu>
"""

GPUS = [
    {"index": 0, "device": 6, "serial": "1653724026000", "uuid": "GPU-5d3f0c1e-9a2b-4c7d-8e1f-0a1b2c3d4e50",
     "temp": 38, "tlimit": 49, "memtemp": 45, "power": "84.16", "clock": 345},
    {"index": 1, "device": 7, "serial": "1653724026001", "uuid": "GPU-5d3f0c1e-9a2b-4c7d-8e1f-0a1b2c3d4e51",
     "temp": 36, "tlimit": 51, "memtemp": 43, "power": "79.52", "clock": 345},
]

SMI_XML = """<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v13.dtd">
<nvidia_smi_log>
\t<timestamp>Tue Jun 10 09:14:02 2025</timestamp>
\t<driver_version>580.159.04</driver_version>
\t<cuda_version>13.0</cuda_version>
\t<attached_gpus>2</attached_gpus>
""" + "".join(GPU_XML.format(**gpu) for gpu in GPUS) + "</nvidia_smi_log>\n"

TOPO = ("\x1b[4mGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
        "GPU0\t X \tNV18\t0-31\t0\t\tN/A\n"
        "GPU1\tNV18\t X \t0-31\t0\t\tN/A\n"
        "\n"
        "Legend:\n\n  X    = Self\n  NV#  = Connection traversing a bonded set of # NVLinks\n")


def health_gpu(index, device, serial, uuid, temp, power, clock):
    return {
        "index": index, "name": "NVIDIA H200", "uuid": uuid, "serial": serial, "minor_number": index,
        "board_part_number": "692-2G520-0282-000", "vbios_version": "96.00.A5.00.1A",
        "inforom_image_version": "G520.0282.02.02", "gsp_firmware_version": "580.159.04",
        "firmware": {"gsp_mode": {"current": "enabled", "default": "enabled"},
                     "inforom_objects": {"oem": "2.1", "ecc": "7.16",
                                         "power": {"unavailable": "not supported by this GPU (NVML: Not Supported)"}}},
        "pci": {"bus_id": "0000:00:%02x.0" % device, "device_id": "0x233510de", "subsystem_id": "0x18bf10de"},
        "memory": {"total_mib": 143771, "used_mib": 615, "free_mib": 143155},
        "bar1": {"total_mib": 262144, "used_mib": 1, "free_mib": 262143},
        "clocks": {"sm_mhz": clock, "memory_mhz": 3201, "graphics_mhz": clock, "max_sm_mhz": 1980,
                   "max_memory_mhz": 3201, "max_graphics_mhz": 1980, "applications_graphics_mhz": 1980,
                   "applications_memory_mhz": 3201},
        "clock_event_reasons": {"mask": 1, "mask_hex": "0x0000000000000001", "names": ["gpu_idle"],
                                "slowdown_active": False, "method": "nvmlDeviceGetCurrentClocksEventReasons"},
        "power": {"draw_w": power, "limit_w": 700.0, "default_limit_w": 700.0, "enforced_limit_w": 700.0,
                  "min_limit_w": 200.0, "max_limit_w": 700.0},
        "temperature": {"gpu_c": temp, "slowdown_threshold_c": 89, "shutdown_threshold_c": 95,
                        "gpu_max_threshold_c": 87,
                        "memory_max_threshold_c": {"unavailable": "not supported by this GPU (NVML: Not Supported)"}},
        "fan_speed_percent": {"unavailable": "not supported by this GPU (NVML: Not Supported)"},
        "ecc": {"mode_current": "enabled", "mode_pending": "enabled", "volatile_corrected_count": 0,
                "volatile_uncorrected_count": 0, "aggregate_corrected_count": 0, "aggregate_uncorrected_count": 0},
        "retired_pages": {"unavailable": "not supported by this GPU (NVML: Not Supported)"},
        "remapped_rows": {"correctable_count": 0, "uncorrectable_count": 0, "pending": False, "failure": False},
        "pcie": {"current_link_gen": 5, "max_link_gen": 5, "gpu_max_link_gen": 5, "current_link_width": 16,
                 "max_link_width": 16},
        "persistence_mode": "enabled", "compute_mode": "default",
        "mig_mode": {"current": "disabled", "pending": "disabled"},
        "numa": {"local_cpulist": "0-31", "nvml_numa_node": {"unavailable": "not supported"}, "sysfs_numa_node": 0},
        "nvlink": {"links": [{"link": 0, "state": "active", "version": "4.0",
                              "remote_pci_bus_id": "ffffffff:ff:ff.0"}],
                   "supported_count": 18, "active_count": 18},
        "processes": {"compute": [], "graphics": []},
    }


def make_health():
    return {
        "schema_version": 1, "probe": "health", "host": "h200-test", "status": "ok",
        "started": "2025-06-10T09:14:01+00:00", "reason": "",
        "data": {
            "software": {"driver_version": "580.159.04", "cuda_driver_version": "13.0",
                         "nvml_version": "13.580.159.04"},
            "gpus": [health_gpu(0, 6, GPUS[0]["serial"], GPUS[0]["uuid"], 38, 84.159, 345),
                     health_gpu(1, 7, GPUS[1]["serial"], GPUS[1]["uuid"], 37, 79.5, 345)],
            "topology": {"method": "nvml", "gpu_count": 2,
                         "pairs": [{"gpu_a": 0, "gpu_b": 1, "link_class": "NV18", "nvlink_count": 18}]},
        },
    }


def report_for(health, xml=SMI_XML, topo=TOPO):
    root = tool.parse_smi_xml(xml)
    return tool.build_report(health, root, topo, {"health": "health.json", "xml": "smi.xml", "topo": "topo.txt"})


def rows_of(health, xml=SMI_XML, topo=TOPO):
    root = tool.parse_smi_xml(xml)
    data = health["data"]
    result = {}
    for gpu, xml_gpu, unused_method in tool.match_gpus(data["gpus"], root.findall("gpu")):
        for row in tool.compare_gpu(gpu, xml_gpu):
            result[(gpu["index"], row.field)] = row
    for row in tool.compare_system(data, root):
        result[("system", row.field)] = row
    for row in tool.compare_topology(data, topo)[0]:
        result[("topology", row.field)] = row
    return result


def test_matching_inputs_all_agree():
    report, differences = report_for(make_health())
    assert differences == [], "\n".join("%s %s %s %s" % (t, r.field, r.health, r.smi) for t, r in differences)
    assert "None: every compared field agrees." in report
    assert "| field | health.json | nvidia-smi -q | agree? |" in report
    assert "| field | health.json | nvidia-smi topo -m | agree? |" in report


def test_rows_cover_the_expected_fields_with_the_right_statuses():
    rows = rows_of(make_health())
    assert rows[(0, "pci.bus_id")].status == tool.AGREE  # 0000:00:06.0 vs 00000000:00:06.0
    assert rows[(0, "pci.device_id")].status == tool.AGREE  # 0x233510de vs 233510DE
    assert rows[(0, "pcie.max_link_width")].status == tool.AGREE  # 16 vs "16x"
    assert rows[(0, "persistence_mode")].status == tool.AGREE
    assert rows[(0, "compute_mode")].status == tool.AGREE
    assert rows[(0, "retired_pages.pending")].status == tool.AGREE_BOTH_LACK
    assert rows[(0, "fan_speed_percent")].status == tool.AGREE_BOTH_LACK
    assert rows[(0, "power.draw_w")].status == tool.AGREE_TOLERANCE  # 84.159 vs 84.16
    assert rows[(1, "temperature.gpu_c")].status == tool.AGREE_TOLERANCE  # 37 vs 36
    assert rows[(0, "memory.used_mib")].status == tool.AGREE_TOLERANCE  # 615 vs 1 + 615 reserved
    assert "reserved" in rows[(0, "memory.used_mib")].smi
    assert rows[(0, "ecc.volatile_uncorrected_count")].status == tool.AGREE
    assert "sram_uncorrectable_parity" in rows[(0, "ecc.volatile_uncorrected_count")].smi
    assert rows[(0, "clock_event_reasons: gpu_idle")].status == tool.AGREE
    assert rows[(0, "clock_event_reasons: display_clock_setting")].status == tool.AGREE
    # driver 580 prints T.Limit margins: 38 + 49 - (-2) = 89
    assert rows[(0, "temperature.slowdown_threshold_c")].status == tool.AGREE_TOLERANCE
    assert rows[(0, "temperature.memory_max_threshold_c")].status == tool.AGREE_BOTH_LACK
    assert rows[("system", "software.driver_version")].status == tool.AGREE
    assert rows[("system", "GPU count (len(gpus))")].status == tool.AGREE
    assert rows[("topology", "GPU0-GPU1 link_class")].status == tool.AGREE
    assert rows[("topology", "GPU1 CPU affinity (numa.local_cpulist)")].status == tool.AGREE


def test_planted_differences_are_reported():
    health = make_health()
    gpu = health["data"]["gpus"][1]
    gpu["serial"] = "9999999999999"
    gpu["power"]["draw_w"] = 300.0
    gpu["memory"]["used_mib"] = 9000
    health["data"]["topology"]["pairs"][0]["link_class"] = "NV12"
    report, differences = report_for(health)
    different = {(title.split(" ")[1] if title.startswith("GPU ") else title, row.field): row
                 for title, row in differences}
    assert set(different) == {("1", "serial"), ("1", "power.draw_w"), ("1", "memory.used_mib"),
                              ("Topology", "GPU0-GPU1 link_class")}
    assert different[("1", "serial")].status == tool.DIFFER
    assert different[("1", "power.draw_w")].status == tool.DIFFER
    assert "sampled at a different instant" in different[("1", "power.draw_w")].hint
    assert "## Differences" in report
    assert "`serial`: health.json 9999999999999; nvidia-smi 1653724026001" in report
    assert "`power.draw_w`: health.json 300 W; nvidia-smi 79.52 W" in report


def test_clocks_exact_when_idle_else_sampled():
    health = make_health()
    health["data"]["gpus"][0]["clocks"]["sm_mhz"] = 1755
    rows = rows_of(health)
    assert rows[(0, "clocks.sm_mhz")].status == tool.DIFFER  # both report gpu_idle
    health["data"]["gpus"][0]["clock_event_reasons"]["names"] = []
    rows = rows_of(health)
    assert rows[(0, "clocks.sm_mhz")].status == tool.SAMPLED
    assert rows[(0, "clock_event_reasons: gpu_idle")].status == tool.DIFFER


def test_unavailable_in_health_against_a_value_and_both_lacking():
    health = make_health()
    health["data"]["gpus"][0]["serial"] = {"unavailable": "NVML: Insufficient Permissions"}
    health["data"]["gpus"][0]["power"] = {"unavailable": "section power failed"}
    rows = rows_of(health)
    assert rows[(0, "serial")].status == tool.HEALTH_UNAVAILABLE
    assert rows[(0, "serial")].health == "unavailable: NVML: Insufficient Permissions"
    assert rows[(0, "power.min_limit_w")].status == tool.HEALTH_UNAVAILABLE
    xml = SMI_XML.replace("<serial>1653724026000</serial>", "<serial>[Not Supported]</serial>")
    rows = rows_of(health, xml=xml)
    assert rows[(0, "serial")].status == tool.AGREE_BOTH_LACK


def test_missing_xml_elements_are_reported_not_fatal():
    xml = SMI_XML.replace("<vbios_version>96.00.A5.00.1A</vbios_version>", "")
    xml = xml.replace("<remapped_row_corr>0</remapped_row_corr>", "")
    rows = rows_of(make_health(), xml=xml)
    assert rows[(0, "vbios_version")].status == tool.XML_MISSING
    assert "vbios_version" in rows[(0, "vbios_version")].smi
    assert rows[(0, "remapped_rows.correctable_count")].status == tool.XML_MISSING


def test_collapsed_na_section_and_older_schema():
    # Older drivers: power_readings/power_draw, enforced_power_limit, single_bit/double_bit totals,
    # clocks_throttle_reasons, absolute temperature thresholds, and <remapped_rows>N/A</remapped_rows>.
    gpu = GPU_XML.format(**GPUS[0])
    start, end = gpu.index("<remapped_rows>"), gpu.index("</remapped_rows>") + len("</remapped_rows>")
    gpu = gpu[:start] + "<remapped_rows>N/A</remapped_rows>" + gpu[end:]
    start, end = gpu.index("<ecc_errors>"), gpu.index("</ecc_errors>") + len("</ecc_errors>")
    gpu = gpu[:start] + ("<ecc_errors><volatile><single_bit><device_memory>0</device_memory><total>0</total>"
                         "</single_bit><double_bit><total>0</total></double_bit></volatile>"
                         "<aggregate><single_bit><total>3</total></single_bit><double_bit><total>0</total>"
                         "</double_bit></aggregate></ecc_errors>") + gpu[end:]
    gpu = gpu.replace("gpu_power_readings>", "power_readings>")
    gpu = gpu.replace("<average_power_draw>84.16 W</average_power_draw>", "<power_draw>84.16 W</power_draw>")
    gpu = gpu.replace("clocks_event_reason", "clocks_throttle_reason")
    gpu = gpu.replace("<gpu_temp_slow_tlimit_threshold>-2 C</gpu_temp_slow_tlimit_threshold>",
                      "<gpu_temp_slow_threshold>89 C</gpu_temp_slow_threshold>")
    xml = ('<?xml version="1.0" ?><nvidia_smi_log><driver_version>535.183.01</driver_version>'
           "<cuda_version>12.2</cuda_version><attached_gpus>1</attached_gpus>%s</nvidia_smi_log>" % gpu)
    health = make_health()
    health["data"]["gpus"] = health["data"]["gpus"][:1]
    health["data"]["gpus"][0]["remapped_rows"] = {"unavailable": "not supported by this GPU (NVML: Not Supported)"}
    rows = rows_of(health, xml=xml, topo=None)
    assert rows[(0, "remapped_rows.pending")].status == tool.AGREE_BOTH_LACK
    assert rows[(0, "power.draw_w")].status == tool.AGREE_TOLERANCE
    assert rows[(0, "ecc.volatile_corrected_count")].status == tool.AGREE
    assert rows[(0, "ecc.aggregate_corrected_count")].status == tool.DIFFER  # 0 vs 3
    assert rows[(0, "clock_event_reasons: gpu_idle")].status == tool.AGREE
    assert rows[(0, "temperature.slowdown_threshold_c")].status == tool.AGREE
    assert rows[("system", "software.driver_version")].status == tool.DIFFER


def test_processes_compared_by_pid():
    process = ("<processes><process_info><gpu_instance_id>N/A</gpu_instance_id>"
               "<compute_instance_id>N/A</compute_instance_id><pid>4242</pid><type>C</type>"
               "<process_name>python3</process_name><used_memory>512 MiB</used_memory></process_info></processes>")
    xml = SMI_XML.replace("<processes>\n\t\t</processes>", process, 1)
    health = make_health()
    rows = rows_of(health, xml=xml)
    assert rows[(0, "processes.compute (pids)")].status == tool.DIFFER
    health["data"]["gpus"][0]["processes"]["compute"] = [{"pid": 4242, "name": "python3", "used_memory_mib": 512.0}]
    rows = rows_of(health, xml=xml)
    assert rows[(0, "processes.compute (pids)")].status == tool.AGREE
    assert rows[(0, "processes.graphics (pids)")].status == tool.AGREE


def test_parse_helpers():
    assert tool.parse_number("143771 MiB") == 143771
    assert tool.parse_number("84.16 W") == 84.16
    assert tool.parse_number("38 C") == 38
    assert tool.parse_number("16x") == 16
    assert tool.parse_number("-2 C") == -2
    assert tool.parse_number("N/A") is None
    assert tool.parse_number("[Not Supported]") is None
    assert tool.normalise_bus_id("00000000:00:06.0") == tool.normalise_bus_id("0000:00:06.0") == (0, 0, 6, 0)
    assert tool.normalise_bus_id("00000000:1B:00.0") == (0, 0x1B, 0, 0)
    matrix = tool.parse_topo_matrix(TOPO)
    assert matrix["pairs"] == {(0, 1): "NV18"}
    assert matrix["gpus"][0]["CPU Affinity"] == "0-31"
    spaced = TOPO.replace("\t", "   ")
    assert tool.parse_topo_matrix(spaced)["gpus"][1]["NUMA Affinity"] == "0"


def test_command_line(tmp_path, capsys):
    health_path, xml_path, topo_path = tmp_path / "health.json", tmp_path / "smi.xml", tmp_path / "topo.txt"
    health = make_health()
    health["data"]["gpus"][0]["power"]["draw_w"] = 300.0
    health_path.write_text(json.dumps(health))
    xml_path.write_text(SMI_XML)
    topo_path.write_text(TOPO)
    out = tmp_path / "compare.md"
    assert tool.main(["--health", str(health_path), "--smi-xml", str(xml_path), "--smi-topo", str(topo_path),
                      "--out", str(out)]) == 0
    text = out.read_text()
    assert "## GPU 0" in text and "## GPU 1" in text and "## Topology" in text
    assert "`power.draw_w`: health.json 300 W" in text
    assert tool.main(["--health", str(health_path), "--smi-xml", str(xml_path)]) == 0
    assert "`--smi-topo` not given" in capsys.readouterr().out


@pytest.mark.parametrize("content", ["not xml at all <", "<other_root/>"])
def test_unreadable_xml_exits_non_zero(tmp_path, content):
    health_path, xml_path = tmp_path / "health.json", tmp_path / "smi.xml"
    health_path.write_text(json.dumps(make_health()))
    xml_path.write_text(content)
    assert tool.main(["--health", str(health_path), "--smi-xml", str(xml_path)]) == 2


def test_unreadable_health_exits_non_zero(tmp_path):
    xml_path = tmp_path / "smi.xml"
    xml_path.write_text(SMI_XML)
    assert tool.main(["--health", str(tmp_path / "absent.json"), "--smi-xml", str(xml_path)]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert tool.main(["--health", str(bad), "--smi-xml", str(xml_path)]) == 2


def test_real_probe_fixture_runs_against_the_xml():
    fixture = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "health_h200x2_ok_by_hand_anonymised.json")
    with open(fixture) as handle:
        health = json.load(handle)
    report, differences = report_for(copy.deepcopy(health))
    fields = {row.field for unused_title, row in differences}
    assert "uuid" in fields  # the fixture's uuids are anonymised, so the GPUs pair up by PCI bus id
    assert "name" not in fields and "vbios_version" not in fields and "pci.bus_id" not in fields
    assert "## GPU 0 (" in report and "matched by PCI bus id" in report


def test_the_firmware_versions_are_compared_with_nvidia_smi():
    health = make_health()
    health["data"]["gpus"][0]["firmware"]["inforom_objects"]["ecc"] = "7.0"
    rows = rows_of(health)
    assert rows[(0, "firmware.inforom_objects.ecc")].status == tool.DIFFER
    assert rows[(1, "firmware.inforom_objects.ecc")].status == tool.AGREE
    assert rows[(0, "gsp_firmware_version")].status == tool.AGREE
    assert rows[(0, "firmware.inforom_objects.oem")].status == tool.AGREE
