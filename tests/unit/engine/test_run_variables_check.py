"""run_variables_check: a run that would validate no host is refused, saying why and what to give."""
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_variables_check import hosts_problems


def test_hosts_that_matched_are_no_problem():
    assert not hosts_problems("all", ["gpu-a01-n01"], ["/etc/ansible/hosts"])


def test_no_inventory_names_the_pattern_and_the_source_and_says_to_give_one_with_i():
    assert hosts_problems("all", [], ["/etc/ansible/hosts"]) == [
        "no hosts matched gpufleet_hosts 'all' in the inventory (/etc/ansible/hosts): give an inventory with -i "
        "(e.g. -i fleet.yml) whose hosts the pattern matches"]


def test_a_pattern_that_matches_nothing_is_named_with_every_source():
    (problem,) = hosts_problems("rack_zz", [], ["fleet.yml", "localhost,"])
    assert problem.startswith("no hosts matched gpufleet_hosts 'rack_zz' in the inventory (fleet.yml, localhost,): ")
    assert "give an inventory with -i" in problem


def test_unknown_sources_still_say_what_to_do():
    for sources in (None, "fleet.yml", []):
        (problem,) = hosts_problems("all", [], sources)
        assert problem == ("no hosts matched gpufleet_hosts 'all' in the inventory: give an inventory with -i "
                           "(e.g. -i fleet.yml) whose hosts the pattern matches"), sources


def test_a_pattern_that_is_not_a_string_is_shown_as_it_is():
    (problem,) = hosts_problems(["rack_a", "rack_b"], [], ["fleet.yml"])
    assert "gpufleet_hosts ['rack_a', 'rack_b'] in the inventory (fleet.yml)" in problem
