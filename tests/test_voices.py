"""Voices the archive knows, on real PostgreSQL and real recorded speech: a speaker named once is
named in every later recording of that voice, by the diarize step's match (a pipeline field; the
owner's names always win, P3), the owner's alone; renaming, rejecting, merging and deleting, and
the lifecycle of records. Skipped, saying so, where the `speakers` extra is not installed."""
from __future__ import annotations

import json
import subprocess
import sys
import threading

import psycopg
import pytest
from fastapi.testclient import TestClient

from actors.work import Outcome, run_once
from audio import speakers
from audio.formats import render_record
from conftest import settings, wait_until
from db.queries import query
from domain.stages import Step
from test_diarize_step import READER, TALKER, _done_cheaply, conversation  # noqa: F401  (a fixture)
from web.app import create_app
from web.openai_compat import openai_text_response

pytestmark = pytest.mark.skipif(not speakers.available(),
                                reason="the `speakers` extra is not installed (pip install -e '.[speakers]')")

ON = settings(diarize="auto")


@pytest.fixture(scope="module")
def meeting(conversation):
    """Reader, talker, reader: two real voices taking turns (20 s)."""
    return conversation


def _diarized(store, owner, path, monkeypatch) -> int:
    record = _done_cheaply(store, owner, path, ON, monkeypatch)
    assert run_once(store, ON, Step.DIARIZE) is Outcome.SAVED
    return record


def _rediarize(store, record: int) -> None:
    """The record's speakers found again (its diarize step queued anew, as a re-run queues it)."""
    with store.db.transaction() as conn:
        conn.execute("INSERT INTO steps (record_id, step, stage, owner_id) "
                     "SELECT id, 'diarize', 'done', owner_id FROM records WHERE id = %s", [record])
    assert run_once(store, ON, Step.DIARIZE) is Outcome.SAVED


def _longest(store, record: int) -> str:
    """The label of the record's speaker with the most speech (the reader, in these recordings)."""
    with store.db.connection() as conn:
        return conn.execute("SELECT label FROM record_speakers WHERE record_id = %s ORDER BY seconds DESC LIMIT 1",
                            [record]).fetchone()["label"]


class Owner:
    def __init__(self, store, app, name):
        self.token = store.add_owner(name)
        self.row = store.owner_by_name(name)
        self.auth = {"Authorization": f"Bearer {self.token}"}
        self.app = app

    def get(self, path, **kw):
        return self.app.get(path, headers=self.auth, **kw)

    def patch(self, path, body):
        return self.app.patch(path, headers=self.auth, json=body)

    def post(self, path, body):
        return self.app.post(path, headers=self.auth, json=body)

    def delete(self, path):
        return self.app.delete(path, headers=self.auth)

    def speaker(self, record, label):
        card = self.get(f"/records/{record}").json()
        return next(s for s in card["speakers"]["list"] if s["label"] == label)

    def voices(self):
        return self.get("/voices").json()["items"]


@pytest.fixture
def people(store):
    app = TestClient(create_app(store, settings()), raise_server_exceptions=False)
    return Owner(store, app, "alice-owner"), Owner(store, app, "bob-owner")


def test_a_name_given_once_names_the_voice_elsewhere_and_follows_a_rename_everywhere(store, people, meeting, env,
                                                                                    monkeypatch):
    """Naming a speaker enrols its voice; a later recording of that voice is shown with the name
    with no action (card, txt, srt, vtt, json, verbose_json, search by the name); renaming the
    voice renames both records' speakers everywhere. Another owner's identical recording is
    never matched to it, and that owner can neither see, rename, merge nor delete it (404 like
    a missing one)."""
    a, b = people
    first = _diarized(store, a.row, meeting, monkeypatch)
    reader = _longest(store, first)
    assert a.patch(f"/records/{first}", {"speakers": {reader: "Alice"}}).status_code == 200
    [voice] = a.voices()
    assert voice["name"] == "Alice" and voice["recordings"] == 1 and voice["seconds"] > 3

    second = _diarized(store, a.row, READER, monkeypatch)
    shown = a.speaker(second, "S1")
    assert shown["name"] == "Alice" and shown["given"] is None and not shown["rejected"]
    assert shown["voice"]["id"] == voice["id"] and shown["voice"]["name"] == "Alice"
    assert 0 < shown["voice"]["score"] <= 1
    assert a.get(f"/records/{second}/text").text.startswith("[Alice] ")

    others = _diarized(store, b.row, READER, monkeypatch)  # the same recording, another owner
    assert b.speaker(others, "S1")["voice"] is None and b.speaker(others, "S1")["name"] == "Speaker 1"
    assert b.voices() == []
    assert b.get(f"/records/{second}").status_code == 404
    for refused in (b.patch(f"/voices/{voice['id']}", {"name": "Mallory"}),
                    b.delete(f"/voices/{voice['id']}"),
                    b.post(f"/voices/{voice['id']}/merge", {"into": voice["id"]})):
        assert refused.status_code == 404 and refused.json()["error"] == "not_found"
    assert a.voices() == [voice]

    assert a.patch(f"/voices/{voice['id']}", {"name": "Alicia"}).json()["name"] == "Alicia"
    for record in (first, second):
        row = store.transcript(record)
        assert "[Alicia]" in render_record("srt", row) and "[Alicia]" in render_record("vtt", row)
        assert "[Alicia] " in a.get(f"/records/{record}/text").text
        document = json.loads(a.get(f"/records/{record}/text", params={"format": "json"}).text)
        label = reader if record == first else "S1"
        assert document["speakers"][label] == "Alicia"
        verbose = json.loads(openai_text_response("verbose_json", row, False, True).body)
        assert verbose["speakers"][label] == "Alicia"
        assert a.speaker(record, label)["name"] == "Alicia"
    found = a.get("/search", params={"q": "word", "speaker": "alicia"}).json()
    assert {hit["record"]["id"] for hit in found["items"]} == {first, second}
    assert all("Alicia" in hit["speakers"] for hit in found["items"])
    assert b.get("/search", params={"q": "word", "speaker": "Alicia"}).json()["items"] == []
    listed = _cli(env, "voices", "--owner", "alice-owner")
    assert listed.returncode == 0 and "Alicia" in listed.stdout and str(voice["id"]) in listed.stdout
    assert json.loads(_cli(env, "voices", "--owner", "alice-owner", "--json").stdout)[0]["name"] == "Alicia"
    printed = _cli(env, "search", "--owner", "alice-owner", "--speaker", "Alicia", "word")
    assert {int(line.split()[0]) for line in printed.stdout.splitlines()} == {first, second}
    assert _cli(env, "voices", "--owner", "bob-owner").stdout.startswith("no voices yet")


def test_a_rejected_match_stays_rejected_across_a_re_run_and_naming_wins(store, people, meeting, env, monkeypatch):
    """The owner rejects a match: the speaker is "Speaker N" again and is not found by the
    voice's name; diarizing the record again never matches it to that voice. Confirming is naming
    with the voice's name (here with `transcriber speakers`): the speaker joins the voice."""
    a, _ = people
    first = _diarized(store, a.row, meeting, monkeypatch)
    a.patch(f"/records/{first}", {"speakers": {_longest(store, first): "Alice"}})
    second = _diarized(store, a.row, READER, monkeypatch)
    assert a.speaker(second, "S1")["name"] == "Alice"

    assert a.patch(f"/records/{second}", {"speakers_rejected": ["S1"]}).status_code == 200
    shown = a.speaker(second, "S1")
    assert shown["rejected"] and shown["name"] == "Speaker 1" and shown["voice"]["name"] == "Alice"
    assert "[Alice]" not in a.get(f"/records/{second}/text").text  # one voice, unnamed: no label, as before
    assert {h["record"]["id"] for h in a.get("/search", params={"q": "word", "speaker": "Alice"}).json()["items"]} \
        == {first}

    _rediarize(store, second)
    shown = a.speaker(second, "S1")
    assert shown["name"] == "Speaker 1" and (shown["voice"] is None or shown["voice"]["name"] != "Alice")

    third = _diarized(store, a.row, READER, monkeypatch)  # the rejection is that record's alone
    assert a.speaker(third, "S1")["name"] == "Alice"
    for bad in (["--name", "S1"], ["--name", "S1=A\tB"], ["--reject", "X1"]):
        refused = _cli(env, "speakers", str(third), *bad)
        assert refused.returncode == 2 and refused.stderr.startswith("transcriber: "), refused.stderr
    assert a.voices()[0]["recordings"] == 1
    confirmed = _cli(env, "speakers", str(third), "--name", "S1=Alice")  # confirmed
    assert confirmed.returncode == 0 and confirmed.stdout.startswith("S1  Alice  voice "), confirmed.stdout
    [voice] = a.voices()
    assert voice["recordings"] == 2
    # an unknown label or a bad one is refused or rejects nothing
    assert a.patch(f"/records/{third}", {"speakers_rejected": ["X1"]}).status_code == 422
    assert a.patch("/records/999999", {"speakers_rejected": ["S1"]}).status_code == 404


def test_merge_delete_and_the_lifecycle_of_records(store, people, meeting, monkeypatch):
    """Merging one voice into another moves its speakers (and their names) there; bad merges
    change nothing; deleting a voice leaves the records their own names; deleting the last record
    a voice was named in deletes the voice; retention's removal of audio keeps it."""
    a, b = people
    first = _diarized(store, a.row, meeting, monkeypatch)
    reader = _longest(store, first)
    talker = "S1" if reader == "S2" else "S2"
    a.patch(f"/records/{first}", {"speakers": {reader: "Alice", talker: "Tom"}})
    second = _diarized(store, a.row, READER, monkeypatch)
    a.patch(f"/records/{second}", {"speakers": {"S1": "Ally"}})
    voices = {v["name"]: v for v in a.voices()}
    assert set(voices) == {"Alice", "Ally", "Tom"}
    b_first = _diarized(store, b.row, TALKER, monkeypatch)
    b.patch(f"/records/{b_first}", {"speakers": {"S1": "Bob"}})
    [bobs] = b.voices()

    ally, alice = voices["Ally"]["id"], voices["Alice"]["id"]
    for into, status in ((ally, 422), (bobs["id"], 422), (999999, 422)):
        answer = a.post(f"/voices/{ally}/merge", {"into": into})
        assert answer.status_code == status and answer.json()["error"] == "bad_merge"
    assert a.post("/voices/999999/merge", {"into": alice}).status_code == 404
    assert a.patch(f"/voices/{ally}", {"name": "alice"}).status_code == 409
    assert a.patch(f"/voices/{ally}", {"name": " "}).status_code == 422
    assert a.patch(f"/voices/{ally}", {"name": "A\nB"}).status_code == 422
    assert {v["name"]: v for v in a.voices()} == voices and b.voices() == [bobs]

    merged = a.post(f"/voices/{ally}/merge", {"into": alice}).json()
    assert merged["name"] == "Alice" and merged["recordings"] == 2
    assert a.speaker(second, "S1")["name"] == "Alice"
    assert {v["name"] for v in a.voices()} == {"Alice", "Tom"}

    tom = voices["Tom"]["id"]
    assert a.delete(f"/voices/{tom}").status_code == 204
    assert a.delete(f"/voices/{tom}").status_code == 404
    assert a.speaker(first, talker)["name"] == "Tom"  # the owner's own name stays

    store.expire_audio(0)  # retention lets every original go; the voices hold no audio and stay
    assert a.get(f"/records/{first}").json()["audio"] == "expired"
    assert {v["name"] for v in a.voices()} == {"Alice"}

    assert a.delete(f"/records/{second}").status_code in (200, 204)
    [alice_left] = a.voices()
    assert alice_left["recordings"] == 1
    assert a.delete(f"/records/{first}").status_code in (200, 204)
    assert a.voices() == []
    assert b.voices() == [bobs]


def test_a_voice_renamed_or_deleted_while_the_diarize_step_runs(store, people, meeting, monkeypatch):
    """The step matched a speaker to a voice and is saving when the owner renames the voice: the
    save keeps the voice's id, so the new name shows. When the owner deletes it while the save
    is under way (the save waits on the deletion's lock), the save matches nothing and the voice
    stays deleted."""
    import actors.diarizing

    a, _ = people
    first = _diarized(store, a.row, meeting, monkeypatch)
    a.patch(f"/records/{first}", {"speakers": {_longest(store, first): "Alice"}})
    [voice] = a.voices()
    matched, go = threading.Event(), threading.Event()
    original = actors.diarizing.matched_speakers

    def held(*args):
        found = original(*args)
        matched.set()
        assert go.wait(60)
        return found

    second = _done_cheaply(store, a.row, READER, ON, monkeypatch)
    monkeypatch.setattr(actors.diarizing, "matched_speakers", held)
    outcome = []
    step = threading.Thread(target=lambda: outcome.append(run_once(store, ON, Step.DIARIZE)))
    step.start()
    assert matched.wait(60)
    assert a.patch(f"/voices/{voice['id']}", {"name": "Alicia"}).status_code == 200
    go.set()
    step.join(60)
    assert outcome == [Outcome.SAVED]
    assert a.speaker(second, "S1")["name"] == "Alicia" and a.speaker(second, "S1")["voice"]["id"] == voice["id"]

    # again, the owner deleting the voice in a transaction the save has to wait for
    matched.clear(), go.clear()
    outcome.clear()
    with store.db.transaction() as conn:
        conn.execute("INSERT INTO steps (record_id, step, stage, owner_id) "
                     "SELECT id, 'diarize', 'done', owner_id FROM records WHERE id = %s", [second])
    step = threading.Thread(target=lambda: outcome.append(run_once(store, ON, Step.DIARIZE)))
    step.start()
    assert matched.wait(60)
    with psycopg.connect(_url(store)) as deleting:
        deleting.execute(query("lock_owner_voices"), {"owner_id": a.row["id"]})
        assert deleting.execute(query("delete_voice"), {"owner_id": a.row["id"], "id": voice["id"]}).fetchone()
        go.set()
        assert wait_until(lambda: _waiting_on_a_lock(store), 30, what="the save waiting for the deletion")
        deleting.commit()
    step.join(60)
    assert outcome == [Outcome.SAVED]
    shown = a.speaker(second, "S1")
    assert shown["voice"] is None and shown["name"] == "Speaker 1"
    assert a.voices() == []
    with store.db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM voices").fetchone()["n"] == 0


def _cli(env, *args):
    return subprocess.run([sys.executable, "-m", "transcriber.cli", *args], env=env, capture_output=True, text=True,
                          timeout=120)


def _url(store) -> str:
    with store.db.connection() as conn:
        info = conn.info
        return psycopg.conninfo.make_conninfo(host=info.host, port=info.port, user=info.user, dbname=info.dbname)


def _waiting_on_a_lock(store) -> bool:
    """Whether a statement of this test's database waits on a lock (the step's save: nothing else
    runs)."""
    with store.db.connection() as conn:
        return conn.execute("SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                            "AND datname = current_database()").fetchone()["n"] > 0


def test_the_owners_voices_redraw_the_speakers_unless_the_upload_fixed_their_number(store, people, meeting,
                                                                                     monkeypatch):
    """The clustering takes one of two known people for two (here made to find three speakers):
    the diarize step re-draws the turns with the owner's voices, so the record has two speakers
    again, the reader named by its voice. Where the upload fixed three speakers, three are kept."""
    import audio.speakers.diarize

    a, _ = people
    first = _diarized(store, a.row, meeting, monkeypatch)
    reader = _longest(store, first)
    a.patch(f"/records/{first}", {"speakers": {reader: "Alice", "S1" if reader == "S2" else "S2": "Tom"}})
    clustering = audio.speakers.diarize.speaker_turns
    monkeypatch.setattr(audio.speakers.diarize, "speaker_turns", lambda found, speakers=None: clustering(found, 3))

    second = _diarized(store, a.row, meeting, monkeypatch)
    card = a.get(f"/records/{second}").json()["speakers"]["list"]
    # the talker says too little (under MIN_MATCH_SECONDS) to be named by a match
    assert sorted(s["name"] for s in card) == ["Alice", "Speaker 2"]
    assert {t["speaker"] for t in store.transcript(second)["turns"]} == {s["label"] for s in card}

    with store.db.transaction() as conn:
        conn.execute("UPDATE records SET speakers_wanted = '3' WHERE id = %s", [second])
    _rediarize(store, second)
    assert len({t["speaker"] for t in store.transcript(second)["turns"]}) == 3
