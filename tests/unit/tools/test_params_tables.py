"""Issue 33: each probe's docs page shows its parameter table generated from its spec (params.json), and this test fails
when a page's table differs from the spec (run tools/params_tables.py to rewrite them)."""
import pytest

from tool_module import load_tool

TOOL = load_tool("params_tables")


def test_every_probe_page_shows_the_table_of_its_spec():
    assert len(TOOL.probes()) >= 12
    assert TOOL.differing() == []


def test_a_table_edited_by_hand_or_a_changed_spec_is_caught():
    with open(TOOL.page_of("membw"), encoding="utf-8") as handle:
        page = handle.read()
    edited = page.replace("| `repeats` | integer >= 1 | `3` |", "| `repeats` | integer >= 1 | `5` |")
    assert edited != page and TOOL.rewritten(edited, "membw") == page


def test_a_page_without_its_markers_is_named():
    with pytest.raises(ValueError, match="<!-- parameters: membw -->"):
        TOOL.rewritten("# membw\n", "membw")


def test_a_probe_without_parameters_says_so():
    assert TOOL.table("tuning").startswith("The probe takes no parameters")
