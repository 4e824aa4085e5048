"""Full-text search over the owner's archive: real PostgreSQL, texts saved by the
pipeline's own statements (checkpoints, then the done save), searched through the API in-process."""
from __future__ import annotations

import threading
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from conftest import settings, wait_until
from db.queries import query
from domain.search import MAX_COUNTED
from searching import done_record
from web.app import create_app

TALK = [
    (0.0, 5.0, "Good morning and welcome to the weekly meeting."),
    (5.0, 12.0, "Today we look at the storage budget and the release date."),
    (83.0, 88.5, "The conversion pipeline stalled twice on Tuesday night."),
    (88.5, 95.0, "Nobody lost a recording, the checkpoints held."),
]
RUSSIAN = [
    (0.0, 4.0, "Доброе утро, начнём с отчёта."),
    (4.0, 9.0, "Работа конвейера остановилась ночью во вторник."),
    (9.0, 15.0, "Новогодняя ёлка стоит в холле."),
]


@pytest.fixture
def world(store):
    app = TestClient(create_app(store, settings()), raise_server_exceptions=False)
    alice, bob = store.add_owner("alice"), store.add_owner("bob")
    ids = {"alice": store.owner_by_name("alice")["id"], "bob": store.owner_by_name("bob")["id"]}

    def search(token, q, **params):
        return app.get("/search", params={"q": q, **params}, headers={"Authorization": f"Bearer {token}"})

    return app, search, alice, bob, ids


def found(answer) -> list[tuple[int, float | None]]:
    assert answer.status_code == 200, answer.text
    return [(item["record"]["id"], item["start"]) for item in answer.json()["items"]]


def test_a_word_is_found_at_the_second_it_was_said(store, world):
    """A word said at 00:01:23 is found with its segment's start and end,
    its record's id, title and card, and a snippet that marks it; its last word typed is a prefix
    (`pipel`), words in quotes are a phrase, other words need not be adjacent."""
    app, search, alice, _, ids = world
    record = done_record(store, ids["alice"], TALK, title="Weekly", windows=2)
    answer = search(alice, "pipeline")
    assert found(answer) == [(record, 83.0)]
    item = answer.json()["items"][0]
    assert item["end"] == 88.5 and item["record"] == {"id": record, "title": "Weekly", "card": f"/records/{record}"}
    assert "<mark>pipeline</mark>" in item["snippet"] and item["rank"] > 0 and answer.json()["total"] == 1
    assert found(search(alice, "pipel")) == [(record, 83.0)]            # the last word typed: a prefix
    assert found(search(alice, "stalled pipelines ")) == [(record, 83.0)]   # stemmed, not adjacent
    assert found(search(alice, '"pipeline stalled"')) == [(record, 83.0)]
    assert found(search(alice, '"stalled pipeline"')) == []              # a phrase keeps its order
    assert found(search(alice, "pipeline -tuesday")) == []
    assert {start for _, start in found(search(alice, "recording or budget"))} == {5.0, 88.5}


def test_a_hit_is_at_its_first_matched_word(store, world):
    """A hit says when its first matched word was said (`at`, from the segment's
    word times), besides its segment's start and end: "pipeline" is the third of eight words
    timed evenly over 83.0–88.5 s; of two words asked, the earlier one said; an inflected or
    prefix match, and ё for е, are found at their word too. A segment without word times is at
    its start; a title hit has no time. The command line prints `at`."""
    app, search, alice, _, ids = world
    timed = done_record(store, ids["alice"], TALK, title="Minutes", windows=2, words=True)
    untimed = done_record(store, ids["alice"], [(3.0, 9.0, "The pipeline again, untimed.")])
    russian = done_record(store, ids["alice"], RUSSIAN, language="ru", words=True)

    def at(q) -> dict[int, float | None]:
        answer = search(alice, q)
        assert answer.status_code == 200, answer.text
        return {item["record"]["id"]: item["at"] for item in answer.json()["items"]}

    pipeline_said = 83.0 + 2 * (88.5 - 83.0) / 8
    assert at("pipeline") == {timed: pytest.approx(pipeline_said, abs=0.001), untimed: 3.0}
    assert at("pipel")[timed] == pytest.approx(pipeline_said, abs=0.001)
    assert at("tuesday stalled")[timed] == pytest.approx(83.0 + 3 * 5.5 / 8, abs=0.001)  # "stalled" first
    item = next(i for i in search(alice, "pipeline").json()["items"] if i["record"]["id"] == timed)
    assert (item["start"], item["end"]) == (83.0, 88.5)  # the segment's own times stay
    assert at("конвейер") == {russian: pytest.approx(4.0 + 5.0 / 6, abs=0.001)}    # "конвейера", the 2nd of 6
    assert at("елка") == {russian: pytest.approx(9.0 + 6.0 / 5, abs=0.001)}        # "ёлка", the 2nd of 5
    assert at("minutes") == {timed: None}                                          # in the title only


def test_russian_inflections_and_yo(store, world):
    """A Russian record is indexed with the russian configuration ("конвейер"
    finds "конвейера"); ё and е match both ways; a Cyrillic prefix works."""
    _, search, alice, _, ids = world
    record = done_record(store, ids["alice"], RUSSIAN, language="ru")
    assert found(search(alice, "конвейер ")) == [(record, 4.0)]
    assert found(search(alice, "елка ")) == [(record, 9.0)]
    assert found(search(alice, "отчет ")) == [(record, 0.0)]
    assert found(search(alice, "ёлки")) == [(record, 9.0)]
    assert found(search(alice, "новогод")) == [(record, 9.0)]
    assert found(search(alice, "конвейер", limit=1)) == [(record, 4.0)]


def test_title_summary_topics_follow_the_owners_edit(store, world):
    """The title, summary and topics are searchable and follow the owner's edit
    (the old title is no longer found); such a hit has no time."""
    app, search, alice, _, ids = world
    record = done_record(store, ids["alice"], TALK, title="Quarterly review")
    assert found(search(alice, "quarterly ")) == [(record, None)]
    answer = app.patch(f"/records/{record}", json={"title": "Budget talk", "summary": "Storage planning",
                                                   "topics": ["infrastructure"]},
                       headers={"Authorization": f"Bearer {alice}"})
    assert answer.status_code == 200
    assert found(search(alice, "quarterly ")) == []
    assert found(search(alice, "infrastructure ")) == [(record, None)]
    assert found(search(alice, "planning ")) == [(record, None)]


def test_deleted_and_other_owners_records_are_never_found(store, world):
    """Another owner's words never appear, not even in the count; a deleted
    record's words are gone with it."""
    app, search, alice, bob, ids = world
    kept = done_record(store, ids["alice"], TALK)
    gone = done_record(store, ids["alice"], [(0.0, 3.0, "the pipeline again")])
    done_record(store, ids["bob"], [(0.0, 3.0, "bob's pipeline secret")])
    assert found(search(bob, "secret")) and not found(search(alice, "secret"))
    assert search(alice, "secret").json()["total"] == 0
    assert {record for record, _ in found(search(alice, "pipeline"))} == {kept, gone}
    assert app.delete(f"/records/{gone}", headers={"Authorization": f"Bearer {alice}"}).status_code == 204
    answer = search(alice, "pipeline")
    assert found(answer) == [(kept, 83.0)] and answer.json()["total"] == 1
    assert store.db.one("SELECT count(*) AS n FROM search_rows WHERE record_id = %s", (gone,))["n"] == 0


def test_a_deletion_waiting_on_an_edit_in_flight_leaves_no_search_rows(store, world):
    """The search rows go with their record by a trigger, not a foreign key (records_search_rows_go): the
    owner's edit writes the record's search row in a transaction still open while a
    deletion of the record starts; the deletion waits for it, and once both are done the
    record's words are found nowhere and no search row of it is left."""
    _, search, alice, _, ids = world
    record = done_record(store, ids["alice"], TALK, title="Weekly")
    with store.db.transaction() as conn:
        conn.execute(query("edit_record"), {"id": record, "owner_id": ids["alice"], "title": "Renamed weekly",
                                            "summary": None, "topics": None})
        deleting = threading.Thread(target=store.delete_record, args=(record, ids["alice"]),
                                    kwargs={"by": "alice", "role": "owner"})
        deleting.start()
        wait_until(lambda: store.db.one(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND strpos(query, 'DELETE FROM records') > 0")["n"], 30)
    deleting.join(30)
    assert not deleting.is_alive()
    assert found(search(alice, "renamed ")) == [] and found(search(alice, "pipeline")) == []
    assert store.db.one("SELECT count(*) AS n FROM search_rows WHERE record_id = %s", (record,))["n"] == 0


def test_pages_and_filters(store, world):
    """Limit/offset pages with `next`, and the stage, topic and from/to filters."""
    app, search, alice, _, ids = world
    first = done_record(store, ids["alice"], [(0.0, 2.0, "alpha one"), (2.0, 4.0, "alpha two")])
    second = done_record(store, ids["alice"], [(0.0, 2.0, "alpha three")])
    app.patch(f"/records/{second}", json={"topics": ["greek"]}, headers={"Authorization": f"Bearer {alice}"})
    page = search(alice, "alpha ", limit=2).json()
    assert page["total"] == 3 and len(page["items"]) == 2 and "offset=2" in page["next"]
    rest = app.get(page["next"], headers={"Authorization": f"Bearer {alice}"}).json()
    assert len(rest["items"]) == 1 and rest["next"] is None
    assert {r for r, _ in found(search(alice, "alpha ", topic="greek"))} == {second}
    assert {r for r, _ in found(search(alice, "alpha ", stage="done"))} == {first, second}
    assert found(search(alice, "alpha ", stage="created")) == []
    assert found(search(alice, "alpha ", to="2000-01-01")) == []
    assert len(found(search(alice, "alpha ", **{"from": "2000-01-01"}))) == 3
    assert search(alice, "alpha", stage="nonsense").status_code == 422


def test_a_count_past_a_thousand_is_capped_and_says_so(store, world):
    """A count that stays cheap: hits are counted up to 1,000; past that, `total` is 1000 with
    `total_capped` true, and the pages stop at the 1,000th hit (another owner's 1,001 matching
    segments never count for the owner's own query). Under 1,000 the count is exact and not
    capped."""
    app, search, alice, bob, ids = world
    many = [(i * 2.0, i * 2.0 + 2.0, f"routine standup number {i}") for i in range(MAX_COUNTED + 1)]
    record = done_record(store, ids["alice"], many + [(5000.0, 5002.0, "rare standup remark")], windows=3)
    done_record(store, ids["bob"], many)
    page = search(alice, "standup ", limit=100).json()
    assert page["total"] == MAX_COUNTED and page["total_capped"] is True and len(page["items"]) == 100
    assert {item["record"]["id"] for item in page["items"]} == {record}
    last = search(alice, "standup ", limit=100, offset=MAX_COUNTED - 100).json()
    assert len(last["items"]) == 100 and last["next"] is None
    assert search(alice, "standup ", limit=100, offset=MAX_COUNTED).json()["items"] == []
    exact = search(alice, "rare standup ").json()
    assert exact["total"] == 1 and exact["total_capped"] is False
    assert found(search(alice, "rare standup ")) == [(record, 5000.0)]
    assert search(bob, "rare ").json()["total"] == 0


def test_only_negated_words_find_the_owners_other_segments(store, world):
    """A query of negated words only (`-pipeline`) is a query the index cannot
    look a word up for; it finds the owner's segments without the word, and none of another
    owner's."""
    _, search, alice, bob, ids = world
    record = done_record(store, ids["alice"], TALK)
    done_record(store, ids["bob"], [(0.0, 3.0, "bob's words")])
    starts = {start for _, start in found(search(alice, "-pipeline"))}
    assert starts == {None, 0.0, 5.0, 88.5}    # the title row (empty here) too, but not 83.0
    assert {r for r, _ in found(search(alice, "-pipeline"))} == {record}
    assert {start for _, start in found(search(bob, "-pipeline"))} == {None, 0.0}


HOSTILE = [
    "", " ", "!!!", "&", "|", "!", "<->", "a & b | !c", "(", ")", "((((a", "a))))", '"', '"""', '"unclosed phrase',
    "pipeline:*", "pipel:*A", "'quoted'", "a\x00b", "\x00", "or", "-", "-pipeline", "pipeline or", "or or or",
    "a" * 10_000, "word " * 500, "\\", "%", "_", "' OR 1=1 --", "'; DROP TABLE records; --", "\ud800",
    "😀 pipeline", "<mark>", "$1", "%(owner_id)s", "{}", "pipeline\u200b", "ЁЁЁ", "a:1", "a <-> b", "a <2> b",
    "\t\n\r", "p" * 2000, "x" * 999,
]


def test_hostile_queries_never_get_a_500(store, world):
    """Any query text from a table of 47 kinds (operators, quotes,
    unbalanced parentheses, NUL, lone surrogates, 10,000 characters, SQL) answers 200 with hits or
    422 with a message, never a 500."""
    app, _, alice, _, ids = world
    done_record(store, ids["alice"], TALK)
    wrong = []
    for q in HOSTILE:
        address = "/search?q=" + quote(q, safe="", errors="surrogatepass")
        answer = app.get(address, headers={"Authorization": f"Bearer {alice}"})
        body = answer.json()
        if answer.status_code == 200 and "items" in body or answer.status_code == 422 and body.get("message"):
            continue
        wrong.append((q[:40], answer.status_code, answer.text[:200]))
    assert not wrong
    assert len(HOSTILE) >= 20


def test_operators_get_no_content_search(store, world):
    """An operator never searches content: the panel has no search of content, and an operator's
    token is refused by the owner's search."""
    app, _, _, _, ids = world
    done_record(store, ids["alice"], TALK)
    operator = store.add_operator("root")
    auth = {"Authorization": f"Bearer {operator}"}
    assert app.get("/search", params={"q": "pipeline"}, headers=auth).status_code == 401
    for address in ("/admin/api/search", "/admin/search", "/admin/api/records/search"):
        answer = app.get(address, params={"q": "pipeline"}, headers=auth)
        assert answer.status_code in (404, 405) and "pipeline" not in answer.text


def test_search_from_the_command_line(store, env):
    """`transcriber search --owner NAME "query"` prints `id  hh:mm:ss  snippet`
    lines of that owner's hits only; a query that is no query exits 2 with a message."""
    import subprocess
    import sys

    store.add_owner("alice"), store.add_owner("bob")
    record = done_record(store, store.owner_by_name("alice")["id"], TALK)
    done_record(store, store.owner_by_name("bob")["id"], [(0.0, 3.0, "bob's own pipeline")])

    def run(*args):
        return subprocess.run([sys.executable, "-m", "transcriber.cli", "search", *args], env=env,
                              capture_output=True, text=True, timeout=120)

    printed = run("--owner", "alice", "pipel")
    assert printed.returncode == 0, printed.stderr
    line = f"{record}  00:01:23  The conversion [pipeline] stalled twice on Tuesday night."
    assert printed.stdout.splitlines() == [line]
    refused = run("--owner", "alice", "!!!")
    assert refused.returncode == 2 and "at least one word" in refused.stderr
    assert run("--owner", "nobody", "x").returncode == 2
