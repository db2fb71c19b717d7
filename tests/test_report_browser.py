"""The HTML report as a reader sees it: rendered by headless Chromium (marker ``chromium``).

Debian's ``chromium`` (``.ci/run`` installs it where apt is available; skipped with the
reason otherwise) opens the page of two validated sets, driven through the DevTools
protocol over a pipe (``--remote-debugging-pipe``: no port, no network, no extra
package), once as a phone (390 x 844 CSS px, mobile viewport) and once at 1400 px. For
each width the test reads the layout from the browser and takes a full-page screenshot,
then checks:

* every figure is decoded (no broken image), lies inside the viewport, and the pixels of
  the screenshot at its place are the embedded PNG (so it is visible, not covered);
* the verdict table is on screen: its verdict cells show their colour tint in the
  screenshot and the first verdict column is inside the viewport;
* the page never scrolls sideways (wide tables scroll inside their own box), and no text
  is smaller than 11 px (body paragraphs at least 14 px);
* the page logs no error on the console.
"""

import base64
import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import uqx
from uqx.dataio.model import from_arrays, stack
from uqx.report import write_report
from uqx.workflow.validation import validate

pytestmark = pytest.mark.chromium

IMG = '<img src="data:image/png;base64,'
#: CSS classes of the verdict cells -> background tint (uqx.report.render._CSS)
TINTS = {"v-valid": (0xDB, 0xEA, 0xF7), "v-invalid": (0xFB, 0xE1, 0xD3),
         "v-inconclusive": (0xFD, 0xF3, 0xC4), "v-none": (0xEC, 0xEC, 0xEC)}

LAYOUT_JS = r"""
(() => {
  const de = document.documentElement;
  const box = el => { const r = el.getBoundingClientRect();
    return {x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height}; };
  const imgs = [...document.images].map(im => ({...box(im), alt: im.alt,
    complete: im.complete, nw: im.naturalWidth, nh: im.naturalHeight, src: im.src}));
  const verdicts = [...document.querySelectorAll('table')].filter(t =>
    t.rows[0] && t.rows[0].cells[0].textContent === 'data set' &&
    t.rows[0].cells.length > 2 && t.rows[0].cells[2].textContent.startsWith('average'));
  const cells = verdicts.length ? [...verdicts[0].querySelectorAll('td[class^="v-"]')]
    .map(td => ({...box(td), cls: td.className, text: td.textContent})) : [];
  const text = [...document.querySelectorAll('p, li, td, th, figcaption, h1, h2, h3')]
    .filter(e => e.textContent.trim()).map(e => ({tag: e.tagName, cls: e.className,
      size: parseFloat(getComputedStyle(e).fontSize)}));
  return {iw: innerWidth, cw: de.clientWidth, sw: de.scrollWidth, sh: de.scrollHeight,
          imgs, n_verdict_tables: verdicts.length, cells, text,
          table: verdicts.length ? box(verdicts[0]) : null};
})()
"""


class Chromium:
    """Headless Chromium driven through the DevTools protocol on fds 3 and 4."""

    def __init__(self, exe, profile):
        to_chrome_r, self._w = os.pipe()
        self._r, from_chrome_w = os.pipe()
        args = ["--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
                "--hide-scrollbars", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run",
                "--disable-extensions", f"--user-data-dir={profile}", "about:blank"]
        self.proc = subprocess.Popen(
            ["bash", "-c", f'exec "$0" "$@" 3<&{to_chrome_r} 4>&{from_chrome_w}', exe, *args],
            pass_fds=(to_chrome_r, from_chrome_w), stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf, self._id, self.events = b"", 0, []
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=True)

    def _read(self):
        while b"\0" not in self._buf:
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise RuntimeError(f"chromium exited: {self.proc.stderr.read()[-2000:]!r}")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, session=False, **params):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def wait_event(self, name, timeout_msgs=10_000):
        for i, ev in enumerate(self.events):
            if ev.get("method") == name:
                del self.events[: i + 1]
                return ev
        for _ in range(timeout_msgs):
            ev = self._read()
            if ev.get("method") == name:
                return ev
            self.events.append(ev)
        raise RuntimeError(f"no {name}")

    def open(self, url, width, height, mobile):
        self.send("Emulation.setDeviceMetricsOverride", session=True, width=width,
                  height=height, deviceScaleFactor=1, mobile=mobile)
        self.events.clear()
        self.send("Page.navigate", session=True, url=url)
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression):
        out = self.send("Runtime.evaluate", session=True, expression=expression,
                        returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in out:
            raise RuntimeError(out["exceptionDetails"])
        return out["result"]["value"]

    def screenshot(self, width, height) -> Image.Image:
        data = self.send("Page.captureScreenshot", session=True, format="png",
                         captureBeyondViewport=True,
                         clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1})
        return Image.open(io.BytesIO(base64.b64decode(data["data"]))).convert("RGB")

    def console_errors(self):
        out = []
        for ev in self.events:
            if ev.get("method") == "Runtime.exceptionThrown":
                out.append(str(ev["params"]["exceptionDetails"])[:300])
            if ev.get("method") == "Log.entryAdded" and \
                    ev["params"]["entry"]["level"] == "error":
                out.append(ev["params"]["entry"]["text"][:300])
        return out

    def close(self):
        try:
            self.send("Browser.close")
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:  # pragma: no cover
            self.proc.kill()
            self.proc.wait()
        os.close(self._r)
        os.close(self._w)


def _chromium_exe():
    exe = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium")
                                       .exists() else None)
    if exe is None:
        pytest.skip("chromium not installed (.ci/run installs Debian's chromium where apt "
                    "is available: apt-get install chromium)")
    return exe


def _sets():
    rng = np.random.default_rng(11)
    out = []
    for name, M, with_x in (("first", 2000, True), ("second", 1500, False)):
        uE = rng.uniform(0.3, 2.0, M)
        X = rng.uniform(0, 1, M)
        E = uE * rng.standard_normal(M) * (1.0 if with_x else 1.6)
        out.append(from_arrays(E, uE, X=X if with_x else None, name=name))
    return stack(out)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    exe = _chromium_exe()
    tmp = tmp_path_factory.mktemp("report")
    ds = _sets()
    res = validate(ds, bootstrap=200, copies=50, compute=uqx.Compute(seed=1))
    path = write_report(res, tmp / "report.html", ds)
    browser = Chromium(exe, tmp / "profile")
    try:
        yield browser, path, path.read_text().count(IMG)
    finally:
        browser.close()


def _image_matches(shot: Image.Image, img: dict) -> tuple[float, float]:
    """Correlation and contrast ratio of the screenshot at the image's box vs the PNG."""
    x, y, w, h = (round(img[k]) for k in ("x", "y", "w", "h"))
    png = Image.open(io.BytesIO(base64.b64decode(img["src"].split(",", 1)[1])))
    size = (32, 32)
    a = np.asarray(shot.crop((x, y, x + w, y + h)).convert("L").resize(size), float)
    b = np.asarray(png.convert("RGB").convert("L").resize(size), float)
    a, b = a - a.mean(), b - b.mean()
    corr = float((a * b).sum() / np.sqrt((a * a).sum() * (b * b).sum()))
    return corr, float(a.std() / b.std())


@pytest.mark.parametrize("width, height, mobile", [(390, 844, True), (1400, 900, False)],
                         ids=["phone", "desktop"])
def test_reader_sees_every_figure_and_the_verdicts(page, width, height, mobile):
    browser, path, n_img = page
    browser.open(path.as_uri(), width, height, mobile)
    lay = browser.evaluate(LAYOUT_JS)
    assert lay["iw"] == width and lay["cw"] == width
    # no sideways scrolling of the page: wide tables scroll in their own box
    assert lay["sw"] <= lay["cw"], f"page {lay['sw']} px wide at {width} px"
    # every figure of the page decoded, on screen, and shown as embedded
    assert n_img == 1 + (6 + 1 + 2) + (6 + 1) and len(lay["imgs"]) == n_img
    shot = browser.screenshot(lay["cw"], lay["sh"])
    assert shot.size == (lay["cw"], lay["sh"])
    for img in lay["imgs"]:
        assert img["complete"] and img["nw"] > 0, f"broken image {img['alt']}"
        assert img["w"] > 100 and img["h"] > 50, img["alt"]
        assert img["x"] >= 0 and img["x"] + img["w"] <= lay["cw"] + 0.5, img["alt"]
        corr, contrast = _image_matches(shot, img)  # faded or covered figures fail
        # a sparse figure of thin lines shrunk to a phone width keeps ~0.8 (the browser's
        # and PIL's downscaling differ); a covered one falls near 0, a faded one fails
        # the contrast
        assert corr > 0.7 and 0.8 < contrast < 1.25, (img["alt"], corr, contrast)
    # the verdict table: one, its verdict cells tinted in the screenshot, the first
    # verdict column on screen
    assert lay["n_verdict_tables"] == 1 and len(lay["cells"]) >= 2
    px = np.asarray(shot)
    seen = set()
    for cell in lay["cells"]:
        x, y, w, h = (round(cell[k]) for k in ("x", "y", "w", "h"))
        if x + w > lay["cw"]:
            continue  # scrolled out of the table's box at phone width
        tint = np.array(TINTS[cell["cls"]])
        region = px[y + 2:y + h - 2, x + 2:x + w - 2].reshape(-1, 3)
        share = np.mean(np.abs(region.astype(int) - tint).max(axis=1) <= 3)
        assert share > 0.4, f"verdict cell {cell['text']!r} not tinted on screen"
        assert (region.min(axis=1) < 100).any(), f"no text in {cell['text']!r}"
        seen.add(round(cell["x"]))
    assert len(seen) >= 1 and lay["table"]["x"] >= 0
    # readable text
    sizes = [t["size"] for t in lay["text"]]
    assert min(sizes) >= 11, min(sizes)
    assert min(t["size"] for t in lay["text"] if t["tag"] == "P" and t["cls"] in ("", "p")) >= 14
    assert not browser.console_errors()
