"""Open a report page in headless Chromium at a given width: what layout_probe.js measured, and a screenshot.

Headless Chromium lays a page out at least 500 px wide whatever --window-size says, so the page is opened inside an
iframe of exactly the width under test, in a wrapper page at the top left of the window: the iframe is the page's
viewport (its media queries, its innerWidth), and the screenshot, cropped to the iframe, is what a phone shows.
The page itself carries a Content-Security-Policy that forbids scripts: the probe runs in a copy of the page (beside
it, so that its links resolve alike) whose policy also allows inline scripts, and posts its findings to the wrapper,
which writes them into its own DOM for --dump-dom. The copy renders exactly as the page does.

PNG handling is Python's standard library alone: a screenshot is cut to the page's height (rows from the bottom
dropped, which PNG's row filters allow without decoding) and recompressed at zlib level 9.
"""
from __future__ import annotations

import html
import json
import os
import re
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

from test_report_in_browser import CHROMIUM, FLAGS  # noqa: F401 (CHROMIUM re-exported for the test and the tool)

PROBE = Path(__file__).with_name("layout_probe.js")
CSP = re.compile(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">')
RESULT = re.compile(r"<pre id=\"layout-result\"[^>]*>(.*?)</pre>", re.S)
WRAPPER = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><style>html, body {{ margin: 0; padding: 0; overflow: hidden; }}
iframe {{ display: block; border: 0; width: {width}px; height: {height}px; }}</style></head>
<body><iframe src="{src}"></iframe><pre id="layout-result" hidden></pre>
<script>window.addEventListener("message", function (event) {{
  document.getElementById("layout-result").textContent = event.data; }});</script></body></html>
"""


def probe_copy(page: str) -> str:
    """A copy of page beside it (a name of its own, so that browsers in parallel never share one) that runs
    layout_probe.js; its path."""
    text = Path(page).read_text(encoding="utf-8")
    text, count = CSP.subn(lambda match: '<meta http-equiv="Content-Security-Policy" content="%s; script-src \'unsafe-inline\'">'
                           % match.group(1), text, count=1)
    assert count == 1, "no Content-Security-Policy in %s" % page
    assert "</body>" in text
    text = text.replace("</body>", "<script>%s</script></body>" % PROBE.read_text(encoding="utf-8"), 1)
    handle, copy = tempfile.mkstemp(prefix="layout-probe-", suffix=".html", dir=os.path.dirname(page))
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        stream.write(text)
    return copy


def open_page(page: str, width: int, height: int, fragment: str = "", screenshot: str = "", workdir: str = "") -> dict:
    """Open page (a file, with #fragment when given) in a viewport width x height; what the probe found.

    screenshot: a PNG path for what the window showed (width x height), cut to the page's height when shorter."""
    workdir = workdir or tempfile.mkdtemp(prefix="layout-")
    copy = probe_copy(page)
    src = Path(copy).as_uri() + ("#" + fragment if fragment else "")
    wrapper = tempfile.NamedTemporaryFile("w", suffix=".html", dir=workdir, delete=False, encoding="utf-8")
    with wrapper:
        wrapper.write(WRAPPER.format(width=width, height=height, src=html.escape(src, quote=True)))
    profile = tempfile.mkdtemp(prefix="profile-", dir=workdir)
    argv = [CHROMIUM, *FLAGS, "--user-data-dir=%s" % profile, "--hide-scrollbars",
            "--window-size=%d,%d" % (width, height), "--virtual-time-budget=20000", "--dump-dom"]
    if screenshot:
        argv.append("--screenshot=%s" % screenshot)
    argv.append(Path(wrapper.name).as_uri())
    completed = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, cwd=workdir)
    assert completed.returncode == 0, completed.stderr[-3000:]
    match = RESULT.search(completed.stdout)
    assert match and match.group(1).strip(), "the probe reported nothing for %s at %d px: %s" % (
        page, width, completed.stderr[-2000:])
    found = json.loads(html.unescape(match.group(1)))
    assert "error" not in found, found.get("error")
    if screenshot:
        assert os.path.isfile(screenshot), completed.stderr[-2000:]
        if not fragment:
            crop_png(screenshot, min(height, int(found["contentHeight"])))
    return found


def _chunks(data: bytes):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position = 8
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        yield kind, data[position + 8:position + 8 + length]
        position += 12 + length


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def read_png(path: str):
    """(width, height, bytes per pixel, the filtered scanlines) of an 8-bit, non-interlaced PNG."""
    header, idat, channels = None, b"", {0: 1, 2: 3, 4: 2, 6: 4}
    for kind, body in _chunks(Path(path).read_bytes()):
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    width, height, depth, colour, unused_compression, unused_filter, interlace = header
    assert depth == 8 and interlace == 0 and colour in channels, header
    pixel = channels[colour]
    raw = zlib.decompress(idat)
    stride = 1 + width * pixel
    return width, height, pixel, [raw[row * stride:(row + 1) * stride] for row in range(height)], header


def crop_png(path: str, height: int) -> None:
    """Keep the top `height` rows of the PNG at path, recompressed at zlib's level 9."""
    width, old_height, unused_pixel, rows, header = read_png(path)
    height = max(1, min(height, old_height))
    ihdr = struct.pack(">IIBBBBB", width, height, *header[2:])
    body = zlib.compress(b"".join(rows[:height]), 9)
    Path(path).write_bytes(b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", body) + _chunk(b"IEND", b""))


def distinct_rows(path: str) -> int:
    """How many different scanlines the PNG holds (filtered as stored): a blank image holds a handful, a page of
    text and plots hundreds."""
    return len(set(read_png(path)[3]))
