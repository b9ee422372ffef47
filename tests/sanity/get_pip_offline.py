"""Stands in for ansible-test's downloaded get-pip.py: bootstrap pip from the interpreter's own ensurepip.

ansible-test fetches get-pip.py from its CI file server, which this workplace cannot reach; the package
registry it installs from is reachable, so ensurepip plus a normal `pip install` of the pinned pip does the same.
ensurepip runs in its own process because it sets PIP_CONFIG_FILE=/dev/null in the environment of its caller.
"""
import subprocess
import sys

GET_PIP_ONLY_OPTIONS = ("--no-setuptools", "--no-wheel")

subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"])
arguments = [argument for argument in sys.argv[1:] if argument not in GET_PIP_ONLY_OPTIONS]
subprocess.check_call([sys.executable, "-m", "pip", "install"] + arguments)
