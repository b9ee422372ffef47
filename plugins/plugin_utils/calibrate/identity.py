"""Which hosts are of the SKU being calibrated, and, for a GPU no baseline matches, the exact match block its hosts'
own reports give (judge/sku.py holds GPUs against it).

The GPUs are the machine probe's descriptors (judge/machine_facts.py): NVML name, PCI device id, memory total. A GPU is
unknown when no baseline matches it on its own (an ambiguous GPU, which two baselines match, is not: a third file
would not settle it).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..judge.machine_facts import GpuDescriptor
from ..judge.sku import describe_identity, identify_gpu


@dataclass(frozen=True)
class GpuKind:
    name: str
    device_id: str

    def words(self) -> str:
        return "%s (PCI device id %s)" % (self.name, self.device_id)


def host_gpus(machine: Any, envelopes: Mapping[str, Any]) -> Optional[Sequence[GpuDescriptor]]:
    """The host's GPUs as the machine probe lists them, or None (no such probe, no result, no list)."""
    if machine is None:
        return None
    envelope = envelopes.get(machine.probe)
    data = envelope.get("data") if isinstance(envelope, Mapping) else None
    if not isinstance(data, dict):
        return None
    return machine.declaration.facts(data).gpus


def unknown_kind(gpus: Optional[Sequence[GpuDescriptor]], baselines: Sequence[Mapping[str, Any]]) -> Tuple[Optional[GpuKind], str]:
    """(the one kind of the host's GPUs when no baseline matches any of them, "") or (None, why not)."""
    if not gpus:
        return None, "no GPU list"
    kinds = set()
    for gpu in gpus:
        if gpu.unreadable is not None:
            return None, "GPU %s could not be read: %s" % (gpu.index, gpu.unreadable)
        if gpu.name is None or gpu.device_id is None or gpu.memory_mib is None:
            return None, "GPU %s does not report its NVML name, PCI device id and memory (%s)" % (
                gpu.index, describe_identity(gpu.name, gpu.device_id, gpu.memory_mib))
        matching = [baseline["id"] for baseline in baselines if identify_gpu(gpu, [dict(baseline)])[0] is not None]
        if matching:
            return None, "GPU %s matches %s" % (gpu.index, ", ".join(sorted(matching)))
        kinds.add(GpuKind(gpu.name, gpu.device_id))
    if len(kinds) > 1:
        return None, "mixed GPUs: %s" % ", ".join(sorted(kind.words() for kind in kinds))
    return kinds.pop(), ""


def match_block(kind: GpuKind, gpus_by_host: Mapping[str, Sequence[GpuDescriptor]], run_id: str) -> Dict[str, Any]:
    """The exact match of the GPUs the hosts report: their NVML name, their PCI device id, their memory totals' range."""
    memories = sorted(gpu.memory_mib for gpus in gpus_by_host.values() for gpu in gpus if gpu.memory_mib is not None)
    hosts = ", ".join(sorted(gpus_by_host))
    count = sum(len(gpus) for gpus in gpus_by_host.values())
    return {
        "names": [kind.name],
        "pci_device_ids": [{"id": kind.device_id,
                            "source": "NVML pciDeviceId of the %d GPUs of run %s on %s" % (count, run_id, hosts)}],
        "memory_mib": {"min": memories[0], "max": memories[-1],
                       "source": "the NVML memory totals (%s MiB) of the %d GPUs of run %s on %s; a GPU with ECC toggled "
                                 "reports another total: widen the range by hand then" % (
                                     _range_words(memories), count, run_id, hosts)},
    }


def _range_words(memories: List[int]) -> str:
    return str(memories[0]) if memories[0] == memories[-1] else "%d to %d" % (memories[0], memories[-1])


def unmatched(document: Mapping[str, Any], gpus_by_host: Mapping[str, Sequence[GpuDescriptor]]) -> List[str]:
    """The hosts whose GPUs the document's match block does not make its SKU, each with how its GPU was identified."""
    problems = []
    for host, gpus in sorted(gpus_by_host.items()):
        for gpu in gpus:
            sku, sentence = identify_gpu(gpu, [dict(document)])
            if sku != document["id"]:
                problems.append("%s: %s" % (host, sentence))
                break
    return problems
