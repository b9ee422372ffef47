"""The probes, found from the probe scripts: probes/<name>.py has the package plugin_utils/probes/<name>/ (that folder
holds the probe packages and nothing else, so any name a probe script takes is free there).

Running a probe reads only its run.py (RUN = ProbeRun: profiles, order, time limit, what a profile gives); judging a
run reads each judging.py and metrics.py (probe_catalogue), rendering it each view.py (sections). So the probe
action's per-host work imports no judge or report code.
"""
from __future__ import annotations

import importlib
import os
from functools import lru_cache
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..probe_archive import available_probes
from .declaration import Baselines, DeclarationError, ProbeRun, ProbeSection
from .metric_catalogue import MetricSpec, spec_problems

PACKAGES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "probes")
PACKAGES = __package__.rsplit(".", 1)[0] + ".probes"
# A probe's rules, in its package: {"rules": [...]} (rules_and_baselines.shipped_rules reads them).
RULES_FILE = "rules.yaml"


def _probe_module(name: str, part: str) -> Any:
    """plugin_utils/probes/<name>/<part>.py imported, or None where the probe has no such file."""
    if not os.path.isfile(os.path.join(PACKAGES_DIR, name, part + ".py")):
        return None
    try:
        return importlib.import_module("%s.%s.%s" % (PACKAGES, name, part))
    except ImportError as exc:
        raise DeclarationError("plugin_utils/probes/%s/%s.py could not be imported (%s); docs/adding-a-probe.md says what "
                               "it holds" % (name, part, exc)) from exc


def _declaration_of(name: str) -> ProbeRun:
    module = _probe_module(name, "run")
    if module is None:
        raise DeclarationError("probes/%s.py has no declaration: plugin_utils/probes/%s/run.py is missing; "
                               "docs/adding-a-probe.md says what it holds" % (name, name))
    declaration = getattr(module, "RUN", None)
    if not isinstance(declaration, ProbeRun):
        raise DeclarationError("plugin_utils/probes/%s/run.py must define RUN = ProbeRun(...)" % name)
    if declaration.name != name:
        raise DeclarationError("plugin_utils/probes/%s/run.py declares the probe %r; a probe is named for its package"
                               % (name, declaration.name))
    if isinstance(declaration.timeout_s, bool) or not isinstance(declaration.timeout_s, int) or declaration.timeout_s < 1:
        raise DeclarationError("probe %s: timeout_s must be a whole number of seconds >= 1" % name)
    return declaration


def _needs_problems(found: Mapping[str, ProbeRun]) -> List[str]:
    """Why a probe's needs= cannot be handed: each probe it names is declared, gives= something and runs before it."""
    problems = []
    for name, probe in sorted(found.items()):
        for needed in probe.needs:
            other = found.get(needed)
            if other is None or other.gives is None:
                problems.append("probe %s needs %r, which is no probe that declares gives=" % (name, needed))
            elif other.run_order >= probe.run_order:
                problems.append("probe %s needs %s, which runs after it (run_order %d >= %d)" % (name, needed, other.run_order, probe.run_order))
    return problems


@lru_cache(maxsize=None)
def _declarations(root: Optional[str]) -> Dict[str, ProbeRun]:
    found = {name: _declaration_of(name) for name in available_probes(root)}
    problems = _needs_problems(found)
    if problems:
        raise DeclarationError("; ".join(problems))
    return found


def declarations(root: Optional[str] = None) -> Dict[str, ProbeRun]:
    """{probe: declaration}, for every probe script of the collection (root: its directory, default this one)."""
    return dict(_declarations(root))


def declaration(name: str) -> Optional[ProbeRun]:
    return _declarations(None).get(name)


def profiles() -> Dict[str, List[str]]:
    """{profile: [probe, ...]} in the order they run: built from each probe's declared profiles."""
    members: Dict[str, List[ProbeRun]] = {}
    for probe in _declarations(None).values():
        for profile in probe.profiles:
            members.setdefault(profile, []).append(probe)
    return {profile: [probe.name for probe in sorted(found, key=lambda probe: (probe.run_order, probe.name))]
            for profile, found in sorted(members.items())}


def profile_params(profile: Optional[str], probe: str) -> Dict[str, Any]:
    """The parameters a profile gives a probe ({} for a profile it is not declared in, e.g. a user's own)."""
    found = declaration(probe)
    return dict((found.profiles.get(profile) or {}) if found is not None and profile else {})


def rules_files(first: Sequence[str] = ()) -> List[Tuple[str, str]]:
    """(probe, its plugin_utils/probes/<probe>/rules.yaml) of every probe that has one: the probes named in first in
    that order, then the others in the order they run."""
    found = _declarations(None)
    named = [name for name in dict.fromkeys(first) if name in found]
    others = sorted((probe for name, probe in found.items() if name not in named), key=lambda probe: (probe.run_order, probe.name))
    paths = [(name, os.path.join(PACKAGES_DIR, name, RULES_FILE)) for name in named + [probe.name for probe in others]]
    return [(name, path) for name, path in paths if os.path.isfile(path)]


def default_timeouts() -> Dict[str, int]:
    return {name: probe.timeout_s for name, probe in _declarations(None).items()}


def sections() -> Dict[str, ProbeSection]:
    """{probe: its dossier section}; a probe without one renders through the generic table alone."""
    found = {}
    for name in _declarations(None):
        module = _probe_module(name, "view")
        section = getattr(module, "SECTION", None) if module is not None else None
        if module is not None and not isinstance(section, ProbeSection):
            raise DeclarationError("plugin_utils/probes/%s/view.py must define SECTION = ProbeSection(...)" % name)
        if section is not None:
            found[name] = section
    return found


@lru_cache(maxsize=None)
def judging_of(name: str) -> Any:
    """The probe's JUDGING (a probe_kit.judging.ProbeJudging), or None for a probe without judging.py."""
    from .judging import ProbeJudging  # the judge's modules load only when a run is judged
    module = _probe_module(name, "judging")
    if module is None:
        return None
    found = getattr(module, "JUDGING", None)
    if not isinstance(found, ProbeJudging):
        raise DeclarationError("plugin_utils/probes/%s/judging.py must define JUDGING = ProbeJudging(...)" % name)
    return found


@lru_cache(maxsize=None)
def metric_catalogue() -> Dict[str, MetricSpec]:
    """{metric id: its spec}, of every probe's metrics.py; a broken catalogue is a DeclarationError."""
    found: Dict[str, MetricSpec] = {}
    problems: List[str] = []
    for name in _declarations(None):
        module = _probe_module(name, "metrics")
        specs = tuple(getattr(module, "METRICS", ())) if module is not None else ()
        problems.extend(spec_problems(name, specs))
        found.update((spec.id, spec) for spec in specs if isinstance(spec, MetricSpec))
    if problems:
        raise DeclarationError("; ".join(problems))
    return found


@lru_cache(maxsize=None)
def machine() -> Any:
    """The probe that describes the machine and its declaration (a judge.machine_facts.Machine), or None."""
    return machine_of({name: judging_of(name) for name in _declarations(None)})


def machine_of(judging: Mapping[str, Any]) -> Any:
    """The one probe whose JUDGING describes the machine, as a judge.machine_facts.Machine (None when none does); two
    are a DeclarationError: the SKU, the expected GPU count and the GPUs' identities have one source."""
    from ..judge.machine_facts import Machine  # the judge's modules load only when a run is judged
    describing = sorted(name for name, entry in judging.items() if entry is not None and entry.machine is not None)
    if len(describing) > 1:
        raise DeclarationError("probes %s each declare machine= in their JUDGING; one probe describes the machine"
                               % " and ".join(describing))
    return Machine(describing[0], judging[describing[0]].machine) if describing else None


@lru_cache(maxsize=None)
def probe_catalogue() -> Any:
    """What the judge is told about the probes (a judge.catalogue.ProbeCatalogue)."""
    from ..judge.catalogue import ProbeCatalogue  # the judge's modules load only when a run is judged
    found = _declarations(None)
    judging = {name: judging_of(name) for name in found}
    return ProbeCatalogue(
        machine=machine(),
        checks={name: dict(entry.checks) for name, entry in judging.items() if entry is not None and entry.checks},
        metrics={name: entry.metrics for name, entry in judging.items() if entry is not None and entry.metrics is not None},
        min_gpus={name: probe.min_gpus for name, probe in found.items() if probe.min_gpus > 1},
        judges_nothing=frozenset(name for name, probe in found.items() if probe.judges_nothing),
        gpu_free=frozenset(name for name, probe in found.items() if not probe.needs_gpu),
        settings={name: entry.settings for name, entry in judging.items() if entry is not None and entry.settings is not None},
        metric_specs=metric_catalogue())


def probe_metrics(probe: str, data: Any) -> list:
    """The metrics the judge compares across the fleet and with earlier runs, of one probe's data."""
    return probe_catalogue().probe_metrics(probe, data)


def with_derived_params(probe: str, host_dir: str, params: Mapping[str, Any], baselines: Baselines) -> tuple:
    """(params with what the probe derives from the same run's results on the host, notes); the user's params win.
    baselines: the caller's loader of the SKUs' baselines, called only by a derivation that needs them."""
    found = declaration(probe)
    if found is None or found.derived_params is None:
        return dict(params), []
    from .derivation import handed_to  # only when a derivation runs: it reads the run's stored results
    return found.derived_params(dict(params), handed_to(found, host_dir, baselines))


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


JOB_RUNNING = "Slurm shows its node allocated or mixed: a job runs there, which this probe would disturb"


def beside_a_job(probes: Sequence[str]) -> Tuple[List[Tuple[str, Dict[str, Any]]], List[Tuple[str, str]]]:
    """Of a profile's probes, those that run on a node where a job runs: ([(probe, its quiet parameters)], [(probe
    skipped, why)]). A probe runs there only when its declaration says it cannot disturb a job (disturbs_job=False)."""
    found = _declarations(None)
    kept, skipped = [], []
    for name in probes:
        probe = found.get(name)
        if probe is not None and not probe.disturbs_job:
            kept.append((name, dict(probe.quiet_params)))
        else:
            skipped.append((name, JOB_RUNNING))
    return kept, skipped
