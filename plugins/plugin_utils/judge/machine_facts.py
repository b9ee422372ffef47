# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the judge knows of a machine, told by the one probe that describes it: the judge names no probe.

That probe's JUDGING declares a MachineDeclaration (plugin_utils/probe_kit/judging.py ProbeJudging.machine; the registry
refuses a second): how its data becomes MachineFacts (the GPUs a baseline is matched against, their identities), the
machine's shape (how many GPUs the host should have, and why), the drift of those facts since an earlier run and the
fleet index's columns. The judge (judge/host_judgement.py, judge/drift.py) and the report reach it only through the
ProbeCatalogue.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from .model import Check


@dataclass(frozen=True)
class GpuDescriptor:
    """One GPU as the machine's probe lists it: what a baseline's match block is held against (judge/sku.py)."""

    index: Any = None
    uuid: Optional[str] = None
    name: Optional[str] = None                  # e.g. "NVIDIA H200"
    device_id: Optional[str] = None             # the PCI device id in lower case, e.g. "0x233510de"
    memory_mib: Optional[int] = None
    unreadable: Any = None                      # why the GPU could not be read (None when it could)


@dataclass(frozen=True)
class MachineFacts:
    """gpus: None when the probe could not list them (gpus_unavailable says why, None when it does not say);
    identities: "uuid <UUID>" / "serial <serial>" of the GPUs that are this machine's own (fleet.same_gpus);
    shared_uuids: UUIDs a measurement may name that are no evidence of one machine (a MIG parent GPU's)."""

    gpus: Optional[Sequence[GpuDescriptor]]
    gpus_unavailable: Optional[str] = None
    identities: FrozenSet[str] = frozenset()
    shared_uuids: FrozenSet[str] = frozenset()
    # {/dev path: major} of the GPU device nodes; None when they were not listed
    device_majors: Optional[Mapping[str, int]] = None

    @property
    def gpu_count(self) -> Optional[int]:
        return len(self.gpus) if self.gpus is not None else None


@dataclass(frozen=True)
class ExpectedGpus:
    """How many GPUs the host should have (None: not known) and why, in words; shape: the declaring probe's own
    account of the machine, handed to its checks as RuleContext.machine."""

    count: Optional[int]
    source: str
    shape: Any = None


# facts(data) -> MachineFacts of the probe's data.
FactsFunction = Callable[[Mapping[str, Any]], MachineFacts]
# expected(data or None, the SKU's baseline or None, (count, source) of the inventory's override or None) -> ExpectedGpus;
# data is also an unavailable envelope's (the machine without a driver still has its PCI bus).
ExpectedFunction = Callable[[Optional[Mapping[str, Any]], Optional[Mapping[str, Any]], Optional[Tuple[int, str]]], ExpectedGpus]
# drift(host, probe, facts now, facts then, the earlier run, the probe's own settings' drift checks) -> the checks, the
# settings' placed among them.
DriftFunction = Callable[[str, str, MachineFacts, MachineFacts, str, List[Check]], List[Check]]
# index_columns(data) -> the fleet index's columns of one host, from the probe's envelope data.
IndexColumnsFunction = Callable[[Any], Dict[str, str]]


@dataclass(frozen=True)
class MachineDeclaration:
    facts: FactsFunction
    expected_gpus: ExpectedFunction
    # The check whose rule's params.expected is the inventory's override of the expected GPU count.
    expected_gpus_check: str
    drift: DriftFunction
    # The drift checks drift() gives, each skipped when the earlier result cannot be read.
    drift_check_ids: Tuple[str, ...] = ()
    index_columns: Optional[IndexColumnsFunction] = None
    # The index's columns of a host where the probe did not run.
    not_run_columns: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Machine:
    """The probe that describes the machine and its declaration, as the ProbeCatalogue carries them."""

    probe: str
    declaration: MachineDeclaration
