"""A rig run that proves a verdict is what a new user gets: no tools/rig_*.sh passes a rule override (issue 31: every
committed rig run passed health.gpu_count's expected count, so none showed what a new user meets)."""
import glob
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_no_rig_script_overrides_a_rule():
    scripts = sorted(glob.glob(os.path.join(ROOT, "tools", "rig_*.sh")))
    assert len(scripts) >= 4
    for path in scripts:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        assert "gpufleet_rule_overrides" not in text and "health.gpu_count" not in text, path
