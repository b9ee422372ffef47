"""Run the plan on one device: the ridge's bandwidth, then per dtype the roof, the cases, and their explanation."""
from __future__ import annotations

import contextlib
import statistics
from typing import Any, Callable, Dict, List, Optional

from probe_packages.gemm import params as gemm_params
from probe_packages.gemm import records, roofline
from probe_packages.gemm.cases import GemmCase, iterations_for
from probe_packages.gemm.copy_bandwidth import measure_copy_bandwidth
from probe_packages.gemm.dtypes import DTYPES, DtypeSpec, shape_unavailability, static_unavailability
from probe_packages.gemm.operations import build_operation, matmul_precision, operand_bytes, output_check, runtime_unavailability
from probe_packages.gemm.power_run import PowerStateRun
from probe_packages.gemm.verify import CaseVerifier
from probelib.fields import is_unavailable, unavailable
from probelib.measure.devices import free_memory_bytes
from probelib.measure.timing import repeat_s, time_per_iteration_s


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return "%s: %s" % (type(exc).__name__, text[:300]) if text else type(exc).__name__


class DeviceSweep:
    """One device's run. ``snapshot(uuid)`` reads the GPU state (NVML); errors collect what failed, per case."""

    def __init__(self, torch: Any, device: Dict[str, Any], plan: Dict[str, Any], params: Dict[str, Any],
                 snapshot: Callable[[Any], Any], reads_for: Optional[Callable[[Any], Any]] = None) -> None:
        self.torch, self.device, self.plan, self.params = torch, device, plan, params
        self.snapshot = snapshot
        self.reads_for = reads_for
        self.kind = device["kind"]
        self.errors: List[Dict[str, Any]] = []
        self.sm_count: Optional[int] = None
        self.l2_cache_bytes: Optional[int] = None
        self.repeats = int(params["repeats"])
        self.repeat_time_s = float(params["repeat_time_s"] or plan["repeat_time_s"])
        self.warmup_time_s = float(params["warmup_time_s"] or plan["warmup_time_s"])

    # -- the record of the device ------------------------------------------------------------------------------
    def device_record(self) -> Dict[str, Any]:
        info = {key: self.device[key] for key in ("kind", "index", "name", "uuid", "memory_total_mib", "compute_capability")}
        if self.kind == "cuda":
            properties = self.torch.cuda.get_device_properties(self.device["index"])
            self.sm_count = int(properties.multi_processor_count)
            l2_bytes = getattr(properties, "L2_cache_size", None)
            self.l2_cache_bytes = int(l2_bytes) if isinstance(l2_bytes, int) and l2_bytes > 0 else None
            info["multi_processor_count"] = self.sm_count
            info["l2_cache_bytes"] = self.l2_cache_bytes if self.l2_cache_bytes else unavailable("torch does not report the L2 size")
        else:
            info["multi_processor_count"] = unavailable("not a GPU")
            info["l2_cache_bytes"] = unavailable("not a GPU")
        return info

    def error(self, what: str, exc: BaseException, dtype: Optional[str] = None, case: Optional[str] = None) -> str:
        text = _describe(exc)
        self.errors.append({"device_index": self.device["index"], "dtype": dtype, "case": case, "error": "%s: %s" % (what, text)})
        return text

    # -- the ridge's bandwidth ---------------------------------------------------------------------------------
    def bandwidth(self) -> Dict[str, Any]:
        given, note = gemm_params.bandwidth_for(self.params["memory_bandwidth_gbps"], self.kind, self.device["uuid"])
        if given is not None:
            return {"bandwidth_gbps": given, "ridge_bandwidth_source": gemm_params.PARAMETER_BANDWIDTH,
                    "ridge_bandwidth_note": note, "own_copy": unavailable("not measured: the parameter gave the bandwidth")}
        try:
            own = measure_copy_bandwidth(self.torch, self.device, self.plan["copy_buffer_max_bytes"],
                                         free_memory_bytes(self.torch, self.device), self.repeat_time_s, self.repeats,
                                         self.plan["max_iterations"])
        except Exception as exc:  # the copy fails alone; the matmuls still run, unclassified
            text = self.error("own copy bandwidth", exc)
            return {"bandwidth_gbps": unavailable("the copy measurement failed: %s" % text),
                    "ridge_bandwidth_source": gemm_params.OWN_COPY, "ridge_bandwidth_note": note,
                    "own_copy": unavailable("failed: %s" % text)}
        return {"bandwidth_gbps": own["bandwidth_gbps"], "ridge_bandwidth_source": gemm_params.OWN_COPY,
                "ridge_bandwidth_note": note, "own_copy": own}

    # -- timing ------------------------------------------------------------------------------------------------
    def time_operation(self, operation: Callable[[], Any], repeats: int) -> Dict[str, Any]:
        torch, device, plan = self.torch, self.device, self.plan
        single = time_per_iteration_s(torch, device, operation, 1, 2)
        iterations = iterations_for(self.repeat_time_s, single, plan["min_iterations"], plan["max_iterations"])
        warmup = iterations_for(self.warmup_time_s, single, 1, plan["max_iterations"])
        timings = repeat_s(torch, device, operation, warmup, iterations, repeats)
        return {"timings_s": timings, "iterations": iterations, "warmup_iterations": warmup}

    def fits(self, spec: DtypeSpec, case: GemmCase) -> Optional[str]:
        needed = operand_bytes(spec, case)
        free = free_memory_bytes(self.torch, self.device)
        if needed > 0.9 * free:
            return "needs %.0f MiB, %.0f MiB free" % (needed / 2 ** 20, free / 2 ** 20)
        return None

    def run_case(self, spec: DtypeSpec, case: GemmCase, record: Dict[str, Any]) -> None:
        skip = shape_unavailability(spec, case.n, case.k) or self.fits(spec, case)
        if skip:
            record["measurement"] = unavailable(skip)
            record["gpu_state_after_timing"] = unavailable("not timed")
            record["timed_state"] = unavailable("not timed")
            record["verification"] = unavailable("not timed: %s" % skip)
            return
        operation = None
        try:
            operation = build_operation(self.torch, spec, case, self.device["torch_device"], self.params["fp8_fast_accum"])
            verifier = CaseVerifier(self.torch, self.params["inject_bit_flip"], self.device["index"], spec.name, case.name)
            verifier.before(operation)
            timed = self.time_operation(operation, self.repeats)
            result, record["verification"] = verifier.after(operation)
            check = output_check(self.torch, result)
            result = None
            record["measurement"] = records.measurement(case.m, case.n, case.k, timed["timings_s"], timed["iterations"],
                                                        timed["warmup_iterations"], check)
        except Exception as exc:  # one case fails alone (out of memory, a cuBLAS refusal ...)
            operation = None
            record["measurement"] = unavailable("failed: %s" % self.error("timing", exc, spec.name, case.name))
            record["verification"] = unavailable("not verified: the case failed")
            self.release()
        record["gpu_state_after_timing"] = self.snapshot(self.device["uuid"]) if self.kind == "cuda" else unavailable("not a GPU")
        record["timed_state"] = records.timed_state(record["gpu_state_after_timing"])

    def release(self) -> None:
        if self.kind == "cuda":
            with self.torch.cuda.device(self.device["index"]):
                self.torch.cuda.empty_cache()

    # -- the compute roof before timing --------------------------------------------------------------------------
    def calibrate(self, spec: DtypeSpec) -> Any:
        """A short timing of the plan's biggest square: the compute roof for classifying when no peak is given."""
        case: GemmCase = self.plan["calibration_case"]
        operation = None
        try:
            operation = build_operation(self.torch, spec, case, self.device["torch_device"], self.params["fp8_fast_accum"])
            timed = self.time_operation(operation, 1)
        except Exception as exc:  # no calibration: the cases run unclassified
            operation = None
            self.release()
            return unavailable("the calibration on %s failed: %s" % (case.name, self.error("calibration", exc, spec.name, case.name)))
        seconds = statistics.median(timed["timings_s"])
        return {"case": case.name, "tflops": records.significant(roofline.tflops_of(case.m, case.n, case.k, seconds)),
                "iterations": timed["iterations"]}

    # -- burst and sustained ------------------------------------------------------------------------------------
    def power_states(self, spec: DtypeSpec) -> Any:
        """The calibration shape timed in both named states, burst then sustained (GPUs only)."""
        if self.kind != "cuda":
            return unavailable("burst and sustained are states of a GPU under its power limit; the CPU path times the shapes only")
        chosen = self.plan.get("power_state_dtypes") or []
        if spec.name not in chosen:
            return unavailable("burst and sustained are measured for %s only (parameter power_state_dtypes)"
                               % (", ".join(chosen) or "no dtype"))
        case: GemmCase = self.plan["calibration_case"]
        skip = shape_unavailability(spec, case.n, case.k) or self.fits(spec, case)
        if skip:
            return unavailable(skip)
        reads = self.reads_for(self.device["uuid"]) if self.reads_for else None
        run = PowerStateRun(self.torch, self.device, case, reads, self.plan["power_state_settings"])
        states: Dict[str, Any] = {"case": case.name, "m": case.m, "n": case.n, "k": case.k,
                                  "nvml": "sampled" if reads is not None else unavailable("NVML is not usable here")}
        try:
            operation = build_operation(self.torch, spec, case, self.device["torch_device"], self.params["fp8_fast_accum"])
        except Exception as exc:  # the states fail alone; the sweep still runs
            text = self.error("burst and sustained", exc, spec.name, case.name)
            self.release()
            return unavailable("failed: %s" % text)
        for method in ("burst", "sustained"):
            try:
                states[method] = getattr(run, method)(operation, self.repeats)
            except Exception as exc:  # one method fails alone
                states[method] = unavailable("failed: %s" % self.error(method, exc, spec.name, case.name))
        operation = None
        self.release()
        return states

    # -- one dtype -----------------------------------------------------------------------------------------------
    def run_dtype(self, spec: DtypeSpec, bandwidth: Any, results: List[Dict[str, Any]]) -> Any:
        reason = static_unavailability(spec, self.kind, _capability(self.device))
        if reason is None:
            reason = runtime_unavailability(self.torch, spec, self.device["torch_device"])
        if reason is not None:
            return unavailable(reason)
        with matmul_precision(self.torch, spec):
            power_states = self.power_states(spec)
        bandwidth_gbps = None if is_unavailable(bandwidth) else float(bandwidth)
        with matmul_precision(self.torch, spec) as allow_tf32:
            given_peak = gemm_params.peak_for(self.params["peak_tflops"], self.kind, spec.name)
            if given_peak is not None:
                calibration: Any = unavailable("not needed: the parameter peak_tflops gave the peak")
                before = records.roof(given_peak, gemm_params.PARAMETER_PEAK, bandwidth_gbps)
            else:
                calibration = self.calibrate(spec)
                source = ("calibration: %s timed briefly before the sweep" % calibration["case"]
                          if not is_unavailable(calibration) else calibration["unavailable"])
                before = records.roof(None if is_unavailable(calibration) else calibration["tflops"], source, bandwidth_gbps)
            mine = []
            for case in self.plan["cases"]:
                record = records.case_before_timing(case, spec, before)
                results.append(record)
                mine.append(record)
                self.run_case(spec, case, record)
        best = records.best_of(mine, spec.name)
        if given_peak is not None:
            after = records.roof(given_peak, gemm_params.PARAMETER_PEAK, bandwidth_gbps)
        else:
            candidates = [entry for entry in (best, calibration) if entry is not None and not is_unavailable(entry)]
            top = max(candidates, key=lambda entry: entry["tflops"]) if candidates else None
            after = records.roof(top["tflops"] if top else None,
                                 gemm_params.BEST_MEASURED if top else "no shape of this dtype was measured", bandwidth_gbps)
        for record in mine:
            record["explained_after_timing"] = records.explained_after_timing(
                record, spec, after, self.kind, self.sm_count, self.l2_cache_bytes)
        return {
            "operation": spec.operation,
            "input_element_bytes": spec.input_bytes,
            "output_element_bytes": spec.output_bytes,
            "allow_tf32": allow_tf32,
            "calibration": calibration,
            "roof_before_timing": before,
            "roof_after_timing": after,
            "best": best if best is not None else unavailable("no shape of this dtype was measured"),
            "power_states": power_states,
        }

    # -- the whole device ----------------------------------------------------------------------------------------
    def run(self) -> Dict[str, Any]:
        record: Dict[str, Any] = {"device": self.device_record()}
        record["gpu_state_before"] = self.snapshot(self.device["uuid"]) if self.kind == "cuda" else unavailable("not a GPU")
        context = self.torch.cuda.device(self.device["index"]) if self.kind == "cuda" else contextlib.nullcontext()
        results: List[Dict[str, Any]] = []
        dtypes: Dict[str, Any] = {}
        with context:
            roof = self.bandwidth()
            record["roofline"] = roof
            for name in self.plan["dtypes"]:
                try:
                    dtypes[name] = self.run_dtype(DTYPES[name], roof["bandwidth_gbps"], results)
                except Exception as exc:  # a dtype fails alone
                    dtypes[name] = unavailable("failed: %s" % self.error("dtype", exc, name))
                    self.release()
            self.release()
        record["dtypes"] = dtypes
        record["results"] = results
        record["gpu_state_after"] = self.snapshot(self.device["uuid"]) if self.kind == "cuda" else unavailable("not a GPU")
        record["status"] = "partial" if self.errors else "ok"
        return record


def _capability(device: Dict[str, Any]) -> Optional[tuple]:
    value = device.get("compute_capability")
    if isinstance(value, str) and "." in value:
        major, minor = value.split(".", 1)
        return int(major), int(minor)
    return None
