"""The collection built from this tree and installed as the README says, for the tests that run it as a user would
(tests/integration/test_installed_collection.py, test_ansible_runner.py; the fixture ``installed_collection`` in
tests/integration/conftest.py builds it once per test session).

`ansible-galaxy collection build`, then `ansible-galaxy collection install <tarball> -p DIR` run inside the clone (where
./ansible.cfg applies). HOME is a folder of its own, so that a gpufleet.validation installed in the user's
~/.ansible/collections cannot decide the outcome, and ANSIBLE_* variables of the caller are dropped for the same reason.
Only argv-list subprocesses, no shell.
"""
import os
import subprocess
import sys
from typing import NamedTuple

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
ANSIBLE_GALAXY = os.path.join(BIN, "ansible-galaxy")
TARBALL = "gpufleet-validation-0.1.0.tar.gz"


class Installed(NamedTuple):
    """work: the folder everything lies in; home: the HOME the install ran with; path: the install dir given to -p
    (a collections path); collection: the collection's installed folder; output: ansible-galaxy install's output."""
    work: object
    home: object
    path: object
    collection: object
    output: str


def clean_env(home, **extra) -> dict:
    """The caller's environment without its ANSIBLE_* variables, with HOME and extra set."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("ANSIBLE_")}
    env.update(HOME=str(home), **extra)
    return env


def run(argv, cwd, env, timeout=300):
    """(exit code, stdout + stderr)."""
    completed = subprocess.run(argv, cwd=str(cwd), env=env, capture_output=True, text=True, timeout=timeout, check=False)
    return completed.returncode, completed.stdout + completed.stderr


def build_and_install(work) -> Installed:
    """Build the tarball into work/dist and install it into work/collections with the README's command."""
    home = work / "home"
    home.mkdir()
    env = clean_env(home)
    code, output = run([ANSIBLE_GALAXY, "collection", "build", "--output-path", str(work / "dist"), ROOT], ROOT, env)
    assert code == 0, output
    assert (work / "dist" / TARBALL).is_file(), output
    code, output = run([ANSIBLE_GALAXY, "collection", "install", str(work / "dist" / TARBALL), "-p", str(work / "collections")],
                       ROOT, env)
    assert code == 0, output
    return Installed(work, home, work / "collections", work / "collections" / "ansible_collections" / "gpufleet" / "validation",
                     output)
