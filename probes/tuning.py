"""tuning probe: the host settings an operator tunes, recorded so that runs and hosts can be compared and P2P explained."""
from __future__ import annotations

import os
import sys
from typing import Any, Dict, Optional

from probe_packages.tuning.kernel_settings import read_kernel_settings
from probe_packages.tuning.pci_tree import PciTree, config_space_section, read_pci_tree
from probelib import outcome
from probelib.fields import SectionErrors, is_unavailable
from probelib.runner import ProbeResult, main
from probelib.system.roots import SystemRoots

DESCRIPTION = (
    "Record the settings an operator tunes, from sysfs and procfs only: for every NVIDIA GPU and every bridge up to "
    "its root port, the PCIe link (sysfs), MaxPayload, MaxReadReq, ASPM and ACS (PCI config space: past its first 64 "
    "bytes only as root); NUMA balancing, NMI watchdog, autogroup, swappiness, dirty ratios, transparent huge pages, "
    "socket buffer limits, the ASPM policy, the tuning keys of the kernel command line, C-states, cpuidle, cpufreq "
    "and IOMMU groups. Needs no root; what needs root says so. No parameters."
)


def collect(params: Dict[str, Any], roots: Optional[SystemRoots] = None,
            privileged: Optional[bool] = None) -> ProbeResult:
    """roots: where /proc and /sys are read (tests give fake trees); privileged: whether config reads ran as root
    (default: os.geteuid() == 0)."""
    roots = roots or SystemRoots()
    privileged = os.geteuid() == 0 if privileged is None else privileged
    errors = SectionErrors()
    tree = errors.run("pci", lambda: read_pci_tree(roots.sys, privileged))
    kernel = errors.run("kernel", lambda: read_kernel_settings(roots.proc, roots.sys))
    data = {
        "config_space": config_space_section(tree, privileged),
        "pci_devices": tree.devices if isinstance(tree, PciTree) else tree,
        "gpus": tree.gpus if isinstance(tree, PciTree) else tree,
        "kernel": kernel,
        "errors": errors.errors,
    }
    measured = not (is_unavailable(tree) and is_unavailable(kernel))
    status, reason = outcome.decide(errors.errors, lambda error: "%s (%s)" % (error["section"], error["error"]), measured,
                                    "sections that failed: ", separator=", ")
    return ProbeResult(status, data, reason)


if __name__ == "__main__":
    sys.exit(main("tuning", DESCRIPTION, collect))
