"""The token before the body: a request with a body and no valid token is refused
before its body is read, by a real `transcriber serve` process."""
from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from test_http import free_port, make_api, wait_serving  # noqa: F401  (make_api: the live server fixture)

BIG = 300 * 1024 * 1024
PIECE = bytes(1 << 20)


def _status(pid: int) -> dict[str, int]:
    """The process's VmRSS and VmHWM (its peak RSS), in bytes."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) * 1024
    return fields


class Stream:
    """300 MB made as it is sent (never held by the test), counting what the server took."""

    def __init__(self):
        self.sent = 0

    def __iter__(self):
        while self.sent < BIG:
            self.sent += len(PIECE)
            yield PIECE


@pytest.fixture
def served(env, store, tmp_path):
    """A `transcriber serve` process of its own, with a temporary directory of its own."""
    port, scratch = free_port(), tmp_path / "tmp"
    scratch.mkdir()
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        process = subprocess.Popen([sys.executable, "-m", "transcriber.cli", "serve", "--port", str(port)],
                                   env={**env, "TMPDIR": str(scratch)}, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    wait_serving(base, process, log)
    yield base, process, scratch
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0, log.read_text()
    assert "Traceback" not in log.read_text()


def test_no_token_no_body(served, store):
    """A 300 MB PATCH (chunked) and a 300 MB POST upload (its length declared)
    without a token answer 401 at once: the server reads next to none of them (its peak RSS
    grows < 20 MB), spools nothing (no temporary file left) and then serves the owner as before."""
    base, process, scratch = served
    token = store.add_owner("alice")
    with httpx.Client(base_url=base, timeout=60) as http:  # warm: every route's code loaded once
        assert http.patch("/records/1", json={"title": "x"}).status_code == 401
        assert http.patch("/records/1", json={"title": "x"}, headers={"Authorization": f"Bearer {token}"}
                          ).status_code == 404
    Path(f"/proc/{process.pid}/clear_refs").write_text("5")  # the peak RSS starts again from now
    before = _status(process.pid)["VmRSS"]

    answers = []
    for method, path, headers in (
            ("PATCH", "/records/1", {"Content-Type": "application/json"}),
            ("POST", "/records", {"Content-Type": "multipart/form-data; boundary=x", "Content-Length": str(BIG)}),
            ("POST", "/v1/audio/transcriptions", {"Content-Type": "multipart/form-data; boundary=x",
                                                  "Authorization": "Bearer not-a-token"})):
        body = Stream()
        with httpx.Client(base_url=base, timeout=60) as http:
            answer = http.request(method, path, content=body, headers=headers)
        answers.append((path, answer.status_code, body.sent))
        assert answer.status_code == 401, (path, answer.text)
        assert body.sent < 64 * 1024 * 1024, (path, body.sent)  # the server stopped taking it
    assert answers[2][1] == 401
    after = _status(process.pid)
    assert max(after["VmHWM"], after["VmRSS"]) - before < 20 * 1024 * 1024, (before, after)
    assert list(scratch.rglob("*")) == []
    with httpx.Client(base_url=base, timeout=60) as http:
        listed = http.get("/records", headers={"Authorization": f"Bearer {token}"})
    assert listed.status_code == 200 and listed.json()["total"] == 0


def test_body_limits_apply_to_every_method(make_api):
    """The body limit is not only POST's: an owner's 2 MB PATCH is refused with 413
    (an edit is small), while an upload's limit stays the configured one."""
    api = make_api(max_upload_mb=1)
    token = api.token("alice")
    huge = {"summary": "x" * (2 << 20)}
    answer = api.http.patch("/records/1", json=huge, headers=api.auth(token))
    assert answer.status_code == 413 and answer.json()["error"] == "too_large"
    edit = api.http.patch("/records/1", json={"summary": "x" * 20_000}, headers=api.auth(token))
    assert edit.status_code == 404  # within the limit: answered by the route (no such record)
    no_token = api.http.put("/records/1", content=b"x" * 1000)
    assert no_token.status_code == 401
