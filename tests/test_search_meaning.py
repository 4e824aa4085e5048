"""Search by meaning beside search by words: passages written by the saves that write the text,
on a real PostgreSQL with pgvector (one embedded server for the session when the suite's own
has none), embedded by the real sentence model, searched through the API in-process in every
mode; and a server without pgvector, where meaning is unavailable and words are unharmed."""
from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from conftest import policy, settings, work_until_idle
from domain.stages import Step
from searching import done_record, request_cpu
from test_corrections import _recognise_again
from test_search import HOSTILE as WORD_HOSTILE
from web.app import create_app

LAUNCH = [
    (0.0, 6.0, "Good morning everyone, thanks for joining the weekly product meeting on this rainy Monday."),
    (6.0, 14.0, "First item: the build is still not stable, so we are going to push the release to March."),
    (14.0, 22.0, "Marketing agreed to move the announcement as well, once the new date is fixed for everyone."),
    (60.0, 68.0, "Next, the cafeteria will serve vegetarian lunches on Fridays, starting from next month onwards."),
    (68.0, 76.0, "People asked for more salads and warm soups, and the kitchen staff said that is easy to do."),
    (76.0, 84.0, "They will also put a small fridge with fruit and yoghurt near the stairs on the second floor."),
]
BOBS = [
    (0.0, 9.0, "We have decided to delay the launch of the product until spring because testing found problems."),
    (9.0, 18.0, "The launch date moves, and every customer gets an email about the delay next week, from support."),
]
RUSSIAN = [(0.0, 5.0, "Работа конвейера остановилась ночью во вторник, но записи не потерялись.")]
PARAPHRASE = "when did we decide to delay the launch?"
FOOD = "what food will the canteen offer?"
# the word search's hostile queries, and the longest query text the client sends in an address
HOSTILE = [*WORD_HOSTILE, "x" * 60_000, "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 😀 tea", "-launch"]


def _client(store):
    return TestClient(create_app(store, settings()), raise_server_exceptions=False)


@pytest.fixture
def world(vector_store):
    store = vector_store
    app = _client(store)
    tokens = {name: store.add_owner(name) for name in ("alice", "bob")}
    ids = {name: store.owner_by_name(name)["id"] for name in tokens}

    def search(who, q, **params):
        return app.get("/search", params={"q": q, **params}, headers={"Authorization": f"Bearer {tokens[who]}"})

    records = {
        "launch": done_record(store, ids["alice"], LAUNCH, title="Weekly", passages=True),
        "bobs": done_record(store, ids["bob"], BOBS, title="Bob's", passages=True),
        "russian": done_record(store, ids["alice"], RUSSIAN, language="ru", title="Ночь", passages=True),
    }
    return store, app, search, tokens, ids, records


def _hits(answer) -> list[tuple[int, float, list[str]]]:
    assert answer.status_code == 200, answer.text
    return [(item["record"]["id"], item["start"], item["matched"]) for item in answer.json()["items"]]


def _passages(store, record_id: int) -> list[dict]:
    with store.db.connection() as conn:
        return conn.execute("SELECT n, first_segment, last_segment, start_seconds, end_seconds, speaker, body, "
                            "embedding FROM passages WHERE record_id = %s ORDER BY n", (record_id,)).fetchall()


def test_a_paraphrase_is_found_by_meaning_where_words_find_nothing(world):
    """The owner asks in other words than were said: words find nothing, meaning finds the
    passage (its start, end and `at`, a snippet of its words), and so does the default, both."""
    store, _, search, _, _, records = world
    assert _hits(search("alice", PARAPHRASE, mode="words")) == []
    by_meaning = search("alice", PARAPHRASE, mode="meaning")
    first = by_meaning.json()["items"][0]
    assert (first["record"]["id"], first["start"], first["matched"]) == (records["launch"], 0.0, ["meaning"])
    assert first["end"] == 22.0 and first["at"] == 0.0 and "push the release to March" in first["snippet"]
    assert _hits(search("alice", PARAPHRASE))[0] == (records["launch"], 0.0, ["meaning"])
    food = _hits(search("alice", FOOD, mode="meaning"))
    assert food[0] == (records["launch"], 60.0, ["meaning"])


def test_a_quoting_question_is_found_by_both_rankings_as_one_hit(world):
    """Words said as they were: the segment found by words inside the passage found by meaning is
    one hit that says it matched both, with the second its first matched word was said."""
    _, _, search, _, _, records = world
    words = _hits(search("alice", "push the release to March", mode="words"))
    both = _hits(search("alice", "push the release to March"))
    assert words[0][:2] == (records["launch"], 6.0)
    assert both[0] == (records["launch"], 6.0, ["words", "meaning"])


@pytest.mark.parametrize("walk", [False, True], ids=["compared one by one", "HNSW walk"])
def test_an_owner_never_gets_another_owners_passage_in_any_mode(world, monkeypatch, walk):
    """Bob's recording says the paraphrase nearly word for word; Alice never sees it, in any mode,
    with any filter, and Bob sees only his own: whether the owner's passages are compared one by
    one or found by walking the HNSW index that holds every owner's (an owner of many)."""
    import db.meaning

    if walk:
        monkeypatch.setattr(db.meaning, "EXACT_UP_TO", 0)
    _, _, search, _, _, records = world
    for mode in ("words", "meaning", "both"):
        for q in (PARAPHRASE, "delay the launch", FOOD):
            for params in ({}, {"speaker": "S1"}, {"stage": "done"}):
                alice = {record for record, _, _ in _hits(search("alice", q, mode=mode, **params))}
                bob = {record for record, _, _ in _hits(search("bob", q, mode=mode, **params))}
                assert records["bobs"] not in alice
                assert bob <= {records["bobs"]}
    assert _hits(search("bob", PARAPHRASE, mode="meaning"))[0][0] == records["bobs"]


def test_a_record_not_in_english_has_no_passages_and_is_found_by_words(world):
    """The English model does not pretend: a Russian record has no passages, an answer by meaning
    says so in its notes, and the record is found by its words in both."""
    store, _, search, _, _, records = world
    assert _passages(store, records["russian"]) == []
    answer = search("alice", "конвейер", mode="meaning")
    assert "not in English" in " ".join(answer.json()["notes"])
    assert records["russian"] in {record for record, _, _ in _hits(search("alice", "конвейера"))}


def test_passages_follow_the_text_edit_delete_rerun_and_outlive_expired_audio(world):
    """Corrected by the owner, a passage holds the corrected words and means them; recognised
    again, the passages are made from the new text; when retention lets the audio go they stay;
    deleted, the record takes them with it."""
    store, app, search, tokens, ids, records = world
    record = records["launch"]
    headers = {"Authorization": f"Bearer {tokens['alice']}"}
    edit = {"segments": [{"index": 4, "text": "We will buy three new espresso machines for the coffee corner."}]}
    assert app.patch(f"/records/{record}/text", json=edit, headers=headers).status_code == 200
    second = _passages(store, record)[1]
    assert "espresso machines" in second["body"] and "salads" not in second["body"]
    assert _hits(search("alice", "coffee equipment purchase", mode="meaning"))[0][:2] == (record, 60.0)

    with store.db.connection() as conn:  # the owner's correction is no segment of the new text
        conn.execute("DELETE FROM record_corrections WHERE record_id = %s", (record,))
    _recognise_again(store, store.db, record, [(0.0, 9.0, "The orchestra rehearses Beethoven's ninth symphony on Thursday "
                                                "evening in the big concert hall downtown, tickets are free.")],
                     passages=True)
    assert [p["body"] for p in _passages(store, record)] == [
        "The orchestra rehearses Beethoven's ninth symphony on Thursday evening in the big concert hall "
        "downtown, tickets are free."]
    assert _hits(search("alice", "classical music performance", mode="meaning"))[0][:2] == (record, 0.0)
    assert record not in {r for r, _, _ in _hits(search("alice", PARAPHRASE, mode="meaning"))}

    with store.db.connection() as conn:
        conn.execute("UPDATE records SET created_at = now() - interval '30 days'")
    assert store.expire_audio(86400).expired >= 1
    assert len(_passages(store, record)) == 1

    assert app.delete(f"/records/{record}", headers=headers).status_code in (200, 204)
    assert _passages(store, record) == []
    assert record not in {r for r, _, _ in _hits(search("alice", "classical music performance", mode="meaning"))}


def _two_voices(store, owner_id: int) -> int:
    """A done record of LAUNCH's, its speakers found by the diarize save: S1 for its first 10 s,
    S2 after, its passages cut again where the speaker changes."""
    from actors.diarizing import said_by
    from service.meaning import record_passages

    record = done_record(store, owner_id, LAUNCH, title="Two voices", diarize=True, passages=True)
    turns = [{"start": 0.0, "end": 10.0, "speaker": "S1"}, {"start": 10.0, "end": 100.0, "speaker": "S2"}]
    claim = store.claim(Step.DIARIZE, policy())
    said = said_by(store, record, turns)
    params = {"said": said, "speakers": [], "passages": record_passages(store, record, "en", said)}
    assert store.save(claim, {"turns": turns}, params, next_step=None)
    return record


def test_the_diarize_save_cuts_passages_where_the_speaker_changes(world):
    """Once speakers are known, no passage holds two speakers' words; each names its speaker, and
    a search by meaning keeps one speaker's passages."""
    store, _, search, _, ids, _ = world
    record = _two_voices(store, ids["alice"])
    cut = _passages(store, record)
    assert [(p["first_segment"], p["last_segment"], p["speaker"]) for p in cut][0] == (1, 1, "S1")
    assert all(p["speaker"] == "S2" for p in cut[1:])
    only = _hits(search("alice", PARAPHRASE, mode="meaning", speaker="S1"))
    assert all(start < 10.0 for r, start, _ in only if r == record)


@pytest.mark.parametrize("walk", [False, True], ids=["compared one by one", "HNSW walk"])
def test_a_speaker_is_kept_by_its_label_or_its_name_in_every_mode(world, monkeypatch, walk):
    """A speaker asked for by label or by the name the owner gave it (any case) keeps that
    speaker's passages and words, in every mode and either way of reading passages; another
    name keeps nothing, and another owner's name for it finds nothing of this owner's."""
    import db.meaning

    if walk:
        monkeypatch.setattr(db.meaning, "EXACT_UP_TO", 0)
    store, _, search, _, ids, _ = world
    record = _two_voices(store, ids["alice"])
    assert store.name_speakers(record, ids["alice"], {"S2": "Dana"})
    for mode in ("words", "meaning", "both"):
        q = "vegetarian lunches" if mode == "words" else FOOD
        by_label = [h for h in _hits(search("alice", q, mode=mode, speaker="s2")) if h[0] == record]
        assert by_label and all(start > 0.0 for _, start, _ in by_label), mode  # S1 speaks from 0 s
        assert [h for h in _hits(search("alice", q, mode=mode, speaker="dANA")) if h[0] == record] == by_label
        assert [h for h in _hits(search("alice", q, mode=mode, speaker="Dana")) if h[0] == record] == by_label
        assert _hits(search("alice", q, mode=mode, speaker="Eve")) == []
        assert _hits(search("bob", q, mode=mode, speaker="Dana")) == []


def test_hostile_queries_are_answered_in_bounded_time_in_every_mode(world):
    """The word search's hostile queries (NUL, a megabyte, websearch syntax, astral characters,
    only operators, only spaces) are answered 200 or 422 in bounded time, in every mode.

    The bound is the CPU each query's own threads (client and server in one process) spend,
    under a second, which a shared machine's load does not inflate and threads left running by
    other tests do not add to; the wall clock only catches a query that waits on something,
    with room for that load."""
    _, app, search, tokens, _, _ = world
    headers = {"Authorization": f"Bearer {tokens['alice']}"}
    for mode in ("words", "meaning", "both"):
        for q in HOSTILE:
            wall = time.monotonic()
            address = f"/search?mode={mode}&q=" + quote(q, safe="", errors="surrogatepass")
            answer, cpu = request_cpu(lambda address=address: app.get(address, headers=headers))
            assert answer.status_code in (200, 422), (mode, q[:20], answer.text)
            assert cpu < 1.0, (mode, q[:20], cpu)
            assert time.monotonic() - wall < 15.0, (mode, q[:20])
            if answer.status_code == 422:
                assert answer.json()["message"]
    assert search("alice", "launch", mode="everything").status_code == 422


def test_the_steps_make_passages_through_the_pipeline(vector_store, monkeypatch):
    """A recording through the workers: the recognize step embeds its passages before its save,
    which writes them with the text."""
    import actors.steps
    from audio.recognized import Recognized

    class Talk:
        name = "talk"

        def recognize(self, pcm, language, beat, prompt=None):
            segments = [{"start": s / 10, "end": e / 10, "text": t, "words": []} for s, e, t in LAUNCH]
            return Recognized(segments=segments, language="en")

    monkeypatch.setattr(actors.steps, "engine", lambda _: Talk())
    store = vector_store
    store.add_owner("carol")
    owner = store.owner_by_name("carol")
    sample = Path(__file__).resolve().parent.parent / "transcriber" / "samples" / "hello.ogg"
    record = store.accept(owner["id"], [sample.read_bytes()], title="Piped", source_name="hello.ogg")
    work_until_idle(store, settings())
    assert store.read_record(record)["stage"] == "done"
    assert len(_passages(store, record)) == 2
    assert any(event["detail"].get("passages") == 2 for event in store.events(record))


def test_without_pgvector_meaning_is_unavailable_and_words_are_unharmed(store):
    """On a server without pgvector (the suite's PostgreSQL 15): `meaning` answers 409
    meaning_unavailable saying how to enable it, `both` answers by words and says so, and
    `words` is as it was."""
    if store.meaning_ready():
        pytest.skip("this server has pgvector")
    app = _client(store)
    token = store.add_owner("alice")
    record = done_record(store, store.owner_by_name("alice")["id"], LAUNCH, passages=True)
    headers = {"Authorization": f"Bearer {token}"}
    refused = app.get("/search", params={"q": PARAPHRASE, "mode": "meaning"}, headers=headers)
    assert refused.status_code == 409 and refused.json()["error"] == "meaning_unavailable"
    assert "CREATE EXTENSION vector" in refused.json()["message"]
    both = app.get("/search", params={"q": "release March"}, headers=headers)
    assert _hits(both) == [(record, 6.0, ["words"])] and "words only" in both.json()["notes"][0]
    assert _hits(app.get("/search", params={"q": "release March", "mode": "words"}, headers=headers)) == [
        (record, 6.0, ["words"])]


def test_meaning_switched_off_is_unavailable(world, monkeypatch):
    """TRANSCRIBER_MEANING=off: no passages made, `meaning` refused saying why, `both` by words."""
    store, _, search, _, ids, _ = world
    monkeypatch.setenv("TRANSCRIBER_MEANING", "off")
    record = done_record(store, ids["alice"], BOBS, passages=True)
    assert _passages(store, record) == []
    refused = search("alice", PARAPHRASE, mode="meaning")
    assert refused.status_code == 409 and "TRANSCRIBER_MEANING=off" in refused.json()["message"]
    assert search("alice", "launch").json()["notes"]


def test_two_edits_of_one_passage_at_once_both_reach_it(world):
    """Two edits of different segments of one passage, at once (threads on a barrier): the
    passage is made again with both corrected texts, whichever finished first."""
    import numpy as np

    from audio import meaning
    from conftest import run_together
    from service.meaning import correct

    store, _, _, _, ids, records = world
    record = records["launch"]
    texts = ["Tea and biscuits are served in the lobby every afternoon at four.",
             "The espresso machine on the third floor is finally repaired and working."]
    for _ in range(3):
        run_together(2, lambda i: correct(store, record, ids["alice"], [(3 + i, texts[i])], by="alice"))
        passage = _passages(store, record)[1]
        assert texts[0] in passage["body"] and texts[1] in passage["body"]
        assert float(np.dot(meaning.embed([passage["body"]])[0], passage["embedding"])) > 0.9999  # of that text
        texts = [text.replace(".", " again.") for text in texts]


def _agreeing(store, record_id: int) -> list[tuple[int, str, str]]:
    """The record's passages whose text is not what their segments hold now, read in one snapshot."""
    from domain.passages import body_of

    with store.db.transaction() as conn:
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        rows = conn.execute(
            "SELECT p.n, p.body, array_agg(s.body ORDER BY s.n) AS texts FROM passages p "
            "JOIN search_rows s ON s.record_id = p.record_id AND s.n BETWEEN p.first_segment AND p.last_segment "
            "WHERE p.record_id = %s GROUP BY p.n, p.body ORDER BY p.n", (record_id,)).fetchall()
    return [(row["n"], row["body"], body_of(row["texts"])) for row in rows if row["body"] != body_of(row["texts"])]


def test_an_edit_whose_passage_cannot_be_written_is_not_applied_at_all(world):
    """The passage's write fails in the database (a trigger raises, as a full disk or a lost
    connection would fail it): the owner's edit fails whole, its correction, search row and
    journal event unwritten, the passage as it was; once the passage can be written, the same
    edit changes the text and the passage together."""
    import psycopg

    from service.meaning import correct

    store, _, _, _, ids, records = world
    record = records["launch"]
    text = "We will buy three new espresso machines for the coffee corner."
    before = _passages(store, record)
    with store.db.connection() as conn:
        conn.execute("CREATE FUNCTION refuse_passage() RETURNS trigger LANGUAGE plpgsql AS "
                     "$$ BEGIN RAISE EXCEPTION 'passages refused'; END $$")
        conn.execute("CREATE TRIGGER refuse_passage BEFORE UPDATE OR DELETE ON passages "
                     "FOR EACH ROW EXECUTE FUNCTION refuse_passage()")
    try:
        with pytest.raises(psycopg.errors.RaiseException):
            correct(store, record, ids["alice"], [(4, text)], by="alice")
        with store.db.connection() as conn:
            assert conn.execute("SELECT count(*) AS n FROM record_corrections WHERE record_id = %s",
                                (record,)).fetchone()["n"] == 0
            assert text not in conn.execute("SELECT body FROM search_rows WHERE record_id = %s AND n = 5",
                                            (record,)).fetchone()["body"]
        assert not [event for event in store.events(record) if event["kind"] == "corrected"]
        assert _passages(store, record) == before
    finally:
        with store.db.connection() as conn:
            conn.execute("DROP TRIGGER refuse_passage ON passages")
            conn.execute("DROP FUNCTION refuse_passage()")
    assert correct(store, record, ids["alice"], [(4, text)], by="alice")
    assert text in _passages(store, record)[1]["body"] and _agreeing(store, record) == []


def test_text_and_passages_agree_at_every_moment_of_concurrent_edits(world):
    """Two owners' tabs edit segments of one passage, and a word of it, over and over, while a
    reader looks at the text and the passages in one snapshot each time: it never sees a
    passage that does not hold the text its segments hold, and the passage ends with the
    embedding of the text it holds."""
    import numpy as np

    from audio import meaning
    from service.meaning import correct

    store, _, _, _, ids, records = world
    record = records["launch"]
    rounds = 6
    seen: list[list[tuple[int, str, str]]] = []
    done: list[int] = []

    def work(i):
        if i == 2:  # the reader, until both editors are through
            while len(done) < 2:
                seen.append(_agreeing(store, record))
            return len(seen)
        for turn in range(rounds):
            if turn % 3 == 2:
                correct(store, record, ids["alice"], [], words=[(3 + i, 0, f"Round{turn}")], by=f"tab {i}")
            else:
                text = f"In round {turn} the {'kitchen' if i else 'canteen'} serves dish number {turn * 7 + i}."
                correct(store, record, ids["alice"], [(3 + i, text)], by=f"tab {i}")
        done.append(i)
        return rounds

    from conftest import run_together

    assert run_together(3, work)[2] >= 1
    assert [moment for moment in seen if moment] == []
    assert _agreeing(store, record) == []
    passage = _passages(store, record)[1]
    assert "Round5" in passage["body"]
    assert float(np.dot(meaning.embed([passage["body"]])[0], passage["embedding"])) > 0.9999  # of that text
