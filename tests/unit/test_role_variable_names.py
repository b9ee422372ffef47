"""One naming for variables (issue 46): a role's option whose default reads a ``gpufleet_*`` variable (the names
validate.yml, the README and docs/ use) says so in its documented argument spec, and that variable is documented; a
user of the role outside validate.yml no longer guesses the mapping."""
import glob
import os
import re

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES = sorted(os.path.basename(os.path.dirname(os.path.dirname(path)))
               for path in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")))
READS = re.compile(r"^(\w+): \"\{\{ (gpufleet_\w+) \| default\(")


def _documented_text():
    texts = []
    for path in [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        with open(path, encoding="utf-8") as handle:
            texts.append(handle.read())
    return "\n".join(texts)


def _description(option):
    text = option.get("description")
    return " ".join(text) if isinstance(text, list) else str(text)


@pytest.mark.parametrize("role", ROLES)
def test_each_option_a_gpufleet_variable_sets_names_it(role):
    with open(os.path.join(ROOT, "roles", role, "defaults", "main.yml"), encoding="utf-8") as handle:
        reads = dict(match.groups() for match in map(READS.match, handle.read().splitlines()) if match)
    with open(os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        options = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    assert reads, "roles/%s/defaults/main.yml reads no gpufleet_* variable: is the pattern still right?" % role
    documented = _documented_text()
    for option, variable in sorted(reads.items()):
        assert option in options, "%s's default reads %s but the role does not document the option" % (option, variable)
        assert "C(%s)" % variable in _description(options[option]), (role, option, variable)
        assert re.search(r"\b%s\b" % variable, documented), "%s is named nowhere in README.md or docs/" % variable
    for option in (name for name in options if name.endswith("_run_id")):
        assert "C(gpufleet_run_id)" in _description(options[option]), (role, option)
