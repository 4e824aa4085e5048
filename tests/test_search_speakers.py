"""Search by speaker, by label or by the owner's name for it: real PostgreSQL, a text saved by the
pipeline's own statements, speaker turns saved by the diarize step's fenced save; searched through
the API in-process and the command line."""
from __future__ import annotations

import subprocess
import sys

from fastapi.testclient import TestClient

from conftest import policy, save_turns, settings
from domain.stages import Step
from searching import done_record
from web.app import create_app

TALK = [
    (0.0, 4.0, "Good morning, the budget is ready."),
    (4.0, 10.0, "Thanks, the budget looks fine. Let us ship it."),   # S1 then S2 inside one segment
    (10.0, 16.0, "I will ship the release tonight then."),
]
TURNS = [{"start": 0.0, "end": 6.0, "speaker": "S1"}, {"start": 6.0, "end": 16.0, "speaker": "S2"}]


def test_search_keeps_one_speakers_words(store):
    """`speaker=S1` (or the name the owner gave S1, any case) keeps the segments where S1 speaks,
    also one that S1 shares with S2; a title hit and a record not diarized yet never pass the
    filter; a stale diarize holder's save labels nothing; `next` keeps the filter."""
    app = TestClient(create_app(store, settings()), raise_server_exceptions=False)
    token = store.add_owner("alice")
    owner_id = store.owner_by_name("alice")["id"]
    auth = {"Authorization": f"Bearer {token}"}
    record = done_record(store, owner_id, TALK, title="budget talk", diarize=True, words=True)

    def hits(q, **params):
        answer = app.get("/search", params={"q": q, **params}, headers=auth)
        assert answer.status_code == 200, answer.text
        return sorted(((item["record"]["id"], item["start"]) for item in answer.json()["items"]),
                      key=lambda hit: (hit[0], -1 if hit[1] is None else hit[1]))

    assert hits("budget", speaker="S1") == []                     # not diarized yet: nobody is known
    stale = store.claim(Step.DIARIZE, policy(lease=0.5))
    fresh = _claimed_again(store)
    assert not save_turns(store, stale, [{"start": 0.0, "end": 16.0, "speaker": "S1"}])
    assert hits("budget", speaker="S1") == []                     # the refused save labelled nothing
    assert save_turns(store, fresh, TURNS)

    assert hits("budget") == [(record, None), (record, 0.0), (record, 4.0)]
    assert hits("budget", speaker="S1") == [(record, 0.0), (record, 4.0)]
    assert hits("budget", speaker="s2") == [(record, 4.0)]
    assert hits("ship", speaker="S2") == [(record, 4.0), (record, 10.0)]
    assert hits("tonight", speaker="S1") == [] and hits("budget", speaker="S3") == []
    assert hits("budget", speaker="Alice") == []
    assert app.patch(f"/records/{record}", json={"speakers": {"S1": "Alice"}}, headers=auth).status_code == 200
    assert hits("budget", speaker="alice ") == [(record, 0.0), (record, 4.0)]
    assert hits("budget", speaker="S1") == [(record, 0.0), (record, 4.0)]   # the label still works

    page = app.get("/search", params={"q": "budget", "speaker": "Alice", "limit": 1}, headers=auth).json()
    assert "speaker=Alice" in page["next"]
    assert app.get(page["next"], headers=auth).json()["total"] == 2
    assert app.get("/search", params={"q": "budget", "speaker": "a\x00"}, headers=auth).status_code == 422


def test_search_by_speaker_from_the_command_line(store, env):
    """`transcriber search --owner NAME --speaker S2 "query"` prints that speaker's hits only,
    each at the second its word was said ("ship" at 8.7 s and 11.7 s, in segments from 4 and 10 s)."""
    store.add_owner("alice")
    record = done_record(store, store.owner_by_name("alice")["id"], TALK, diarize=True, words=True)
    assert save_turns(store, store.claim(Step.DIARIZE, policy()), TURNS)
    printed = subprocess.run([sys.executable, "-m", "transcriber.cli", "search", "--owner", "alice",
                              "--speaker", "S2", "ship"], env=env, capture_output=True, text=True, timeout=120)
    assert printed.returncode == 0, printed.stderr
    assert [line.split("  ")[:2] for line in printed.stdout.splitlines()] == [[str(record), "00:00:08"],
                                                                             [str(record), "00:00:11"]]


def _claimed_again(store):
    """The same diarize step claimed anew once the first lease ran out (waiting on the lease)."""
    from conftest import wait_until

    return wait_until(lambda: store.claim(Step.DIARIZE, policy()) or None, 30)


def _join_filtered(plan: dict) -> int:
    """Rows an analysed plan's joins by record threw away, in all its nodes."""
    removed = plan.get("Rows Removed by Join Filter", 0) if "record_id" in plan.get("Join Filter", "") else 0
    return removed + sum(_join_filtered(child) for child in plan.get("Plans", []))


def test_search_by_name_looks_up_each_rows_record(store):
    """Search by name for an owner of 300 records, S2 named on each and 1,200 segments matching
    the word: each matching row finds its record's named labels by a lookup, never by reading
    every named record (the statement run under EXPLAIN ANALYZE, as the service runs it: no
    join by record throws rows away), and finds S2's 600 segments. The records are not analysed
    yet (as after a bulk load): the planner estimates the owner's few, the plan the bench's heavy
    owner got with its records analysed too."""
    from psycopg import sql

    from bench import statements
    from db.queries import query

    store.add_owner("many")
    owner_id = store.owner_by_name("many")["id"]
    with store.db.connection() as conn:
        made = conn.execute(statements.query("bench_meaning_records"), {"per_owner": 300, "prefix": "many"}).fetchone()
        conn.execute("UPDATE records SET speaker_names = '{\"S2\": \"Dana\"}' WHERE owner_id = %s", (owner_id,))
        conn.execute("INSERT INTO search_rows (record_id, n, owner_id, start_seconds, end_seconds, speakers, config, "
                     "body) SELECT r.id, g, r.owner_id, g, g + 1, ARRAY['S' || (1 + g %% 2)], 'english', 'budget' "
                     "FROM records r, generate_series(1, 4) AS g WHERE r.id BETWEEN %s AND %s",
                     (made["first"], made["last"]))
        conn.execute("ANALYZE search_rows")
        params = {"owner_id": owner_id, "text": "budget", "prefix": None, "limit": 20, "offset": 0, "stage": None,
                  "topic": None, "since": None, "until": None, "speaker": "dana", "candidates": 1000}
        found = conn.execute(query("search_page"), params, prepare=False).fetchall()
        plan = conn.execute(sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) ") + query("search_page"), params,
                            prepare=False).fetchone()
    assert found[0]["total"] == 600 and len(found) == 20
    assert _join_filtered(next(iter(plan.values()))[0]["Plan"]) == 0
