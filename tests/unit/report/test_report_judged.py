"""The dossiers and the fleet index of a run the judge has judged (hand-made judgements over the fake runs)."""
import json
import html
import os
import re
import time

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.model import Check, FleetJudgement, HostVerdict, worst_verdict
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.index_page import render_fleet_index_html, render_fleet_index_markdown
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.markup import markdown_escape
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.paths import host_dir_name
from report_writes import Written  # noqa: E402  pylint: disable=import-error

CSP = "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">"
EXPORTS = ("fleet.json", "junit.xml", "gpufleet.prom")


def render(judged, **kwargs):
    written = Written()
    render_run(str(judged.run_dir), judged.expected, judged.groups, written.__setitem__, judgement=judged.judgement, **kwargs)
    root = os.path.realpath(str(judged.run_dir))
    return {os.path.relpath(path, root): text for path, text in written.items()}


def dossier(written, host, kind):
    return written[host_dir_name(host) + "/dossier." + kind]


def test_a_judged_run_writes_the_exports_beside_the_pages_and_nothing_outside(judged):
    written = render(judged)
    expected = {"index.html", "index.md"} | set(EXPORTS)
    for host in judged.judgement.hosts:
        expected |= {host_dir_name(host) + "/" + name for name in ("dossier.html", "dossier.md", "measurements.html",
                                                                   "measurements.md")}
        expected.add("outcomes/%s.json" % host_dir_name(host))  # the host's outcome (docs/acting.md)
    assert set(written) == expected
    assert all(not path.startswith("..") and not os.path.isabs(path) for path in written)


def test_without_a_judgement_no_export_is_written(fleet):
    written = Written()
    render_run(str(fleet.run_dir), fleet.expected, fleet.groups, written.__setitem__)
    assert not [path for path in written if os.path.basename(path) in EXPORTS]


def test_every_html_page_forbids_network_requests(judged, fleet):
    pages = [text for path, text in render(judged).items() if path.endswith(".html")]
    unjudged = Written()
    render_run(str(fleet.run_dir), fleet.expected, fleet.groups, unjudged.__setitem__)
    pages += [text for path, text in unjudged.items() if path.endswith(".html")]
    assert len(pages) > 10
    for page in pages:
        head = page.split("</head>", 1)[0]
        assert CSP in head
        assert head.index(CSP) < head.index("<style>")
        assert "<script" not in page.lower() and "<img" not in page.lower()
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)


def test_dossier_gives_the_verdict_first_then_every_check_then_the_measurements(judged):
    written = render(judged)
    markdown = dossier(written, "gpu-a01", "md")
    markers = ("# Host gpu-a01: fail", "6 checks: 1 fail, 1 warn, 4 pass", "## What to do",
               "## Other checks (4), worst first", "## Probe results",
               "## Probe health: ok", "### Every measurement", "### Reproducibility", "## Probe membw: ok")
    order = [markdown.index(marker) for marker in markers]
    assert order == sorted(order)
    verdict_section = markdown.split("# Host gpu-a01: fail", 1)[1].split("## Other checks", 1)[0]
    for check in judged.judgement.hosts["gpu-a01"].checks:
        if check.status in ("fail", "warn"):
            assert markdown_escape(check.reason) in verdict_section.split("| SKU |", 1)[0]
    assert "| SKU | h200-sxm |" in verdict_section and "| previous run | %s |" % judged.previous_run_id in verdict_section
    page = dossier(written, "gpu-a01", "html")
    assert page.index('<h1>Host gpu-a01: <span class="state v-bad">fail</span></h1>') < page.index('<p id="verdict">6 checks') \
        < page.index('<h2 id="todo">') \
        < page.index('<h2 id="checks">') < page.index("<h2>Probe results</h2>") < page.index('<h2 id="probe-health">')
    assert "<title>gpu-a01: fail (run " in page


def test_unknown_sku_says_why(judged):
    markdown = dossier(render(judged), "cpu-b01", "md")
    assert "| SKU | unknown |" in markdown
    assert "| why it is unknown | no NVIDIA GPU was found: nothing to identify |" in markdown


def test_every_check_is_in_its_hosts_dossier_with_all_its_fields(judged):
    written = render(judged)
    for name, verdict in judged.judgement.hosts.items():
        markdown, page = dossier(written, name, "md"), dossier(written, name, "html")
        rows = [line for line in markdown.split("## What to do", 1)[1].split("## Probe results", 1)[0].splitlines()
                if re.match(r"^\| (\*\*)?(pass|warn|fail|error|skip)(\*\*)? \|", line)]
        assert len(rows) == len(verdict.checks), name
        for check in verdict.checks:
            assert markdown_escape(check.id) in markdown and markdown_escape(check.reason) in markdown
            assert html.escape(check.reason, quote=False) in page.replace("&#34;", '"').replace("&#39;", "'")
            if check.reference_source:
                assert markdown_escape(check.reference_source) in markdown
            if check.threshold:
                assert markdown_escape(check.threshold) in markdown


def test_failing_checks_are_highlighted_and_carry_gpu_value_reference_source_threshold(judged):
    written = render(judged)
    markdown, page = dossier(written, "gpu-a01", "md"), dossier(written, "gpu-a01", "html")
    assert ("| **fail** | health: volatile uncorrected count (health.volatile\\_uncorrected\\_count) | GPU 1 (%s) | 2 vs 0; == 0; rule "
            "| GPU 1 has 2 volatile uncorrected ECC errors: drain it and run the field diagnostic | — |" % judged.uuid1) in markdown
    assert ("| **warn** | health: pcie link width (health.pcie\\_link\\_width) | GPU 1 (%s) | 8 vs 16; == maximum; the GPU's maximum |"
            % judged.uuid1) in markdown
    assert re.search(r"\| pass \| membw: plateau gbps \(membw.plateau\\_gbps\) \| — \| 401\d(\.5)? GB/s \| 4800 GB/s \| "
                     r"baselines/h200-sxm.yml: NVIDIA H200 datasheet \|", markdown)
    assert re.search(r'<tr class="f-bad"><td><span class="state v-bad">fail</span></td><td>health: volatile uncorrected count'
                     r'<span class="note"><code>health.volatile_uncorrected_count</code></span></td><td>GPU 1 \(GPU-9f8e', page)
    assert ('<tr class="f-warn"><td><span class="state v-warn">warn</span></td><td>health: pcie link width<span class="note">'
            '<code>health.pcie_link_width</code>') in page
    # worst first: the failing check is the first row of the table
    first_row = markdown.split("| --- | --- | --- | --- | --- | --- |\n", 1)[1].splitlines()[0]
    assert first_row.startswith("| **fail** |")


def test_a_measurement_shows_beside_the_reference_of_the_check_that_judged_it(judged):
    written = render(judged)
    markdown, page = written["gpu-a01/measurements.md"], written["gpu-a01/measurements.html"]
    assert "| gpus\\[1\\].ecc.volatile\\_uncorrected\\_count | 2 |  | 0 (rule) | **fail** health.volatile\\_uncorrected\\_count" \
        " (== 0) |" in markdown
    assert ("| devices\\[0\\].plateau.plateau\\_gbps | 4013 | GB/s | 4800 GB/s (baselines/h200-sxm.yml: NVIDIA H200 datasheet) "
            "| pass") in markdown
    assert '<tr class="f-bad"><td><code>gpus[1].ecc.volatile_uncorrected_count</code></td><td>2</td>' in page
    # a measurement no check holds still shows, with no reference
    assert "| devices\\[0\\].repeats.cv\\_pct | 0.8 | % | — | — |" in markdown


def _host_rows(markdown):
    """The rows of the hosts table (the "What to do" table above it lists the hosts that did not pass)."""
    hosts = markdown.split("## Hosts, worst first", 1)[1]
    return [line for line in hosts.splitlines() if line.startswith("| [") and "dossier.md" in line]


def test_fleet_index_counts_first_then_hosts_worst_first(judged):
    written = render(judged)
    markdown = written["index.md"]
    counts = markdown.split("## Hosts", 1)[0]
    for verdict, count in (("fail", 2), ("error", 2), ("unreachable", 1), ("warn", 1), ("pass", 2)):
        assert "| %s | %d |" % (verdict, count) in counts
    rows = _host_rows(markdown)
    verdicts = [row.split(" | ")[1].strip("*") for row in rows]
    assert verdicts == ["fail", "fail", "error", "error", "unreachable", "warn", "pass", "pass"]
    names = [re.match(r"\| \[(.*?)\]\(", row).group(1) for row in rows]
    assert names[1:] == ["gpu-a01", "gpu-c01", "gpu-d01", "gpu-e01", "gpu-a02", "cpu-b01", "gpu-a03"]
    page = written["index.html"]
    positions = [page.index('href="%s/dossier.html"' % host_dir_name(name).replace("%", "%25")) for name in
                 ("gpu-a01", "gpu-c01", "gpu-e01", "gpu-a02", "gpu-a03")]
    assert positions == sorted(positions)
    header = [line for line in markdown.split("## Hosts, worst first", 1)[1].splitlines() if line.startswith("| host |")][0]
    assert header == "| host | verdict | machine | membw: plateau gbps (GB/s) | drift | reasons |"
    assert rows[1].startswith("| [gpu-a01](gpu-a01/dossier.md) (rack1) | **fail** | h200-sxm, 2 × NVIDIA H200, driver 580.159.04, "
                              "CUDA init: ok | 4013 GB/s (median 4010 GB/s) | — | GPU 1 has 2 volatile")


def test_outliers_and_drift_are_highlighted_in_the_index(judged):
    written = render(judged)
    row = [line for line in _host_rows(written["index.md"]) if "gpu-a02" in line][0]
    assert "| **3500 GB/s (median 4010 GB/s; drift: warn, previous 4005 GB/s)** (outlier or drift) |" in row
    assert "| **membw.plateau\\_gbps: 3500 GB/s (previous 4005 GB/s)** (outlier or drift) |" in row
    page = written["index.html"]
    cell = re.search(r'<td class="f-warn" title="([^"]*)">3500 GB/s<span class="note">median 4010 GB/s; drift: warn, '
                     r'previous 4005 GB/s</span></td>', page)
    assert cell and "8.5 MAD below the fleet median" in cell.group(1) and "fell 12.6 %" in cell.group(1)
    assert '<span class="f-warn" title="the plateau fell 12.6 % since the previous run">membw.plateau_gbps: 3500 GB/s' in page
    # a host within the fleet is not highlighted
    assert re.search(r"<td>4010 GB/s<span class=\"note\">median 4010 GB/s</span></td>", page)


def test_groups_failed_hosts_unmatched_rules_and_statistics_in_the_index(judged):
    written = render(judged)
    markdown, page = written["index.md"], written["index.html"]
    assert "| rack1 | 4 | fail 1, warn 1, pass 2 | gpu-a01, gpu-a02 |" in markdown
    assert "| rack2 | 2 | error 1, unreachable 1 | gpu-c01, gpu-e01 |" in markdown
    failed = markdown.split("## Unreachable and failed hosts", 1)[1].split("## Rules", 1)[0]
    for host in ("gpu-a01", "gpu-c01", "gpu-d01", "gpu-e01"):
        assert "[%s](%s/dossier.md)" % (host, host) in failed
    assert "gpu-a02" not in failed and "gpu-a03" not in failed
    assert "(unreachable): ssh: connect to host gpu-e01 port 22: Connection refused" in failed
    assert ("| gemm: fp8 tflops (gemm.fp8\\_tflops) | gemm | rule gemm.fp8\\_tflops matched no result: no host ran the gemm probe |"
            in markdown)
    assert "<code>gemm.fp8_tflops</code>" in page
    assert "| h200-sxm | membw.plateau\\_gbps | 4010 GB/s | 6 GB/s | 3 |" in markdown
    assert "compared with run %s" % judged.previous_run_id in markdown


def test_previous_run_id_argument_overrides_the_judgements(judged):
    written = render(judged, previous_run_id="20261101T000000Z-1")
    assert "compared with run 20261101T000000Z-1" in written["index.md"]
    assert json.loads(written["fleet.json"])["previous_run_id"] == "20261101T000000Z-1"


def test_judged_markdown_tables_keep_their_shape_and_hold_no_html(judged):
    checked = 0
    for path, text in render(judged).items():
        if not path.endswith(".md"):
            continue
        lines = text.splitlines()
        for number, line in enumerate(lines):
            if re.match(r"^\|( --- \|)+$", line):
                header = len(re.findall(r"(?<!\\)\|", lines[number - 1]))
                following = number + 1
                while following < len(lines) and lines[following].startswith("|"):
                    assert len(re.findall(r"(?<!\\)\|", lines[following])) == header, (path, lines[following])
                    following += 1
                    checked += 1
        assert re.search(r"(?<!\\)<(?!br>)", text) is None, path
    assert checked > 300


def test_a_host_only_the_judge_knows_and_a_host_it_did_not_judge_both_render(judged):
    judgement = judged.judgement
    judgement.hosts["gpu-z99"] = HostVerdict("gpu-z99", "unreachable", ["never answered"], [], groups=["rack9"])
    del judgement.hosts["gpu-a03"]
    written = render(judged)
    assert "gpu-z99/dossier.html" in written
    assert "| rack9 | 1 | unreachable 1 | gpu-z99 |" in written["index.md"]
    a03 = [line for line in _host_rows(written["index.md"]) if "gpu-a03" in line][0]
    assert "| **not judged** |" in a03
    assert "the judge gave no verdict for this host" in dossier(written, "gpu-a03", "md")


def test_the_index_stays_one_row_per_host_and_fast_for_a_thousand_hosts(tmp_path):
    run_dir = tmp_path / "20261130T000000Z-1"
    run_dir.mkdir()
    names = ["node-%04d" % number for number in range(1000)]
    hosts = {}
    for number, name in enumerate(names):
        status = "fail" if number % 97 == 0 else ("warn" if number % 13 == 0 else "pass")
        checks = [Check(id="fleet.membw.plateau_gbps", host=name, probe="membw", status=status, gpu_index=gpu,
                        value=4000.0 - (300 if status != "pass" else 0) + gpu, unit="GB/s", reference=4003.5,
                        reason="within the fleet" if status == "pass" else "an outlier")
                  for gpu in range(8)]
        checks += [Check(id="health.ecc", host=name, probe="health", status="pass", reason="ok", gpu_index=gpu)
                   for gpu in range(8)]
        verdict = {"fail": "fail", "warn": "warn"}.get(status, "pass")
        hosts[name] = HostVerdict(name, verdict, [] if verdict == "pass" else ["an outlier"] * 12, checks,
                                  sku="h200-sxm", groups=["rack%02d" % (number // 40)])
    judgement = FleetJudgement("20261130T000000Z-1", hosts, fleet_statistics={"h200-sxm": {
        "membw.plateau_gbps": {"median": 4003.5, "mad": 2.0, "count": 8000, "unit": "GB/s"}}})
    run = load_run(str(run_dir), names, {})
    started = time.monotonic()
    page = render_fleet_index_html(run, judgement)
    markdown = render_fleet_index_markdown(run, judgement)
    assert time.monotonic() - started < 20
    assert "<svg" not in page
    hosts_table = page.split("<h2>Hosts, worst first</h2>", 1)[1]
    assert hosts_table.count("<tr><td><a href=") + hosts_table.count('<tr class="f-bad"><td><a href=') == 1000
    assert len(_host_rows(markdown)) == 1000
    assert len(page) < 6_000_000
    assert "(worst of 8)" in page and "<strong>+11 more</strong>" in page
    assert [line for line in markdown.splitlines() if line.startswith("| fail |")] == ["| fail | 11 |"]


def test_the_hand_made_judgement_is_consistent_with_the_model(judged):
    for name, verdict in judged.judgement.hosts.items():
        assert all(check.host == name for check in verdict.checks)
        assert len(verdict.reasons) == len([check for check in verdict.checks if check.status not in ("pass", "skip")]) \
            or verdict.verdict in ("error", "unreachable")
        if verdict.verdict in ("fail", "warn", "pass"):
            assert verdict.verdict == worst_verdict([check.status for check in verdict.checks])


def test_the_dossier_has_a_before_and_after_table_of_every_drift_check(judged):
    written = render(judged)
    markdown = [text for path, text in written.items() if path.endswith("gpu-a02/dossier.md")][0]
    section = markdown.split("## Since run %s: before and after" % judged.previous_run_id, 1)[1].split("## Other checks", 1)[0]
    assert "| membw: plateau gbps (membw.plateau\\_gbps) | — | 4005 GB/s | 3500 GB/s | **warn** |" in section
    html = [text for path, text in written.items() if path.endswith("gpu-a02/dossier.html")][0]
    assert 'id="changes"' in html and "<td>4005 GB/s</td><td>3500 GB/s</td>" in html


def test_settings_unlike_most_of_their_sku_are_listed_in_the_index_and_fleet_json(judged):
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.settings import Minority
    minority = Minority("h200-sxm", "tuning.pcie_max_payload_bytes", "PCIe MaxPayload", "256 B", 3, 4,
                        (("gpu-a01<script>", "128 B"),))
    judged.judgement.setting_minorities = [minority.to_dict()]
    written = render(judged)
    assert ("- PCIe MaxPayload: 1 of 4 h200-sxm hosts have 128 B (gpu-a01\\<script\\>); 3 have 256 B"
            in written["index.md"])
    page = written["index.html"]
    assert "gpu-a01&lt;script&gt;: 128 B" in page and "<code>tuning.pcie_max_payload_bytes</code>" in page
    assert json.loads(written["fleet.json"])["setting_minorities"][0]["hosts"] == [{"host": "gpu-a01<script>", "value": "128 B"}]
    judged.judgement.setting_minorities = []
    assert "None: every setting compared is the same" in render(judged)["index.md"]


def test_slow_hosts_are_listed_in_the_index_and_fleet_json_with_their_times(judged):
    """Issue 45: one host of eight slept 40 s before each probe; nothing in the index or fleet.json named it."""
    judged.judgement.slow_probes = [{"group": "h200-sxm", "probe": "health", "median_s": 2.3, "compared_hosts": 8,
                                     "hosts": [{"host": "gpu-a05<b>", "duration_s": 42.3, "over_s": 40.0}]}]
    written = render(judged)
    assert "- h200-sxm, probe health (median 2.3 s over 8 hosts): gpu-a05\\<b\\> 42.3 s (+40.0 s)" in written["index.md"]
    assert "gpu-a05&lt;b&gt;: 42.3 s (+40.0 s)" in written["index.html"]
    exported = json.loads(written["fleet.json"])
    assert exported["slow_probes"][0]["hosts"] == [{"host": "gpu-a05<b>", "duration_s": 42.3, "over_s": 40.0}]
    judged.judgement.slow_probes = []
    assert "None: no probe took much longer on a host" in render(judged)["index.md"]
