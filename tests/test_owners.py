"""The operator's owner commands: names, new tokens, disable/enable, the list."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest

from conftest import add_record
from domain.owners import MAX_NAME_LENGTH, InvalidOwnerName, check_name
from test_http import free_port


def cli(env, *args, timeout=120):
    return subprocess.run([sys.executable, "-m", "transcriber.cli", *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


def token_of(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def one_line_error(done: subprocess.CompletedProcess, *words: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("transcriber: "), done.stderr
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in lines[0], done.stderr


BAD_NAMES = ["", " ", "\t", "  alice", "alice ", "al\nice", "al\x00ice", "al\x1b[31mice", "al\u200bice",
             "al\u2028ice", "a" * (MAX_NAME_LENGTH + 1)]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_owner_name_rule_refuses(name):
    """Bad owner names: blank, whitespace at the ends, control or invisible characters, over-long."""
    with pytest.raises(InvalidOwnerName):
        check_name(name)


@pytest.mark.parametrize("name", ["alice", "Ann Lee", "a" * MAX_NAME_LENGTH, "Дарья", "ops-team_2.b@x"])
def test_owner_name_rule_accepts(name):
    """Ordinary names, inner spaces and any script are fine."""
    assert check_name(name) == name


def test_owner_add_with_a_bad_name_is_one_line_and_creates_nothing(env, store):
    """`owner add ""` (and other bad names) is one clear line and exit 2, no
    traceback; `transcribe --owner ""` likewise; no owner is created."""
    for name in ("", "   ", "a\tb", "x" * (MAX_NAME_LENGTH + 1), "\x1b[2J"):
        one_line_error(cli(env, "owner", "add", name), "owner name")
    one_line_error(cli(env, "transcribe", "--owner", "", "missing.wav"), "owner name")
    assert store.owners() == []


def test_unknown_owner_is_one_line(env):
    """Token/disable/enable of an unknown name: one line naming it, exit 2."""
    for action in ("token", "disable", "enable"):
        one_line_error(cli(env, "owner", action, "nobody"), "no owner named 'nobody'")


def test_owner_list_shows_state_and_counts_never_tokens(env, store):
    """`owner list` gives names, state and record counts, and no token or hash."""
    from db.accounts import hash_token

    alice = token_of(cli(env, "owner", "add", "alice"))
    bob = token_of(cli(env, "owner", "add", "bob"))
    empty = cli(env, "owner", "list")
    for who in ("alice", "bob"):
        add_record(store, store.owner_by_name(who))
    add_record(store, store.owner_by_name("alice"))
    assert cli(env, "owner", "disable", "bob").returncode == 0
    listed = cli(env, "owner", "list")
    as_json = cli(env, "owner", "list", "--json")
    for done in (empty, listed, as_json):
        assert done.returncode == 0, done.stderr
        for secret in (alice, bob, hash_token(alice), hash_token(bob)):
            assert secret not in done.stdout and secret not in done.stderr
    rows = {row["name"]: row for row in json.loads(as_json.stdout)}
    assert rows["alice"]["state"] == "active" and rows["alice"]["records"] == 2
    assert rows["bob"]["state"] == "disabled" and rows["bob"]["records"] == 1
    # the quotas' figures: with each owner's audio hours, stored bytes and quota
    assert set(rows["alice"]) == {"name", "state", "records", "done", "halted", "created_at",
                                  "audio_hours", "stored_bytes", "quota"}
    lines = listed.stdout.splitlines()
    assert lines[0].split()[:3] == ["name", "state", "records"]
    assert [line.split()[:3] for line in lines[1:]] == [["alice", "active", "2"], ["bob", "disabled", "1"]]


class Requests:
    """Requests with one token sent without pause from a thread, each noted with the moment it
    was sent: whatever the server keeps in memory, none sent after a revocation may pass."""

    def __init__(self, base: str, token: str):
        self.base, self.token, self.seen, self.done = base, token, [], threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        with httpx.Client(base_url=self.base, timeout=30) as client:
            while not self.done.is_set():
                sent = time.monotonic()
                status = client.get("/records", headers={"Authorization": f"Bearer {self.token}"}).status_code
                self.seen.append((sent, status))

    def stop(self) -> list[tuple[float, int]]:
        self.done.set()
        self.thread.join(timeout=60)
        return self.seen


def test_new_token_disable_enable_take_effect_at_once_in_a_running_api(env, tmp_path):
    """A token change counts at once: in an API process that is already running and has just served
    the old token, `owner token` makes the old token 401 for every request sent after the command
    returns and the new one 200; `owner disable` makes it 403 with a clear message at once, and
    `owner enable` makes the same token work again at once. Another owner is untouched."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        server = subprocess.Popen([sys.executable, "-m", "transcriber.cli", "serve", "--port", str(port)],
                                  env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        http = httpx.Client(base_url=base, timeout=30)
        deadline = time.monotonic() + 90
        while True:
            try:
                if http.get("/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)

        def status(token: str) -> int:
            return http.get("/records", headers={"Authorization": f"Bearer {token}"}).status_code

        other = token_of(cli(env, "owner", "add", "bob"))
        current = token_of(cli(env, "owner", "add", "alice"))
        for _ in range(3):
            assert status(current) == 200
            hammer = Requests(base, current)
            while not hammer.seen:
                time.sleep(0.01)
            new = token_of(cli(env, "owner", "token", "alice"))
            revoked_at = time.monotonic()
            assert status(current) == 401
            assert status(new) == 200
            seen = hammer.stop()
            late = [code for sent, code in seen if sent >= revoked_at]
            assert all(code == 401 for code in late), late
            assert new != current
            current = new

        hammer = Requests(base, current)
        while not hammer.seen:
            time.sleep(0.01)
        assert cli(env, "owner", "disable", "alice").returncode == 0
        disabled_at = time.monotonic()
        refused = http.get("/records", headers={"Authorization": f"Bearer {current}"})
        late = [code for sent, code in hammer.stop() if sent >= disabled_at]
        assert refused.status_code == 403 and refused.json()["error"] == "owner_disabled"
        assert "disabled" in refused.json()["message"]
        assert all(code == 403 for code in late), late
        assert status(other) == 200

        hammer = Requests(base, current)
        while not hammer.seen:
            time.sleep(0.01)
        assert cli(env, "owner", "enable", "alice").returncode == 0
        enabled_at = time.monotonic()
        assert status(current) == 200
        late = [code for sent, code in hammer.stop() if sent >= enabled_at]
        assert all(code == 200 for code in late), late
        http.close()
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0, log.read_text()
    assert "Traceback" not in log.read_text()
    assert current not in log.read_text()
