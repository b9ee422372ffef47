import html
import os
import re


from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import NO_RESULT_REASON, load_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.host_pages import (
    render_host_dossier_html,
    render_host_dossier_markdown,
    render_host_measurements_html,
    render_host_measurements_markdown,
)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.index_page import render_fleet_index_html, render_fleet_index_markdown
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.markup import markdown_escape
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.values import flatten
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.paths import host_dir_name
from report_writes import Written  # noqa: E402  pylint: disable=import-error


def _render_all(fleet):
    written = Written()
    run = render_run(str(fleet.run_dir), fleet.expected, fleet.groups, written.__setitem__)
    assert sorted(host.name for host in run.hosts) == sorted(fleet.expected)
    return written


def _dossier(fleet, host, kind):
    run = load_run(str(fleet.run_dir), fleet.expected, fleet.groups)
    model = {h.name: h for h in run.hosts}[host]
    return (render_host_dossier_html if kind == "html" else render_host_dossier_markdown)(model, run)


def _measurements(fleet, host, kind):
    run = load_run(str(fleet.run_dir), fleet.expected, fleet.groups)
    model = {h.name: h for h in run.hosts}[host]
    return (render_host_measurements_html if kind == "html" else render_host_measurements_markdown)(model, run)


def test_every_file_lands_under_the_run_directory(fleet):
    written = _render_all(fleet)
    run_dir = os.path.realpath(str(fleet.run_dir))
    expected = {os.path.join(run_dir, "index.html"), os.path.join(run_dir, "index.md")}
    for host in fleet.expected:
        expected |= {os.path.join(run_dir, host_dir_name(host), name)
                     for name in ("dossier.html", "dossier.md", "measurements.html", "measurements.md")}
    assert set(written) == expected
    for path in written:
        assert os.path.commonpath([run_dir, os.path.realpath(path)]) == run_dir


def test_a_linked_host_directory_gets_no_dossier_and_the_others_are_written(fleet, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(str(outside), str(fleet.run_dir / "gpu-e01"))
    written = Written()
    render_run(str(fleet.run_dir), fleet.expected, fleet.groups, written.__setitem__)
    run_dir = os.path.realpath(str(fleet.run_dir))
    assert list(outside.iterdir()) == []
    assert not [path for path in written if path.startswith(os.path.join(run_dir, "gpu-e01") + os.sep)]
    assert os.path.join(run_dir, "gpu-a01", "dossier.html") in written
    index = written[os.path.join(run_dir, "index.md")]
    assert "gpu-e01" in index and "is a symbolic link (to " in index and "nothing was read or written through it" in index


def test_hostile_host_name_is_escaped_in_html(fleet):
    written = _render_all(fleet)
    for path, text in written.items():
        if path.endswith(".html"):
            assert "<script" not in text.lower()
            assert "<img" not in text.lower()
    evil_dossier = written[os.path.join(os.path.realpath(str(fleet.run_dir)), host_dir_name(fleet.evil_host),
                                        "dossier.html")]
    assert html.escape(fleet.evil_host) in evil_dossier
    index = written[os.path.join(os.path.realpath(str(fleet.run_dir)), "index.html")]
    # The link must survive the browser's percent-decoding: '%' in the directory name goes out as '%25'.
    assert 'href="%253Cscript%253Ealert%25281%2529%253C%252Fscript%253E..%252Fx/dossier.html"' in index


def _table_rows(markdown):
    return [line for line in markdown.splitlines() if line.startswith("|")]


def _cell_count(row):
    return len(re.findall(r"(?<!\\)\|", row)) - 1


def test_markdown_tables_keep_their_shape_whatever_the_values(fleet):
    checked = 0
    for path, text in _render_all(fleet).items():
        if not path.endswith(".md"):
            continue
        lines = text.splitlines()
        for number, line in enumerate(lines):
            if line.startswith("| ---") or line.startswith("| --- |") or re.match(r"^\|( --- \|)+$", line):
                header_cells = _cell_count(lines[number - 1])
                following = number + 1
                while following < len(lines) and lines[following].startswith("|"):
                    assert _cell_count(lines[following]) == header_cells, (path, lines[following])
                    following += 1
                    checked += 1
        # Every '<' that is not our own line break is backslash-escaped, so no HTML reaches a Markdown viewer.
        assert re.search(r"(?<!\\)<(?!br>)", text) is None, path
    assert checked > 150


def test_markdown_escape_neutralises_structure():
    assert markdown_escape("a|b<c>`d`*e*_f_[g](h)\nnext") == \
        "a\\|b\\<c\\>\\`d\\`\\*e\\*\\_f\\_\\[g\\](h)<br>next"


def test_every_value_and_unavailable_reason_of_data_appears_on_the_measurements_page(fleet):
    markdown = _measurements(fleet, "gpu-a01", "md")
    page = _measurements(fleet, "gpu-a01", "html")
    rows = flatten(fleet.health_data)
    assert len(rows) > 80
    for row in rows:
        if row.unavailable is None:
            line = "| %s | %s | %s |" % (markdown_escape(row.path), markdown_escape(row.value), markdown_escape(row.unit))
            assert line in markdown
            assert "<tr><td><code>%s</code></td><td>%s</td><td>%s</td></tr>" % (
                html.escape(row.path), html.escape(row.value), html.escape(row.unit)) in page
        else:
            assert markdown_escape(row.unavailable) in markdown
            assert html.escape(row.unavailable) in page


def test_health_summary_shows_units_and_flags(fleet):
    markdown = _dossier(fleet, "gpu-a01", "md")
    page = _dossier(fleet, "gpu-a01", "html")
    for text in ("512 / 143771 MiB", "345 / 1980 MHz", "73.5 / 700 W", "31 °C", "Gen 1 / 5", "x16 / x16",
                 "18 / 18", "NV18", "580.159.04", "CUDA initialised in a fresh process", "GPU has fallen off the bus"):
        assert text in page, text
    # /proc/devices names no driver for major 504; it gives nvidia-uvm major 509
    assert "| /dev/nvidia-uvm | 504 | 0 | none | 509 | **no: MISMATCH** |" in markdown
    assert "| Gen 1 / 5 (below its maximum) |" in markdown
    gpu1 = [line for line in markdown.splitlines() if line.startswith("| 1 | NVIDIA H200 |")][0]
    for text in ("| 0000:2a:00.0 |", "| 0 / 143771 MiB |", "| 1980 / 1980 MHz |", "| 33 °C |",
                 "| **2** |", "| Gen 5 / 5 |", "| **x8 / x16 (below its maximum)** |"):
        assert text in gpu1, text
    assert re.search(r'<tr class="f-bad"><td>/dev/nvidia-uvm</td>', page)
    assert "<svg" in page and "Power draw per GPU" in page
    # an unavailable cell refers to the note that gives its reason (stated once, at the end)
    number = re.search(r"\n- \\\[(\d+)\\\] MIG mode could not be read", markdown).group(1)
    assert "| n/a \\[%s\\] |" % number in markdown


def test_reproducibility_section(fleet):
    markdown = _dossier(fleet, "gpu-a01", "md")
    for text in ("20261130T020000Z-123456", "0.1.0", "ab" * 32, "2026-11-30T02:00:00+00:00", "3.2 s",
                 "```\n/usr/bin/python3 /tmp/ansible-tmp-1/health.py --params",
                 "[health.json](health.json)", "python\\_version"):
        assert text in markdown, text


def test_unparsable_file_links_its_raw_output(fleet):
    page = _dossier(fleet, "gpu-d01", "html")
    assert "result file unreadable: " in page and 'href="health.raw"' in page


def test_fleet_index_is_worst_first_with_reasons_and_groups(fleet):
    run = load_run(str(fleet.run_dir), fleet.expected, fleet.groups)
    markdown = render_fleet_index_markdown(run)
    page = render_fleet_index_html(run)
    host_rows = [line for line in _table_rows(markdown) if "dossier.md" in line]
    states = [row.split(" | ")[1] for row in host_rows]
    assert states == ["unreachable", "error", "error", "partial", "unavailable", "ok"]
    assert host_rows[0].startswith("| [gpu-e01](gpu-e01/dossier.md) |")
    assert markdown_escape(NO_RESULT_REASON) in markdown and html.escape(NO_RESULT_REASON) in page
    assert "2 × NVIDIA H200" in markdown
    assert "| rack2 | 2 | unreachable 1, error 1 | gpu-e01, gpu-c01 |" in markdown
    assert "| rack1 | 2 | unavailable 1, ok 1 | cpu-b01 |" in markdown
    failed = markdown.split("## Unreachable and failed hosts", 1)[1]
    for host in ("gpu-e01", "gpu-c01", "gpu-d01"):
        assert host in failed
    assert "CUDA driver initialisation failed" in failed


def test_a_probe_without_a_special_section_renders_generically(fleet):
    fleet.write("gpu-a01", "membw", fleet.envelope("gpu-a01", probe="membw", data={
        "plateau_gbps": 4012.5, "sizes_mib": [4, 4096], "cv_pct": 0.8, "fp8": {"unavailable": "not on this GPU"}}))
    markdown = _measurements(fleet, "gpu-a01", "md")
    membw = markdown.split("## Probe membw: ok", 1)[1].split("## Probe", 1)[0]
    assert "| plateau\\_gbps | 4013 | GB/s |" in membw
    assert "| sizes\\_mib\\[1\\] | 4096 | MiB |" in membw
    assert "| cv\\_pct | 0.8 | % |" in membw
    assert "| fp8 | unavailable \\[" in membw and "not on this GPU" in markdown and "### GPUs" not in membw
    assert markdown.index("## Probe health") < markdown.index("## Probe membw")
    dossier = _dossier(fleet, "gpu-a01", "md")
    assert "## Probe membw: ok" in dossier and "### GPUs" not in dossier.split("## Probe membw: ok", 1)[1]


def test_health_data_of_unexpected_shape_still_renders(fleet):
    odd = {"gpus": [None, 3, {"index": "zero", "power": [], "pcie": {"gen_current": "Gen5"}, "nvlink": None}],
           "topology": {"pairs": [{"gpu_a": 0}, "x", {"gpu_a": 0, "gpu_b": 1, "link_class": {"unavailable": "?"}}]},
           "device_nodes": {"nodes": "none", "mismatches": None}, "cuda_init": {"ok": False, "error": "CUDA error: 999"},
           "xid_events": {"events": [1, {"xid": 13}]}, "errors": [{"section": "nvlink", "error": "boom"}], "driver": 5}
    fleet.write("odd", "health", fleet.envelope("odd", status="partial", data=odd))
    fleet.write("empty", "health", dict(fleet.envelope("empty"), data="not an object"))
    run = load_run(str(fleet.run_dir), ["odd", "empty"], {})
    for host in run.hosts:
        assert html.escape(host.name) in render_host_dossier_html(host, run)
        assert render_host_dossier_markdown(host, run)
    assert "CUDA error: 999" in render_fleet_index_markdown(run)


def test_atomic_rendering_creates_files_only_under_the_run_directory(fleet, tmp_path):
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import write_text_atomically

    before = set(tmp_path.rglob("*"))
    render_run(str(fleet.run_dir), fleet.expected, fleet.groups, write_text_atomically)
    created = set(tmp_path.rglob("*")) - before
    assert created and all(fleet.run_dir in path.parents for path in created)
    assert (fleet.run_dir / "gpu-e01" / "dossier.html").is_file()
    assert not [path for path in created if path.name.startswith(".tmp-")]
