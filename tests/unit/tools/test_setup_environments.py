"""Issue 46: the main job's environment and the tests' never share a directory. scripts/setup runs for real here (real
venvs, real pip) on a copy of the script with empty requirement files, so nothing is downloaded."""
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
REQUIREMENT_FILES = ("requirements.txt", "requirements-dev.txt", "requirements-paramiko.txt", "requirements-data.txt")


@pytest.fixture(name="project")
def project_fixture(tmp_path):
    """A directory laid out like a clone for scripts/setup: the script itself, empty requirement files."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(os.path.join(ROOT, "scripts", "setup"), tmp_path / "scripts" / "setup")
    for name in REQUIREMENT_FILES:
        (tmp_path / name).write_text("# nothing: this test checks where scripts/setup installs, not what\n")
    return tmp_path


def setup(project, *args):
    done = subprocess.run(["bash", str(project / "scripts" / "setup"), *args], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, env=dict(os.environ, PYTHON=sys.executable), check=False, timeout=300)
    assert done.returncode == 0, done.stdout.decode()
    return done.stdout.decode()


def plant_torch(venv):
    """What pip leaves when it installs torch into VENV: its package directory in site-packages."""
    site = next((venv / "lib").glob("python3*")) / "site-packages" / "torch"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text("")
    return site


def test_the_tests_environment_is_not_the_main_jobs(project):
    """Before: `scripts/setup dev` installed the tests' CPU torch into .venv, the main job's environment, and from then
    on every GPU probe of scripts/validate measured the CPU of a machine without GPUs (about 10 minutes of acceptance)."""
    printed = setup(project, "dev")
    assert (project / ".venv-test" / "bin" / "python").exists()
    assert not (project / ".venv").exists(), printed
    planted = plant_torch(project / ".venv-test")
    printed = setup(project)
    assert (project / ".venv" / "bin" / "python").exists(), printed
    assert not list((project / ".venv" / "lib").glob("python3*/site-packages/torch")), printed
    assert planted.exists(), "making the main job's environment touched the tests'"
    assert "installing requirements.txt into .venv" in printed


def test_a_main_environment_an_earlier_test_run_filled_with_torch_is_made_again(project):
    setup(project)
    plant_torch(project / ".venv")
    stamps = list((project / ".venv").glob(".installed-*"))
    assert stamps, "setup left no stamp, so the next setup would install again anyway"
    printed = setup(project)
    assert ".venv holds torch" in printed and "making .venv again without it" in printed
    assert not list((project / ".venv" / "lib").glob("python3*/site-packages/torch"))
    assert (project / ".venv" / "bin" / "python").exists()
    assert "making .venv again" not in setup(project), "a clean .venv is made again on every run"
