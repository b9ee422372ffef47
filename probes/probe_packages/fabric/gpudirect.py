"""Whether GPUDirect RDMA has a way in: the nvidia_peermem module, or the dma-buf path, from procfs and sysfs only.

nvidia_peermem (shipped with the NVIDIA driver) lets the RDMA stack pin GPU memory; it is loaded when
/sys/module/nvidia_peermem exists or /proc/modules lists it. The dma-buf path needs no module: the kernel's RDMA core
imports dma-buf memory regions since Linux 5.12 (ib_umem_dmabuf), and the NVIDIA driver exports GPU memory as dma-buf
only from its open kernel modules (R515 on). What sysfs and procfs show is the kernel release, and whether the loaded
nvidia module is the open one: /proc/driver/nvidia/version says "Open Kernel Module", and the proprietary module taints
the kernel with P (/sys/module/nvidia/taint) while the open one, dual MIT/GPL, does not. Whether CUDA and the RDMA
stack actually use dma-buf is seen only at run time (ib_write_bw --use_cuda_dmabuf), never claimed here.
"""
from __future__ import annotations

import os
import re
from typing import Any, Dict, Optional, Tuple

from probelib.fields import unavailable

DMABUF_KERNEL = (5, 12)
_RELEASE = re.compile(r"^([0-9]+)\.([0-9]+)")


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(1 << 20)
    except OSError:
        return None


def peermem(proc_root: str, sys_root: str) -> Tuple[bool, str]:
    """(loaded, the words saying what was read)."""
    module_dir = os.path.join(sys_root, "module", "nvidia_peermem")
    if os.path.isdir(module_dir):
        return True, "%s exists: the nvidia_peermem module is loaded" % module_dir
    modules_path = os.path.join(proc_root, "modules")
    modules = _read(modules_path)
    if modules is not None and any(line.split(" ", 1)[0] == "nvidia_peermem" for line in modules.splitlines()):
        return True, "%s lists nvidia_peermem: the module is loaded" % modules_path
    listed = "does not list it" if modules is not None else "could not be read"
    return False, ("%s is absent and %s %s: nvidia_peermem is not loaded (modprobe nvidia_peermem loads it where the "
                   "driver installed it; GPUDirect RDMA can still go through dma-buf)" % (module_dir, modules_path, listed))


def kernel_release(proc_root: str) -> Any:
    path = os.path.join(proc_root, "sys", "kernel", "osrelease")
    text = _read(path)
    if text is None:
        return unavailable("%s could not be read" % path)
    return text.strip()


def open_kernel_module(proc_root: str, sys_root: str) -> Tuple[Any, str]:
    """(True/False, or unavailable; what was read) for the loaded nvidia module being NVIDIA's open kernel module."""
    version_path = os.path.join(proc_root, "driver", "nvidia", "version")
    version = _read(version_path)
    if version is not None:
        first = version.splitlines()[0] if version.strip() else ""
        is_open = "Open Kernel Module" in first
        return is_open, "%s reads %r" % (version_path, first.strip()[:120])
    taint_path = os.path.join(sys_root, "module", "nvidia", "taint")
    taint = _read(taint_path)
    if taint is not None:
        flags = taint.strip()
        return "P" not in flags, ("%s reads %r (P: a proprietary module; the open module, dual MIT/GPL, sets no P)"
                                  % (taint_path, flags))
    return unavailable("neither %s nor %s can be read: no nvidia kernel module is loaded" % (version_path, taint_path)), ""


def dmabuf(proc_root: str, sys_root: str) -> Dict[str, Any]:
    release = kernel_release(proc_root)
    match = _RELEASE.match(release) if isinstance(release, str) else None
    kernel_supports: Any
    if match:
        kernel_supports = (int(match.group(1)), int(match.group(2))) >= DMABUF_KERNEL
        kernel_words = "kernel %s %s Linux 5.12, where the RDMA core first imports dma-buf memory" % (
            release, "is at least" if kernel_supports else "is older than")
    else:
        kernel_supports = unavailable("the kernel release is unknown: %s" % (release if isinstance(release, str) else release["unavailable"]))
        kernel_words = "the kernel release could not be read"
    is_open, module_words = open_kernel_module(proc_root, sys_root)
    if isinstance(is_open, bool):
        module_part = "%s: %s" % (module_words, "the open kernel module, which exports GPU memory as dma-buf" if is_open
                                  else "the proprietary kernel module, which exports no GPU memory as dma-buf")
    else:
        module_part = is_open["unavailable"]
    if kernel_supports is True and is_open is True:
        verdict = "both sides of the dma-buf path are present"
    elif kernel_supports is False or is_open is False:
        verdict = "the dma-buf path is not available"
    else:
        verdict = "whether the dma-buf path is available cannot be told"
    return {"kernel_supports": kernel_supports, "open_kernel_module": is_open,
            "reason": "%s; %s; %s (whether CUDA and the RDMA stack use it shows only at run time)" % (kernel_words, module_part, verdict)}


def read_gpudirect(proc_root: str, sys_root: str) -> Dict[str, Any]:
    loaded, words = peermem(proc_root, sys_root)
    return {"nvidia_peermem_loaded": loaded, "nvidia_peermem_reason": words, "dmabuf": dmabuf(proc_root, sys_root)}
