"""A headless Chromium driven over the DevTools pipe (:class:`Chromium`).

Talks the Chrome DevTools Protocol over ``--remote-debugging-pipe`` (file
descriptors 3 and 4, NUL-separated JSON), so it needs nothing beyond the
standard library and a ``chromium`` binary: no websocket client, no Node.
Holds the command-line flags, :func:`find_chromium` and :class:`BrowserError`;
:mod:`reports.browser` uses it to check a report.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from typing import Any

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
