"""health: its metric catalogue, every number the judge compares across hosts and with the previous run."""
from __future__ import annotations

from ...probe_kit.kit import MetricSpec

CUDA_INIT = MetricSpec("health.cuda_init_s", "CUDA init time", "s", "lower", drift_tolerance=0.5,
                       drift_source="CUDA init took 5.2 to 6.6 s across calls on the same H200 rig (docs/health.md)")
IDLE_POWER = MetricSpec("health.idle_power_w", "Idle power", "W", "lower", drift_tolerance=0.10)
MEMORY_USED = MetricSpec("health.memory_used_mib", "Idle memory in use", "MiB", "lower", drift_tolerance=0.10)
TEMPERATURE = MetricSpec("health.temperature_c", "Idle temperature", "C", "lower", drift_tolerance=0.2,
                         drift_source="idle temperature follows the room")
METRICS = (CUDA_INIT, IDLE_POWER, MEMORY_USED, TEMPERATURE)
