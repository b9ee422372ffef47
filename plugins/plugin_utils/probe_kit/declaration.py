"""What running a probe needs on the controller, and its dossier section: light, read for every host.

Each probe has a package plugin_utils/probes/<probe>/ (run.py: RUN = ProbeRun(...); judging.py: JUDGING, read only
when a run is judged; view.py: SECTION, read only when it is rendered; metrics.py: its metric catalogue; params.json:
its parameters). The registry (registry.py) finds them from the probe scripts in probes/, so nothing lists the probes
by hand. This module imports nothing from the judge or the report: the probe action reads it for every host.
docs/adding-a-probe.md walks through writing a probe.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

# baselines() -> the SKUs' baselines (baselines/<sku>.yaml, loaded by the core and only when called): a probe's
# package reads no baseline file itself.
Baselines = Callable[[], List[Dict[str, Any]]]


@dataclass(frozen=True)
class HostSku:
    """The SKU identified from this run's result of the probe that describes the machine, on one host."""

    sku: str  # "" where none was identified (no describing probe, no result of it, no baseline matched)
    baseline: Optional[Mapping[str, Any]]  # the SKU's baseline, None where none was identified
    source: str  # the probe whose result the GPUs were read from ("" where no probe describes the machine)


@dataclass(frozen=True)
class Handed:
    """What the core hands a probe's derivation (ProbeRun.derived_params) of the same run on the host; nothing is read
    before the derivation asks for it, and a package reads neither the store nor another probe's package."""

    # given(probe) -> what a probe named in the declaration's needs= gives (its ProbeRun.gives) of its result on this
    # host in this run; None where it measured nothing. A probe not named in needs= is a DeclarationError.
    given: Callable[[str], Any]
    baselines: Baselines
    host_sku: Callable[[], HostSku]


# derived_params(params, handed) -> (params with what the same run already measured on the host, notes saying what was
# derived and from where); a parameter the user gave always wins.
DerivedParams = Callable[[Dict[str, Any], Handed], Tuple[Dict[str, Any], List[str]]]
TABLES_HTML = "sections/tables.html.j2"
TABLES_MARKDOWN = "sections/tables.md.j2"


class DeclarationError(ValueError):
    """A probe script without a sound declaration: the collection is broken, and says where."""


@dataclass(frozen=True)
class ProbeSection:
    """A probe's own summary in the dossier: templates included before the generic table, and the view they read."""

    view: Callable[[Any], Dict[str, Any]]
    html_template: str = TABLES_HTML
    markdown_template: str = TABLES_MARKDOWN
    # fleet_view(hosts) -> rows the fleet index shows of the probe across hosts (collective_hosts: one all-reduce per
    # rendezvous); None for a probe seen host by host only.
    fleet_view: Optional[Callable[[List[Any]], List[Dict[str, Any]]]] = None


@dataclass(frozen=True)
class Headline:
    """A check a profile that runs the probe promises: a host passes only where it was judged, on that host in that run,
    against a reference with a source (judge/promises.py)."""

    rule: str
    # The SKU's datasheet entry the headline needs (fp8 where the GPU has fp8): a SKU whose baseline lacks it is not
    # promised the headline. "" for every SKU.
    needs_datasheet: str = ""


@dataclass(frozen=True)
class ProbeRun:
    """How a probe runs: its place in a profile, its time limit, the profiles that run it and what they give it."""

    name: str
    # Where the probe runs in a profile: lower first (bandwidth before sustained load, which needs a cool-down after).
    run_order: int
    timeout_s: int
    # {profile: parameters the profile gives the probe}; the user's probe_params win over them.
    profiles: Mapping[str, Mapping[str, Any]]
    min_gpus: int = 1
    derived_params: Optional[DerivedParams] = None
    # The probes whose results of the same run derived_params reads (Handed.given): each runs before this one and
    # declares gives=.
    needs: Tuple[str, ...] = ()
    # gives(data) -> what this probe's measured result gives a probe that needs it (membw: its headline bandwidths);
    # the core calls it only when such a derivation runs.
    gives: Optional[Callable[[Dict[str, Any]], Any]] = None
    # Why no rule reads the probe ("" when rules do): its absence is then never a failed GPU.
    judges_nothing: str = ""
    # False for a probe that does not need a working GPU stack (it reads sysfs, or falls back to the CPU): its failure is
    # never folded under a broken driver or CUDA as their consequence (judge/causes.py).
    needs_gpu: bool = True
    # A probe that runs from a role and playbook of its own rather than a profile of the probe role.
    own_playbook: str = ""
    summary: str = ""
    # Whether running it can disturb a job running on the node (GPU time or memory, CPU, traffic): on a node Slurm shows
    # allocated or mixed, only probes with False run (gpufleet_act=slurm; docs/acting.md). Left out: it can (fail safe).
    disturbs_job: bool = True
    # Parameters under which a probe that declares disturbs_job=False stays quiet on such a node (fabric: no RDMA
    # traffic); they win over the profile's and the user's.
    quiet_params: Mapping[str, Any] = field(default_factory=dict)
    # What a profile that runs the probe promises (docs/judge.md, "What a pass proves").
    headlines: Tuple[Headline, ...] = ()
