"""The report and the judge keep their functions short (issue 47): none over MOST_LINES lines, counted from its
``def`` (decorators aside) to its last line, so that a hub that does several jobs in one function shows here."""
import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGES = ("plugins/plugin_utils/report", "plugins/plugin_utils/judge")
MOST_LINES = 60


def long_functions(top):
    """(file relative to the collection, function name, lines) of every function under top longer than MOST_LINES."""
    found = []
    for folder, subfolders, files in os.walk(top):
        subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as handle:
                tree = ast.parse(handle.read())
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > MOST_LINES:
                        found.append((os.path.relpath(path, ROOT), node.name, lines))
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_no_function_is_over_the_limit(package):
    assert long_functions(os.path.join(ROOT, package)) == []


def test_a_long_function_is_found(tmp_path):
    (tmp_path / "long.py").write_text("def long():\n" + "    x = 1\n" * MOST_LINES + "\n\ndef short():\n    return 1\n")
    assert long_functions(str(tmp_path)) == [(os.path.relpath(str(tmp_path / "long.py"), ROOT), "long", MOST_LINES + 1)]
