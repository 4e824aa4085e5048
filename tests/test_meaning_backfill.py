"""Records done before search by meaning was enabled (pgvector, the model or the extra came
later) gain their passages without anyone touching them: the workers' backfill (woken every
ten minutes) and `transcriber meaning backfill`, on a real PostgreSQL with pgvector and the real
sentence model. Its write is fenced: an edit of the text while its passages are embedded, or
under way when they are written, never leaves a passage of the words the edit replaced."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from fastapi.testclient import TestClient

from audio import meaning
from conftest import run_together, settings
from db import Store
from domain.passages import body_of, english
from searching import database_before, done_record
from service.meaning import backfill, correct
from service.metrics import exposition
from test_search_meaning import BOBS, LAUNCH, PARAPHRASE, RUSSIAN
from web.app import create_app

EDIT = "We will buy three new espresso machines for the coffee corner."


@pytest.fixture
def world(vector_store):
    """Alice's and Bob's records done as if search by meaning were off: no passages."""
    store = vector_store
    tokens = {name: store.add_owner(name) for name in ("alice", "bob")}
    ids = {name: store.owner_by_name(name)["id"] for name in tokens}
    records = {
        "launch": done_record(store, ids["alice"], LAUNCH, title="Weekly"),
        "bobs": done_record(store, ids["bob"], BOBS, title="Bob's"),
        "russian": done_record(store, ids["alice"], RUSSIAN, language="ru", title="Ночь"),
    }
    app = TestClient(create_app(store, settings()), raise_server_exceptions=False)

    def search(who, q, **params):
        answer = app.get("/search", params={"q": q, **params}, headers={"Authorization": f"Bearer {tokens[who]}"})
        assert answer.status_code == 200, answer.text
        return [item["record"]["id"] for item in answer.json()["items"]]

    return store, search, ids, records


def _passages(store, record_id: int) -> list[dict]:
    with store.db.connection() as conn:
        return conn.execute("SELECT n, body, embedding FROM passages WHERE record_id = %s ORDER BY n",
                            (record_id,)).fetchall()


def _true_to_the_text(store, record_id: int) -> None:
    """The record has passages, each holding the text its segments hold now, embedded from it."""
    with store.db.connection() as conn:
        rows = conn.execute(
            "SELECT p.body, p.embedding, array_agg(s.body ORDER BY s.n) AS texts FROM passages p "
            "JOIN search_rows s ON s.record_id = p.record_id AND s.n BETWEEN p.first_segment AND p.last_segment "
            "WHERE p.record_id = %s GROUP BY p.n, p.body, p.embedding ORDER BY p.n", (record_id,)).fetchall()
    assert rows
    for row in rows:
        assert row["body"] == body_of(row["texts"])
        assert float(np.dot(meaning.embed([row["body"]])[0], row["embedding"])) > 0.9999


def test_records_done_with_meaning_off_gain_passages_from_the_workers_and_are_found(world):
    """The workers' backfill gives the English records their passages (not the Russian one,
    found by words), Alice then finds hers by a paraphrase and never Bob's, and a second pass
    finds nothing left to do."""
    import actors

    store, search, ids, records = world
    assert all(_passages(store, record) == [] for record in records.values())
    assert records["launch"] not in search("alice", PARAPHRASE, mode="meaning")
    actors.use(settings(), store)
    actors.backfill_passages()
    for record in ("launch", "bobs"):
        _true_to_the_text(store, records[record])
    assert _passages(store, records["russian"]) == []
    assert search("alice", PARAPHRASE, mode="meaning")[0] == records["launch"]
    assert search("alice", PARAPHRASE, mode="words") == []
    for mode in ("meaning", "both"):
        assert records["bobs"] not in search("alice", "delay the launch until spring", mode=mode)
        assert set(search("bob", PARAPHRASE, mode=mode)) == {records["bobs"]}
    assert backfill(store) == backfill(store).__class__(0, 0, None)


def _owed(store) -> set[int]:
    with store.db.connection() as conn:
        return {row["record_id"] for row in conn.execute("SELECT record_id FROM passages_owed")}


def test_the_records_owed_passages_are_kept_as_they_are_done_and_the_backfill_pays_them(world):
    """Done with search by meaning off, the English records with words are owed passages, the
    Russian one is not, nor a record done with its passages or one whose text has no words; the
    backfill pays each debt (reading the debts alone), and a record deleted takes its debt; the
    metrics say how many are owed."""
    store, _, ids, records = world
    assert _owed(store) == {records["launch"], records["bobs"]}
    done_record(store, ids["alice"], LAUNCH, title="with passages", passages=True)
    done_record(store, ids["alice"], [(0.0, 2.0, " ")], title="no words")
    assert _owed(store) == {records["launch"], records["bobs"]}
    assert "transcriber_records_owed_passages 2.0" in exposition(store).decode()
    assert store.delete_record(records["bobs"], ids["bob"], by="bob", role="owner") == "done"
    assert _owed(store) == {records["launch"]}
    assert backfill(store).records == 1
    assert _owed(store) == set() and store.passages_missing(0, 100) == []
    assert "transcriber_records_owed_passages 0.0" in exposition(store).decode()
    _true_to_the_text(store, records["launch"])


def test_an_edit_made_without_the_model_owes_the_record_its_passages(world, monkeypatch):
    """An edit in a process without the sentence model drops the passage it cannot embed (rather
    than leave it found by the words it replaced) and owes the record its passages; where the
    model is, the backfill makes them all again, true to the corrected text."""
    store, _, ids, records = world
    record = records["launch"]
    backfill(store)
    assert _owed(store) == set()
    monkeypatch.setenv("TRANSCRIBER_MEANING", "off")
    assert correct(store, record, ids["alice"], [(3, EDIT)], by="alice")
    assert _owed(store) == {record}
    assert not any(EDIT in passage["body"] for passage in _passages(store, record))
    monkeypatch.delenv("TRANSCRIBER_MEANING")
    assert backfill(store).records == 1
    _true_to_the_text(store, record)
    assert any(EDIT in passage["body"] for passage in _passages(store, record))
    assert _owed(store) == set()


def test_a_database_before_the_debts_were_kept_owes_what_the_backfill_looked_for(vector_server):
    """Migrating a database whose records were done before the debts were kept (0012) owes each
    done English record with words and no passage, and nothing else."""
    admin, _ = vector_server
    with database_before(admin, "passages_before_0012", 12) as db:
        store = Store(db)
        store.add_owner("alice")
        owner = store.owner_by_name("alice")["id"]
        without = done_record(store, owner, LAUNCH, title="without")
        done_record(store, owner, BOBS, title="with", passages=True)
        done_record(store, owner, RUSSIAN, language="ru", title="Russian")
        assert db.migrate() == [12]
        assert _owed(store) == {without}


def test_the_command_backfills_in_batches_and_says_how_many(world, vector_url, monkeypatch, capsys):
    """`transcriber meaning backfill` goes through every record in batches (here of one) and
    prints how many it gave passages; run again, none."""
    import service.meaning
    from transcriber import cli

    store, _, _, records = world
    monkeypatch.setenv("TRANSCRIBER_DATABASE_URL", vector_url)
    monkeypatch.setattr(service.meaning, "BACKFILL_BATCH", 1)
    assert cli.main(["meaning", "backfill"]) == 0
    assert capsys.readouterr().out.startswith("2 record(s) given passages")
    assert _passages(store, records["launch"]) and _passages(store, records["bobs"])
    assert cli.main(["meaning", "backfill"]) == 0
    assert capsys.readouterr().out.startswith("0 record(s)")


def test_an_edit_committed_while_the_backfill_embeds_is_never_covered_by_stale_passages(world, monkeypatch):
    """The owner corrects a segment while the backfill embeds the old text: the backfill writes
    nothing for that record, and its next pass makes the passages of the corrected text."""
    store, search, ids, records = world
    record = records["launch"]
    real_embed = meaning.embed
    edited: list[bool] = []

    def embed_while_the_owner_edits(texts):
        vectors = real_embed(texts)
        if threading.current_thread() is threading.main_thread() and not edited:
            edited.append(True)  # the edit, on a thread of its own, commits before the backfill writes
            editor = threading.Thread(target=lambda: edited.append(
                correct(store, record, ids["alice"], [(4, EDIT)], by="alice")))
            editor.start()
            editor.join(timeout=120)
        return vectors

    monkeypatch.setattr(meaning, "embed", embed_while_the_owner_edits)
    first = backfill(store)
    assert edited == [True, True]
    assert first.changed == 1 and _passages(store, record) == []
    monkeypatch.setattr(meaning, "embed", real_embed)
    assert backfill(store).records == 1
    _true_to_the_text(store, record)
    assert any(EDIT in passage["body"] for passage in _passages(store, record))


def test_an_edit_under_way_when_the_backfill_writes_is_waited_for_and_fences_it_out(world):
    """An edit's transaction holds the segment's new text, not committed, when the backfill
    writes: the backfill waits for it, sees the text changed, and writes nothing; the next pass
    makes the passages of the text the edit left."""
    from db.corrections import _segment, _write
    from domain.corrections import retimed

    store, _, ids, records = world
    record = records["launch"]
    result: list = []
    with store.db.transaction() as conn:  # an edit's writes, by its own statements, not committed
        pid = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"]
        found = _segment(conn, record, ids["alice"], 4)
        timed = retimed(found["words"], found["start_seconds"], found["end_seconds"], EDIT)
        _write(conn, record, ids["alice"], 4, found, EDIT, timed, by="alice", role="owner")
        backfilling = threading.Thread(target=lambda: result.append(backfill(store)))
        backfilling.start()
        deadline = time.monotonic() + 120
        while not _waits_on(store, pid):
            assert time.monotonic() < deadline, "the backfill never waited for the edit"
            assert backfilling.is_alive(), result
            time.sleep(0.05)
    backfilling.join(timeout=120)
    assert result and result[0].changed == 1 and _passages(store, record) == []
    assert backfill(store).records == 1
    _true_to_the_text(store, record)
    assert any(EDIT in passage["body"] for passage in _passages(store, record))


def _waits_on(store, pid: int) -> bool:
    """Whether some session waits for a lock the session `pid` holds."""
    with store.db.connection() as conn:
        return conn.execute("SELECT EXISTS (SELECT FROM pg_stat_activity WHERE %s = ANY (pg_blocking_pids(pid)))"
                            " AS waits", (pid,)).fetchone()["waits"]


def test_text_and_passages_agree_whatever_the_order_of_a_backfill_and_edits(world):
    """The backfill and the owner's edits at once (threads on a barrier), round after round:
    whoever commits first, the record ends with passages of the text it holds or with none (and
    the next pass makes them)."""
    store, _, ids, records = world
    record = records["launch"]
    for turn in range(4):
        with store.db.transaction() as conn:  # as a record done with search by meaning off is left
            conn.execute("DELETE FROM passages WHERE record_id = %s", (record,))
            conn.execute("INSERT INTO passages_owed VALUES (%s) ON CONFLICT DO NOTHING", (record,))
        text = f"In round {turn} the canteen serves soup number {turn} to everyone who asks."
        run_together(2, lambda i, text=text: backfill(store) if i == 0 else correct(
            store, record, ids["alice"], [(3 + turn % 2, text)], by="alice"))
        if _passages(store, record):
            _true_to_the_text(store, record)
        backfill(store)
        _true_to_the_text(store, record)
        assert any(text in passage["body"] for passage in _passages(store, record))


def test_the_scheduler_wakes_the_backfill_every_ten_minutes():
    """The one tick source wakes the workers' backfill (beside the per-step tick and the sweep)."""
    from apscheduler.schedulers.background import BackgroundScheduler

    import actors
    from actors.scheduler import BACKFILL_SECONDS, _add_tick

    scheduler = BackgroundScheduler()
    _add_tick(scheduler, 1.0, None)
    job = scheduler.get_job("backfill_passages")
    assert job is not None and job.args == (actors.backfill_passages.send,)
    assert job.trigger.interval.total_seconds() == BACKFILL_SECONDS == 600
    assert {j.id for j in scheduler.get_jobs()} == {"tick", "sweep", "backfill_passages"}


@pytest.mark.parametrize("language", ["en", "EN", "en-GB", "", None, "ru", "eng", "de-en", "zh"])
def test_the_database_and_the_service_agree_on_what_is_english(db, language):
    """A record's passages are cut by the service for English (domain.passages.english) and owed
    by the database for it (in_english): the two say the same of every language."""
    with db.connection() as conn:
        owed = conn.execute("SELECT in_english(%s::text) AS yes", (language,)).fetchone()["yes"]
    assert owed == english(language)
