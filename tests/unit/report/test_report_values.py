from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.values import flatten, format_number, format_value, unit_for
from ansible_collections.gpufleet.validation.plugins.plugin_utils.result_fields import unavailable_fields


def test_a_rate_s_unit_is_what_it_counts_per_second_not_seconds():
    assert unit_for("median_items_per_s") == "items/s"
    assert format_value("copies_per_s", 12.5) == "12.5 copies/s"
    assert unit_for("duration_s") == "s"


def test_units_come_from_field_name_suffixes():
    assert format_value("power_draw_w", 123.4) == "123 W"
    assert format_value("memory_total_mib", 143771) == "143771 MiB"
    assert format_value("temperature_c", 31) == "31 °C"
    assert format_value("d2d_gbps", 396.4) == "396 GB/s"
    assert format_value("bf16_tflops", 795.25) == "795 TFLOP/s"
    assert format_value("utilisation_pct", 88) == "88 %"
    assert format_value("utilisation_pct", 97.34) == "97.3 %"
    assert format_value("latency_us", 2.5) == "2.5 µs"
    assert unit_for("gen_max") == "" and unit_for("_s") == ""


def test_unavailable_reads_as_its_reason_and_other_kinds_read_plainly():
    assert format_value("draw_w", {"unavailable": "NVML: Not Supported"}) == "unavailable: NVML: Not Supported"
    assert format_value("persistence_mode", True) == "yes"
    assert format_value("sm_mhz", [1980, 1755]) == "1980 MHz, 1755 MHz"
    assert format_value("draw_w", "n/a") == "n/a"


def test_numbers_read_as_an_engineer_writes_them():
    """number_format.py's rule (tests/unit/report/test_number_format.py), booleans as yes and no."""
    assert format_number(0.1 + 0.2) == "0.3"
    assert format_number(1234567.89) == "1234568"
    assert format_number(80.4265) == "80.4"
    assert format_number(0.1175) == "0.118"
    assert format_number(3.0) == "3"
    assert format_number(float("nan")) == "NaN"
    assert format_number(True) == "yes"


def test_the_every_measurement_table_and_field_cells_choose_digits_too():
    rows = {row.path: row for row in flatten({"bandwidth_gbps": 4244.39, "cuda_init_s": 0.0123, "bus_id": "0000:16:00.0",
                                              "index": 3, "total_bytes": 1073741824})}
    assert rows["bandwidth_gbps"].value == "4244" and rows["cuda_init_s"].value == "0.0123"
    assert rows["bus_id"].value == "0000:16:00.0" and rows["index"].value == "3" and rows["total_bytes"].value == "1073741824"
    assert format_value("median_w", [80.4265, 0.1175]) == "80.4 W, 0.118 W"


def test_flatten_reaches_every_leaf_with_its_path_and_unit():
    rows = flatten({"gpus": [{"power": {"draw_w": 70.5}, "links": []}], "clocks_mhz": [1, 2],
                    "xid": {"unavailable": "dmesg: permission denied"}})
    by_path = {row.path: row for row in rows}
    assert by_path["gpus[0].power.draw_w"].unit == "W" and by_path["gpus[0].power.draw_w"].value == "70.5"
    assert by_path["gpus[0].links"].value == "(empty)"
    assert by_path["clocks_mhz[1]"].unit == "MHz"
    assert by_path["xid"].unavailable == "dmesg: permission denied"
    assert [row.section for row in rows] == ["gpus", "gpus", "clocks_mhz", "clocks_mhz", "xid"]


def test_unavailable_fields_lists_paths_inside_lists():
    data = {"gpus": [{"mig": {"unavailable": "not supported"}}, {"mig": "disabled"}], "cgroup": {"unavailable": "v2"}}
    assert unavailable_fields(data) == [("gpus[0].mig", "not supported"), ("cgroup", "v2")]
