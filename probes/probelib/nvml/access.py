"""Loading nvidia-ml-py, opening NVML, and turning NVML errors into reasons a person can act on.

Numeric NVML enum values are spelled out here instead of taken from pynvml: older nvidia-ml-py
releases lack some names, and NVML_P2P_CAPS_INDEX_READ is a tuple ``(0,)`` in several releases.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

from probelib.fields import unavailable

NVML_SUCCESS = 0
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15

_ERROR_WORDS = {
    NVML_ERROR_INVALID_ARGUMENT: "not available for this argument",
    NVML_ERROR_NOT_SUPPORTED: "not supported by this GPU",
    NVML_ERROR_NO_PERMISSION: "not permitted for this user",
    NVML_ERROR_DRIVER_NOT_LOADED: "the NVIDIA kernel driver is not loaded",
    NVML_ERROR_LIBRARY_NOT_FOUND: "NVML library not found",
    NVML_ERROR_FUNCTION_NOT_FOUND: "the installed driver's NVML lacks this function",
    NVML_ERROR_GPU_IS_LOST: "the GPU is lost (fell off the bus); reset or reboot it",
}


def nvml_error_code(exc: BaseException) -> Optional[int]:
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


def describe_nvml_error(exc: BaseException) -> str:
    """NVMLError_NotSupported -> 'not supported by this GPU (NVML: Not Supported)'."""
    code = nvml_error_code(exc)
    text = str(exc).strip() or type(exc).__name__
    if code is None:
        return "%s: %s" % (type(exc).__name__, text)
    return "%s (NVML: %s)" % (_ERROR_WORDS.get(code, "NVML call failed"), text)


def decode(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


class NvmlReader:
    """Calls pynvml functions by name; a missing function or an NVML error becomes an unavailable field."""

    def __init__(self, module: Any) -> None:
        self.module = module

    def attempt(self, function: str, *args: Any) -> Tuple[bool, Any]:
        """(True, value) or (False, exception-or-reason)."""
        fn = getattr(self.module, function, None)
        if fn is None:
            return False, "this nvidia-ml-py lacks %s" % function
        try:
            return True, decode(fn(*args))
        except Exception as exc:  # NVMLError subclasses and ctypes failures alike
            return False, exc

    def value(self, function: str, *args: Any, convert: Optional[Callable[[Any], Any]] = None) -> Any:
        ok, result = self.attempt(function, *args)
        if not ok:
            return unavailable(failure_reason(result))
        if convert is None:
            return result
        try:
            return convert(result)
        except Exception as exc:
            return unavailable("%s returned %r, which could not be read: %s" % (function, result, exc))

    def first_value(self, functions: List[str], *args: Any,
                    convert: Optional[Callable[[Any], Any]] = None) -> Tuple[Any, Optional[str]]:
        """Try each function name in order; returns (value, the name that worked or None)."""
        reasons = []
        for function in functions:
            ok, result = self.attempt(function, *args)
            if ok:
                return (convert(result) if convert else result), function
            reasons.append(failure_reason(result))
            if nvml_error_code(result) not in (None, NVML_ERROR_FUNCTION_NOT_FOUND):
                break
        return unavailable("; ".join(reasons)), None


def failure_reason(failure: Any) -> str:
    """One NVML read that failed, in words: an NVML error described, any other reason as it stands (not an envelope's
    reason: that is probelib.outcome's)."""
    if isinstance(failure, BaseException):
        return describe_nvml_error(failure)
    return str(failure)


class NvmlSession:
    """NVML opened once for the whole probe. ``reason`` says why it is not usable, in words."""

    def __init__(self) -> None:
        self.module: Any = None
        self.reader: Optional[NvmlReader] = None
        self.handles: List[Any] = []
        self.device_count: Any = unavailable("NVML was not opened")
        self.handle_failures: Dict[int, str] = {}
        self.reason: str = ""
        self.initialized = False

    @property
    def usable(self) -> bool:
        return self.initialized and bool(self.handles)

    def open(self, importer: Callable[[], Any] = None, proc_root: str = "/proc") -> "NvmlSession":
        """Import nvidia-ml-py and initialise NVML. When that fails on a host without the NVIDIA kernel module, the
        missing module is the first reason. NVML is tried all the same: a sandbox may hide /proc/driver/nvidia."""
        self._initialise(importer)
        if not self.initialized:
            self._lead_with_missing_kernel_module(proc_root)
        return self

    def _lead_with_missing_kernel_module(self, proc_root: str) -> None:
        missing = missing_kernel_module(proc_root)
        if missing:
            self.reason = "%s; %s" % (missing, self.reason) if self.reason else missing
            self.device_count = unavailable(self.reason)

    def _initialise(self, importer: Callable[[], Any] = None) -> None:
        try:
            self.module = (importer or _import_pynvml)()
        except ImportError as exc:
            self.reason = "nvidia-ml-py is not installed for %s: pip install nvidia-ml-py (%s)" % (
                sys.executable, exc)
            self.device_count = unavailable(self.reason)
            return
        self.reader = NvmlReader(self.module)
        try:
            self.module.nvmlInit()
        except Exception as exc:
            code = nvml_error_code(exc)
            if code == NVML_ERROR_LIBRARY_NOT_FOUND:
                self.reason = ("NVML library not found: no NVIDIA driver installed "
                               "(libnvidia-ml.so.1 could not be loaded)")
            elif code == NVML_ERROR_DRIVER_NOT_LOADED:
                self.reason = ("NVML cannot initialise: the NVIDIA kernel driver is not loaded "
                               "(modprobe nvidia, or check dmesg for why it failed)")
            else:
                self.reason = "NVML cannot initialise: %s" % describe_nvml_error(exc)
            self.device_count = unavailable(self.reason)
            return
        self.initialized = True
        count = self.reader.value("nvmlDeviceGetCount")
        self.device_count = count
        if not isinstance(count, int):
            self.reason = "NVML cannot count GPUs: %s" % count["unavailable"]
            return
        if count == 0:
            self.reason = "the NVIDIA driver sees no GPU (NVML reports 0 devices)"
            return
        for index in range(count):
            ok, handle = self.reader.attempt("nvmlDeviceGetHandleByIndex", index)
            self.handles.append(handle if ok else None)
            if not ok:
                self.handle_failures[index] = failure_reason(handle)

    def close(self) -> None:
        if self.initialized:
            try:
                self.module.nvmlShutdown()
            except Exception:
                pass
            self.initialized = False


NO_KERNEL_MODULE = "no NVIDIA kernel module loaded: /proc/driver/nvidia is missing"


def missing_kernel_module(proc_root: str = "/proc") -> str:
    """Why NVML cannot work when the NVIDIA kernel module is not loaded, else ''."""
    if os.path.isdir(os.path.join(proc_root, "driver", "nvidia")):
        return ""
    return NO_KERNEL_MODULE


def _import_pynvml() -> Any:
    import pynvml  # nvidia-ml-py

    return pynvml


def package_version(distribution: str) -> Dict[str, str]:
    try:
        from importlib import metadata
    except ImportError:  # pragma: no cover - Python < 3.8
        return unavailable("importlib.metadata is missing")
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return unavailable("%s is not installed for %s" % (distribution, sys.executable))
