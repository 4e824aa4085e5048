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
            self.process.kill()
            self.process.wait(timeout=30)


@pytest.fixture
def serve(env, tmp_path):
    server = Serve(env, tmp_path / "serve.log")
    yield server
    server.stop()


class HalfSent:
    """A signed-in page (of a new owner) whose uploads Chromium throttles, once the server has
    committed half of `audio` chosen in it; `sent` lists the tus requests the page made, in order:
    (method, address, Upload-Offset sent, or answered to a HEAD; None without one)."""

    def __init__(self, browser, serve: Serve, token: str, audio):
        serve.start()
        self.token = token
        self.watched = Watched(browser, serve.base)
        self.page = page = self.watched.signed_in(self.token)
        page.wait_for_selector("#records")
        cdp = page.context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 0, "downloadThroughput": -1,
                                                      "uploadThroughput": UPLOAD_BYTES_PER_SECOND})
        self.sent: list[tuple[str, str, int | None]] = []
        page.on("response", self._answered)
        page.on("requestfailed", self._failed)
        page.set_input_files("#file-picker", str(audio))
        self.address = serve.base + page.wait_for_selector(".upload[data-upload]").get_attribute("data-upload")
        half = audio.stat().st_size // 2
        wait_until(lambda: self.committed() >= half, 30, what="the server to commit half the upload")

    def _answered(self, response) -> None:
        request = response.request
        if "/uploads" in request.url:
            offset = (response if request.method == "HEAD" else request).headers.get("upload-offset")
            self.sent.append((request.method, request.url, None if offset is None else int(offset)))

    def _failed(self, request) -> None:
        if request.method == "PATCH":
            self.sent.append((request.method, request.url, int(request.headers["upload-offset"])))

    def committed(self) -> int:
        headers = {"Authorization": f"Bearer {self.token}", "Tus-Resumable": "1.0.0"}
        return int(httpx.head(self.address, headers=headers).headers["upload-offset"])


def _resumed(sent: list, size: int) -> str:
    """The one upload's address, after checking that it was resumed once from the offset the
    server answered to HEAD, at least half of the file, with no byte before that offset again
    (so at most half of the file went the second time)."""
    methods = [method for method, _, _ in sent]
    assert methods.count("POST") == 1 and "HEAD" in methods, sent  # one upload, resumed after asking
    resumed = methods.index("HEAD")
    address, kept = sent[resumed][1:]
    assert size // 2 <= kept < size, sent  # what the server had committed is still there
    patches = [offset for method, url, offset in sent[resumed:] if method == "PATCH" and url == address]
    assert patches[0] == kept and min(patches) == kept, sent
    assert {url for _, url, _ in sent} == {address} | {url for method, url, _ in sent if method == "POST"}, sent
    return address


def _record_of(serve: Serve, upload: HalfSent, audio) -> None:
    """The record the page shows as made of the upload, once: its audio is the file's bytes
    exactly, and the upload was resumed as `_resumed` says."""
    row = upload.page.wait_for_selector(".upload.accepted", timeout=60_000)
    record = int(row.get_attribute("data-record"))
    upload.page.wait_for_selector(f"#record-{record}")
    owner = {"Authorization": f"Bearer {upload.token}"}
    answer = httpx.get(f"{serve.base}/records/{record}/audio", headers=owner)
    assert answer.status_code == 200
    assert hashlib.sha256(answer.content).hexdigest() == hashlib.sha256(audio.read_bytes()).hexdigest()
    state = httpx.get(upload.address, headers={**owner, "Tus-Resumable": "1.0.0"}).json()
    size = audio.stat().st_size
    assert state["record"] == record and state["offset"] == state["length"] == size
    assert _resumed(upload.sent, size) == upload.address


def test_an_upload_cut_by_a_killed_server_resumes_from_its_offset(serve, store, browser, tmp_path):  # noqa: F811
    """Choose a file; SIGKILL the server once half of it is committed; start the server again: the
    page, still trying, asks the upload's offset (HEAD) and sends only the rest from there (no new
    upload, no byte before the offset again); the record appears in the list and its audio is the
    file, byte for byte."""
    audio = encode(tmp_path / "long-talk.wav", "wav", repeat=40)  # some 12 MB of real speech
    upload = HalfSent(browser, serve, store.add_owner("dana"), audio)
    serve.kill()
    serve.start()

    _record_of(serve, upload, audio)
    upload.watched.assert_all_local()
    upload.page.context.close()


def test_the_same_file_chosen_after_a_reload_goes_on_where_it_stopped(serve, store, browser, tmp_path):  # noqa: F811
    """Choose a file; reload the page once half of it is committed (the upload in the page ends);
    choose the same file again: the page finds the upload it began (its address kept in the
    browser's storage under the file's fingerprint), asks its offset and sends only the rest."""
    audio = encode(tmp_path / "interview.wav", "wav", repeat=30)
    upload = HalfSent(browser, serve, store.add_owner("erin"), audio)
    upload.page.reload()
    upload.page.wait_for_selector("#records")
    assert upload.committed() < audio.stat().st_size

    upload.page.set_input_files("#file-picker", str(audio))
    assert upload.page.wait_for_selector(".upload[data-resumed=true]")
    _record_of(serve, upload, audio)
    upload.watched.assert_all_local()
    upload.page.context.close()
