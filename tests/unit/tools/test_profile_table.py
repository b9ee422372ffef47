"""Issue 47: README's profile table is generated from the probes' declarations (tools/profile_table.py), where each
probe names the profiles it belongs to; this test fails when the table differs from them (a list kept by hand goes
stale: run tools/profile_table.py to rewrite it)."""
import pytest

from tool_module import load_tool

TOOL = load_tool("profile_table")


def _readme():
    with open(TOOL.README, encoding="utf-8") as handle:
        return handle.read()


def test_readme_shows_the_profiles_the_probes_declare():
    assert not TOOL.differs(), "run python tools/profile_table.py"


def test_a_probe_left_out_of_a_profile_by_hand_is_caught():
    text = _readme()
    edited = text.replace("| `interconnect` | health, tuning, fabric, p2p, collective |", "| `interconnect` | health, p2p, collective |")
    assert edited != text and TOOL.rewritten(edited) == text


def test_a_readme_without_its_markers_is_named():
    with pytest.raises(ValueError, match="<!-- profiles -->"):
        TOOL.rewritten("# gpufleet.validation\n")
