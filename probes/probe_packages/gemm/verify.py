"""Each case's result verified: the product computed before timing compared with the product after the timed repeats,
same inputs, bit for bit; the rule is probelib.measure.bit_compare's. The test aid inject_bit_flip flips one bit of the
after-product of one case on one device. torch is passed in."""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

from probelib.fields import unavailable
from probelib.measure import bit_compare


def _describe(exc: BaseException) -> str:
    return "%s: %s" % (type(exc).__name__, str(exc).strip().splitlines()[0][:300] if str(exc).strip() else "")


class CaseVerifier:
    """``before(operation)`` keeps the reference; ``after(operation)`` returns the product after timing and the case's
    verification record. Only where the two differ are two more products computed at rest: if those differ too the
    library is not deterministic for this shape here and the pair is compared within the stated tolerance instead
    (mode tolerance); if they agree the difference stands, bit for bit. A failure leaves the verification unavailable,
    never the case."""

    def __init__(self, torch: Any, injection: Optional[Dict[str, Any]], device_index: int, dtype: str, case: str) -> None:
        self.torch = torch
        wanted = injection is not None and injection.get("device_index", 0) == device_index and injection.get("case") == case \
            and injection.get("dtype", dtype) == dtype
        self.injection = dict(injection) if wanted and injection is not None else None
        self.reference: Any = None
        self.failed: Optional[str] = None

    def before(self, operation: Callable[[], Any]) -> None:
        try:
            self.reference = operation()
        except Exception as exc:  # out of memory for the extra product: the case is still timed
            self.reference = None
            self.failed = "the product before timing failed: %s" % _describe(exc)

    def after(self, operation: Callable[[], Any]) -> Tuple[Any, Dict[str, Any]]:
        """(the product after timing, the verification record)."""
        result = operation()
        if self.reference is None:
            return result, unavailable(self.failed or "no product before timing")
        try:
            if self.injection is not None:
                bit_compare.flip_bit(self.torch, result, int(self.injection.get("element", 0)), int(self.injection.get("bit", 0)))
            record = self.compared(operation, result)
        except Exception as exc:  # the comparison's temporaries did not fit
            return result, unavailable("the comparison failed: %s" % _describe(exc))
        finally:
            self.reference = None
        if self.injection is not None:
            record["injected"] = self.injection
        return result, record

    def compared(self, operation: Callable[[], Any], result: Any) -> Dict[str, Any]:
        torch = self.torch
        outcome = bit_compare.compare(torch, result, self.reference)
        if outcome["equal"]:
            record = bit_compare.at_rest(outcome, 0.0)
        else:
            again = bit_compare.compare(torch, operation(), operation())
            record = bit_compare.at_rest(again, bit_compare.tolerance_for(torch, self.reference) if not again["equal"] else 0.0)
            if not again["equal"]:
                outcome = bit_compare.compare(torch, result, self.reference, record["tolerance"])
        record.update(outcome)
        return record
