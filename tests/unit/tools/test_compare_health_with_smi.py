"""tools/compare_health_with_smi.py against a 2-GPU H200 `nvidia-smi -q -x` (driver 580 style) and health.json."""
import copy
import importlib.util
import json
import os

import pytest

TOOL_PATH = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools",
                                         "compare_health_with_smi.py"))


def _load_tool():
    spec = importlib.util.spec_from_file_location("compare_health_with_smi", TOOL_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tool = _load_tool()

GPU_XML = """
	<gpu id="00000000:00:{device:02X}.0">
		<product_name>NVIDIA H200</product_name>
		<product_brand>NVIDIA</product_brand>
		<product_architecture>Hopper</product_architecture>
		<display_attached>No</display_attached>
		<display_active>Disabled</display_active>
		<persistence_mode>Enabled</persistence_mode>
		<addressing_mode>None</addressing_mode>
		<mig_mode>
			<current_mig>Disabled</current_mig>
			<pending_mig>Disabled</pending_mig>
		</mig_mode>
		<mig_devices>
			None
		</mig_devices>
		<accounting_mode>Disabled</accounting_mode>
		<accounting_mode_buffer_size>4000</accounting_mode_buffer_size>
		<driver_model>
			<current_dm>N/A</current_dm>
			<pending_dm>N/A</pending_dm>
		</driver_model>
		<serial>{serial}</serial>
		<uuid>{uuid}</uuid>
		<minor_number>{index}</minor_number>
		<vbios_version>96.00.A5.00.1A</vbios_version>
		<multigpu_board>No</multigpu_board>
		<board_id>0x{device:x}00</board_id>
		<board_part_number>692-2G520-0282-000</board_part_number>
		<gpu_part_number>2335-885-A1</gpu_part_number>
		<gpu_fru_part_number>N/A</gpu_fru_part_number>
		<inforom_version>
			<img_version>G520.0282.02.02</img_version>
			<oem_object>2.1</oem_object>
			<ecc_object>7.16</ecc_object>
			<pwr_object>N/A</pwr_object>
		</inforom_version>
		<gpu_operation_mode>
			<current_gom>N/A</current_gom>
			<pending_gom>N/A</pending_gom>
		</gpu_operation_mode>
		<c2c_mode>N/A</c2c_mode>
		<gpu_virtualization_mode>
			<virtualization_mode>Pass-Through</virtualization_mode>
			<host_vgpu_mode>N/A</host_vgpu_mode>
			<vgpu_heterogeneous_mode>N/A</vgpu_heterogeneous_mode>
		</gpu_virtualization_mode>
		<gpu_reset_status>
			<reset_required>No</reset_required>
			<drain_and_reset_recommended>No</drain_and_reset_recommended>
		</gpu_reset_status>
		<gsp_firmware_version>580.159.04</gsp_firmware_version>
		<pci>
			<pci_bus>00</pci_bus>
			<pci_device>{device:02X}</pci_device>
			<pci_domain>0000</pci_domain>
			<pci_base_class>3</pci_base_class>
			<pci_sub_class>2</pci_sub_class>
			<pci_device_id>233510DE</pci_device_id>
			<pci_bus_id>00000000:00:{device:02X}.0</pci_bus_id>
			<pci_sub_system_id>18BF10DE</pci_sub_system_id>
			<pci_gpu_link_info>
				<pcie_gen>
					<max_link_gen>5</max_link_gen>
					<current_link_gen>5</current_link_gen>
					<device_current_link_gen>5</device_current_link_gen>
					<max_device_link_gen>5</max_device_link_gen>
					<max_host_link_gen>5</max_host_link_gen>
				</pcie_gen>
				<link_widths>
					<max_link_width>16x</max_link_width>
					<current_link_width>16x</current_link_width>
				</link_widths>
			</pci_gpu_link_info>
			<pci_bridge_chip>
				<bridge_chip_type>N/A</bridge_chip_type>
				<bridge_chip_fw>N/A</bridge_chip_fw>
			</pci_bridge_chip>
			<replay_counter>0</replay_counter>
			<replay_rollover_counter>0</replay_rollover_counter>
			<tx_util>0 KB/s</tx_util>
			<rx_util>0 KB/s</rx_util>
			<atomic_caps_outbound>N/A</atomic_caps_outbound>
			<atomic_caps_inbound>N/A</atomic_caps_inbound>
		</pci>
		<fan_speed>N/A</fan_speed>
		<performance_state>P0</performance_state>
		<clocks_event_reasons>
			<clocks_event_reason_gpu_idle>Active</clocks_event_reason_gpu_idle>
			<clocks_event_reason_applications_clocks_setting>Not Active</clocks_event_reason_applications_clocks_setting>
			<clocks_event_reason_sw_power_cap>Not Active</clocks_event_reason_sw_power_cap>
			<clocks_event_reason_hw_slowdown>Not Active</clocks_event_reason_hw_slowdown>
			<clocks_event_reason_hw_thermal_slowdown>Not Active</clocks_event_reason_hw_thermal_slowdown>
			<clocks_event_reason_hw_power_brake_slowdown>Not Active</clocks_event_reason_hw_power_brake_slowdown>
			<clocks_event_reason_sync_boost>Not Active</clocks_event_reason_sync_boost>
			<clocks_event_reason_sw_thermal_slowdown>Not Active</clocks_event_reason_sw_thermal_slowdown>
			<clocks_event_reason_display_clocks_setting>Not Active</clocks_event_reason_display_clocks_setting>
		</clocks_event_reasons>
		<sparse_operation_mode>N/A</sparse_operation_mode>
		<fb_memory_usage>
			<total>143771 MiB</total>
			<reserved>615 MiB</reserved>
			<used>1 MiB</used>
			<free>143155 MiB</free>
		</fb_memory_usage>
		<bar1_memory_usage>
			<total>262144 MiB</total>
			<used>1 MiB</used>
			<free>262143 MiB</free>
		</bar1_memory_usage>
		<cc_protected_memory_usage>
			<total>0 MiB</total>
			<used>0 MiB</used>
			<free>0 MiB</free>
		</cc_protected_memory_usage>
		<compute_mode>Default</compute_mode>
		<utilization>
			<gpu_util>0 %</gpu_util>
			<memory_util>0 %</memory_util>
			<encoder_util>0 %</encoder_util>
			<decoder_util>0 %</decoder_util>
			<jpeg_util>0 %</jpeg_util>
			<ofa_util>0 %</ofa_util>
		</utilization>
		<ecc_mode>
			<current_ecc>Enabled</current_ecc>
			<pending_ecc>Enabled</pending_ecc>
		</ecc_mode>
		<ecc_errors>
			<volatile>
				<sram_correctable>0</sram_correctable>
				<sram_uncorrectable_parity>0</sram_uncorrectable_parity>
				<sram_uncorrectable_secded>0</sram_uncorrectable_secded>
				<dram_correctable>0</dram_correctable>
				<dram_uncorrectable>0</dram_uncorrectable>
			</volatile>
			<aggregate>
				<sram_correctable>0</sram_correctable>
				<sram_uncorrectable_parity>0</sram_uncorrectable_parity>
				<sram_uncorrectable_secded>0</sram_uncorrectable_secded>
				<dram_correctable>0</dram_correctable>
				<dram_uncorrectable>0</dram_uncorrectable>
				<sram_threshold_exceeded>No</sram_threshold_exceeded>
			</aggregate>
			<aggregate_uncorrectable_sram_sources>
				<sram_l2>0</sram_l2>
				<sram_sm>0</sram_sm>
				<sram_microcontroller>0</sram_microcontroller>
				<sram_pcie>0</sram_pcie>
				<sram_other>0</sram_other>
			</aggregate_uncorrectable_sram_sources>
		</ecc_errors>
		<retired_pages>
			<multiple_single_bit_retirement>
				<retired_count>N/A</retired_count>
				<retired_pagelist>N/A</retired_pagelist>
			</multiple_single_bit_retirement>
			<double_bit_retirement>
				<retired_count>N/A</retired_count>
				<retired_pagelist>N/A</retired_pagelist>
			</double_bit_retirement>
			<pending_blacklist>N/A</pending_blacklist>
			<pending_retirement>N/A</pending_retirement>
		</retired_pages>
		<remapped_rows>
			<remapped_row_corr>0</remapped_row_corr>
			<remapped_row_unc>0</remapped_row_unc>
			<remapped_row_pending>No</remapped_row_pending>
			<remapped_row_failure>No</remapped_row_failure>
			<row_remapper_histogram>
				<row_remapper_histogram_max>2560 bank(s)</row_remapper_histogram_max>
				<row_remapper_histogram_high>0 bank(s)</row_remapper_histogram_high>
				<row_remapper_histogram_partial>0 bank(s)</row_remapper_histogram_partial>
				<row_remapper_histogram_low>0 bank(s)</row_remapper_histogram_low>
				<row_remapper_histogram_none>0 bank(s)</row_remapper_histogram_none>
			</row_remapper_histogram>
		</remapped_rows>
		<temperature>
			<gpu_temp>{temp} C</gpu_temp>
			<gpu_temp_tlimit>{tlimit} C</gpu_temp_tlimit>
			<gpu_temp_max_tlimit_threshold>-8 C</gpu_temp_max_tlimit_threshold>
			<gpu_temp_slow_tlimit_threshold>-2 C</gpu_temp_slow_tlimit_threshold>
			<gpu_temp_max_gpu_tlimit_threshold>0 C</gpu_temp_max_gpu_tlimit_threshold>
			<gpu_target_temperature>N/A</gpu_target_temperature>
			<memory_temp>{memtemp} C</memory_temp>
			<gpu_temp_max_mem_tlimit_threshold>N/A</gpu_temp_max_mem_tlimit_threshold>
		</temperature>
		<supported_gpu_target_temp>
			<gpu_target_temp_min>N/A</gpu_target_temp_min>
			<gpu_target_temp_max>N/A</gpu_target_temp_max>
		</supported_gpu_target_temp>
		<gpu_power_readings>
			<power_state>P0</power_state>
			<average_power_draw>{power} W</average_power_draw>
			<instant_power_draw>{power} W</instant_power_draw>
			<current_power_limit>700.00 W</current_power_limit>
			<requested_power_limit>700.00 W</requested_power_limit>
			<default_power_limit>700.00 W</default_power_limit>
			<min_power_limit>200.00 W</min_power_limit>
			<max_power_limit>700.00 W</max_power_limit>
		</gpu_power_readings>
		<gpu_memory_power_readings>
			<average_power_draw>N/A</average_power_draw>
			<instant_power_draw>N/A</instant_power_draw>
		</gpu_memory_power_readings>
		<module_power_readings>
			<power_state>P0</power_state>
			<average_power_draw>N/A</average_power_draw>
			<instant_power_draw>N/A</instant_power_draw>
			<current_power_limit>N/A</current_power_limit>
			<requested_power_limit>N/A</requested_power_limit>
			<default_power_limit>N/A</default_power_limit>
			<min_power_limit>N/A</min_power_limit>
			<max_power_limit>N/A</max_power_limit>
		</module_power_readings>
		<power_smoothing>N/A</power_smoothing>
		<clocks>
			<graphics_clock>{clock} MHz</graphics_clock>
			<sm_clock>{clock} MHz</sm_clock>
			<mem_clock>3201 MHz</mem_clock>
			<video_clock>765 MHz</video_clock>
		</clocks>
		<applications_clocks>
			<graphics_clock>1980 MHz</graphics_clock>
			<mem_clock>3201 MHz</mem_clock>
		</applications_clocks>
		<default_applications_clocks>
			<graphics_clock>1980 MHz</graphics_clock>
			<mem_clock>3201 MHz</mem_clock>
		</default_applications_clocks>
		<deferred_clocks>
			<mem_clock>N/A</mem_clock>
		</deferred_clocks>
		<max_clocks>
			<graphics_clock>1980 MHz</graphics_clock>
			<sm_clock>1980 MHz</sm_clock>
			<mem_clock>3201 MHz</mem_clock>
			<video_clock>1545 MHz</video_clock>
		</max_clocks>
		<max_customer_boost_clocks>
			<graphics_clock>1980 MHz</graphics_clock>
		</max_customer_boost_clocks>
		<clock_policy>
			<auto_boost>N/A</auto_boost>
			<auto_boost_default>N/A</auto_boost_default>
		</clock_policy>
		<voltage>
			<graphics_volt>670.000 mV</graphics_volt>
		</voltage>
		<fabric>
			<state>Completed</state>
			<status>Success</status>
		</fabric>
		<processes>
		</processes>
		<accounted_processes>
		</accounted_processes>
		<capabilities>
			<egm>disabled</egm>
		</capabilities>
	</gpu>
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
	<timestamp>Tue Jun 10 09:14:02 2025</timestamp>
	<driver_version>580.159.04</driver_version>
	<cuda_version>13.0</cuda_version>
	<attached_gpus>2</attached_gpus>
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
        "inforom_image_version": "G520.0282.02.02",
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
    for gpu, xml_gpu, _ in tool.match_gpus(data["gpus"], root.findall("gpu")):
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
    fixture = os.path.join(os.path.dirname(__file__), "..", "probes", "fixtures", "health_h200x2.json")
    if not os.path.exists(fixture):
        pytest.skip("probe fixture not present")
    with open(fixture) as handle:
        health = json.load(handle)
    report, differences = report_for(copy.deepcopy(health))
    fields = {row.field for _, row in differences}
    assert "uuid" in fields  # the fixture's uuids are anonymised, so the GPUs pair up by PCI bus id
    assert "name" not in fields and "vbios_version" not in fields and "pci.bus_id" not in fields
    assert "## GPU 0 (" in report and "matched by PCI bus id" in report
