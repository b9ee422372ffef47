"""Layers only point down (issue 47): every module under plugins/ has a layer, and imports only from its own layer or
one below it. The order is docs/architecture.md's ("The layers"), bottom first.

The imports are read from the source (ast): relative ones and absolute ones of ansible_collections.gpufleet.validation,
at the top of a module or inside a function. A module found by name at run time (the registry's importlib of a probe's
package, the probe kit's table of names: test_probe_kit.py holds those below the probe packages) is no import here. A
module that is in no layer fails the test until it is placed in one.
"""
import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLUGINS = os.path.join(ROOT, "plugins")
PACKAGE = "ansible_collections.gpufleet.validation.plugins"

# Bottom first. An entry is a file, or a folder (ending in /) for everything under it; a file's entry wins over its
# folder's. Paths are relative to plugins/.
LAYERS = (
    ("host side: what the modules ship to a host, standard library only", (
        "module_utils/",)),
    ("shared leaves", (
        "plugin_utils/__init__.py", "plugin_utils/report/__init__.py", "plugin_utils/safe_yaml.py", "plugin_utils/control_chars.py",
        "plugin_utils/collection_info.py", "plugin_utils/report/number_format.py", "plugin_utils/result_fields.py",
        "plugin_utils/unreadable_result.py",
        # the fork pool that judging a run and rendering it both use
        "plugin_utils/report/parallel.py")),
    ("store: the one owner of the results directory", (
        "plugin_utils/store/",)),
    ("metric model: what a metric is, declared as data", (
        "plugin_utils/metric_spec.py",)),
    ("judge: knows no probe", (
        "plugin_utils/judge/",)),
    ("report markup: what a probe's view is built of", (
        "plugin_utils/report/values.py", "plugin_utils/report/cells.py", "plugin_utils/report/devices.py",
        "plugin_utils/report/svg_plots.py")),
    ("probe framework: declarations, discovery, the zip packer, and the helpers probe packages share", (
        "plugin_utils/probe_archive.py", "plugin_utils/probe_kit/")),
    ("probe packages", (
        "plugin_utils/probes/",)),
    ("run glue: the inputs checked, a run judged, the probe action's and acting's helpers", (
        "plugin_utils/rules_and_baselines.py", "plugin_utils/run_judgement.py", "plugin_utils/run_variables_check.py",
        "plugin_utils/unjudged_probes.py", "plugin_utils/stored_overrides.py", "plugin_utils/host_deadlines.py",
        "plugin_utils/controller_clock.py", "plugin_utils/python_found.py", "plugin_utils/act/",
        # the action plugins' one opening (check mode, no async, the argument spec, the named run's directory)
        "plugin_utils/controller_task.py")),
    ("run index: a results directory's judged runs in SQLite, read from the files stored with each run", (
        "plugin_utils/history/",)),
    # The report in three layers, so that one host's pages are built walking down: the run writer calls the pages, the
    # pages call the markup, never back.
    ("report page markup: Markdown and HTML escaping, the rows built in Python, the page's notes, the Jinja environments", (
        "plugin_utils/report/markup.py", "plugin_utils/report/notes.py")),
    ("report pages: what each page shows (its context) and the page rendered", (
        "plugin_utils/report/host_pages.py", "plugin_utils/report/index_page.py", "plugin_utils/report/verdicts.py",
        "plugin_utils/report/index_columns.py", "plugin_utils/report/rerun.py", "plugin_utils/report/history_page.py",
        "plugin_utils/report/history_plots.py", "plugin_utils/report/python_view.py",
        "plugin_utils/unmatched_kinds.py")),
    ("report run writer and calibration: what a judged run is turned into", (
        "plugin_utils/report/render.py", "plugin_utils/report/exports.py", "plugin_utils/calibrate/")),
    ("Ansible's plugins: thin over plugin_utils", (
        "action/", "modules/", "lookup/", "filter/", "strategy/", "doc_fragments/")),
)
# (importer, imported) that still run up the layers, each with why; the list only shrinks
# (test_every_waived_import_still_runs_up), and MOST_WAIVED is lowered with it, never raised.
WAIVED = {}
MOST_WAIVED = 0


def module_files(top=PLUGINS):
    """{dotted name under plugins/: its file, relative to plugins/}; a package is named by its __init__.py."""
    found = {}
    for folder, subfolders, files in os.walk(top):
        subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
        for name in files:
            if name.endswith(".py"):
                relative = os.path.relpath(os.path.join(folder, name), top).replace(os.sep, "/")
                dotted = relative[:-3].replace("/", ".")
                found[dotted[:-len(".__init__")] if name == "__init__.py" else dotted] = relative
    return found


def imported_modules(source, dotted, is_package, modules):
    """The dotted names (under plugins/) of the modules a module's source imports, at any depth: ``from X import y``
    is the module X.y where there is one, else X."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = dotted.split(".")[:None if is_package else -1]
                parts = parts[:len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            elif node.module and (node.module + ".").startswith(PACKAGE + "."):
                base = node.module[len(PACKAGE) + 1:]
            else:
                continue
            found.update(base + "." + alias.name if base + "." + alias.name in modules else base for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name[len(PACKAGE) + 1:] for alias in node.names if alias.name.startswith(PACKAGE + "."))
    return {name for name in found if name in modules}


def layer_of(relative):
    """(the layer's index, the entry that placed it), or None for a file in no layer."""
    best = None
    for index, (unused_name, entries) in enumerate(LAYERS):
        for entry in entries:
            if relative == entry or (entry.endswith("/") and relative.startswith(entry)):
                if best is None or len(entry) > len(best[1]):
                    best = (index, entry)
    return best


def import_graph(top=PLUGINS):
    """{importer's file: {imported file}}, both relative to plugins/."""
    modules = module_files(top)
    graph = {}
    for dotted, relative in modules.items():
        with open(os.path.join(top, relative), encoding="utf-8") as handle:
            source = handle.read()
        imported = imported_modules(source, dotted, relative.endswith("__init__.py"), modules)
        graph[relative] = {modules[name] for name in imported if modules[name] != relative}
    return graph


def upward_imports(graph):
    """{(importer, imported): (importer's layer, imported's layer)} for each import from a higher layer."""
    found = {}
    for importer, imported in graph.items():
        for target in imported:
            low, high = layer_of(importer), layer_of(target)
            if low is None or high is None:
                continue  # test_every_module_under_plugins_has_a_layer names it
            low, high = low[0], high[0]
            if high > low:
                found[(importer, target)] = (LAYERS[low][0], LAYERS[high][0])
    return found


def test_every_module_under_plugins_has_a_layer():
    graph = import_graph()
    assert len(graph) > 200 and "plugin_utils/judge/fleet.py" in graph  # the test sees the tree it claims to look at
    assert sorted(relative for relative in graph if layer_of(relative) is None) == []


def test_every_layer_entry_names_a_file_or_folder_that_exists():
    stale = [entry for unused_name, entries in LAYERS for entry in entries if not os.path.exists(os.path.join(PLUGINS, entry))]
    assert stale == []


def test_no_module_imports_from_a_higher_layer():
    found = upward_imports(import_graph())
    assert {pair: layers for pair, layers in found.items() if pair not in WAIVED} == {}


def test_every_waived_import_still_runs_up():
    """A waived import that was taken out, or no longer runs up, leaves WAIVED."""
    found = upward_imports(import_graph())
    assert [pair for pair in WAIVED if pair not in found] == []
    assert len(WAIVED) <= MOST_WAIVED
    assert all(isinstance(why, str) and why.strip() for why in WAIVED.values())


def test_the_reader_finds_relative_absolute_and_function_level_imports(tmp_path):
    """The finder itself: a judge module that imports a probe package three ways is caught three times."""
    judge = tmp_path / "plugin_utils" / "judge"
    probes = tmp_path / "plugin_utils" / "probes" / "toy"
    for folder in (judge, probes):
        folder.mkdir(parents=True)
        (folder / "__init__.py").write_text("")
    (tmp_path / "plugin_utils" / "__init__.py").write_text("")
    (tmp_path / "plugin_utils" / "probes" / "__init__.py").write_text("")
    (probes / "checks.py").write_text("X = 1\n")
    (probes / "view.py").write_text("Y = 1\n")
    (probes / "metrics.py").write_text("Z = 1\n")
    (judge / "low.py").write_text("W = 1\n")
    (judge / "high.py").write_text(
        "from ..probes.toy import checks\n"
        "from %s.plugin_utils.probes.toy.view import Y\n"
        "from . import low\n"
        "def late():\n"
        "    import %s.plugin_utils.probes.toy.metrics\n" % (PACKAGE, PACKAGE))
    graph = import_graph(str(tmp_path))
    assert graph["plugin_utils/judge/high.py"] == {
        "plugin_utils/probes/toy/checks.py", "plugin_utils/probes/toy/view.py", "plugin_utils/probes/toy/metrics.py",
        "plugin_utils/judge/low.py"}
    assert sorted(importer for importer, unused in upward_imports(graph)) == ["plugin_utils/judge/high.py"] * 3
