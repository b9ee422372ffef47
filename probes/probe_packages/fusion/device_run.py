"""One device's fusion run: for each size that fits, the eager chain and the compiled one, checked and timed."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from probe_packages.fusion import compare
from probe_packages.fusion.bench import timings_s
from probe_packages.fusion.chain import CompiledChain, chain, describe, make_inputs, triton_version
from probe_packages.fusion.plan import fits, membw_reference
from probe_packages.fusion.summary import speedups, unmeasured_point, verification_record, version_record
from probelib.device_outcome import close_sweep
from probelib.fields import is_unavailable, unavailable
from probelib.measure.cache import last_level_cache
from probelib.measure.devices import free_memory_bytes

DEVICE_KEYS = ("kind", "index", "name", "uuid", "memory_total_mib", "compute_capability")
COMPILE_OFF = "compile is false in the plan: the fused version was not tried"


class DeviceRun:
    def __init__(self, torch: Any, device: Dict[str, Any], plan: Dict[str, Any], membw_gbps: Any,
                 membw_source: str, before_timing: Optional[Callable[[], Any]] = None) -> None:
        self.torch = torch
        # called once per size after the compile and the output check, right before the timing (the together phase's
        # start line: compiling takes seconds and differs between workers, the timed windows must overlap)
        self.before_timing = before_timing
        self.device = device
        self.plan = plan
        self.membw, self.membw_why = membw_reference(membw_gbps, membw_source, device["kind"], device.get("uuid"))
        self.compiler = CompiledChain(torch)
        self.problems: List[str] = []
        self.cache_bytes: Optional[int] = None

    def _sync(self) -> None:
        if self.device["kind"] == "cuda":
            self.torch.cuda.synchronize(self.device["index"])

    def _release(self) -> None:
        if self.device["kind"] == "cuda":
            self.torch.cuda.synchronize(self.device["index"])
            self.torch.cuda.empty_cache()

    def _fused(self, inputs: Any) -> Any:
        """(the compiled call or None, its compile record or why there is none)."""
        if not self.plan["compile"]:
            return None, unavailable(COMPILE_OFF)
        if self.compiler.failure is not None:
            return None, unavailable("not tried again: %s (at a smaller size)" % self.compiler.failure)
        operation, record = self.compiler.compile_for(inputs)
        if operation is None:
            self.problems.append("the fused version is unavailable: %s" % record["unavailable"])
        return operation, record

    def measure_point(self, elements: int) -> Dict[str, Any]:
        plan, torch = self.plan, self.torch
        dtype, element_bytes = plan["dtype"], plan["element_bytes"]
        inputs = fused_call = None
        fused_tried = False
        try:
            inputs = make_inputs(torch, self.device, elements, dtype)
            expected = chain(*inputs)
            fused_call, compiled = self._fused(inputs)
            fused_tried = fused_call is not None
            verification = verification_record(dtype, unavailable("no fused output to compare"),
                                               unavailable("no fused output to compare"))
            fused_ok = False
            if fused_call is not None:
                got = fused_call()
                rtol, atol = compare.TOLERANCES[dtype]
                diff = float((got.float() - expected.float()).abs().max())
                agree = bool(torch.isclose(got, expected, rtol=rtol, atol=atol).all())
                verification = verification_record(dtype, diff, agree)
                fused_ok = agree
                del got
            del expected
            if self.before_timing is not None:
                self.before_timing()
            unfused_t = timings_s(torch, self.device, lambda: chain(*inputs), plan)
            fused_t = timings_s(torch, self.device, fused_call, plan) if fused_ok else None
            self._sync()
        except Exception as exc:  # one size failing (e.g. out of memory) does not end the sweep
            self.problems.append("%d elements failed: %s" % (elements, describe(exc)))
            return unmeasured_point(elements, "error", describe(exc), dtype)
        finally:
            inputs = fused_call = None
            self._release()
        unfused = version_record("unfused", elements, element_bytes, unfused_t["iterations"], unfused_t["repeats_s"],
                                 self.membw, self.membw_why)
        status, reason = "measured", ""
        if fused_t is not None:
            fused: Any = version_record("fused", elements, element_bytes, fused_t["iterations"], fused_t["repeats_s"],
                                        self.membw, self.membw_why)
        elif fused_tried:
            status = "error"
            reason = ("the fused and unfused outputs disagree: max |fused - unfused| = %g, beyond atol %g + rtol %g x "
                      "|unfused|" % (verification["max_abs_diff"], verification["atol"], verification["rtol"]))
            self.problems.append("%d elements: %s" % (elements, reason))
            fused = unavailable("not timed: %s" % reason)
        else:
            fused = compiled
        point = {"elements": elements, "status": status, "reason": reason, "unfused": unfused, "fused": fused,
                 "compile": compiled, "verification": verification}
        point.update(speedups(unfused, fused, plan, self.device["kind"], self.cache_bytes))
        return point

    def run(self) -> Dict[str, Any]:
        entry: Dict[str, Any] = {"device": {key: self.device.get(key) for key in DEVICE_KEYS}, "status": "ok",
                                 "error": None, "problems": []}
        entry["membw_bandwidth_gbps"] = self.membw if self.membw is not None else unavailable(self.membw_why)
        entry["membw_bandwidth_source"] = self.membw_why
        entry["triton_version"] = triton_version()
        try:
            cache = last_level_cache(self.torch, self.device)
            entry["last_level_cache_bytes"] = cache["bytes"]
            self.cache_bytes = None if is_unavailable(cache["bytes"]) else int(cache["bytes"])
            entry["points"] = self.sweep()
        except Exception as exc:  # a failing device is recorded; the other devices still run
            self.problems.append(describe(exc))
            entry.update({"status": "error", "error": {"type": type(exc).__name__, "message": str(exc)[:2000]},
                          "problems": list(self.problems)})
            entry.setdefault("last_level_cache_bytes", unavailable("not read: %s" % describe(exc)))
            entry.setdefault("points", [])
            return entry
        return close_sweep(entry, entry["points"], lambda point: "%d elements" % point["elements"], self.problems)

    def sweep(self) -> List[Dict[str, Any]]:
        points = []
        margin = (self.plan["safety_margin_mib"], self.plan["safety_margin_pct"])
        for elements in self.plan["sizes_elements"]:
            fit, reason = fits(elements, self.plan["element_bytes"], free_memory_bytes(self.torch, self.device), *margin)
            points.append(self.measure_point(elements) if fit else
                          unmeasured_point(elements, "skipped", reason, self.plan["dtype"]))
        return points
