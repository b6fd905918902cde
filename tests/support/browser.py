"""A headless chromium the tests drive: clicks, keys, reloads, downloads, screenshots.

Speaks the DevTools protocol over ``--remote-debugging-pipe`` (JSON messages ending in
a NUL byte on file descriptors 3 and 4 of the browser), so no websocket client or
browser driver package is needed; Debian's ``chromium`` is all.
"""

import base64
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable

import pytest

TIMEOUT = 60  # seconds for one protocol reply or awaited event
KEYS = {"Enter": 13, "ArrowDown": 40, "ArrowUp": 38, "ArrowRight": 39}  # virtual key codes


class Browser:
    """One browser and one page; ``call`` sends a command to the page, ``browser_call`` to
    the browser itself."""

    def __init__(self, width: int = 1100, height: int = 720):
        binary = shutil.which("chromium")
        if binary is None:
            pytest.fail(
                "chromium is not installed: the rating app is checked in a real browser; "
                "install Debian's with `apt-get install chromium` (CI's .ci/run does)"
            )
        self._profile = tempfile.TemporaryDirectory()
        to_browser, self._send = os.pipe()
        self._receive, from_browser = os.pipe()
        # Out of the way of 3 and 4, which the child's copies take.
        to_browser, from_browser = (
            fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_browser, from_browser)
        )

        def descriptors():
            os.dup2(to_browser, 3)
            os.dup2(from_browser, 4)

        self._process = subprocess.Popen(
            [
                binary,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--host-resolver-rules=MAP * ~NOTFOUND",  # offline: no name resolves
                # A file:// page does not reliably keep localStorage across reloads: with
                # RenderDocument (a new document host per navigation) about one reload in
                # four gets an empty storage of its own, so the app forgets its rater and
                # what it saves there is lost (Chromium 156, idle or loaded). Without it,
                # still 1 of 7 loaded runs of the app's test; with file access across files
                # too, 0 of 16 (and 0 of 200 reloads of a bare page). Not the app's doing.
                "--disable-features=RenderDocument",
                "--allow-file-access-from-files",
                "--remote-debugging-pipe",
                f"--user-data-dir={self._profile.name}",
                "about:blank",
            ],
            preexec_fn=descriptors,
            close_fds=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for fd in (to_browser, from_browser):
            os.close(fd)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []
        target = self.browser_call("Target.createTarget", url="about:blank")["targetId"]
        self._session = self.browser_call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def _message(self) -> dict:
        deadline = time.monotonic() + TIMEOUT
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("chromium sent nothing")
            chunk = os.read(self._receive, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed its DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def _send_command(self, method: str, params: dict, session: str | None) -> dict:
        self._next_id += 1
        command = {"id": self._next_id, "method": method, "params": params}
        if session:
            command["sessionId"] = session
        os.write(self._send, json.dumps(command).encode() + b"\0")
        while True:
            message = self._message()
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]
            self.events.append(message)

    def browser_call(self, method: str, **params) -> dict:
        return self._send_command(method, params, None)

    def call(self, method: str, **params) -> dict:
        return self._send_command(method, params, self._session)

    def wait_for(self, method: str, **matching) -> dict:
        """The first event ``method`` whose params include ``matching``, consumed."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            for event in self.events:
                params = event.get("params", {})
                if event.get("method") == method and all(
                    params.get(k) == v for k, v in matching.items()
                ):
                    self.events.remove(event)
                    return params
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {method} event")
            self.events.append(self._message())

    def load(self, url: str) -> None:
        self.navigated(lambda: self.call("Page.navigate", url=url))

    def reload(self) -> None:
        self.navigated(lambda: self.call("Page.reload"))

    def navigated(self, action: Callable[[], object]) -> None:
        """Runs ``action``, which replaces the document, and returns once the new one has
        loaded: a load event may be one left over from the old page, so this waits for a
        marker set on the old window to be gone instead."""
        self.evaluate("window.staleDocument = true")
        action()
        self.wait_until("!window.staleDocument && document.readyState === 'complete'")

    def wait_until(self, expression: str) -> None:
        """Polls ``expression`` until it is true (evaluations during a navigation may fail)."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            with contextlib.suppress(RuntimeError):
                if self.evaluate(expression):
                    return
            if time.monotonic() > deadline:
                raise TimeoutError(f"never true: {expression}")
            time.sleep(0.05)

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def click(self, selector: str) -> None:
        """A real mouse click at the centre of the first element ``selector`` matches."""
        box = self.evaluate(
            f"(() => {{ const r = document.querySelector({json.dumps(selector)})"
            ".getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.call(
                "Input.dispatchMouseEvent",
                type=kind,
                x=box[0],
                y=box[1],
                button="left",
                clickCount=1,
            )

    def press(self, key: str) -> None:
        """A key press as a keyboard makes it: a digit types its character."""
        code = KEYS.get(key, ord(key[0].upper()))
        text = {"text": key} if len(key) == 1 else ({"text": "\r"} if key == "Enter" else {})
        self.call(
            "Input.dispatchKeyEvent", type="keyDown", key=key, windowsVirtualKeyCode=code, **text
        )
        self.call("Input.dispatchKeyEvent", type="keyUp", key=key, windowsVirtualKeyCode=code)

    def type_text(self, text: str) -> None:
        self.call("Input.insertText", text=text)

    def allow_downloads(self, directory: str) -> None:
        self.browser_call(
            "Browser.setDownloadBehavior",
            behavior="allow",
            downloadPath=directory,
            eventsEnabled=True,
        )

    def downloaded(self) -> str:
        """The file name of the next download, once it is complete."""
        name = self.wait_for("Browser.downloadWillBegin")["suggestedFilename"]
        self.wait_for("Browser.downloadProgress", state="completed")
        return name

    def screenshot(self) -> bytes:
        return base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, OSError, TimeoutError):
            self.browser_call("Browser.close")
        self._process.wait(timeout=TIMEOUT)
        os.close(self._send)
        os.close(self._receive)
        self._profile.cleanup()
