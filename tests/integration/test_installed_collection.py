"""The built collection, installed as the README says, from inside the clone, and its playbook run without an inventory.

Inside the clone ansible.cfg is read by every tool. It used to point collections_path at the working tree
(collections/ links to it), so ansible-galaxy counted the tree as an installed gpufleet.validation 0.1.0 and
`ansible-galaxy collection install gpufleet-validation-0.1.0.tar.gz -p DIR` answered "Nothing to do" and installed
nothing. The tree is now found through the playbook-adjacent collections/ folder only (docs/packaging.md). The
installed playbook, run without an inventory, used to probe nothing and end in "run ... has no results"; its first play
(gpufleet.validation.check_inputs) now stops it, saying no hosts matched and to give an inventory with -i.

The collection is built and installed once per test session (the fixture installed_collection,
tests/fleet/installed_collection.py). HOME is a temporary folder there, so that a gpufleet.validation installed in the
user's ~/.ansible/collections (which ansible-galaxy would rightly count as installed) cannot decide the outcome;
ANSIBLE_* variables of the caller are dropped for the same reason.
"""
import json
import os
import subprocess
import tarfile

from installed_collection import ANSIBLE_GALAXY, BIN, ROOT, TARBALL, clean_env, run  # pylint: disable=import-error

ANSIBLE_PLAYBOOK = os.path.join(BIN, "ansible-playbook")
NO_HOSTS = "no hosts matched gpufleet_hosts 'all'"
GIVE_AN_INVENTORY = "give an inventory with -i"
REFUSED = "problem(s) in the run's inputs, so nothing was run"
# The installed collection's bound: ~4 MB today (docs/packaging.md), room for the precision probe's shipped tensors
# (a few MB under probes/). The recorded example runs made it 59 MB.
INSTALLED_BYTES_AT_MOST = 12 * 1000 * 1000
# The tarball: 5.2 MB on 2026-12-06, 4.4 MB of it the precision probe's safetensors slice, which compresses little.
TARBALL_BYTES_AT_MOST = 6 * 1000 * 1000


def test_installing_the_tarball_inside_the_clone_installs_it(installed_collection):
    _work, _home, _path, collection, output = installed_collection
    assert "Nothing to do" not in output, output
    assert "gpufleet.validation:0.1.0 was installed successfully" in output, output
    with open(collection / "MANIFEST.json", encoding="utf-8") as handle:
        info = json.load(handle)["collection_info"]
    assert (info["namespace"], info["name"], info["version"]) == ("gpufleet", "validation", "0.1.0")


def test_the_installed_collection_has_its_files_and_nothing_of_the_working_tree(installed_collection):
    _work, _home, _path, collection, _output = installed_collection
    for path in ("playbooks/validate.yml", "playbooks/report.yml", "plugins/action/check_inputs.py",
                 "plugins/plugin_utils/run_variables_check.py", "probes/health.py", "schemas", "rules/core.yaml",
                 "plugins/plugin_utils/probes/health/rules.yaml", "docs/rules.yaml", "baselines", "roles/probe/tasks/main.yml",
                 "meta/runtime.yml", "meta/execution-environment.yml",
                 "requirements.txt", "changelogs/changelog.yaml", "CHANGELOG.md", "FILES.json", "extras/prometheus/gpufleet-alerts.yml"):
        assert (collection / path).exists(), path
    for path in ("collections", "playbooks/collections", ".venv", ".venv-test", ".venv-sanity", ".git", ".ansible", "results",
                 "tests/output", "context"):
        assert not os.path.lexists(collection / path), path
    root = os.path.realpath(collection)
    for folder, dirs, files in os.walk(collection):
        for name in dirs + files:
            path = os.path.join(folder, name)
            assert not name.endswith(".tar.gz"), path
            assert "__pycache__" not in path, path
            if os.path.islink(path):
                assert os.path.realpath(path).startswith(root + os.sep), (path, os.readlink(path))


def test_the_built_collection_leaves_the_recorded_runs_in_the_repository(installed_collection):
    work, _home, _path, collection, _output = installed_collection
    assert os.path.isdir(os.path.join(ROOT, "docs", "examples")), "the recorded runs stay in the repository"
    with tarfile.open(work / "dist" / TARBALL) as tarball:
        recorded = [name for name in tarball.getnames() if name == "docs/examples" or name.startswith("docs/examples/")]
    assert recorded == [], recorded[:10]
    assert not os.path.lexists(collection / "docs" / "examples")
    assert (collection / "docs" / "packaging.md").is_file()  # the rest of docs/ still ships


def test_the_built_collection_holds_what_an_installed_user_runs_and_nothing_else(installed_collection):
    """Issue 46: the tarball was 5.8 MB of 949 files, 366 of them tests/, benchmarks/ and tools/ (and 89 changelog
    fragments) that no user of the installed collection runs."""
    work, _home, _path, collection, _output = installed_collection
    with tarfile.open(work / "dist" / TARBALL) as tarball:
        names = tarball.getnames()
    left_out = ("tests", "benchmarks", "tools", "changelogs/fragments")
    shipped = [name for name in names if any(name == top or name.startswith(top + "/") for top in left_out)]
    assert shipped == [], shipped[:10]
    assert not any(os.path.lexists(collection / top) for top in left_out)
    assert os.path.getsize(work / "dist" / TARBALL) <= TARBALL_BYTES_AT_MOST, os.path.getsize(work / "dist" / TARBALL)


def test_the_installed_collection_takes_a_few_megabytes(installed_collection):
    _work, _home, _path, collection, _output = installed_collection
    sizes = {}
    for folder, _dirs, files in os.walk(collection):
        for name in files:
            path = os.path.join(folder, name)
            sizes[os.path.relpath(path, collection)] = os.lstat(path).st_size
    largest = sorted(sizes.items(), key=lambda item: item[1], reverse=True)[:10]
    assert sum(sizes.values()) <= INSTALLED_BYTES_AT_MOST, (sum(sizes.values()), largest)


def test_the_readme_command_without_p_installs_into_the_default_path_not_into_the_clone(installed_collection):
    work, home, _path, _collection, _output = installed_collection
    code, output = run([ANSIBLE_GALAXY, "collection", "install", str(work / "dist" / TARBALL)], ROOT, clean_env(home))
    assert code == 0, output
    assert "Nothing to do" not in output, output
    assert (home / ".ansible" / "collections" / "ansible_collections" / "gpufleet" / "validation" / "MANIFEST.json").is_file(), output
    # The clone's own link to itself is untouched.
    assert os.readlink(os.path.join(ROOT, "collections", "ansible_collections", "gpufleet", "validation")) == "../../.."


def test_the_built_tarball_is_ignored_by_git():
    completed = subprocess.run(["git", "check-ignore", "--quiet", TARBALL], cwd=ROOT, check=False)
    assert completed.returncode == 0, "%s would be left untracked in the tree" % TARBALL


def playbook_elsewhere(installed, *extra):
    """ansible-playbook gpufleet.validation.validate from an empty folder, the install dir as the collections path."""
    work, home, path, _collection, _output = installed
    elsewhere = work / ("elsewhere-%d" % len(list(work.glob("elsewhere-*"))))
    elsewhere.mkdir()
    (elsewhere / "ansible.cfg").write_text("[defaults]\n")  # neither the clone's nor a system-wide one
    env = clean_env(home, ANSIBLE_COLLECTIONS_PATH=str(path))
    if os.path.exists("/etc/ansible/hosts"):  # this machine's default inventory: an empty one instead
        (elsewhere / "empty.yml").write_text("{}\n")
        env["ANSIBLE_INVENTORY"] = str(elsewhere / "empty.yml")
    code, output = run([ANSIBLE_PLAYBOOK, "gpufleet.validation.validate", *extra], elsewhere, env, timeout=120)
    return code, output, elsewhere


def assert_stopped_before_anything_ran(code, output, elsewhere, *expected):
    assert code != 0, output
    for text in (REFUSED, GIVE_AN_INVENTORY) + expected:
        assert text in output, (text, output)
    assert "has no results" not in output, output
    assert "TASK [gpufleet.validation.probe" not in output, "a probe task started:\n" + output
    assert "Open the run's directory" not in output, output
    assert not (elsewhere / "results").exists(), os.listdir(elsewhere / "results")


def test_the_installed_playbook_without_an_inventory_says_to_give_one(installed_collection):
    code, output, elsewhere = playbook_elsewhere(installed_collection)
    assert_stopped_before_anything_ran(code, output, elsewhere, NO_HOSTS)
    # The installed playbook ran (its task is named in the error with its file), not the clone's.
    assert os.path.join(str(installed_collection.collection), "playbooks", "validate.yml") in output, output


def test_the_installed_playbook_with_a_pattern_that_matches_nothing_says_so(installed_collection):
    code, output, elsewhere = playbook_elsewhere(installed_collection, "-i", "localhost,", "-e", "gpufleet_hosts=rack_zz")
    assert_stopped_before_anything_ran(code, output, elsewhere, "no hosts matched gpufleet_hosts 'rack_zz' in the inventory (localhost,)")
