"""Which environment variables a collective result may show, and the environment each worker gets.

Results show only variables that change NCCL or gloo: names starting NCCL_, TORCH_NCCL_ or GLOO_, and
CUDA_VISIBLE_DEVICES, CUDA_DEVICE_MAX_CONNECTIONS, CUDA_DEVICE_ORDER. Nothing else from the environment.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from probelib.fields import unavailable
from probelib.secret_shapes import shown_environment

ALLOWED_PREFIXES = ("NCCL_", "TORCH_NCCL_", "GLOO_")
ALLOWED_NAMES = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_DEVICE_ORDER")
DEBUG_SETTINGS = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT"}
SOCKET_IFNAME = {"gloo": "GLOO_SOCKET_IFNAME", "nccl": "NCCL_SOCKET_IFNAME"}


def is_allowed(name: str) -> bool:
    return name.startswith(ALLOWED_PREFIXES) or name in ALLOWED_NAMES


def allowed_environment(environ: Mapping[str, str]) -> Dict[str, str]:
    """The allow-listed variables of ``environ`` and their values, sorted by name; a credential-shaped value only as
    set (secret_shapes)."""
    return shown_environment({name: environ[name] for name in sorted(environ) if is_allowed(name)})


def debug_settings(environ: Mapping[str, str], backend: str) -> Dict[str, str]:
    """NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=INIT so that NCCL prints the transports it chose, unless the user set NCCL_DEBUG."""
    if backend != "nccl" or "NCCL_DEBUG" in environ:
        return {}
    return dict(DEBUG_SETTINGS)


def socket_settings(environ: Mapping[str, str], backend: str, interface: Optional[str]) -> Dict[str, str]:
    """GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME = interface for the workers, unless the user set that variable."""
    name = SOCKET_IFNAME.get(backend)
    if not name or not interface or name in environ:
        return {}
    return {name: interface}


def worker_environment(environ: Mapping[str, str], settings: Mapping[str, str], rank_variables: Mapping[str, Any]) -> Dict[str, str]:
    """The probe's environment, then the probe's settings, then this rank's RANK, WORLD_SIZE, LOCAL_RANK, MASTER_*."""
    env = dict(environ)
    env.update(settings)
    env.update({name: str(value) for name, value in rank_variables.items()})
    return env


def no_transport_lines_reason(environ: Mapping[str, str], settings: Mapping[str, str]) -> str:
    """Why rank 0's output held no NCCL transport line."""
    if "NCCL_DEBUG" not in settings and "NCCL_DEBUG" in environ:
        level = environ["NCCL_DEBUG"]
        if level.upper() not in ("INFO", "TRACE"):
            return ("NCCL_DEBUG=%s was set by the user and the probe leaves it alone, so NCCL printed no transport "
                    "lines" % level)
        subsys = environ.get("NCCL_DEBUG_SUBSYS")
        if subsys and "INIT" not in subsys.upper() and "ALL" not in subsys.upper():
            return ("NCCL_DEBUG_SUBSYS=%s was set by the user without INIT, so NCCL printed no transport lines" % subsys)
    if "NCCL_DEBUG_FILE" in environ:
        return "NCCL_DEBUG_FILE is set, so NCCL wrote its transport lines to that file instead of rank 0's output"
    return "rank 0's output held no NCCL 'Channel ... via ...' line"


def nccl_version_text(version: Any) -> str:
    """torch.cuda.nccl.version(): (2, 28, 9) -> '2.28.9'; 22809 -> '2.28.9'; 2708 (before 2.9) -> '2.7.8'."""
    if isinstance(version, (tuple, list)):
        return ".".join(str(part) for part in version)
    if isinstance(version, int):
        if version >= 10000:
            return "%d.%d.%d" % (version // 10000, version % 10000 // 100, version % 100)
        return "%d.%d.%d" % (version // 1000, version % 1000 // 100, version % 100)
    return str(version)


def nccl_version(torch: Any) -> Any:
    try:
        return nccl_version_text(torch.cuda.nccl.version())
    except Exception as exc:  # a CPU build has no NCCL
        return unavailable("this torch reports no NCCL version (%s: %s)" % (type(exc).__name__, exc))
