"""A probe builds every Measurement and Metric from its catalogue entry (Measurement.of / Metric.of with a MetricSpec of
its metrics.py), never from an id, unit and direction written out at the call site: the catalogue is their one owner."""
import ast
import glob
import os

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import declarations

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGES = os.path.join(ROOT, "plugins", "plugin_utils", "probes")


def written_out(source):
    """The line of each call of the bare Metric(...) or Measurement(...) constructor in a module's source."""
    return [node.lineno for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name) and node.func.id in ("Metric", "Measurement")]


def probe_calls(probe):
    found = []
    for path in sorted(glob.glob(os.path.join(PACKAGES, probe, "*.py"))):
        with open(path, encoding="utf-8") as handle:
            found.extend("%s:%d" % (os.path.relpath(path, ROOT), line) for line in written_out(handle.read()))
    return found


@pytest.mark.parametrize("probe", sorted(declarations()))
def test_a_probes_measurements_and_metrics_come_from_its_catalogue(probe):
    assert probe_calls(probe) == []


def test_a_constructor_written_out_is_found_and_one_from_the_catalogue_is_not():
    source = ('Metric("toy.rate_gbps", None, None, 1.0, "GB/s", "higher")\n'
              'Metric.of(RATE, None, None, 1.0)\n'
              'found.append(Measurement("toy.rate_gbps", "GB/s", "higher", device, "the toy copy"))\n')
    assert written_out(source) == [1, 3]
