"""A real headless browser opens the rendered pages: they render, a hostile host name stays text, and nothing is fetched.

Chromium is found at $GPUFLEET_CHROMIUM, /usr/bin/chromium, or as chromium / chromium-browser on the PATH; without it
the tests are skipped (CI installs it).
"""
import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import write_text_atomically
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run


def _find_chromium():
    for candidate in (os.environ.get("GPUFLEET_CHROMIUM"), "/usr/bin/chromium"):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("chromium") or shutil.which("chromium-browser")


CHROMIUM = _find_chromium()
NO_CHROMIUM = "no chromium: set GPUFLEET_CHROMIUM or install chromium (apt-get install chromium) to run the browser tests"
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
# The host-resolver rule makes every name lookup fail inside Chromium, so its own background requests
# (update and account services) never leave the machine; IP literals such as the control's 127.0.0.1 still work.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--disable-quic", "--host-resolver-rules=MAP * ~NOTFOUND")
# Requests the browser makes for itself (extension and component updates, sign-in), not for any page: the net log
# gives them no initiating origin. A file:// page's own requests carry its opaque origin, "null".
BROWSER_OWN_INITIATOR = "not an origin"


class _Elements(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []
        self.text = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def _parse(dom):
    parser = _Elements()
    parser.feed(dom)
    return parser.tags, "".join(parser.text)


def _chromium(tmp_path, name, page, *extra):
    profile = tmp_path / ("profile-" + name)
    argv = [CHROMIUM, *FLAGS, "--user-data-dir=%s" % profile, *extra, "--dump-dom", Path(page).as_uri()]
    completed = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stdout


def _net_log_events(path):
    text = Path(path).read_text(encoding="utf-8")
    try:
        log = json.loads(text)
    except ValueError:
        # A log the browser did not close: its event list ends in a comma and lacks "]}".
        log = json.loads(text.rstrip().rstrip(",") + "]}")
    return log["constants"], log["events"]


def _requests(path):
    """(url, initiator) of every URL request in a net log, from the events that carry them."""
    constants, events = _net_log_events(path)
    names = {number: name for name, number in constants["logEventTypes"].items()}
    urls, initiators = {}, {}
    for event in events:
        params = event.get("params")
        if not isinstance(params, dict):
            continue
        source = event["source"]["id"]
        if names.get(event["type"]) in ("REQUEST_ALIVE", "URL_REQUEST_START_JOB", "CORS_REQUEST") and "url" in params:
            urls.setdefault(source, params["url"])
        if "initiator" in params:
            initiators[source] = params["initiator"]
    return [(url, initiators.get(source, "")) for source, url in urls.items()]


def _page_requests(tmp_path, name, page):
    log = tmp_path / ("net-%s.json" % name)
    _chromium(tmp_path, name, page, "--log-net-log=%s" % log, "--net-log-capture-mode=Everything")
    return [(url, initiator) for url, initiator in _requests(log) if initiator != BROWSER_OWN_INITIATOR]


@pytest.fixture
def rendered(judged):
    run = render_run(str(judged.run_dir), judged.expected, judged.groups, write_text_atomically, judgement=judged.judgement)
    evil = {host.name: host for host in run.hosts}[judged.evil_host]
    judged.index_page = os.path.join(run.run_dir, "index.html")
    judged.evil_page = os.path.join(run.run_dir, evil.dir_name, "dossier.html")
    return judged


def test_the_index_renders_with_the_hostile_name_as_text(rendered, tmp_path):
    dom = _chromium(tmp_path, "index", rendered.index_page)
    tags, text = _parse(dom)
    assert rendered.judgement.run_id in text
    assert "Hosts, worst first" in text and "fail" in text and "unreachable" in text
    assert '<span class="state v-bad">fail</span>' in dom
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom and rendered.evil_host in text
    assert "script" not in tags and "img" not in tags
    assert "<script" not in dom.lower()


def test_the_hostile_hosts_dossier_renders_its_verdict_as_text(rendered, tmp_path):
    dom = _chromium(tmp_path, "dossier", rendered.evil_page)
    tags, text = _parse(dom)
    assert rendered.judgement.run_id in text
    assert "Host %s: fail" % rendered.evil_host in text and '<span class="state v-bad">fail</span></h1>' in dom
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
    assert "&lt;img src=x onerror=alert(2)&gt;" in dom
    assert "script" not in tags and "img" not in tags


def test_the_pages_make_no_network_request(rendered, tmp_path):
    for name, page in (("index", rendered.index_page), ("dossier", rendered.evil_page)):
        requests = _page_requests(tmp_path, name, page)
        assert not [url for url, unused_initiator in requests if not url.startswith(("file:", "data:"))], requests


def test_the_net_log_sees_a_page_request_and_the_policy_blocks_it(rendered, tmp_path):
    """Controls: without the policy a page's request shows in the net log; with it, the same request is never made."""
    control = tmp_path / "control.html"
    control.write_text('<!DOCTYPE html><p>control</p><img src="http://127.0.0.1:9/control.png">', encoding="utf-8")
    assert [url for url, unused_initiator in _page_requests(tmp_path, "control", control)] == \
        ["http://127.0.0.1:9/control.png"]
    injected = tmp_path / "injected.html"
    injected.write_text(Path(rendered.index_page).read_text(encoding="utf-8").replace(
        "</body>", '<img src="http://127.0.0.1:9/injected.png"></body>'), encoding="utf-8")
    assert _page_requests(tmp_path, "injected", injected) == []
