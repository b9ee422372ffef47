# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check every host's variables, the rules and the rule overrides on the controller, before anything runs."""
from __future__ import annotations


from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.validation.plugins.module_utils.check_inputs_spec import INPUTS_ARGUMENT_SPEC
from ansible_collections.gpufleet.validation.plugins.plugin_utils.controller_task import ControllerTask
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_variables_check import (
    CONTROLLER_REPORT_VARIABLES,
    CONTROLLER_VARIABLES,
    HOST_VARIABLES,
    controller_problems,
    declared_params_problems,
    host_problems,
    hosts_problems,
    unjudged_problems,
)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import DeclarationError, all_profiles, declarations
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import SchemaToolMissing, schema_file_problems


def _variables(source, names):
    """The variables of names that source sets, templated; one that cannot be templated is a problem."""
    values, problems = {}, []
    for name in names:
        try:
            if name in source:
                values[name] = source[name]
        except Exception as exc:  # pylint: disable=broad-exception-caught  # an undefined variable inside it, ...
            problems.append("%s cannot be evaluated: %s" % (name, " ".join(str(exc).split())[:300]))
    return values, problems


class ActionModule(ControllerTask, ActionBase):

    ARGUMENT_SPEC = INPUTS_ARGUMENT_SPEC

    def run_task(self, result, args, task_vars):
        try:
            probes = sorted(declarations())
            broken = declared_params_problems() + schema_file_problems()
        except (DeclarationError, SchemaToolMissing, OSError, ValueError) as exc:
            broken = [str(exc)]
        if broken:
            result.update(failed=True, msg="the collection's probes are broken, so nothing was run: %s" % " | ".join(broken))
            return result
        problems = []
        hosts = list(args["hosts"])
        # First, so that a run without an inventory (or with a pattern naming none of its hosts) says so first.
        # The controller's hostvars template the pattern as the query that made hosts did.
        hostvars = task_vars.get("hostvars") or {}
        controller = task_vars.get("inventory_hostname")
        pattern, unreadable = _variables(hostvars[controller] if controller in hostvars else task_vars, ("gpufleet_hosts",))
        problems.extend(unreadable + hosts_problems(pattern.get("gpufleet_hosts", "all"), hosts,
                                                    task_vars.get("ansible_inventory_sources")))
        controller_values, unreadable = _variables(task_vars, CONTROLLER_VARIABLES)
        controller, warnings, rules = controller_problems(controller_values)
        problems.extend(unreadable + controller)
        if task_vars.get("inventory_hostname") not in hosts:
            # The report runs here, with this host's gpufleet_profile and gpufleet_results_dir.
            values, unreadable = _variables(task_vars, CONTROLLER_REPORT_VARIABLES)
            problems.extend("%s (the controller): %s" % (task_vars.get("inventory_hostname"), problem)
                            for problem in unreadable + host_problems(values, probes, rules))
        host_values = {}
        for host in hosts:
            source = hostvars[host] if host in hostvars else {}
            values, unreadable = _variables(source, HOST_VARIABLES)
            host_values[host] = values
            problems.extend("%s: %s" % (host, problem) for problem in unreadable + host_problems(values, probes, rules))
        if rules is not None:
            problems.extend(unjudged_problems(controller_values, host_values, rules))
        if warnings:
            result["warnings"] = warnings
        result.update(changed=False, problems=problems, profiles=sorted(all_profiles()[0]), probes=probes)
        if problems:
            result.update(failed=True, msg="%d problem(s) in the run's inputs, so nothing was run: %s"
                          % (len(problems), " | ".join(problems)))
        else:
            result["msg"] = "the inputs of %d host(s) are sound" % len(args["hosts"])
        return result
