"""The operator's commands, run as subprocesses against the test's database."""
from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT


def run(env, *args, timeout=120):
    return subprocess.run([sys.executable, "-m", "transcriber.cli", *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_owner_submit_card_events_status(env, tmp_path):
    """submit → card at created → events → status, all through `transcriber`."""
    assert run(env, "migrate").returncode == 0
    added = run(env, "owner", "add", "bob")
    assert added.returncode == 0, added.stderr
    token = added.stdout.strip().splitlines()[-1]
    assert len(token) >= 32
    assert token not in added.stderr
    duplicate = run(env, "owner", "add", "bob")
    assert duplicate.returncode == 2 and "already exists" in duplicate.stderr

    sample = ROOT / "transcriber" / "samples" / "hello.ogg"
    submitted = run(env, "submit", str(sample), "--owner", "bob", "--title", "greeting")
    assert submitted.returncode == 0, submitted.stderr
    record_id = int(submitted.stdout.strip())

    card = json.loads(run(env, "card", str(record_id)).stdout)
    assert card["id"] == record_id and card["title"] == "greeting"
    assert card["stage"] == "created" and card["halt"] is None and card["attempts"] == 0
    for key in ("summary", "topics", "created_at", "updated_at"):
        assert key in card

    events = [json.loads(line) for line in run(env, "events", str(record_id)).stdout.splitlines()]
    assert [e["kind"] for e in events] == ["accepted"]
    assert events[0]["record"] == record_id and events[0]["origin"] == "pipeline"
    assert set(events[0]) == {"at", "record", "origin", "kind", "stage", "detail"}

    status = run(env, "status")
    assert status.returncode == 0 and "created" in status.stdout


def test_bad_input_is_refused_clearly(env, tmp_path):
    """A missing file, an empty file, an unknown owner, an unknown id: one clear line, exit 2."""
    run(env, "owner", "add", "carol")
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    cases = [
        (("submit", str(tmp_path / "missing.wav"), "--owner", "carol"), "no such file"),
        (("submit", str(empty), "--owner", "carol"), "empty"),
        (("submit", str(ROOT / "transcriber" / "samples" / "hello.ogg"), "--owner", "nobody"), "no owner"),
        (("card", "777"), "no record with id 777"),
        (("events", "777"), "no record with id 777"),
    ]
    for args, message in cases:
        done = run(env, *args)
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr


def test_broken_config_names_the_variable(env):
    """Bad configuration fails at start with one clear line naming the variable."""
    for variable, value in [("TRANSCRIBER_MAX_ATTEMPTS", "many"), ("TRANSCRIBER_TICK_SECONDS", "-1"),
                            ("TRANSCRIBER_BROKER_URL", "ftp://x"), ("TRANSCRIBER_ENGINE", "nope")]:
        done = run({**env, variable: value}, "status")
        assert done.returncode == 2
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and variable in lines[0], done.stderr


def test_unusable_places_are_named(env, tmp_path):
    """An unreachable database, an unwritable log or home: one line naming the variable, no
    traceback, no password."""
    blocked = tmp_path / "file"
    blocked.write_text("")
    cases = [
        ({"TRANSCRIBER_DATABASE_URL": "postgresql://postgres:hunter2@127.0.0.1:1/none"}, "TRANSCRIBER_DATABASE_URL"),
        ({"TRANSCRIBER_LOG_JSON": str(blocked / "log.jsonl")}, "TRANSCRIBER_LOG_JSON"),
    ]
    without_db = {k: v for k, v in env.items() if k != "TRANSCRIBER_DATABASE_URL"}
    cases.append(({"TRANSCRIBER_HOME": str(blocked / "home")}, "TRANSCRIBER_HOME"))
    for extra, variable in cases:
        base = without_db if variable == "TRANSCRIBER_HOME" else env
        done = run({**base, **extra}, "status")
        assert done.returncode in (1, 2), done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and variable in lines[0], done.stderr
        assert "hunter2" not in done.stderr
