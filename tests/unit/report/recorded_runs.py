"""The rig's recorded runs that report tests judge again (tests/unit/report/conftest.py's judge_recorded)."""
import os

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), "docs", "examples")
# A 1 x H200 run of the quick profile (fabric, health and membw) on a healthy host: judged now, the rules of the
# probes quick does not run match nothing.
RECORDED_QUICK_RUN = os.path.join(EXAMPLES, "h200x1", "issue34", "20261203T201133Z-810594")
# A 1 x H100 run of an inventory's own profile (busy: health, membw, gemm) while another job computed on the GPU:
# not_validated.
RECORDED_BUSY_RUN = os.path.join(EXAMPLES, "h100x1", "issue44", "20261206T185440Z-551911")
