"""Open a report in headless Chromium and check it really renders.

Talks the Chrome DevTools Protocol over ``--remote-debugging-pipe`` (file
descriptors 3 and 4, NUL-separated JSON), so it needs nothing beyond the
standard library, numpy and a ``chromium`` binary: no websocket client, no
Node. One :func:`check_report` call:

1. starts Chromium headless with a fresh, empty ``--user-data-dir`` and the
   network emulated as offline;
2. records console messages, uncaught exceptions, log errors and every
   ``Network.requestWillBeSent`` URL;
3. loads the file, waits until the page says every figure is drawn
   (``<body data-plots-rendered>``) and counts plotly's ``.main-svg`` and
   ``.plot-container`` elements;
4. takes a full-page PNG screenshot and counts its distinct colours and the
   share of pixels that differ from the background.

The result says whether there were console errors, whether all plots
rendered, whether the screenshot is blank and whether any request went
anywhere but ``file:`` or ``data:``.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                  "--mute-audio", "--no-default-browser-check", "--disable-extensions",
                  "--remote-debugging-pipe"]


class BrowserError(RuntimeError):
    """Chromium could not be started or stopped answering."""


def find_chromium() -> str | None:
    for cand in (os.environ.get("CHROMIUM"), "/usr/bin/chromium"):
        if cand and os.access(cand, os.X_OK):
            return cand
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


class Chromium:
    """A headless Chromium driven over the DevTools pipe. Use as a context manager."""

    def __init__(self, exe: str, *, width: int = 1280, height: int = 900, timeout: float = 60.0):
        self.exe, self.width, self.height, self.timeout = exe, width, height, timeout
        self.events: list[dict] = []
        self._id = 0
        self._buf = b""
        self.profile_dir = tempfile.mkdtemp(prefix="kvperf-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def child_fds():  # runs in the child before exec: put the pipe ends on fds 3 and 4
            a = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [exe, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile_dir}",
                f"--window-size={width},{height}", "about:blank"]
        self.stderr = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=self.stderr, close_fds=False,
                                         preexec_fn=child_fds)
        except OSError as exc:
            shutil.rmtree(self.profile_dir, ignore_errors=True)
            raise BrowserError(f"cannot start {exe}: {exc}") from None
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        self.session: str | None = None

    # ---- protocol ---------------------------------------------------------
    def _send(self, method: str, params: dict | None = None, session: str | None = None) -> int:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        try:
            while data:
                n = os.write(self._to_child, data)
                data = data[n:]
        except BrokenPipeError:
            raise BrowserError(f"Chromium exited: {self._stderr_tail()}") from None
        return self._id

    def _read_one(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("timed out waiting for Chromium")
            ready, _, _ = select.select([self._from_child], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise BrowserError(f"Chromium closed the pipe: {self._stderr_tail()}")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, params: dict | None = None, *, session: str | None = "page",
             timeout: float | None = None) -> dict:
        """Send a command and wait for its result; events that arrive meanwhile are kept."""
        sid = self.session if session == "page" else session
        mid = self._send(method, params, sid)
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            msg = self._read_one(deadline)
            if msg.get("id") == mid:
                if "error" in msg:
                    raise BrowserError(f"{method}: {msg['error'].get('message')}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_event(self, method: str, timeout: float | None = None) -> dict:
        for ev in self.events:
            if ev["method"] == method:
                return ev
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            msg = self._read_one(deadline)
            if "method" in msg:
                self.events.append(msg)
                if msg["method"] == method:
                    return msg

    def _stderr_tail(self) -> str:
        try:
            self.stderr.seek(0)
            return self.stderr.read().decode(errors="replace")[-800:]
        except (OSError, ValueError):
            return ""

    # ---- lifecycle -----------------------------------------------------------
    def open_page(self, *, offline: bool = True) -> None:
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=None)
        att = self.call("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True},
                        session=None)
        self.session = att["sessionId"]
        for m in ("Page.enable", "Runtime.enable", "Log.enable", "Network.enable"):
            self.call(m)
        if offline:
            self.call("Network.emulateNetworkConditions",
                      {"offline": True, "latency": 0, "downloadThroughput": -1,
                       "uploadThroughput": -1})
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height, "deviceScaleFactor": 1,
                   "mobile": False})

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                try:
                    self._send("Browser.close")
                except BrowserError:
                    pass
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=10)
        finally:
            for fd in (self._to_child, self._from_child):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.stderr.close()
            shutil.rmtree(self.profile_dir, ignore_errors=True)

    def __enter__(self) -> "Chromium":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass
class CheckResult:
    path: Path
    figures_expected: int
    figures_rendered: int          # plot divs that contain a plotly .main-svg
    main_svgs: int
    plot_containers: int
    console_errors: list[str]
    requests: list[str]            # every URL the page asked for
    screenshot: Path | None
    distinct_colours: int
    ink_fraction: float            # share of screenshot pixels not in the background colour
    load_s: float                  # navigation start -> every figure drawn, seconds
    page_height_px: int
    extra: dict = field(default_factory=dict)

    @property
    def external_requests(self) -> list[str]:
        return [u for u in self.requests if not u.startswith(("file:", "data:", "about:"))]

    @property
    def blank(self) -> bool:
        return self.distinct_colours < 32 or self.ink_fraction < 0.01

    @property
    def ok(self) -> bool:
        return (not self.console_errors and not self.external_requests and not self.blank
                and self.figures_rendered == self.figures_expected
                and self.plot_containers >= self.figures_expected)

    def summary(self) -> str:
        lines = [
            f"report:            {self.path} ({self.path.stat().st_size / 1e6:.2f} MB)",
            f"figures rendered:  {self.figures_rendered}/{self.figures_expected} "
            f"({self.main_svgs} .main-svg, {self.plot_containers} .plot-container)",
            f"load + draw time:  {self.load_s:.2f} s",
            f"console errors:    {len(self.console_errors)}"
            + "".join(f"\n  {e}" for e in self.console_errors[:10]),
            f"requests:          {len(self.requests)} "
            f"({len(self.external_requests)} not file:/data:)"
            + "".join(f"\n  {u}" for u in self.external_requests[:10]),
            f"screenshot:        {self.screenshot} ({self.distinct_colours} distinct colours, "
            f"{self.ink_fraction:.1%} non-background pixels, page {self.page_height_px} px tall)",
            f"verdict:           {'OK' if self.ok else 'FAILED'}",
        ]
        return "\n".join(lines)


_WAIT_JS = """
new Promise(function (resolve) {
  var t0 = performance.now();
  (function poll() {
    var b = document.body;
    var done = b && b.hasAttribute("data-plots-rendered");
    if (done || performance.now() - t0 > %d) {
      var divs = document.querySelectorAll("div.plot");
      var drawn = 0;
      divs.forEach(function (d) { if (d.querySelector(".main-svg")) { drawn++; } });
      resolve(JSON.stringify({
        expected: b ? parseInt(b.getAttribute("data-figures") || "0", 10) : -1,
        divs: divs.length, drawn: drawn,
        svgs: document.querySelectorAll(".main-svg").length,
        containers: document.querySelectorAll(".plot-container").length,
        flag: b ? b.getAttribute("data-plots-rendered") : null,
        height: document.documentElement.scrollHeight,
        title: document.title
      }));
    } else { setTimeout(poll, 25); }
  })();
})
"""


def check_report(path: str | Path, *, screenshot: str | Path | None = None,
                 chromium: str | None = None, timeout: float = 60.0,
                 width: int = 1280, height: int = 900,
                 max_screenshot_height: int = 12000) -> CheckResult:
    """Load ``path`` in headless Chromium (offline) and report what happened."""
    path = Path(path).resolve()
    exe = chromium or find_chromium()
    if exe is None:
        raise BrowserError("no Chromium found (set $CHROMIUM or install chromium)")
    with Chromium(exe, width=width, height=height, timeout=timeout) as br:
        br.open_page(offline=True)
        t0 = time.monotonic()
        nav = br.call("Page.navigate", {"url": path.as_uri()})
        if nav.get("errorText"):
            raise BrowserError(f"navigation failed: {nav['errorText']}")
        br.wait_event("Page.loadEventFired")
        res = br.call("Runtime.evaluate", {"expression": _WAIT_JS % int(timeout * 1000),
                                           "awaitPromise": True, "returnByValue": True},
                      timeout=timeout + 10)
        load_s = time.monotonic() - t0
        if "exceptionDetails" in res:
            raise BrowserError(f"page check failed: {res['exceptionDetails'].get('text')}")
        info = json.loads(res["result"]["value"])
        shot_path = None
        full_h = min(int(info["height"]), max_screenshot_height)
        br.call("Emulation.setDeviceMetricsOverride",
                {"width": width, "height": max(full_h, 1), "deviceScaleFactor": 1,
                 "mobile": False})
        png = base64.b64decode(br.call("Page.captureScreenshot", {"format": "png"})["data"])
        br.call("Emulation.setDeviceMetricsOverride",
                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        if screenshot is not None:
            shot_path = Path(screenshot)
            shot_path.parent.mkdir(parents=True, exist_ok=True)
            shot_path.write_bytes(png)
        colours, ink = colour_stats(png)
        # Let late console messages arrive.
        br.call("Runtime.evaluate", {"expression": "1", "returnByValue": True})
        errors, requests = _collect(br.events)
    return CheckResult(path, info["expected"], info["drawn"], info["svgs"], info["containers"],
                       errors, requests, shot_path, colours, ink, load_s, int(info["height"]),
                       extra=info)


def _collect(events: list[dict]) -> tuple[list[str], list[str]]:
    errors, requests = [], []
    for ev in events:
        m, p = ev["method"], ev.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            errors.append("console." + p["type"] + ": " + " ".join(
                str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
        elif m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            errors.append("exception: " + str(d.get("exception", {}).get("description")
                                              or d.get("text")))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            e = p["entry"]
            errors.append(f"log ({e.get('source')}): {e.get('text')} {e.get('url', '')}".strip())
        elif m == "Network.requestWillBeSent":
            requests.append(p.get("request", {}).get("url", ""))
        elif m == "Network.loadingFailed" and not p.get("canceled"):
            errors.append(f"network: {p.get('errorText')} (request {p.get('requestId')})")
    return errors, requests


# ---- PNG -----------------------------------------------------------------------

def decode_png(data: bytes) -> np.ndarray:
    """8-bit, non-interlaced greyscale/RGB/RGBA PNG -> uint8 array (h, w, channels)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat = 8, []
    width = height = ctype = None
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            width, height = int.from_bytes(body[:4], "big"), int.from_bytes(body[4:8], "big")
            depth, ctype, interlace = body[8], body[9], body[12]
            if depth != 8 or interlace or ctype not in (0, 2, 4, 6):
                raise ValueError(f"unsupported PNG (depth {depth}, colour type {ctype})")
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    bpp = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8)
    stride = width * bpp
    raw = raw[: height * (stride + 1)].reshape(height, stride + 1)
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.uint8)
    for y in range(height):
        f, line = raw[y, 0], raw[y, 1:]
        if f == 0:
            cur = line.copy()
        elif f == 1:
            cur = (np.cumsum(line.reshape(width, bpp).astype(np.uint32), axis=0) & 0xFF
                   ).astype(np.uint8).reshape(-1)
        elif f == 2:
            cur = line + prev
        elif f == 3:
            cur = _unfilter_scalar(line, prev, bpp, avg=True)
        elif f == 4:
            cur = _unfilter_scalar(line, prev, bpp, avg=False)
        else:
            raise ValueError(f"bad PNG filter {f}")
        out[y] = cur
        prev = cur
    return out.reshape(height, width, bpp)


def _unfilter_scalar(line: np.ndarray, prev: np.ndarray, bpp: int, *, avg: bool) -> np.ndarray:
    cur = bytearray(line.tobytes())
    up = prev.tobytes()
    n = len(cur)
    if avg:
        for i in range(n):
            left = cur[i - bpp] if i >= bpp else 0
            cur[i] = (cur[i] + ((left + up[i]) >> 1)) & 0xFF
    else:
        for i in range(n):
            if i >= bpp:
                a, c = cur[i - bpp], up[i - bpp]
            else:
                a = c = 0
            b = up[i]
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[i] = (cur[i] + pred) & 0xFF
    return np.frombuffer(bytes(cur), dtype=np.uint8)


def colour_stats(png: bytes) -> tuple[int, float]:
    """(distinct colours, ink fraction): ink = pixels not of the most common colour."""
    img = decode_png(png)
    h, w, c = img.shape
    flat = img[..., :3] if c >= 3 else img[..., :1]
    packed = np.zeros((h, w), dtype=np.uint32)
    for k in range(flat.shape[2]):
        packed = (packed << 8) | flat[..., k].astype(np.uint32)
    _, counts = np.unique(packed, return_counts=True)
    return int(counts.size), float(1.0 - counts.max() / packed.size)


def distinct_colours(png: bytes) -> int:
    return colour_stats(png)[0]
