"""load probe: sustained matrix load on every GPU at once, with clocks, power, temperature, throttle reasons and
processes sampled through NVML, and the idle state before and after."""
from __future__ import annotations

import sys
from typing import Any, Dict, List, Tuple

from probe_packages.load.cooldown import not_waited
from probe_packages.load.plan import check_params, make_plan
from probelib import outcome
from probelib.fields import unavailable
from probelib.runner import ProbeResult, main

DESCRIPTION = (
    "Put a sustained dense matrix load on every visible GPU at once and watch it through NVML. First an idle snapshot "
    "of each GPU (SM and memory clocks and their maxima, power draw and enforced limit, temperature, clock event "
    "(throttle) reasons decoded, utilisation, the processes on it). Then one thread per GPU keeps square products "
    "C = A @ B (random operands) queued on its own stream until a shared deadline, a CUDA event every 8 products "
    "bounding the queue and timing them (TFLOP/s = 2 n^3 x products / GPU time), and every few checkpoints compares C "
    "with a reference product computed before the load from the same seeded operands on every GPU, bit for bit (the "
    "reference's sha256 is compared across GPUs by the judge); meanwhile a sampler thread reads "
    "every GPU at a fixed interval (t from the load's start; SM clock, memory clock, power, temperature, reasons "
    "bitmask, GPU utilisation) and the processes on the GPUs less often, and records its own timing (actual "
    "intervals, lateness, missed ticks). After the load and a settle wait, a second idle snapshot; then, if asked, a "
    "cool-down wait that records how far the temperature fell. Per GPU it reports the active window (after warmup_s) "
    "median/max/min of each metric, idle-to-active differences, and the checks' inputs: whether the SM clock rose "
    "(or was already at its maximum), the throttle reasons seen (fraction of samples, first time seen; hardware "
    "slowdown and thermal ones singled out; sw_power_cap is expected at the power limit), power against the limit, "
    "and processes other than this probe. It only reads: clocks, power limits and persistence are never changed. "
    "No GPU, or no NVML (nvidia-ml-py): unavailable, nothing simulated."
)
METHOD = {
    "load": "one Python thread per GPU, each on its own CUDA stream: three n x n matrices (A, B random normal from one "
            "seeded generator on the first GPU, copied to every GPU, B scaled by 1/sqrt(n)), 3 warm-up products, then every "
            "GPU is released at once (t = 0) and torch.matmul(A, B, out=C) is queued until the shared deadline; a CUDA "
            "event after every 8 products, and the thread waits for the event 3 checkpoints back, so about 24 products "
            "stay queued and the GPU never idles on the host; every verify_every_checkpoints checkpoints C is compared "
            "with the reference product on the same stream (probe_packages.load.verify; read back after the load)",
    "rate": "TFLOP/s = 2 n^3 x products / the GPU time from the start event to the last checkpoint event; "
            "achieved_tflops_active from the first checkpoint after warmup_s; tflops_series per second of GPU time",
    "sampling": "a sampler thread reads every GPU through NVML at t = k x sample_interval_s from the load's start "
                "(nvmlDeviceGetClockInfo SM and MEM, nvmlDeviceGetPowerUsage, nvmlDeviceGetTemperature GPU, "
                "nvmlDeviceGetCurrentClocksEventReasons (ThrottleReasons on older NVML), nvmlDeviceGetUtilizationRates); "
                "a round that overruns its slot skips the ticks it covered (missed_ticks); each row's t is when its "
                "round began; the processes are listed every process_interval_s; NVML's power reading is its own "
                "average (about 1 s on recent GPUs)",
    "windows": "the load window is t = 0 to the GPU's end of load; the active window leaves out the first warmup_s; "
               "median/max/min and the power figures are over the active window; throttle fractions are of the "
               "active window's samples, while first_seen_s, hardware_slowdown and thermal cover the whole load; the "
               "clock-event duration counters (NVML field values NVML_FI_DEV_CLOCKS_EVENT_REASON_*, and "
               "nvmlDeviceGetViolationStatus per perf policy, in ns) are read just before the GPUs are released and after "
               "every load thread ended: their growth, with its share of that window, is clock_event_durations_window",
    "checks": "inputs, not verdicts: clocks.rose (active median SM clock > idle + clock_rise_mhz, basis rose; or idle "
              "already within clock_rise_mhz of the maximum, basis idle_at_max); throttle.hardware_slowdown "
              "(hw_slowdown, hw_power_brake_slowdown), throttle.thermal (sw/hw thermal slowdown); power.fraction_over_limit "
              "(samples above limit x (1 + power_margin_pct/100)); processes.unexpected (pids other than this probe's)",
    "idle": "idle_before before the operands are allocated; idle_after settle_s after the load, its memory released",
    "read_only": "the probe never sets clocks, power limits, persistence or any other GPU setting",
}


def _open_session() -> Any:
    from probelib.nvml.access import NvmlSession  # pylint: disable=import-outside-toplevel
    return NvmlSession().open()


def empty_data(plan: Dict[str, Any], devices: List[Dict[str, Any]], reason: str) -> Dict[str, Any]:
    gpus = [{"index": device["index"], "uuid": device["uuid"], "name": device["name"], "nvml_index": unavailable(reason)}
            for device in devices]
    return {"method": METHOD, "plan": plan, "gpus": gpus, "samples": unavailable(reason), "processes": unavailable(reason),
            "cooldown": not_waited(plan["cooldown_s"], "not run: %s" % reason), "errors": []}


def torch_reason(torch: Any, session: Any) -> str:
    nvml = session.reason if session.reason else "NVML sees %s GPU(s)" % session.device_count
    build = "a CPU build" if not torch.version.cuda else "built for CUDA %s" % torch.version.cuda
    return ("torch sees no CUDA GPU (torch.cuda.is_available() is %s; torch %s is %s), so there is nothing to load; NVML: %s"
            % (torch.cuda.is_available(), torch.__version__, build, nvml))


def collect(params: Dict[str, Any]) -> ProbeResult:
    import torch  # pylint: disable=import-outside-toplevel
    from probe_packages.load.run import LoadRun  # pylint: disable=import-outside-toplevel
    from probelib.measure.devices import measured_devices  # pylint: disable=import-outside-toplevel
    from probelib.measure.opening import torch_environment  # pylint: disable=import-outside-toplevel

    check_params(params)
    plan = make_plan(params)
    environment = torch_environment(torch)
    devices = measured_devices(torch, "cuda")
    session = _open_session()
    try:
        if not devices:
            reason = torch_reason(torch, session)
            return ProbeResult("unavailable", empty_data(plan, devices, reason), reason, environment)
        if not session.usable:
            reason = "NVML is not usable, so nothing could be sampled and the load was not run: %s" % session.reason
            return ProbeResult("unavailable", empty_data(plan, devices, reason), reason, environment)
        data = {"method": METHOD, "plan": plan}
        data.update(LoadRun(torch, devices, session, plan).execute())
    finally:
        session.close()
    status, reason = outcome_of(data)
    return ProbeResult(status, data, reason, environment)


def measured(data: Dict[str, Any]) -> bool:
    """Some GPU's load has a rate (TFLOP/s)."""
    return any(isinstance(gpu["load"]["achieved_tflops"], (int, float)) for gpu in data["gpus"])


def outcome_of(data: Dict[str, Any]) -> Tuple[str, str]:
    return outcome.decide(data["errors"], describe_error, measured(data))


def describe_error(error: Dict[str, Any]) -> str:
    return "%s%s (%s)" % ("GPU %s " % error["gpu"] if error["gpu"] is not None else "", error["what"], error["error"])


if __name__ == "__main__":
    sys.exit(main("load", DESCRIPTION, collect, requires=("torch",), measures_gpus=True))
