"""A first run prints no Python warning (issue 46): cryptography 51 deprecated DSA, and ansible-core 2.19's ssh-agent
support imports it at the start of every Ansible command, so each `ansible-playbook`, `ansible-galaxy` and `ansible-doc`
began with two lines of CryptographyDeprecationWarning on stderr (requirements.txt pins cryptography below it). The
commands as the README's setup installs them, run for real."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
# How Python's warnings module prints one: "<file>:<line>: <Category>: <message>"
PYTHON_WARNING = re.compile(r"^\S+:\d+: \w*Warning: ", re.MULTILINE)


@pytest.mark.parametrize("command", ["ansible-playbook", "ansible-galaxy", "ansible-doc", "ansible-inventory"])
def test_an_ansible_command_starts_without_a_python_warning(command):
    completed = subprocess.run([os.path.join(BIN, command), "--version"], cwd=ROOT, capture_output=True, text=True,
                               timeout=120, check=False)
    assert completed.returncode == 0, completed.stderr
    assert not PYTHON_WARNING.search(completed.stdout + completed.stderr), completed.stdout + completed.stderr
