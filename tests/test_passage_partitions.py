"""Passages split by owner (0010_passages_by_owner.sql) on a real PostgreSQL with pgvector: the
migration keeps a deployment's passages and their search; an owner's search by meaning reads the
one partition that holds its passages, the walk of an owner of many is sized by its share of that
partition and walks that partition's graph, and never returns another owner's passage even when
the other owner shares the partition."""
from __future__ import annotations

import json
import random
import re

import pytest
from psycopg import sql

from bench import statements
from db import Database, Store
from db.queries import query
from searching import database_before, done_record
from test_search_meaning import BOBS, LAUNCH

# the partition of passages that holds an owner's rows (the server's own hash of owner_id)
PARTITION_OF = """
SELECT c.relname AS partition FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'passages'::regclass
  AND satisfies_hash_partition('passages'::regclass, 64,
        substring(pg_get_expr(c.relpartbound, c.oid) FROM 'remainder (\\d+)')::int, %s::bigint)
"""
LIMIT = 20


def _rows(db: Database) -> list[dict]:
    with db.connection() as conn:
        return conn.execute("SELECT record_id, n, owner_id, first_segment, last_segment, start_seconds, "
                            "end_seconds, speaker, body, embedding FROM passages ORDER BY record_id, n").fetchall()


def test_the_migration_keeps_the_passages_and_their_search(vector_server):
    """A database at 0009 with two owners' passages: 0010 splits the table by owner, every passage
    is kept as it was, each owner's search by meaning finds its own (HNSW graphs made on every
    partition), and deleting a record still takes its passages."""
    admin, _ = vector_server
    with database_before(admin, "passages_before_0010", 10) as db:
        store = Store(db)
        for who in ("alice", "bob"):
            store.add_owner(who)
        ids = {who: store.owner_by_name(who)["id"] for who in ("alice", "bob")}
        launch = done_record(store, ids["alice"], LAUNCH, title="Weekly", passages=True)
        bobs = done_record(store, ids["bob"], BOBS, title="Bob's", passages=True)
        before = _rows(db)
        assert {row["owner_id"] for row in before} == set(ids.values())

        assert db.migrate()[0] == 10  # and any after it
        assert _rows(db) == before
        with db.connection() as conn:
            kind = conn.execute("SELECT relkind FROM pg_class WHERE oid = 'passages'::regclass").fetchone()
            graphs = conn.execute("SELECT count(*) AS n FROM pg_partition_tree('passages_meaning') "
                                  "WHERE isleaf").fetchone()
        assert kind["relkind"] == "p" and graphs["n"] == 64
        store = Store(db)
        for who, record in (("alice", launch), ("bob", bobs)):
            vector = _vector_of(db, record)
            for exact_up_to in (20_000, 0):  # compared one by one, and the partition's graph walked
                found = _nearest(store, ids[who], vector, exact_up_to)
                assert found and {row["record_id"] for row in found} == {record}
        assert store.delete_record(launch, ids["alice"], by="alice", role="owner") == "done"
        assert {row["record_id"] for row in _rows(db)} == {bobs}
        # a save that makes a record's passages anew still replaces them (keep_passages' new key)
        with db.transaction() as conn:
            kept = conn.execute("SELECT keep_passages(%s, %s, %s::jsonb) AS n",
                                (bobs, ids["bob"], json.dumps([_made(before[-1])]))).fetchone()
        assert kept["n"] == 1 and [(row["n"], row["body"]) for row in _rows(db)] == [(1, before[-1]["body"])]


def _made(row: dict) -> dict:
    return {"n": 1, "first": row["first_segment"], "last": row["last_segment"], "start": row["start_seconds"],
            "end": row["end_seconds"], "speaker": row["speaker"], "body": row["body"], "embedding": row["embedding"]}


def _vector_of(db: Database, record_id: int) -> str:
    with db.connection() as conn:
        row = conn.execute("SELECT embedding::vector(384)::text AS v FROM passages WHERE record_id = %s AND n = 1",
                           (record_id,)).fetchone()
    return row["v"]


def _nearest(store: Store, owner_id: int, vector: str, exact_up_to: int) -> list[dict]:
    import db.meaning

    kept = db.meaning.EXACT_UP_TO
    db.meaning.EXACT_UP_TO = exact_up_to
    try:
        return store.nearest_passages(owner_id, vector, limit=LIMIT)
    finally:
        db.meaning.EXACT_UP_TO = kept


@pytest.fixture
def sharing(vector_store):
    """Three owners of random passages: `many` (2,000), `neighbour` (400) in the same partition,
    `apart` (300) in another; the table analysed as autovacuum would."""
    store = vector_store
    with store.db.connection() as conn:
        conn.execute("INSERT INTO owners (name, token_hash) SELECT 'cand' || g, 'cand-token-' || g "
                     "FROM generate_series(1, 300) AS g")
        candidates = conn.execute("SELECT id FROM owners WHERE starts_with(name, 'cand') ORDER BY id").fetchall()
        partition = {row["id"]: conn.execute(PARTITION_OF, (row["id"],)).fetchone()["partition"]
                     for row in candidates}
        many = candidates[0]["id"]
        neighbour = next(o for o in partition if o != many and partition[o] == partition[many])
        apart = next(o for o in partition if partition[o] != partition[many])
        chosen = {"many": (many, 2, 1000), "neighbour": (neighbour, 1, 400), "apart": (apart, 1, 300)}
        for label, (owner_id, records, per_record) in chosen.items():
            conn.execute("UPDATE owners SET name = %s WHERE id = %s", (label, owner_id))
            made = conn.execute(statements.query("bench_meaning_records"),
                                {"per_owner": records, "prefix": label}).fetchone()
            conn.execute(statements.query("bench_meaning_fill"),
                         {"first": made["first"], "last": made["last"], "per_record": per_record})
        conn.execute("ANALYZE passages")
    owners = {label: owner_id for label, (owner_id, _, _) in chosen.items()}
    return store, owners, partition


def _random_vector(seed: int) -> str:
    rng = random.Random(seed)
    return "[" + ",".join(f"{rng.uniform(-0.5, 0.5):.4f}" for _ in range(384)) + "]"


def _scanned(plan: dict) -> list[tuple[str, str | None]]:
    """The relations a plan reads, each with the index it reads them by (None: none)."""
    found = []
    if "Relation Name" in plan:
        found.append((plan["Relation Name"], plan.get("Index Name")))
    for child in plan.get("Plans", []):
        found += _scanned(child)
    return found


def _plan(conn, name: str, params: dict) -> list[tuple[str, str | None]]:
    explain = sql.SQL("EXPLAIN (FORMAT JSON) ") + query(name)
    plan = conn.execute(explain, params, prepare=False).fetchone()
    return _scanned(next(iter(plan.values()))[0]["Plan"])


def test_an_owner_reads_one_partition_and_walks_its_graph_sized_by_its_share(sharing):
    """The walk of the owner of many is as wide as twice the page over its share of its own
    partition (2,400 passages, 2,000 its own: 48, where its share of all 2,700 would make 54),
    whether the share is read from the partition's statistics or counted; the
    statements (custom plans, as the service runs them) read that partition alone, the walk by the
    partition's HNSW graph, and an owner's exact comparison reads its own partition alone.

    The neighbour shares the partition (and its graph) with the owner of many: walked, its search
    finds a full page of its own passages and none of the other owner's; nor does the owner of
    many find any but its own."""
    store, owners, partition = sharing
    params = {"owner_id": owners["many"], "vector": _random_vector(1), "limit": LIMIT, "width": 1000,
              "stage": None, "topic": None, "since": None, "until": None, "speaker": None}
    with store.db.transaction() as conn:
        width = conn.execute(query("meaning_search_width"), params).fetchone()["width"]
        assert int(width) == round(2 * LIMIT * 2400 / 2000)
        walked = [scan for scan in _plan(conn, "meaning_nearest", params) if scan[0].startswith("passages")]
        graphs = {row["name"] for row in conn.execute(
            "SELECT i.relname AS name FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
            "JOIN pg_am m ON m.oid = i.relam WHERE m.amname = 'hnsw' AND x.indrelid = %s::regclass",
            (partition[owners["many"]],))}
        assert [table for table, _ in walked] == [partition[owners["many"]]]
        assert walked[0][1] in graphs
        for label in ("apart", "neighbour"):
            exact = [table for table, _ in _plan(conn, "meaning_exact", {**params, "owner_id": owners[label]})
                     if table.startswith("passages")]
            assert exact == [partition[owners[label]]]

    with store.db.connection() as conn:
        records = {label: {row["id"] for row in conn.execute("SELECT id FROM records WHERE owner_id = %s",
                                                             (owner_id,))}
                   for label, owner_id in owners.items()}
    for seed in range(3):
        vector = _random_vector(seed)
        for label in ("neighbour", "many"):
            found = _nearest(store, owners[label], vector, 0)
            assert len(found) == LIMIT
            assert {row["record_id"] for row in found} <= records[label]

    with store.db.transaction() as conn:  # the partition's statistics gone: the owner's passages counted
        conn.execute("DELETE FROM pg_statistic WHERE starelid = %s::regclass", (partition[owners["many"]],))
        width = conn.execute(query("meaning_search_width"), params).fetchone()["width"]
        assert int(width) == round(2 * LIMIT * 2400 / 2000)


def _read(plan: dict) -> list[str]:
    """The partitions of passages an analysed plan read (its scans run at least once)."""
    found = []
    if re.fullmatch(r"passages_\d\d", plan.get("Relation Name", "")) and plan.get("Actual Loops", 0) > 0:
        found.append(plan["Relation Name"])
    for child in plan.get("Plans", []):
        found += _read(child)
    return found


def test_an_edit_and_the_backfill_read_the_record_owners_partition_alone(sharing):
    """The statements an edit runs on a record's passages (db.meaning.remake_passages: lock, read,
    make again, drop) name the owner, read from records when the caller has none (the operator's
    edit): run, each reads the owner's partition and no other of the 64, where by record alone
    each probed every partition's index; the backfill's for one record reads none."""
    store, owners, partition = sharing
    with store.db.connection() as conn:
        record = conn.execute("SELECT min(id) AS id FROM records WHERE owner_id = %s",
                              (owners["many"],)).fetchone()["id"]
        with conn.transaction(force_rollback=True):
            conn.execute("INSERT INTO search_rows (record_id, n, owner_id, start_seconds, end_seconds, config, body) "
                         "SELECT %s, g, %s, g, g + 1, 'english', 'word' FROM generate_series(1, 6) AS g",
                         (record, owners["many"]))
            params = {"id": record, "segments": [1, 4], "n": 1, "body": "word word", "embedding": [0.5] * 384,
                      "said": "[]", "passages": "[]"}
            for name in ("lock_passages_holding", "passages_holding", "remake_passage", "drop_passage",
                         "backfill_passages"):
                explain = sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) ") + query(name)
                plan = conn.execute(explain, params, prepare=False).fetchone()
                # the backfill's write finds its record by its debt (passages_owed), reading no
                # passage; keep_passages then writes by the owner's key
                expected = [] if name == "backfill_passages" else [partition[owners["many"]]]
                assert _read(next(iter(plan.values()))[0]["Plan"]) == expected, name


def test_a_filter_never_hides_a_passage_it_passes_from_an_owner_of_many(sharing, monkeypatch):
    """The owner of many walks the graph and filters what it found: a speaker heard in one passage
    only, the farthest from the question (beyond any walk), is still found (compared one by one);
    one heard in a tenth of the passages fills the page, each hit that speaker's."""
    import db.meaning

    store, owners, _ = sharing
    monkeypatch.setattr(db.meaning, "EXACT_UP_TO", 0)
    vector = _random_vector(5)
    owner = owners["many"]
    with store.db.connection() as conn:
        conn.execute("UPDATE passages SET speaker = 'S8' WHERE owner_id = %s AND n %% 10 = 0", (owner,))
        far = conn.execute("SELECT record_id, n FROM passages WHERE owner_id = %s "
                           "ORDER BY embedding::vector(384) <=> %s::vector(384) DESC LIMIT 1", (owner, vector)).fetchone()
        conn.execute("UPDATE passages SET speaker = 'S7' WHERE owner_id = %s AND record_id = %s AND n = %s",
                     (owner, far["record_id"], far["n"]))
    alone = store.nearest_passages(owner, vector, limit=LIMIT, speaker="S7")
    assert [(row["record_id"], row["n"]) for row in alone] == [(far["record_id"], far["n"])]
    tenth = store.nearest_passages(owner, vector, limit=LIMIT, speaker="s8")
    assert len(tenth) == LIMIT and {row["speaker"] for row in tenth} == {"S8"}
    assert len(store.nearest_passages(owner, vector, limit=LIMIT)) == LIMIT
