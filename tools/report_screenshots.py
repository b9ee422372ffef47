"""Screenshots of the report pages as a person opens them, at a desktop and a phone's width, with what the layout test
measured in each.

    .venv/bin/python tools/report_screenshots.py [OUT]     (default OUT: docs/examples/screenshots)

Renders four runs with today's code (tests/unit/report/layout_pages.py: the CPU-path localhost run, the recorded
1 x H200 and 2 x H200 runs, a synthetic fleet of 100 hosts with failures), opens each run's index and one dossier in
headless Chromium at 1280 and 390 px (tests/unit/report/layout_browser.py), and writes OUT/<run>-<page>-<width>.png:
the top of the page, cut at the page's end or at HEIGHT px, whichever comes first; and
OUT/<run>-dossier-<width>-at-<anchor>.png (the 2 x H200 run): the window (800 px tall) opened at the id
nearest above the dossier's first plot (its section's heading, or the plot's own id).
tests/unit/report/test_report_layout_in_browser.py runs the same into a scratch folder and checks what was measured.
Needs Chromium ($GPUFLEET_CHROMIUM, /usr/bin/chromium, or chromium on the PATH).
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPORT_TESTS = os.path.join(ROOT, "tests", "unit", "report")
for _path in (os.path.join(ROOT, "collections"), REPORT_TESTS):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import layout_browser  # noqa: E402
import layout_pages  # noqa: E402

WIDTHS = (1280, 390)
HEIGHT = 2000          # the most of a page a screenshot keeps
ANCHOR_HEIGHT = 800    # a window's height, for the screenshot opened at a plot's section
PARALLEL = 3           # browsers at once: each waits on its own start more than it computes
ANCHOR_RUNS = ("h200x2",)  # the run whose dossier is also opened at its first plot (once more 600,000 px each)
IDS = re.compile(r'<([a-z0-9]+)\b[^>]*\bid="([^"]+)"')


def plot_anchor(dossier: str) -> str:
    """The id nearest above the dossier's first plot (the plot's own id when it has one): where a link to it lands."""
    text = open(dossier, encoding="utf-8").read()
    plot = text.find("<svg")
    if plot < 0:
        return ""
    end = text.find(">", plot)
    ids = [match.group(2) for match in IDS.finditer(text, 0, end + 1)]
    return ids[-1] if ids else ""


def capture(out: str, workdir: str, names=layout_pages.NAMES) -> list:
    """Render the runs under workdir, write the screenshots under out; one dict per page opened: run, page, width,
    screenshot, fragment and what layout_probe.js measured (found)."""
    os.makedirs(out, exist_ok=True)
    jobs = []
    for name in names:
        pages = layout_pages.build(name, workdir)
        anchor = plot_anchor(pages.dossier) if name in ANCHOR_RUNS else ""
        for width in WIDTHS:
            for kind, page in (("index", pages.index), ("dossier", pages.dossier)):
                jobs.append(dict(run=name, page=kind, path=page, width=width, height=HEIGHT, fragment="",
                                 screenshot=os.path.join(out, "%s-%s-%d.png" % (name, kind, width))))
            if anchor:
                shot = "%s-dossier-%d-at-%s.png" % (name, width, re.sub(r"[^A-Za-z0-9_.-]", "_", anchor))
                jobs.append(dict(run=name, page="dossier", path=pages.dossier, width=width, height=ANCHOR_HEIGHT,
                                 fragment=anchor, screenshot=os.path.join(out, shot)))

    def one(job):
        scratch = tempfile.mkdtemp(prefix="browser-", dir=workdir)
        job["found"] = layout_browser.open_page(job["path"], job["width"], job["height"], fragment=job["fragment"],
                                                screenshot=job["screenshot"], workdir=scratch)
        return job

    with ThreadPoolExecutor(PARALLEL) as pool:
        return list(pool.map(one, jobs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default=os.path.join(ROOT, "docs", "examples", "screenshots"))
    args = parser.parse_args()
    if layout_browser.CHROMIUM is None:
        print("no chromium: set GPUFLEET_CHROMIUM or install chromium", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="report-screenshots-") as workdir:
        for job in capture(os.path.abspath(args.out), workdir):
            found = job["found"]
            print("%s: %d x %d px of a page %d px tall, %d broken words, %d tall reason cells, %d plots" % (
                os.path.relpath(job["screenshot"]), found["width"], min(job["height"], found["contentHeight"]),
                found["contentHeight"], len(found["broken"]), len(found["tall"]), len(found["svgs"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
