"""A GPU's firmware beyond its VBIOS, InfoROM image and GSP firmware versions (read with its name and serial): whether
the GSP firmware runs, and would by default, and the version of each InfoROM object."""
from __future__ import annotations

from typing import Any, Dict

from probelib.nvml.access import NvmlReader

# nvml.h nvmlInforomObject_t; NVML_INFOROM_DEN (3) is left out: nvidia-smi shows only these three.
INFOROM_OBJECTS = (("oem", 0), ("ecc", 1), ("power", 2))


def enabled_word(value: Any) -> str:
    return "enabled" if value else "disabled"


def gsp_mode(pair: Any) -> Dict[str, str]:
    """nvmlDeviceGetGspFirmwareMode's (isEnabled, defaultMode) in words."""
    is_enabled, default_mode = pair
    return {"current": enabled_word(is_enabled), "default": enabled_word(default_mode)}


def nonempty_version(text: Any) -> str:
    """A version NVML gave as text; an empty text is no version."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("NVML gave an empty version")
    return text.strip()


def read_firmware(reader: NvmlReader, handle: Any) -> Dict[str, Any]:
    return {
        "gsp_mode": reader.value("nvmlDeviceGetGspFirmwareMode", handle, convert=gsp_mode),
        "inforom_objects": {name: reader.value("nvmlDeviceGetInforomVersion", handle, code, convert=nonempty_version)
                            for name, code in INFOROM_OBJECTS},
    }
