"""`transcriber check`: INV-1 and INV-2 verified over the whole database.

A sound database passes; each violation, planted directly with SQL, is reported by its rule,
with a line in the text output, in `--json`, and exit status 1.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT, add_record, policy, settings, work_until_idle
from domain.claims import HaltReason
from domain.invariants import check
from domain.stages import Step
from db.check import Facts
from media import encode


def run_check(env, *args):
    return subprocess.run([sys.executable, "-m", "transcriber.cli", "check", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def plant(db, statement, params=None):
    with db.transaction() as conn:
        conn.execute(statement, params or {})


@pytest.fixture
def sound(store, owner, tmp_path, hears_word_a_second):
    """A database with a record in every state INV-1 allows: done, eligible, claimed, waiting,
    halted (with its journal event). The done record's words are WordASecond's: the subject is
    the states, not the words, and every test of this module builds the database again."""
    hears_word_a_second()
    done = store.accept(owner["id"], [encode(tmp_path / "a.wav", "wav", seconds=3).read_bytes()])
    work_until_idle(store, settings())
    eligible = add_record(store, owner)
    claimed = add_record(store, owner)
    waiting = add_record(store, owner)
    halted = add_record(store, owner)
    claims = {}
    for record_id in (eligible, claimed, waiting, halted):
        claims[record_id] = store.claim(Step.CONVERT, policy())
    store.release(claims[eligible])
    store.record_failure(claims[waiting], "boom", 600)
    store.halt(claims[halted], HaltReason.UNDECODABLE_AUDIO, "not audio")
    return {"done": done, "eligible": eligible, "claimed": claimed, "waiting": waiting, "halted": halted}


def test_a_sound_database_passes(sound, store, env):
    """INV-1: every record done, eligible, claimed, waiting or halted with a reason: exit 0,
    each state counted, no violation."""
    report = check(Facts(store.db))
    assert report.sound, report.violations
    assert report.counts == {"done": 1, "eligible": 1, "claimed": 1, "waiting": 1, "halted": 1}
    done = run_check(env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 violation(s): sound" in done.stdout
    document = json.loads(run_check(env, "--json").stdout)
    assert document["ok"] is True and document["records"] == 5 and document["violations"] == []


def test_an_empty_database_passes(env):
    """Nothing accepted yet is sound too."""
    done = run_check(env)
    assert done.returncode == 0 and "0 records" in done.stdout


PLANTS = {
    # rule: (statement, which record of the sound database it breaks)
    "token_without_lease": ("UPDATE steps SET lease_expires_at = NULL WHERE record_id = %(id)s", "claimed"),
    "lease_without_token": ("UPDATE steps SET lease_expires_at = now() + interval '1 minute' WHERE record_id = %(id)s",
                            "eligible"),
    "lease_beyond_any_claim": ("UPDATE steps SET lease_expires_at = now() + interval '10 years' "
                               "WHERE record_id = %(id)s", "claimed"),
    "pause_beyond_any_retry": ("UPDATE steps SET retry_after = 'infinity' WHERE record_id = %(id)s", "waiting"),
    "halt_without_reason": ("UPDATE steps SET halt_reason = '' WHERE record_id = %(id)s", "halted"),
    "halt_not_journaled": ("UPDATE steps SET halted_at = now(), halt_reason = 'stage_time_limit' "
                           "WHERE record_id = %(id)s", "eligible"),
    "no_step": ("DELETE FROM steps WHERE record_id = %(id)s", "eligible"),
    "step_out_of_stage": ("INSERT INTO steps (record_id, step, stage, owner_id, claim_token, lease_expires_at) "
                          "SELECT id, 'recognize', 'converted', owner_id, nextval('claim_tokens'), "
                          "now() + interval '1 minute' FROM records WHERE id = %(id)s", "done"),
    "done_without_text": ("UPDATE records SET transcript = NULL WHERE id = %(id)s", "done"),
    "converted_audio_kept": ("UPDATE records SET converted_blob_id = original_blob_id WHERE id = %(id)s", "done"),
    "windows_out_of_line": ("DELETE FROM record_windows WHERE record_id = %(id)s", "done"),
    "points_at_incomplete_audio": ("UPDATE blobs SET completed_at = NULL WHERE id = "
                                   "(SELECT original_blob_id FROM records WHERE id = %(id)s)", "eligible"),
    "advanced_twice": ("INSERT INTO events (record_id, origin, kind, stage) VALUES (%(id)s, 'pipeline', 'advanced', "
                       "'done')", "done"),
}


def check_here(env, monkeypatch, capsys, *args):
    """`transcriber check` run in this process (the subprocess runs are above and below)."""
    from transcriber import cli

    for name, value in env.items():
        if name.startswith("TRANSCRIBER_"):
            monkeypatch.setenv(name, value)
    status = cli.main(["check", *args])
    return status, capsys.readouterr().out


@pytest.mark.parametrize("rule", sorted(PLANTS))
def test_each_planted_violation_is_reported(rule, sound, db, env, monkeypatch, capsys):
    """A record planted out of every state INV-1 allows (or reaching a stage twice)
    is reported by its rule and id: a line in the output, exit 1, and in --json."""
    statement, which = PLANTS[rule]
    record_id = sound[which]
    plant(db, statement, {"id": record_id})
    status, out = check_here(env, monkeypatch, capsys)
    assert status == 1, out
    lines = [line for line in out.splitlines() if line.startswith("record ")]
    assert len(lines) == 1 and lines[0].startswith(f"record {record_id}: ") and lines[0].endswith(f"[{rule}]")
    status, out = check_here(env, monkeypatch, capsys, "--json")
    document = json.loads(out)
    assert status == 1 and document["ok"] is False
    assert [(v["rule"], v["record"]) for v in document["violations"]] == [(rule, record_id)]


def test_orphaned_audio_beyond_the_sweeps_grace_is_reported(sound, db, store, env):
    """Audio no record points at is a violation once older than the sweep's grace;
    a fresh one (a conversion still under way) is not."""
    fresh, _ = store.store_blob([b"pcm"], "audio/pcm")
    old, _ = store.store_blob([b"pcm"], "audio/pcm")
    plant(db, "UPDATE blobs SET created_at = now() - interval '2 hours', completed_at = now() - interval '2 hours' "
          "WHERE id = %(id)s", {"id": old})
    done = run_check(env)
    assert done.returncode == 1
    assert [line for line in done.stdout.splitlines()[:-1]] == [
        line for line in done.stdout.splitlines() if line.startswith(f"blob {old}: ")]
    assert "[orphaned_audio]" in done.stdout and f"blob {fresh}:" not in done.stdout
    document = json.loads(run_check(env, "--json").stdout)
    assert [(v["rule"], v["blob"]) for v in document["violations"]] == [("orphaned_audio", old)]
    assert store.sweep_orphan_blobs(3600).removed == 1  # exactly what the sweep removes
    assert run_check(env).returncode == 0


def test_many_violations_each_get_a_line(sound, db, env):
    """One line per violation, however many there are."""
    plant(db, "UPDATE records SET transcript = NULL WHERE id = %(id)s", {"id": sound["done"]})
    plant(db, "UPDATE steps SET lease_expires_at = NULL WHERE record_id = %(id)s", {"id": sound["claimed"]})
    done = run_check(env)
    assert done.returncode == 1
    assert sum(line.startswith("record ") for line in done.stdout.splitlines()) == 2
    assert "2 violation(s)" in done.stdout
