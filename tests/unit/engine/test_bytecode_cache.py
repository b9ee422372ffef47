"""The probe's bytecode cache (plugins/module_utils/bytecode_cache.py): a private directory of the user, used only when
it is one, the host's sources left without a .pyc beside them, and a probe's own work directory forgotten after it."""
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.module_utils.bytecode_cache import (cache_path, forget_bytecode_of,
                                                                                         probe_environment)


def home_env(tmp_path, **extra):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return dict({"HOME": str(home), "PATH": os.environ.get("PATH", "")}, **extra)


def test_the_cache_is_made_private_and_replaces_the_no_bytecode_setting(tmp_path):
    env, why_not = probe_environment(home_env(tmp_path, PYTHONDONTWRITEBYTECODE="1"))
    cache = tmp_path / "home" / ".cache" / "gpufleet" / "bytecode"
    assert why_not == ""
    assert env["PYTHONPYCACHEPREFIX"] == str(cache) and "PYTHONDONTWRITEBYTECODE" not in env
    assert env["PYTHONUNBUFFERED"] == "1"
    assert cache.is_dir() and (cache.stat().st_mode & 0o777) == 0o700


def test_xdg_cache_home_is_followed_when_absolute_only(tmp_path):
    assert cache_path({"HOME": "/h", "XDG_CACHE_HOME": str(tmp_path)}) == str(tmp_path / "gpufleet" / "bytecode")
    assert cache_path({"HOME": "/h", "XDG_CACHE_HOME": "relative"}) == "/h/.cache/gpufleet/bytecode"


@pytest.mark.parametrize("plant, words", [
    ("symlink", "is not a directory (a symlink or a file)"),
    ("file", "is not a directory (a symlink or a file)"),
    ("group_writable", "is writable by others (mode 770)"),
    ("parent_is_a_file", "cannot be made"),
])
def test_a_cache_that_is_not_a_private_directory_is_not_used_and_nothing_is_written(tmp_path, plant, words):
    env_in = home_env(tmp_path)
    cache = tmp_path / "home" / ".cache" / "gpufleet" / "bytecode"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if plant == "parent_is_a_file":
        (tmp_path / "home" / ".cache").write_text("not a directory")
    else:
        cache.parent.mkdir(parents=True)
        if plant == "symlink":
            cache.symlink_to(elsewhere)
        elif plant == "file":
            cache.write_text("x")
        else:
            cache.mkdir(mode=0o700)
            cache.chmod(0o770)
    env, why_not = probe_environment(env_in)
    assert words in why_not and str(cache) in why_not
    assert env["PYTHONDONTWRITEBYTECODE"] == "1" and "PYTHONPYCACHEPREFIX" not in env
    assert list(elsewhere.iterdir()) == []


def test_a_python_run_with_it_writes_bytecode_into_the_cache_only_and_forgets_a_work_directory(tmp_path):
    env, unused = probe_environment(home_env(tmp_path))
    site = tmp_path / "site" / "pkg"
    work = tmp_path / "work"
    site.mkdir(parents=True)
    work.mkdir()
    (site / "__init__.py").write_text("VALUE = 1\n")
    (work / "probe_part.py").write_text("VALUE = 2\n")
    code = "import sys; sys.path[:0] = [%r, %r]; import pkg, probe_part" % (str(site.parent), str(work))
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    prefix = env["PYTHONPYCACHEPREFIX"]
    mirrored_site = os.path.join(prefix, str(site).lstrip(os.sep))
    mirrored_work = os.path.join(prefix, str(work).lstrip(os.sep))
    assert any(name.startswith("__init__.") and name.endswith(".pyc") for name in os.listdir(mirrored_site))
    assert any(name.startswith("probe_part.") for name in os.listdir(mirrored_work))
    assert not (site / "__pycache__").exists() and not (work / "__pycache__").exists()
    forget_bytecode_of(env, str(work))
    assert not os.path.exists(mirrored_work) and os.listdir(mirrored_site)


def test_nothing_is_forgotten_when_no_cache_is_used(tmp_path):
    prefix = tmp_path / "prefix"
    kept = prefix / str(tmp_path / "work").lstrip(os.sep)
    kept.mkdir(parents=True)
    forget_bytecode_of({"PYTHONPYCACHEPREFIX": str(prefix), "PYTHONDONTWRITEBYTECODE": "1"}, str(tmp_path / "work"))
    assert kept.is_dir()
