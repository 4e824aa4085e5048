"""The owner's page uploads a file with tus-js-client (served with the page), in a real Chromium
against a `transcriber serve` process of the test's own: the server is killed mid-upload and
started again, and the page goes on from the offset the server kept; the record it makes holds
the very bytes of the file."""
from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys

import httpx
import pytest

from conftest import ROOT, free_port, wait_until
from media import encode
from test_browser import CHROMIUM, Watched, browser  # noqa: F401  (fixture)
from test_http import wait_serving

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine")

# the page's upload throttled to this rate (Chromium's own network emulation), so that the
# server can be killed while the file is on its way
UPLOAD_BYTES_PER_SECOND = 4 * 1024 * 1024


class Serve:
    """`transcriber serve` as a process of this test's own, to kill and start again."""

    def __init__(self, env: dict, log):
        self.env, self.log, self.port = env, log, free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        with self.log.open("a") as out:
            command = [sys.executable, "-m", "transcriber.cli", "serve", "--port", str(self.port)]
            self.process = subprocess.Popen(command, env=self.env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        wait_serving(self.base, self.process, self.log)

    def kill(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


@pytest.fixture
def serve(env, tmp_path):
    server = Serve(env, tmp_path / "serve.log")
    yield server
    server.stop()


def test_an_upload_cut_by_a_killed_server_resumes_from_its_offset(serve, store, browser, tmp_path):  # noqa: F811
    """Choose a file; SIGKILL the server once half of it is committed; start the server again: the
    page asks the upload's offset (HEAD) and sends only the rest from there (no new upload, no
    byte before the offset again: at most half the file the second time); the record appears in
    the list and its audio is the file, byte for byte."""
    audio = encode(tmp_path / "long-talk.wav", "wav", repeat=40)  # some 12 MB of real speech
    size = audio.stat().st_size
    serve.start()
    token = store.add_owner("dana")
    watched = Watched(browser, serve.base)
    page = watched.signed_in(token)
    page.wait_for_selector("#records")
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 0, "downloadThroughput": -1,
                                                  "uploadThroughput": UPLOAD_BYTES_PER_SECOND})
    sent = []  # every tus request the page made, in order: (method, Upload-Offset sent or answered to HEAD)

    def seen(response) -> None:
        request = response.request
        if "/uploads" in request.url:
            offset = (response if request.method == "HEAD" else request).headers.get("upload-offset")
            sent.append((request.method, None if offset is None else int(offset)))

    page.on("response", seen)
    page.on("requestfailed", lambda request: sent.append((request.method, int(request.headers["upload-offset"])))
            if request.method == "PATCH" else None)

    page.set_input_files("#file-picker", str(audio))
    row = page.wait_for_selector(".upload[data-upload]")
    address = row.get_attribute("data-upload")
    headers = {"Authorization": f"Bearer {token}", "Tus-Resumable": "1.0.0"}

    def committed() -> int:
        return int(httpx.head(serve.base + address, headers=headers).headers["upload-offset"])

    wait_until(lambda: committed() >= size // 2, 30, what="the server to commit half of the upload")
    serve.kill()
    serve.start()

    row = page.wait_for_selector(".upload.accepted", timeout=60_000)
    record = int(row.get_attribute("data-record"))
    page.wait_for_selector(f"#record-{record}")
    methods = [method for method, _ in sent]
    assert methods.count("POST") == 1 and "HEAD" in methods, sent  # one upload, resumed after asking
    resumed = methods.index("HEAD")
    kept = sent[resumed][1]
    assert size // 2 <= kept < size, sent  # the server kept what it had committed before the kill
    patches = [offset for method, offset in sent[resumed:] if method == "PATCH"]
    # from the server's offset on, nothing before it again: at most half of the file the second time
    assert patches[0] == kept and min(patches) == kept, sent

    answer = httpx.get(f"{serve.base}/records/{record}/audio", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200
    assert hashlib.sha256(answer.content).hexdigest() == hashlib.sha256(audio.read_bytes()).hexdigest()
    state = httpx.get(serve.base + address, headers=headers).json()
    assert state["record"] == record and state["offset"] == state["length"] == size
    watched.assert_all_local()
