"""A part the tests need (a program, a network-namespace fleet, a Slurm cluster) that is missing here: the test fails when
its GPUFLEET_REQUIRE_* variable is 1 (scripts/test sets each, so CI never skips one silently), and skips otherwise."""
import os

import pytest


def missing(what, variable):
    """Fail or skip the test for ``what`` is missing, as ``variable`` says."""
    if os.environ.get(variable) == "1":
        pytest.fail("%s (%s=1 requires it)" % (what, variable), pytrace=False)
    pytest.skip("%s (set %s=1 to fail instead)" % (what, variable))


def required_program(path, absent, variable):
    """``path`` (shutil.which's answer) where the program is installed; else the test fails or skips with ``absent``."""
    if path is None:
        missing(absent, variable)
    return path
