"""Wake-ups on commit: the trigger's notifications, the listener feeding the actors
without waiting for a tick, and the listener surviving a lost connection and a server restart."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import psycopg
import pytest

from conftest import add_record, kinds, policy, save_result, settings, wait_until
from db import Database, Store
from db.wakeups import Wakeup, parse
from domain.resume import resume
from domain.stages import Step


@pytest.fixture
def heard(database_url):
    """The payloads the trigger sends, read by a plain LISTEN connection of the test's own."""
    conn = psycopg.connect(database_url, autocommit=True)
    conn.execute("LISTEN transcriber_wakeups")

    def drain() -> list[str]:
        return [n.payload for n in conn.notifies(timeout=0.3)]

    yield drain
    conn.close()


def test_payload_parsing():
    """The trigger's payload is the step, then the seconds still to wait."""
    assert parse("convert") == Wakeup("convert", 0.0)
    assert parse("recognize 12.5") == Wakeup("recognize", 12.5)
    assert parse("recognize -0.2") == Wakeup("recognize", 0.0)
    assert parse("") is None and parse("convert soon") is None


def test_a_record_becoming_claimable_notifies_its_step(store, owner, heard):
    """Accepted, advanced by a save, released and resumed each notify the step that
    can take the record; a claim, a lease renewal and a halt notify nobody; a failure announces
    its pause's end."""
    record = add_record(store, owner)
    assert heard() == ["convert"]
    claim = store.claim(Step.CONVERT, policy())
    assert store.renew_lease(claim, 60)
    assert heard() == []
    assert save_result(store, claim, {"duration_seconds": 1.0})
    assert heard() == ["recognize"]
    claim = store.claim(Step.RECOGNIZE, policy())
    assert store.release(claim)
    assert heard() == ["recognize"]
    claim = store.claim(Step.RECOGNIZE, policy())
    assert store.record_failure(claim, "boom", pause_seconds=30)
    [paused] = heard()
    step, _, seconds = paused.partition(" ")
    assert step == "recognize" and 25 < float(seconds) <= 30
    with store.db.transaction() as conn:  # the pause is over: a claim may take it again
        conn.execute("UPDATE steps SET retry_after = now() WHERE record_id = %s", (record,))
    heard()
    claim = store.claim(Step.RECOGNIZE, policy())
    from domain.claims import HaltReason

    assert store.halt(claim, HaltReason.ATTEMPTS_EXHAUSTED, "boom")
    assert heard() == []
    assert resume(store, record) == "converted"
    assert heard() == ["recognize"]
    store.edit(record, owner["id"], title="still waiting")
    assert heard() == []


def test_nothing_is_heard_from_a_rolled_back_transaction(store, owner, heard):
    """The wake-up comes on commit only."""
    with pytest.raises(ValueError):
        store.accept(owner["id"], [b""])  # refused inside its transaction
    assert heard() == []


class Sent:
    """What a Wakeups feeds its actors, recorded."""

    def __init__(self):
        self.steps: list[Step] = []
        self.lock = threading.Lock()

    def __call__(self, step: Step) -> None:
        with self.lock:
            self.steps.append(step)

    def take(self) -> list[Step]:
        with self.lock:
            taken, self.steps = self.steps, []
        return taken


@pytest.fixture
def wakeups(database_url):
    from actors.wakeups import Wakeups

    sent = Sent()
    running = Wakeups(database_url, sent).start()
    wait_until(lambda: running.listener.connected, 10, every=0.02)
    wait_until(lambda: set(sent.take()) >= set(Step), 10, every=0.02)  # the catch-up after connecting
    yield running, sent
    running.stop()


def test_the_listener_feeds_the_step_that_can_take_the_record(store, owner, wakeups):
    """Accepting wakes convert; the save that converts wakes recognize (the hand-off),
    without any tick."""
    running, sent = wakeups
    add_record(store, owner)
    assert wait_until(sent.take, 10, every=0.02) == [Step.CONVERT]
    claim = store.claim(Step.CONVERT, policy())
    save_result(store, claim, {"duration_seconds": 1.0})
    assert wait_until(sent.take, 10, every=0.02) == [Step.RECOGNIZE]


def test_a_pause_end_wakes_its_step_by_a_timer(store, owner, wakeups):
    """A failure's retry pause ends with a wake-up from a local timer, not before."""
    running, sent = wakeups
    add_record(store, owner)
    wait_until(sent.take, 10, every=0.02)
    claim = store.claim(Step.CONVERT, policy())
    failed_at = time.monotonic()
    store.record_failure(claim, "boom", pause_seconds=1.0)
    assert wait_until(sent.take, 10, every=0.02) == [Step.CONVERT]
    assert time.monotonic() - failed_at >= 0.9
    assert store.claim(Step.CONVERT, policy())


def test_the_listener_reconnects_after_its_backend_is_terminated(store, owner, wakeups, database_url):
    """A terminated listener connection is re-made; the catch-up wakes every step, and
    later commits are heard again."""
    running, sent = wakeups
    first = running.listener.backend_pid
    with psycopg.connect(database_url, autocommit=True) as conn:
        assert conn.execute("SELECT pg_terminate_backend(%s)", (first,)).fetchone()[0]
    wait_until(lambda: running.listener.backend_pid not in (None, first), 15, every=0.02)
    wait_until(lambda: set(sent.take()) >= set(Step), 10, every=0.02)
    add_record(store, owner)
    assert wait_until(sent.take, 10, every=0.02) == [Step.CONVERT]


def test_the_listener_survives_a_server_restart(own_server):
    """After the server restarts, the listener reconnects by itself and hears the
    next accepted record."""
    from actors.wakeups import Wakeups

    url, restart = own_server
    with Database(url, max_size=2) as db:
        db.migrate()
    sent = Sent()
    running = Wakeups(url, sent).start()
    try:
        wait_until(lambda: running.listener.connected, 10, every=0.02)
        restart()
        wait_until(lambda: running.listener.connected, 30, every=0.1)
        wait_until(lambda: set(sent.take()) >= set(Step), 10, every=0.02)
        with Database(url, max_size=2) as db:
            store = Store(db)
            store.add_owner("bob")
            add_record(store, store.owner_by_name("bob"))
            assert wait_until(sent.take, 10, every=0.02) == [Step.CONVERT]
    finally:
        running.stop()


def test_a_record_is_claimed_without_a_tick(store, owner, tmp_path):
    """With the tick at 60 s, an accepted record is converted and handed to recognition
    by the wake-ups alone, well within one tick."""
    import actors
    from media import encode
    from service.intake import accept_recording
    from transcriber.local import LocalPipeline

    the_settings = settings(tick_seconds=60, engine="pocketsphinx")
    with LocalPipeline(store, the_settings):
        # the first tick's wake-ups are spent before the record exists
        actors.broker.join(actors.QUEUE, timeout=120_000)  # a wait, not a measure: slow on a busy machine
        wait_until(_listening, 10, every=0.02)
        record, _ = accept_recording(store, the_settings, encode(tmp_path / "a.wav"), owner_id=owner["id"])
        # both claims inside one tick's 60 s: only the wake-ups can have made them
        wait_until(lambda: kinds(store, record).count("claimed") >= 2, 55, every=0.05)
    claimed = [e["stage"] for e in store.events(record) if e["kind"] == "claimed"]
    assert claimed[:2] == ["created", "converted"]


def _listening() -> bool:
    import actors
    from actors.middleware import ListenForWakeups

    found = [m for m in actors.broker.middleware if isinstance(m, ListenForWakeups)]
    return bool(found) and found[0].wakeups is not None and found[0].wakeups.listener.connected
