"""No shell, no evaluated text: the tree holds no shell=True, os.system, eval( or exec( (docs/security.md)."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# .peer_src: the peer tools' public sources, exported there (git-ignored) to be built on the GPU machine, not ours
SKIPPED_DIRS = {".git", ".venv", ".venv-test", ".venv-sanity", ".ansible", "collections", "results", "node_modules", "__pycache__", ".whl", ".rig",
                "examples", "output", ".peer_src"}
SCANNED_SUFFIXES = (".py", ".yml", ".yaml", ".sh", ".j2", ".cfg")
SCANNED_SCRIPTS = ("scripts", ".ci")
THIS_FILE = os.path.abspath(__file__)
# Assembled from parts, so this file does not match itself.
FORBIDDEN = {
    "shell" + "=True": re.compile(r"shell\s*=\s*True"),
    "os." + "system": re.compile(r"\bos\s*\.\s*system\b"),
    "ev" + "al(": re.compile(r"(?<![\w.])eval\s*\("),
    "ex" + "ec(": re.compile(r"(?<![\w.])exec\s*\("),
}


def scanned_files():
    for directory, subdirectories, files in os.walk(ROOT):
        subdirectories[:] = [name for name in subdirectories if name not in SKIPPED_DIRS]
        relative = os.path.relpath(directory, ROOT)
        for name in files:
            path = os.path.join(directory, name)
            if path == THIS_FILE:
                continue
            if name.endswith(SCANNED_SUFFIXES) or relative.split(os.sep)[0] in SCANNED_SCRIPTS:
                yield path


def test_the_patterns_catch_what_they_forbid():
    samples = {"shell" + "=True": "subprocess.run(cmd, shell = True)", "os." + "system": "os.system('ls')",
               "ev" + "al(": "value = eval (text)", "ex" + "ec(": "exec(code)"}
    for name, pattern in FORBIDDEN.items():
        assert pattern.search(samples[name]), name
    # neighbours that are fine
    assert not FORBIDDEN["ev" + "al("].search("ast.literal_eval(text)")
    assert not FORBIDDEN["ex" + "ec("].search("os.execv(path, argv); create_subprocess_exec(x)")


def test_no_file_of_the_tree_uses_a_shell_or_evaluates_text():
    files = list(scanned_files())
    assert len(files) > 200  # the walk reached the tree
    found = []
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, 1):
                for name, pattern in FORBIDDEN.items():
                    if pattern.search(line):
                        found.append("%s:%d: %s: %s" % (os.path.relpath(path, ROOT), number, name, line.strip()))
    assert found == []
