"""The probes' declarations, found from the probe scripts: probes/<name>.py has plugin_utils/probes/<name>.py.

Everything that differs between probes on the controller is read from here: the profiles and their order, the
default time limits, the parameters a profile gives, the judge's checks and metrics, the dossier's sections.
"""
from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..judge.catalogue import ProbeCatalogue
from ..probe_archive import available_probes
from .declaration import DeclarationError, ProbeDeclaration, ProbeSection

# Modules of this package that are not declarations.
NOT_DECLARATIONS = ("declaration", "registry", "param_spec")


def _declaration_of(name: str) -> ProbeDeclaration:
    if name in NOT_DECLARATIONS:
        raise DeclarationError("a probe cannot be named %r: plugin_utils/probes/%s.py is the registry's own" % (name, name))
    try:
        module = importlib.import_module("." + name, __package__)
    except ImportError as exc:
        raise DeclarationError("probes/%s.py has no declaration: plugin_utils/probes/%s.py could not be imported (%s); "
                               "docs/adding-a-probe.md says what it holds" % (name, name, exc)) from exc
    declaration = getattr(module, "DECLARATION", None)
    if not isinstance(declaration, ProbeDeclaration):
        raise DeclarationError("plugin_utils/probes/%s.py must define DECLARATION = ProbeDeclaration(...)" % name)
    if declaration.name != name:
        raise DeclarationError("plugin_utils/probes/%s.py declares the probe %r; a declaration is named for its file"
                               % (name, declaration.name))
    if isinstance(declaration.timeout_s, bool) or not isinstance(declaration.timeout_s, int) or declaration.timeout_s < 1:
        raise DeclarationError("probe %s: timeout_s must be a whole number of seconds >= 1" % name)
    return declaration


@lru_cache(maxsize=None)
def _declarations(root: Optional[str]) -> Dict[str, ProbeDeclaration]:
    return {name: _declaration_of(name) for name in available_probes(root)}


def declarations(root: Optional[str] = None) -> Dict[str, ProbeDeclaration]:
    """{probe: declaration}, for every probe script of the collection (root: its directory, default this one)."""
    return dict(_declarations(root))


def declaration(name: str) -> Optional[ProbeDeclaration]:
    return _declarations(None).get(name)


def profiles() -> Dict[str, List[str]]:
    """{profile: [probe, ...]} in the order they run: built from each probe's declared profiles."""
    members: Dict[str, List[ProbeDeclaration]] = {}
    for probe in _declarations(None).values():
        for profile in probe.profiles:
            members.setdefault(profile, []).append(probe)
    return {profile: [probe.name for probe in sorted(found, key=lambda probe: (probe.run_order, probe.name))]
            for profile, found in sorted(members.items())}


def profile_params(profile: Optional[str], probe: str) -> Dict[str, Any]:
    """The parameters a profile gives a probe ({} for a profile it is not declared in, e.g. a user's own)."""
    found = declaration(probe)
    return dict((found.profiles.get(profile) or {}) if found is not None and profile else {})


def default_timeouts() -> Dict[str, int]:
    return {name: probe.timeout_s for name, probe in _declarations(None).items()}


def sections() -> Dict[str, ProbeSection]:
    """{probe: its dossier section}; a probe without one renders through the generic table alone."""
    return {name: probe.section for name, probe in _declarations(None).items() if probe.section is not None}


@lru_cache(maxsize=None)
def probe_catalogue() -> ProbeCatalogue:
    """What the judge is told about the probes."""
    found = _declarations(None)
    return ProbeCatalogue(
        checks={name: dict(probe.checks) for name, probe in found.items() if probe.checks},
        metrics={name: probe.metrics for name, probe in found.items() if probe.metrics is not None},
        min_gpus={name: probe.min_gpus for name, probe in found.items() if probe.min_gpus > 1},
        judges_nothing=frozenset(name for name, probe in found.items() if probe.judges_nothing),
        gpu_free=frozenset(name for name, probe in found.items() if not probe.needs_gpu),
        settings={name: probe.settings for name, probe in found.items() if probe.settings is not None})


def probe_metrics(probe: str, data: Any) -> list:
    """The metrics the judge compares across the fleet and with earlier runs, of one probe's data."""
    return probe_catalogue().probe_metrics(probe, data)


def with_derived_params(probe: str, host_dir: str, params: Mapping[str, Any]) -> tuple:
    """(params with what the probe derives from the same run's results on the host, notes); the user's params win."""
    found = declaration(probe)
    if found is None or found.derived_params is None:
        return dict(params), []
    return found.derived_params(host_dir, dict(params))


def _custom_profile_problem(name: Any, members: Any, declared: Mapping[str, List[str]]) -> str:
    """What is wrong with one profile of the user's own ("" when it is sound)."""
    if not isinstance(name, str) or not name:
        return "gpufleet_profiles: a profile name must be a non-empty string, not %r" % (name,)
    if name in declared:
        return ("gpufleet_profiles.%s: the probes declare a profile of that name (%s); give yours another name"
                % (name, ", ".join(declared[name])))
    if not isinstance(members, list) or not members or not all(isinstance(member, str) for member in members):
        return "gpufleet_profiles.%s must be a non-empty list of probe names, not %r" % (name, members)
    unknown = [member for member in members if member not in _declarations(None)]
    if unknown:
        return "profile %s names unknown probe(s) %s (known probes: %s)" % (
            name, ", ".join(unknown), ", ".join(sorted(_declarations(None))))
    return ""


def all_profiles(custom: Any = None) -> Tuple[Dict[str, List[str]], List[str]]:
    """(the declared profiles and each sound one of the user's own, the problems of the others).

    custom is gpufleet_profiles, {name: [probe, ...]}; each profile runs its probes in their declared order.
    """
    found = profiles()
    if custom is None:
        return found, []
    if not isinstance(custom, Mapping):
        return found, ["gpufleet_profiles must map a profile name to a list of probes, e.g. {mine: [health, gemm]}, not %s"
                       % type(custom).__name__]
    declared, problems = dict(found), []
    order = {name: (probe.run_order, name) for name, probe in _declarations(None).items()}
    for name in sorted(custom, key=str):
        problem = _custom_profile_problem(name, custom[name], declared)
        if problem:
            problems.append(problem)
        else:
            found[name] = sorted(set(custom[name]), key=order.__getitem__)
    return found, problems


def profile_probes(profile: Any, custom: Any = None) -> List[str]:
    """The probes of one profile in the order they run; ValueError names the known profiles."""
    found, problems = all_profiles(custom)
    if problems:
        raise ValueError("; ".join(problems))
    if not isinstance(profile, str) or profile not in found:
        raise ValueError("%r is not a profile (known profiles: %s)" % (profile, ", ".join(sorted(found))))
    return found[profile]
