"""Browser sessions in PostgreSQL: two `transcriber serve` processes share a
sign-in, a restart keeps it, sign-out on one ends it on both; idle sessions end and are swept
without anyone signing in; the row holds no token; over HTTPS the cookie is `__Host-` prefixed."""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys

import httpx
import pytest
from fastapi.testclient import TestClient

from conftest import ROOT, add_record, free_port, settings, wait_until
from db.accounts import hash_token
from web.app import create_app
from web.sessions import Sessions


def csrf_of(page: str) -> str:
    return json.loads(re.search(r'<script id="page" type="application/json">(.*?)</script>', page).group(1))["csrf"]


class Serve:
    """One `transcriber serve` process on its own port, restartable; stopped by its own id."""

    def __init__(self, env, log_path):
        self.env, self.port, self.log_path, self.process = env, free_port(), log_path, None
        self.base = f"http://127.0.0.1:{self.port}"

    def start(self) -> Serve:
        with self.log_path.open("a") as log:
            self.process = subprocess.Popen([sys.executable, "-m", "transcriber.cli", "serve", "--port", str(self.port)],
                                            env=self.env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)

        def healthy():
            assert self.process.poll() is None, self.log_path.read_text()
            try:
                return httpx.get(self.base + "/healthz", timeout=5).status_code == 200
            except httpx.TransportError:
                return False

        wait_until(healthy, 90, every=0.2)
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)


@pytest.fixture
def two_serves(env, tmp_path):
    serves = [Serve(env, tmp_path / f"serve{i}.log") for i in (1, 2)]
    yield serves
    for serve in serves:
        serve.stop()


def test_two_serve_processes_share_a_session_across_restarts(store, owner, two_serves):
    """Signed in on one `serve`, the same cookie works on a second `serve` on another
    port (reads, and a change with the page's CSRF token); both restarted, still signed in;
    signed out on one, the cookie opens nothing on either."""
    token = store.new_token("alice")
    record = add_record(store, owner, title="before")
    first, second = (serve.start() for serve in two_serves)
    signed_in = httpx.post(first.base + "/session", data={"token": token}, follow_redirects=False)
    assert signed_in.status_code == 303
    cookies = {"transcriber_session": signed_in.cookies["transcriber_session"]}

    def get(serve, path):
        return httpx.get(serve.base + path, cookies=cookies, timeout=30)

    assert get(second, "/records").json()["items"][0]["id"] == record
    csrf = csrf_of(get(second, "/").text)
    edited = httpx.patch(f"{second.base}/records/{record}", json={"title": "after"}, cookies=cookies,
                         headers={"X-CSRF-Token": csrf, "Origin": second.base}, timeout=30)
    assert edited.status_code == 200, edited.text
    assert get(first, f"/records/{record}").json()["title"] == "after"

    for serve in (first, second):
        serve.stop()
        serve.start()
    assert get(first, "/records").status_code == 200 and get(second, "/records").status_code == 200

    ended = httpx.post(second.base + "/session/end", data={"csrf": csrf}, cookies=cookies,
                       follow_redirects=False, timeout=30)
    assert ended.status_code == 303
    assert get(first, "/records").status_code == 401 and get(second, "/records").status_code == 401
    assert "sign-in" in get(first, "/").text


def test_a_session_row_holds_no_token_and_ends_with_its_token(store, owner):
    """The row keeps hashes only (neither the token nor the cookie's id is in it);
    a replaced token ends the session at once."""
    token = store.new_token("alice")
    sessions = Sessions(store, idle=3600)
    session_id = sessions.open("owner", token)
    assert sessions.get(session_id, "owner").name == "alice"
    assert sessions.get(session_id, "operator") is None  # an owner's session is not the panel's
    with store.db.connection() as conn:
        row = conn.execute("SELECT * FROM sessions").fetchone()
    stored = json.dumps(row, default=str)
    assert token not in stored and session_id not in stored
    store.new_token("alice")
    assert sessions.get(session_id, "owner") is None


def test_idle_sessions_end_and_are_swept_periodically(store, owner):
    """A session unused for the idle time has ended, and the periodic sweep deletes its
    row without anyone signing in; a session in use stays."""
    token = store.new_token("alice")
    sessions = Sessions(store, idle=1.0)
    idle, used = sessions.open("owner", token), sessions.open("owner", token)

    def count() -> int:
        with store.db.connection() as conn:
            return conn.execute("SELECT count(*) AS n FROM sessions").fetchone()["n"]

    assert count() == 2
    # the one in use stays fresh throughout (as if requested every moment)
    with store.db.connection() as conn:
        conn.execute("UPDATE sessions SET last_seen_at = now() + interval '1 hour' WHERE id_hash = %s",
                     (hash_token(used),))
    sessions.start_sweeping(every=0.2)
    try:
        wait_until(lambda: count() == 1, 30)
    finally:
        sessions.stop_sweeping()
    assert sessions.get(used, "owner") is not None and sessions.get(idle, "owner") is None


def test_over_https_the_cookie_is_host_prefixed(store, owner):
    """Over HTTPS (or a proxy saying so) the cookie is `__Host-`, Secure, Path=/;
    the plain-named cookie counts for nothing there. CSRF is compared in constant time and any
    text sent in its place is refused, never a 500."""
    token = store.new_token("alice")
    with TestClient(create_app(store, settings()), base_url="https://testserver") as client:
        answer = client.post("/session", data={"token": token}, follow_redirects=False)
        cookie = answer.headers["set-cookie"]
        assert cookie.startswith("__Host-transcriber_session=")
        assert "Secure" in cookie and "Path=/;" in cookie and "Domain" not in cookie
        session_id = answer.cookies["__Host-transcriber_session"]
        client.cookies.clear()
        client.cookies.set("transcriber_session", session_id)
        assert client.get("/records").status_code == 401
        client.cookies.clear()
        client.cookies.set("__Host-transcriber_session", session_id)
        assert client.get("/records").status_code == 200
        odd = client.patch(f"/records/{add_record(store, owner)}", json={"title": "x"},
                           headers={"X-CSRF-Token": b"\xe9\xff"})
        assert odd.status_code == 403
