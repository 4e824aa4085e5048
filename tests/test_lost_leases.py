"""The crash-loop guard: lease losses are counted on the record apart from step
errors, by the claim that takes an expired claim over, and past TRANSCRIBER_MAX_LOST_LEASES the
claimer halts the record with reason `worker_lost` (INV-1: never cycling, never silent)."""
from __future__ import annotations

import json
import time

import pytest

from conftest import ROOT, add_record, drop_queue, kinds, policy, save_result, settings, wait_until
from domain.card import card
from domain.claims import NO_WORK, Claim, HaltReason
from domain.policy import StepPolicy
from domain.resume import resume
from domain.stages import Step
from audio.windows import windows
from media import encode, speech_pcm
from stand_ins import words_heard
from test_workers import REDIS_DB, Processes, _listening


def expire_lease(db, record_id):
    """As if the holder's worker had died: its lease is over and nothing was written."""
    with db.transaction() as conn:
        conn.execute("UPDATE steps SET lease_expires_at = now() - interval '1 second' WHERE record_id = %s",
                     [record_id])


def test_lost_leases_halt_with_worker_lost(store, owner, db, tmp_path):
    """INV-1: each claim that takes over an expired claim counts a lost lease (not a
    failure); the claim that finds the third one halts the record with worker_lost instead of
    running it again, and reports no work. The card shows the reason and the count; the
    service owner's log has the halt with the record id; the journal tells the story."""
    from loguru import logger

    from service import logs

    log_path = tmp_path / "service.jsonl"
    logs.configure(level="WARNING", json_path=log_path)
    record_id = add_record(store, owner)
    p = policy()
    first = store.claim(Step.CONVERT, p)
    for lost in (1, 2):
        expire_lease(db, record_id)
        claim = store.claim(Step.CONVERT, p)
        assert isinstance(claim, Claim) and claim.record_id == record_id
        row = store.read_record(record_id)
        assert (row["lost_leases"], row["failures"]) == (lost, 0)
    expire_lease(db, record_id)
    assert store.claim(Step.CONVERT, p) is NO_WORK
    row = store.read_record(record_id)
    assert (row["halt_reason"], row["stage"], row["lost_leases"], row["failures"]) == ("worker_lost", "created", 3, 0)
    assert "3 claims for convert ran out of lease" in row["halt_error"]
    assert "TRANSCRIBER_MAX_LOST_LEASES=3" in row["halt_error"]
    shown = card(store.card_row(record_id))
    assert shown["halt"]["reason"] == "worker_lost" and shown["lost_leases"] == 3 and shown["attempts"] == 0
    events = store.events(record_id)
    assert [e["kind"] for e in events] == ["accepted"] + ["claimed"] * 4 + ["halted"]
    assert [e["detail"]["lost_leases"] for e in events if e["kind"] == "claimed"] == [0, 1, 2, 3]
    assert events[-1]["detail"]["reason"] == "worker_lost"
    assert not save_result(store, first, {"duration_seconds": 1.0})  # the first holder stays fenced out
    logger.complete()
    lines = [json.loads(line) for line in log_path.read_text().splitlines()]
    halts = [line["record"] for line in lines if line["record"]["extra"].get("event") == "halted"]
    assert [(h["extra"]["record_id"], h["extra"]["reason"]) for h in halts] == [(record_id, "worker_lost")]
    assert f"record {record_id}" in halts[0]["message"]


def test_only_lost_leases_count(store, owner, db):
    """Only a lost claim counts: a failure, a give-back and a save clear the claim, so the next
    claim counts no lost lease; a failure counts an attempt, never a lost lease. A save resets the
    count (a new stage starts afresh), and so does resume (P5)."""
    record_id = add_record(store, owner)
    p = policy(backoff=0)
    assert store.record_failure(store.claim(Step.CONVERT, p), "boom", 0)
    assert store.release(store.claim(Step.CONVERT, p))
    store.claim(Step.CONVERT, p)
    row = store.read_record(record_id)
    assert (row["lost_leases"], row["failures"]) == (0, 1)
    expire_lease(db, record_id)
    assert save_result(store, store.claim(Step.CONVERT, p), {"duration_seconds": 1.0})
    row = store.read_record(record_id)
    assert (row["stage"], row["lost_leases"], row["failures"]) == ("converted", 0, 0)
    assert [e["detail"]["lost_leases"] for e in store.events(record_id) if e["kind"] == "claimed"] == [0, 0, 0, 1]

    strict = StepPolicy(lease_seconds=60, time_limit_seconds=3600, max_attempts=3, backoff_seconds=0,
                        max_lost_leases=1)
    store.claim(Step.RECOGNIZE, strict)
    expire_lease(db, record_id)
    assert store.claim(Step.RECOGNIZE, strict) is NO_WORK
    assert store.read_record(record_id)["halt_reason"] == HaltReason.WORKER_LOST
    assert resume(store, record_id) == "converted"
    assert store.read_record(record_id)["lost_leases"] == 0
    assert isinstance(store.claim(Step.RECOGNIZE, strict), Claim)


def test_max_lost_leases_setting():
    """TRANSCRIBER_MAX_LOST_LEASES sets the limit for every step (default 3); a value
    out of range stops the start with one line naming it."""
    from service.config import ConfigError

    assert {settings().policy(step).max_lost_leases for step in Step} == {3}
    assert {settings(max_lost_leases=7).policy(step).max_lost_leases for step in Step} == {7}
    for bad in ("0", "-1", "2.5", "inf", "many"):
        with pytest.raises(ConfigError, match="TRANSCRIBER_MAX_LOST_LEASES"):
            settings(max_lost_leases=bad)


# --- real worker processes that die ------------------------------------------------------------

CRASH_REDIS_DB = REDIS_DB - 2  # apart from test_workers' queue: those tests may run beside these


@pytest.mark.skipif(not _listening(6379), reason="no Redis on 127.0.0.1:6379")
def test_record_that_kills_its_worker_halts_worker_lost(store, owner, env, tmp_path):
    """INV-1 with real processes: `dramatiq actors` workers on Redis, each in a
    process group of its own, and a record whose conversion SIGKILLs its worker's whole group
    every time. A supervisor (this test) starts a new worker whenever one dies. The record
    ends halted with worker_lost after three lost leases, visible on its card and in the log
    with its id; a record that killed its worker once is taken over and finishes (its lost
    lease is counted, then reset by the save); a plain record is done untouched. The
    words are a stand-in's (`window_hook`): the crashes are in the conversion."""
    log_path = tmp_path / "service.jsonl"
    worker_env = {**env, "TRANSCRIBER_BROKER_URL": f"redis://127.0.0.1:6379/{CRASH_REDIS_DB}",
                  "TRANSCRIBER_TICK_SECONDS": "0.5", "TRANSCRIBER_CONVERT_LEASE_SECONDS": "2",
                  "TRANSCRIBER_LOG_JSON": str(log_path), "CRASH_HOOK_DIR": str(tmp_path),
                  "PYTHONPATH": f"{ROOT / 'tests'}:{env['PYTHONPATH']}"}
    audio = encode(tmp_path / "speech.wav", "wav").read_bytes()
    doomed = store.accept(owner["id"], [audio], title="crash-always")
    unlucky = store.accept(owner["id"], [audio], title="crash-once")
    plain = store.accept(owner["id"], [audio], title="plain")
    processes = Processes()
    stderr = (tmp_path / "workers.log").open("a")
    try:
        processes.start(worker_env, "-m", "transcriber.cli", "scheduler")

        def finished() -> bool:
            return (store.read_record(doomed)["halted_at"] is not None
                    and all(store.read_record(i)["stage"] == "done" for i in (unlucky, plain)))

        deaths = 0
        deadline = time.monotonic() + 900
        while not finished():
            assert time.monotonic() < deadline and deaths < 10, (deaths, kinds(store, doomed))
            worker = processes.start(worker_env, "-m", "dramatiq", "actors", "crash_hook", "window_hook",
                                     "--processes", "1", "--threads", "1", log=stderr)
            while worker.poll() is None and not finished():
                time.sleep(0.2)
            if worker.poll() is not None:
                deaths += 1
                processes.kill(worker)  # the rest of its group, should anything be left
    finally:
        processes.stop_all()
        stderr.close()
        drop_queue(env["TRANSCRIBER_QUEUE"], redis_url=worker_env["TRANSCRIBER_BROKER_URL"])
    assert deaths == 4  # three for the doomed record, one for the unlucky one
    row = store.read_record(doomed)
    assert (row["halt_reason"], row["stage"], row["lost_leases"], row["failures"]) == ("worker_lost", "created", 3, 0)
    assert card(store.card_row(doomed))["halt"]["reason"] == "worker_lost"
    # a worker that boots while a dead one's lease still runs ends that lease (holder_gone)
    assert [k for k in kinds(store, doomed) if k != "holder_gone"] == ["accepted"] + ["claimed"] * 4 + ["halted"]
    unlucky_events = store.events(unlucky)
    convert_claims = [e for e in unlucky_events if e["kind"] == "claimed" and e["stage"] == "created"]
    assert [e["detail"]["lost_leases"] for e in convert_claims] == [0, 1]
    assert store.read_record(unlucky)["lost_leases"] == 0 and store.read_record(unlucky)["transcript"]
    assert kinds(store, plain).count("claimed") == 2 and store.read_record(plain)["lost_leases"] == 0
    lines = [json.loads(line) for line in log_path.read_text().splitlines() if line.strip()]
    halts = [line["record"] for line in lines if line["record"]["extra"].get("event") == "halted"]
    assert [(h["extra"]["record_id"], h["extra"]["reason"]) for h in halts] == [(doomed, "worker_lost")]


def test_claims_that_saved_a_checkpoint_are_not_lost_work(store, owner, env, tmp_path):
    """A crash after progress is not a crash loop, with real processes: a long recording (four
    windows or more) whose worker is killed by its PID right after each window's checkpoint but the
    last, with TRANSCRIBER_MAX_LOST_LEASES=3.
    Each claim that saved a checkpoint made progress, so its lost lease restarts nothing toward
    worker_lost: the record reaches done, every window saved once, each by another claim."""
    if not _listening(6379):
        pytest.skip("no Redis on 127.0.0.1:6379")
    worker_env = {**env, "TRANSCRIBER_BROKER_URL": f"redis://127.0.0.1:6379/{CRASH_REDIS_DB}",
                  "TRANSCRIBER_ENGINE": "pocketsphinx", "TRANSCRIBER_MAX_LOST_LEASES": "3",
                  "TRANSCRIBER_TICK_SECONDS": "0.5", "TRANSCRIBER_RECOGNIZE_LEASE_SECONDS": "2",
                  "WINDOW_HOOK_DIR": str(tmp_path), "PYTHONPATH": f"{ROOT / 'tests'}:{env['PYTHONPATH']}"}
    busy = tmp_path / "busy"  # the worker saved its window and went on to the next
    audio = encode(tmp_path / "long.wav", "wav", repeat=12).read_bytes()  # ~2 minutes
    count = len(list(windows([speech_pcm() * 12])))
    assert count >= 4  # three lost leases or more would halt it if they counted
    record_id = store.accept(owner["id"], [audio], title="long")

    processes = Processes()
    stderr = (tmp_path / "workers.log").open("a")
    kills = 0
    try:
        processes.start(worker_env, "-m", "transcriber.cli", "scheduler")
        while store.read_record(record_id)["stage"] != "done":
            row = store.read_record(record_id)
            assert row["halted_at"] is None, (row["halt_reason"], kinds(store, record_id))
            assert kills < count, " ".join(f"{e['kind']}:{e['detail'].get('claim_token')}" for e in store.events(record_id))
            busy.unlink(missing_ok=True)
            worker = processes.start(worker_env, "-m", "dramatiq", "actors", "window_hook",
                                     "--processes", "1", "--threads", "1", log=stderr)
            wait_until(lambda: busy.exists() or worker.poll() is not None or _settled(store.read_record(record_id)),
                       300)
            if store.read_record(record_id)["stage"] != "done":
                processes.kill(worker)  # by its PID's process group: the worker dies after a window
                kills += 1
        assert kills == count - 1
    finally:
        processes.stop_all()
        stderr.close()
        drop_queue(env["TRANSCRIBER_QUEUE"], redis_url=worker_env["TRANSCRIBER_BROKER_URL"])
    row = store.read_record(record_id)
    assert (row["stage"], row["halted_at"], row["lost_leases"]) == ("done", None, 0)
    assert row["transcript"].split() == words_heard(windows([speech_pcm() * 12]))  # each window once
    events = store.events(record_id)
    recognize_claims = [e for e in events if e["kind"] == "claimed" and e["stage"] == "converted"]
    assert len(recognize_claims) == count
    assert [e["detail"]["lost_leases"] for e in recognize_claims] == [0] * count
    tokens = [e["detail"]["claim_token"] for e in events if e["kind"] == "checkpoint"]
    assert len(tokens) == len(set(tokens)) == count


def _settled(row: dict) -> bool:
    return row["stage"] == "done" or row["halted_at"] is not None


HOLDING = """
import sys
from conftest import policy
from db import Database, Store
from domain.stages import Step

store = Store(Database(sys.argv[1], max_size=1))
print(store.claim(Step.CONVERT, policy(lease=600)).record_id, flush=True)
sys.stdin.read()
"""


def test_an_idle_worker_takes_up_what_a_killed_process_of_its_machine_held(store, owner, database_url,
                                                                          tmp_path, monkeypatch):
    """P3, INV-1: two processes of this machine each claim a record with a 600 s lease, and one
    of them is killed outright. A live worker, idle, takes the killed one's record up at its
    next look (journaled `holder_gone`, the lost lease counted) and converts it, long before
    the lease would run out; the record held by the process that lives stays its own."""
    import os
    import subprocess
    import sys

    from actors import work
    from domain.claims import NO_WORK
    from service import runtime

    monkeypatch.setattr(runtime, "lookout", runtime.EndedHoldersLookout(every=0))
    audio = encode(tmp_path / "speech.wav", "wav", seconds=2).read_bytes()
    orphaned, kept = (store.accept(owner["id"], [audio], title=title) for title in ("orphaned", "kept"))
    holders = []
    try:
        for _ in (orphaned, kept):  # one after the other: each claims the oldest left
            holders.append(subprocess.Popen(
                [sys.executable, "-c", HOLDING, database_url], cwd=ROOT / "tests", text=True,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                stdin=subprocess.PIPE, stdout=subprocess.PIPE))
            holders[-1].stdout.readline()
        assert {store.read_record(i)["claim_token"] is not None for i in (orphaned, kept)} == {True}
        assert work.run_once(store, settings(), Step.CONVERT) is NO_WORK  # both holders live

        holders[0].kill()
        holders[0].wait(timeout=60)
        wait_until(lambda: work.run_once(store, settings(), Step.CONVERT) is not NO_WORK, 60,
                   what="the killed holder's record to be taken up")
        row = store.read_record(orphaned)
        assert row["stage"] == "converted" and row["halted_at"] is None
        assert kinds(store, orphaned) == ["accepted", "claimed", "holder_gone", "claimed", "advanced"]
        assert [e["detail"]["lost_leases"] for e in store.events(orphaned) if e["kind"] == "claimed"] == [0, 1]
        assert work.run_once(store, settings(), Step.CONVERT) is NO_WORK
        assert store.read_record(kept)["stage"] == "created" and "holder_gone" not in kinds(store, kept)
    finally:
        for holder in holders:
            holder.kill()
            holder.wait(timeout=60)
