"""A probe is one package on the controller (issue 33): its checks, metrics, settings and view are defined in
plugins/plugin_utils/probes/<probe>/ (or in plugins/plugin_utils/probe_kit/shared/, what several probes share), never in
a shared judge or report module; and every Metric a probe package builds takes its id, unit and direction from the probe's metric catalogue
(Metric.of(spec, ...)), never from literals at the call site."""
import ast
import glob
import os

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.measurement import metrics_of
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import declarations, judging_of, sections

PROBES_PACKAGE = "ansible_collections.gpufleet.validation.plugins.plugin_utils.probes."
SHARED_PACKAGE = "ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.shared."
PACKAGES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        "plugins", "plugin_utils", "probes")


def own_code(probe):
    """[(what, module)] of the functions the probe declares: its checks, metrics, measurements, settings and its dossier
    view; not what the judge derives from its measurements (baseline checks, metrics left out)."""
    found = []
    judging = judging_of(probe)
    if judging is not None:
        found += [("check %s" % name, check.__module__) for name, check in judging.checks.items()
                  if name not in judging.baseline_checks]
        found += [(part, getattr(judging, part).__module__) for part in ("metrics", "measurements", "settings")
                  if getattr(judging, part) is not None]
        if judging.measurements is not None and judging.metrics.__module__ == metrics_of.__module__:
            found.remove(("metrics", metrics_of.__module__))
    section = sections().get(probe)
    if section is not None:
        found.append(("view", section.view.__module__))
    return found


def misplaced(probe):
    return [(what, module) for what, module in own_code(probe) if not module.startswith((PROBES_PACKAGE, SHARED_PACKAGE))]


def metrics_built_from_literals(probe):
    """'file:line' of each Metric(...) built directly in the probe's package, not through Metric.of(spec, ...)."""
    found = []
    for path in sorted(glob.glob(os.path.join(PACKAGES, probe, "*.py"))):
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        found += ["%s:%d" % (os.path.relpath(path, PACKAGES), node.lineno) for node in ast.walk(tree)
                  if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Metric"]
    return found


@pytest.mark.parametrize("probe", sorted(declarations()))
def test_a_probes_checks_metrics_and_view_are_defined_in_a_probe_package(probe):
    assert misplaced(probe) == []


@pytest.mark.parametrize("probe", sorted(declarations()))
def test_a_probes_metrics_take_id_unit_and_direction_from_its_catalogue(probe):
    assert metrics_built_from_literals(probe) == []
