"""One probe kit on the controller (issue 47): a probe package (plugins/plugin_utils/probes/<name>/) imports from the
core only plugin_utils/probe_kit/kit.py and nothing of another probe's package; a result one probe needs of another is
declared (needs=, gives=) and handed to it by the core. The imports are read from the source as test_layers.py reads
them (relative and absolute, at any depth)."""
import ast
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit import kit
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.declaration import ProbeRun
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import _needs_problems, declarations
from test_layers import LAYERS, PLUGINS, import_graph, layer_of

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KIT = "plugin_utils/probe_kit/kit.py"
PACKAGES = "plugin_utils/probes/"


def package_of(relative):
    """The probe package a file under plugins/ belongs to, or None."""
    parts = relative.split("/")
    return parts[2] if relative.startswith(PACKAGES) and len(parts) > 3 else None


def beyond_the_kit(graph):
    """[(a probe package's file, what it imports that is neither its own package nor the kit)]."""
    return sorted((importer, imported) for importer, found in graph.items() if package_of(importer) is not None
                  for imported in found if imported != KIT and package_of(imported) != package_of(importer))


def test_a_probe_package_imports_from_the_core_only_the_kit_and_nothing_of_another_probe():
    graph = import_graph()
    assert "plugin_utils/probes/gemm/derived.py" in graph and KIT in graph["plugin_utils/probes/gemm/view.py"]
    assert beyond_the_kit(graph) == []


def test_the_finder_catches_a_package_that_reads_the_judge_or_another_probe(tmp_path):
    """The check itself, on a tree of its own: the judge and a sibling probe are caught, the kit and the own package not."""
    tree = {"plugin_utils/__init__.py": "", "plugin_utils/judge/__init__.py": "", "plugin_utils/judge/model.py": "X = 1\n",
            "plugin_utils/probe_kit/__init__.py": "", "plugin_utils/probe_kit/kit.py": "Y = 1\n",
            "plugin_utils/probes/__init__.py": "", "plugin_utils/probes/a/__init__.py": "", "plugin_utils/probes/a/own.py": "Z = 1\n",
            "plugin_utils/probes/b/__init__.py": "", "plugin_utils/probes/b/judging.py": "W = 1\n",
            "plugin_utils/probes/a/checks.py": "from ...judge.model import X\nfrom ..b.judging import W\n"
                                               "from ...probe_kit.kit import Y\nfrom .own import Z\n"}
    for relative, text in tree.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    assert beyond_the_kit(import_graph(str(tmp_path))) == [
        ("plugin_utils/probes/a/checks.py", "plugin_utils/judge/model.py"),
        ("plugin_utils/probes/a/checks.py", "plugin_utils/probes/b/judging.py")]


def test_every_name_the_kit_hands_on_is_defined_below_the_probe_packages():
    packages_layer = layer_of(PACKAGES + "gemm/run.py")[0]
    for name, module in sorted(kit.FROM.items()):
        relative = module.replace(".", "/") + ".py"
        assert os.path.isfile(os.path.join(PLUGINS, relative)), (name, module)
        assert layer_of(relative)[0] < packages_layer, (name, module, LAYERS[layer_of(relative)[0]][0])
        assert getattr(kit, name) is not None
    with pytest.raises(AttributeError, match="hands probe packages no 'judge_fleet'"):
        getattr(kit, "judge_fleet")


def kit_names(source):
    """The names a module's source takes from the kit."""
    return {alias.name for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)
            and (node.module or "").endswith("probe_kit.kit") for alias in node.names}


def test_every_name_a_package_takes_from_the_kit_is_handed_on_and_every_name_handed_on_is_taken():
    taken = set()
    for folder, unused_subfolders, files in os.walk(os.path.join(PLUGINS, PACKAGES)):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(folder, name), encoding="utf-8") as handle:
                    taken.update(kit_names(handle.read()))
    assert sorted(taken - set(kit.FROM)) == [] and sorted(set(kit.FROM) - taken) == []


def test_taking_a_declaration_from_the_kit_loads_no_judge_or_report_module():
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.kit import ProbeRun, Handed\n"
            "print(sorted(name for name in sys.modules if '.plugin_utils.judge' in name or '.plugin_utils.report' in name))"
            % os.path.join(ROOT, "collections"))
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert found.stdout.strip() == "[]"


def test_the_probe_packages_folder_holds_probe_packages_only():
    folder = os.path.join(PLUGINS, PACKAGES)
    entries = sorted(name for name in os.listdir(folder) if name not in ("__init__.py", "__pycache__"))
    assert entries == sorted(declarations())


def _probe(name, run_order, **fields):
    return ProbeRun(name=name, run_order=run_order, timeout_s=60, profiles={}, **fields)


def test_a_probe_needs_only_an_earlier_probe_that_gives_something():
    gives = _probe("giver", 10, gives=dict)
    assert _needs_problems({"giver": gives, "taker": _probe("taker", 20, needs=("giver",))}) == []
    assert _needs_problems({"giver": gives, "taker": _probe("taker", 5, needs=("giver",))}) == [
        "probe taker needs giver, which runs after it (run_order 10 >= 5)"]
    assert _needs_problems({"mute": _probe("mute", 1), "taker": _probe("taker", 20, needs=("mute", "nobody"))}) == [
        "probe taker needs 'mute', which is no probe that declares gives=",
        "probe taker needs 'nobody', which is no probe that declares gives="]
    assert {name: probe.needs for name, probe in declarations().items() if probe.needs} == {"fusion": ("membw",), "gemm": ("membw",)}
