"""The probe kit: what a probe package (plugin_utils/probes/<name>/) may use of the core, and the one module of the core
it imports (tests/unit/test_probe_kit.py). A package imports its own modules relatively and nothing of another probe's
package: what several probes share is in shared/ and handed on here, and a result one probe needs of another is
declared as data (ProbeRun needs= and gives=) and handed to its derivation by the core (Handed).

A name is imported from the module that defines it when a package first takes it, so a run.py that takes ProbeRun
loads the declarations alone and no judge or report module (the probe action reads every run.py for every host:
tests/unit/engine/test_light_imports.py).
"""
from __future__ import annotations

import importlib
from typing import Any, Dict, List, Tuple


def _by_name(groups: Tuple[Tuple[str, Tuple[str, ...]], ...]) -> Dict[str, str]:
    return {name: module for module, names in groups for name in names}


# {name: the module under plugins/ that defines it}, grouped by what a package writes with it (docs/adding-a-probe.md).
FROM = _by_name((
    # run.py (how it runs), view.py (its dossier section), judging.py (JUDGING), metrics.py (METRICS)
    ("plugin_utils.probe_kit.declaration", ("ProbeRun", "Headline", "ProbeSection", "Handed")),
    ("plugin_utils.probe_kit.judging", ("ProbeJudging",)),
    ("plugin_utils.probe_kit.metric_catalogue", ("MetricSpec",)),
    # reading a result's fields
    ("plugin_utils.result_fields", ("MISSING", "START_FIELDS", "dig", "error_words", "is_unavailable", "iter_leaves",
                                    "json_path", "number_or_none", "start_interval", "unavailable_reason")),
    ("module_utils.envelope_statuses", ("MEASURED_STATUSES",)),
    # the judge's model and the check API
    ("plugin_utils.judge.model", ("Check",)),
    ("plugin_utils.judge.catalogue", ("CheckFunction",)),
    ("plugin_utils.judge.check_helpers", ("make_check", "param_source", "reads_params", "gpu_label", "each_gpu_section",
                                          "unavailable_check", "unavailable_status")),
    ("plugin_utils.judge.baseline_checks", ("BASELINE_THRESHOLDS", "judge_against_baseline")),
    ("plugin_utils.judge.baseline_origin", ("baseline_file",)),
    ("plugin_utils.judge.busy", ("process_words",)),
    ("plugin_utils.judge.gpu_coverage", ("gpus_covered",)),
    ("plugin_utils.judge.product_checks", ("difference_words", "injected_words", "mode_words", "odd_ones")),
    ("plugin_utils.judge.repeats", ("finite",)),
    ("plugin_utils.judge.stats", ("median",)),
    ("plugin_utils.judge.summaries", ("Summary", "summaries_agree")),
    # measurements, metrics, settings and the machine, as data for the judge
    ("plugin_utils.judge.measurement", ("Condition", "Device", "Measurement", "Missing", "measured", "not_measured")),
    ("plugin_utils.judge.metrics", ("Metric",)),
    ("plugin_utils.judge.settings", ("Setting",)),
    ("plugin_utils.judge.machine_facts", ("ExpectedGpus", "GpuDescriptor", "MachineDeclaration", "MachineFacts")),
    # the report's markup: cells and tables, numbers, device records, plots
    ("plugin_utils.report.cells", ("Cell", "cell", "table")),
    ("plugin_utils.report.number_format", ("format_number", "format_quantity")),
    ("plugin_utils.report.values", ("format_scalar", "format_value", "unit_for")),
    ("plugin_utils.report.devices", ("device_label", "device_records")),
    ("plugin_utils.report.svg_plots", ("bar_chart", "heatmap_chart", "line_chart", "line_points", "roofline_chart")),
    # what several probes share (shared/)
    ("plugin_utils.probe_kit.shared.clock_event_reasons", ("HARDWARE_REASONS", "SOFTWARE_THERMAL", "WINDOW_KEY", "expected_words",
                                                           "in_window", "window_seconds")),
    ("plugin_utils.probe_kit.shared.clock_event_table", ("REASON_COLUMNS", "clock_event_table", "duration_cell")),
    ("plugin_utils.probe_kit.shared.together_records", ("STATUS_ORDER", "each_worker", "finish", "percent_bounds_and_reference",
                                                        "percent_status", "sharing_words", "time_slicing_words", "worker_gpu")),
    ("plugin_utils.probe_kit.shared.together_view", ("beside_cells", "device_sharers", "expected_share", "together_table",
                                                     "worker_label")),
    ("plugin_utils.probe_kit.shared.pcie_path", ("acs_text", "devices_by_address", "downtrained", "gpu_paths", "path_between",
                                                 "pci_device_label")),
    ("plugin_utils.probe_kit.shared.all_reduce_checks", ("collective_verified", "curves_by_name")),
    ("plugin_utils.probe_kit.shared.all_reduce_metrics", ("peak_busbw_metrics",)),
    ("plugin_utils.probe_kit.shared.all_reduce_view", ("collective_view",))))
__all__ = sorted(FROM)
_PLUGINS = __name__.rsplit(".", 3)[0]


def __getattr__(name: str) -> Any:
    """The kit's name, imported from where it is defined the first time a package takes it."""
    module = FROM.get(name)
    if module is None:
        raise AttributeError("the probe kit (%s) hands probe packages no %r: docs/adding-a-probe.md lists what it has" % (__name__, name))
    value = getattr(importlib.import_module("%s.%s" % (_PLUGINS, module)), name)
    globals()[name] = value
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(FROM))
