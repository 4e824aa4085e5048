"""The dramatiq actors on the in-process broker: no-work runs, draining, shutdown (P1, INV-1)."""
from __future__ import annotations

import time

import pytest
from loguru import logger

import actors
from actors.middleware import ListenForWakeups
from actors.work import stopping
from conftest import kinds, settings
from media import encode
from transcriber.local import LocalPipeline


@pytest.fixture
def stub(store):
    actors.use(settings(), store)
    actors.broker.flush_all()
    middleware = list(actors.broker.middleware)
    # no wake-ups on commit here: these tests send the actors' wake-ups themselves
    actors.broker.middleware[:] = [m for m in middleware if not isinstance(m, ListenForWakeups)]
    yield actors.broker
    actors.broker.flush_all()
    actors.broker.middleware[:] = middleware


def test_no_work_run_is_not_a_failure(stub):
    """P1: an actor whose claim finds nothing returns quietly: no exception, no dramatiq retry or
    dead letter, nothing logged above DEBUG."""
    import dramatiq

    lines = []
    sink = logger.add(lines.append, level="INFO")
    worker = dramatiq.Worker(stub, worker_threads=1, worker_timeout=100)
    worker.start()
    try:
        for _ in range(3):
            actors.convert.send()
            actors.recognize.send()
        stub.join(actors.QUEUE, fail_fast=True, timeout=10_000)  # re-raises any actor error
        worker.join()
    finally:
        worker.stop()
        logger.remove(sink)
    assert stub.dead_letters == []
    assert lines == []


def test_actor_drains_backlog_from_one_wakeup(stub, store, owner, tmp_path, hears_word_a_second):
    """An actor that found work sends itself again: one wake-up per step drains the backlog.
    The words are a stand-in's."""
    import dramatiq

    hears_word_a_second()
    path = encode(tmp_path / "a.wav", "wav")
    ids = [store.accept(owner["id"], [path.read_bytes()]) for _ in range(3)]
    worker = dramatiq.Worker(stub, worker_threads=2, worker_timeout=100)
    worker.start()
    try:
        actors.convert.send()
        deadline = time.monotonic() + 120
        while any(store.read_record(i)["stage"] != "converted" for i in ids):
            assert time.monotonic() < deadline
            time.sleep(0.2)
        actors.recognize.send()
        while any(store.read_record(i)["stage"] != "done" for i in ids):
            assert time.monotonic() < deadline
            time.sleep(0.2)
        stub.join(actors.QUEUE, fail_fast=True, timeout=30_000)
    finally:
        worker.stop()
    for record_id in ids:
        assert kinds(store, record_id).count("advanced") == 2


def test_local_pipeline_and_clean_shutdown(store, owner, tmp_path, hears_word_a_second):
    """INV-1: stopping the in-process workers mid-recognition gives the claim back (nothing
    saved, nothing lost); the next run finishes the record. (Its recognizer takes half a second a
    window and spends no CPU on words this test does not read.)"""
    hears_word_a_second(pause=0.5)
    s = settings(tick_seconds=0.2, recognize_lease_seconds=15)
    record_id = store.accept(owner["id"], [encode(tmp_path / "long.flac", "flac", repeat=12).read_bytes()])
    pipeline = LocalPipeline(store, s)
    try:
        deadline = time.monotonic() + 300
        while not (store.read_record(record_id)["progress_seconds"] or 0) > 0:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        pipeline.stop()
    row = store.read_record(record_id)
    assert row["stage"] == "converted" and row["claim_token"] is None and row["halted_at"] is None
    assert kinds(store, record_id)[-1] == "released"
    assert not stopping.is_set()
    with LocalPipeline(store, s):
        deadline = time.monotonic() + 600
        while store.read_record(record_id)["stage"] != "done":
            assert time.monotonic() < deadline
            time.sleep(0.2)
    journal = kinds(store, record_id)
    assert journal.count("advanced") == 2 and "save_refused" not in journal
