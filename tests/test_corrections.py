"""The owner's corrections of the text: real PostgreSQL, texts saved by the pipeline's own
statements, the edit and every read through the API in-process (and the store where the subject
is the store's rule)."""
from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from conftest import checkpoint, policy, run_together, save_result, settings
from test_http import make_api  # noqa: F401  (the live server fixture)
from domain.corrections import corrected, retimed
from domain.stages import Step
from searching import done_record
from web.app import create_app

TALK = [
    (0.0, 5.0, "Good morning and welcome to the weekly meeting."),
    (5.0, 12.0, "Today we look at the storage budget and the release date."),
    (83.0, 88.5, "We matched the words with the Montreal forced liner last night."),
    (88.5, 95.0, "Nobody lost a recording, the checkpoints held."),
]
FIXED = "We matched the words with the Montreal Forced Aligner last night."


@pytest.fixture
def world(store):
    app = TestClient(create_app(store, settings()), raise_server_exceptions=False)
    alice, bob = store.add_owner("alice"), store.add_owner("bob")
    ids = {"alice": store.owner_by_name("alice")["id"], "bob": store.owner_by_name("bob")["id"]}
    return app, {"alice": {"Authorization": f"Bearer {alice}"}, "bob": {"Authorization": f"Bearer {bob}"}}, ids


def _edit(app, auth, record_id, *edits):
    return app.patch(f"/records/{record_id}/text", headers=auth,
                     json={"segments": [{"index": i, "text": t} for i, t in edits]})


def _text(app, auth, record_id, fmt="txt", **params):
    answer = app.get(f"/records/{record_id}/text", params={"format": fmt, **params}, headers=auth)
    assert answer.status_code == 200, answer.text
    return answer.text


def _record_row(store, record_id: int) -> dict:
    with store.db.connection() as conn:
        return conn.execute("SELECT * FROM records WHERE id = %s", (record_id,)).fetchone()


def _hits(app, auth, q):
    answer = app.get("/search", params={"q": q}, headers=auth)
    assert answer.status_code == 200, answer.text
    return [(item["record"]["id"], item["start"]) for item in answer.json()["items"]]


def test_a_correction_is_read_everywhere_and_the_recognised_text_stays(store, world):
    """An owner's correction of one segment shows in txt, srt, vtt and json, in search (by the
    corrected words, no longer by the misheard ones), and on the card (how many); the text as
    recognised is still served with version=recognised, and records.transcript is untouched."""
    app, auth, ids = world
    record = done_record(store, ids["alice"], TALK, windows=2, words=True)
    assert _hits(app, auth["alice"], "liner") == [(record, 83.0)]
    row_before = _record_row(store, record)

    answer = _edit(app, auth["alice"], record, (2, FIXED))
    assert answer.status_code == 200, answer.text
    assert answer.json()["segments"][2]["text"] == FIXED and answer.json()["segments"][2]["corrected"] is True

    assert FIXED in _text(app, auth["alice"], record) and "forced liner" not in _text(app, auth["alice"], record)
    srt, vtt = _text(app, auth["alice"], record, "srt"), _text(app, auth["alice"], record, "vtt")
    for document in (srt, vtt):
        assert "Forced Aligner" in document and "forced liner" not in document
    segments = json.loads(_text(app, auth["alice"], record, "json"))["segments"]
    assert [s["text"] for s in segments][:2] == [t for _, _, t in TALK[:2]] and segments[2]["text"] == FIXED
    assert (segments[2]["start"], segments[2]["end"]) == (83.0, 88.5)

    recognised = _text(app, auth["alice"], record, version="recognised")
    assert "Montreal forced liner" in recognised and "Aligner" not in recognised
    assert store.read_record(record)["transcript"].count("forced liner") == 1

    assert _hits(app, auth["alice"], "aligner") == [(record, 83.0)]
    assert _hits(app, auth["alice"], "liner") == []
    assert _record_row(store, record) == row_before  # the edit writes no field of the record's
    hit = app.get("/search", params={"q": "aligner"}, headers=auth["alice"]).json()["items"][0]
    assert 86.5 < hit["at"] < 87.5  # when the corrected word was said (after "Forced"), not the segment's start
    card = app.get(f"/records/{record}", headers=auth["alice"]).json()
    assert card["corrections"] == {"count": 1, "detached": []}


def test_the_words_kept_keep_their_times():
    """An edit keeps the recognised times of the words it did not change, and spreads new
    words over the span between their kept neighbours."""
    words = [{"word": " the", "start": 1.0, "end": 1.2}, {"word": " Montreal", "start": 1.2, "end": 1.8},
             {"word": " forced", "start": 1.8, "end": 2.2}, {"word": " liner", "start": 2.2, "end": 2.6},
             {"word": " works", "start": 3.0, "end": 3.4}]
    timed = retimed(words, 1.0, 3.5, "the Montreal Forced Aligner really works")
    assert [w["word"].strip() for w in timed] == ["the", "Montreal", "Forced", "Aligner", "really", "works"]
    assert [(w["start"], w["end"]) for w in timed[:2]] == [(1.0, 1.2), (1.2, 1.8)]
    assert (timed[-1]["start"], timed[-1]["end"]) == (3.0, 3.4)
    new = timed[2:5]
    assert new[0]["start"] == 1.8 and new[-1]["end"] == 3.0
    assert all(a["end"] <= b["start"] + 1e-9 for a, b in zip(new, new[1:]))
    alike = [{"word": " word", "start": float(t), "end": t + 0.8} for t in range(6)]
    swapped = retimed(alike, 0.0, 6.0, "word Montreal Forced Aligner word word")  # in place, not moved
    assert [(w["start"], w["end"]) for w in swapped][::4] == [(0.0, 0.8), (4.0, 4.8)]
    assert swapped[1]["start"] == 0.8 and swapped[3]["end"] == 4.0
    assert [w["start"] for w in retimed(words, 1.0, 3.5, "The Montreal forced liner works.")] == [1.0, 1.2, 1.8, 2.2, 3.0]
    spread = retimed([], 0.0, 2.0, "no words were timed")
    assert spread[0]["start"] == 0.0 and spread[-1]["end"] == 2.0


def test_a_detached_correction_is_kept_and_shown_where_its_times_fall():
    """A correction whose times no segment has any more is kept and placed by its start; one
    whose segment moved to another place follows its times."""
    segments = [{"start": 0.0, "end": 4.0, "text": "a"}, {"start": 4.0, "end": 9.0, "text": "b"},
                {"start": 9.0, "end": 12.0, "text": "c"}]
    corrections = [{"segment": 0, "start": 4.0, "end": 9.0, "text": "B", "words": []},
                   {"segment": 1, "start": 5.0, "end": 8.0, "text": "lost?", "words": []}]
    shown, detached = corrected(segments, corrections)
    assert [s["text"] for s in shown] == ["a", "B", "lost?", "c"]
    assert shown[2]["detached"] is True and detached == [corrections[1]]
    assert segments[1]["text"] == "b"  # the recognised segments are not changed


def _recognise_again(store, db, record_id: int, segments: list[tuple[float, float, str]],
                     passages: bool = False) -> None:
    """Recognition of a done record run again, by the pipeline's own statements: the record put
    back at converted with a recognize step (as resuming a re-recognition would find it), its
    windows saved again, then the done save (with `passages`, with the passages the recognize
    step makes)."""
    with db.transaction() as conn:
        conn.execute("DELETE FROM record_windows WHERE record_id = %s", (record_id,))
        conn.execute("DELETE FROM search_rows WHERE record_id = %s AND n > 0", (record_id,))
        conn.execute("UPDATE records SET stage = 'converted' WHERE id = %s", (record_id,))
        conn.execute("INSERT INTO steps (record_id, step, stage, owner_id) "
                     "SELECT id, 'recognize', 'converted', owner_id FROM records WHERE id = %s", (record_id,))
    claim = store.claim(Step.RECOGNIZE, policy())
    assert claim.record_id == record_id
    shaped = [{"start": s, "end": e, "text": t, "words": []} for s, e, t in segments]
    assert checkpoint(store, claim, 0.0, segments[-1][1], shaped, "en", 60)
    params = None
    if passages:
        from service.meaning import record_passages

        params = {"passages": record_passages(store, record_id, "en")}
    assert save_result(store, claim, {"engine": "test"}, params=params)


def test_a_rerun_never_loses_a_correction(store, db, world):
    """Recognised again, a record keeps its corrections: on the segment with its times where the
    new text has one (shown, searchable), detached where not (kept, listed on the card, shown
    where its times fall, still found by search); the machine's new text is what version=recognised serves."""
    app, auth, ids = world
    record = done_record(store, ids["alice"], TALK, words=True)
    assert _edit(app, auth["alice"], record, (2, FIXED), (1, "Today we review the storage budget.")).status_code == 200
    again = [(0.0, 5.0, "Good morning, welcome to the weekly meeting."),
             (5.0, 11.0, "Today we looked at the storage budget."),            # times moved
             (11.0, 83.0, "And the release date."),
             (83.0, 88.5, "We matched the words with the Montreal forced liner last night."),
             (88.5, 95.0, "Nobody lost a recording.")]
    _recognise_again(store, db, record, again)

    segments = json.loads(_text(app, auth["alice"], record, "json"))["segments"]
    texts = [s["text"] for s in segments]
    assert FIXED in texts and "Today we review the storage budget." in texts
    kept = next(s for s in segments if s["text"] == FIXED)
    assert (kept["start"], kept["end"]) == (83.0, 88.5) and kept.get("corrected") is True
    lost = next(s for s in segments if s["text"] == "Today we review the storage budget.")
    assert lost["detached"] is True and (lost["start"], lost["end"]) == (5.0, 12.0)
    assert [s["start"] for s in segments] == sorted(s["start"] for s in segments)

    card = app.get(f"/records/{record}", headers=auth["alice"]).json()
    assert card["corrections"] == {"count": 2, "detached": [{"segment": 1, "start": 5.0, "end": 12.0}]}
    assert _hits(app, auth["alice"], "aligner") == [(record, 83.0)] and _hits(app, auth["alice"], "liner") == []
    assert _hits(app, auth["alice"], "review") == [(record, 5.0)]  # the detached one too
    assert "Today we looked" in _text(app, auth["alice"], record, version="recognised")


def test_every_edit_is_journaled_as_human_without_its_text(store, world):
    """Each edit is a `corrected` event of origin human: who, which segment, its times; no text."""
    app, auth, ids = world
    record = done_record(store, ids["alice"], TALK)
    assert _edit(app, auth["alice"], record, (2, FIXED)).status_code == 200
    assert _edit(app, auth["alice"], record, (0, "Good morning, all.")).status_code == 200
    events = [e for e in store.events(record) if e["kind"] == "corrected"]
    assert [(e["origin"], e["detail"]["segment"], e["detail"]["by"]) for e in events] == [
        ("human", 2, "alice"), ("human", 0, "alice")]
    assert "Aligner" not in json.dumps([e["detail"] for e in store.events(record)], default=str)
    assert app.get(f"/records/{record}", headers=auth["alice"]).json()["corrections"]["count"] == 2


def test_bad_edits_are_refused_and_change_nothing(store, world):
    """An edit of a record not done (409), of a segment it lacks (422, and a valid edit sent with
    it is not applied), of another owner's record (404, as a missing one), over the size cap or
    with a line break or a NUL (422): nothing changes, nothing is journaled."""
    app, auth, ids = world
    record = done_record(store, ids["alice"], TALK)
    waiting = store.accept(ids["alice"], [b"not really audio"], title="", source_name="a.bin")
    before = _text(app, auth["alice"], record, "json")

    not_done = _edit(app, auth["alice"], waiting, (0, "x"))
    assert not_done.status_code == 409 and not_done.json()["error"] == "not_done"
    missing = _edit(app, auth["alice"], record, (0, "fine"), (4, "past the end"))
    assert missing.status_code == 422 and missing.json()["error"] == "no_such_segment"
    foreign, absent = _edit(app, auth["bob"], record, (0, "x")), _edit(app, auth["bob"], record + 99, (0, "x"))
    assert foreign.status_code == absent.status_code == 404 and foreign.json() == absent.json()
    for text in ("x" * 2001, "two\nlines", "tab\there", "nul\x00"):
        assert _edit(app, auth["alice"], record, (0, text)).status_code == 422, text
    for body in ({"segments": [{"index": -1, "text": "x"}]}, {"segments": []}, {"segments": [{"index": 0}]},
                 {"segments": [{"index": 0, "text": "x", "start": 3}]}):
        assert app.patch(f"/records/{record}/text", headers=auth["alice"], json=body).status_code == 422, body

    assert _text(app, auth["alice"], record, "json") == before
    assert [e for e in store.events(record) if e["kind"] == "corrected"] == []
    assert app.get(f"/records/{record}", headers=auth["alice"]).json()["corrections"]["count"] == 0


def test_two_edits_of_one_segment_at_once_the_later_wins_both_journaled(store, world):
    """Two edits of one segment released together by a barrier, each on a connection of its own
    (the store's, as the edit's address calls it): both are written, both are in the journal,
    and the correction kept is the one written after the other's journal line."""
    app, auth, ids = world
    record = done_record(store, ids["alice"], TALK)
    texts = ["Montreal Forced Aligner, first.", "Montreal Forced Aligner, second."]
    edits = run_together(2, lambda i: store.correct_segments(record, ids["alice"], [(2, texts[i])], by=f"tab {i}"))
    assert edits == [True, True]
    first, last = [e for e in store.events(record) if e["kind"] == "corrected"]
    with store.db.connection() as conn:
        kept = conn.execute("SELECT text, corrected_at FROM record_corrections WHERE record_id = %s",
                            (record,)).fetchall()
    assert len(kept) == 1 and first["at"] < kept[0]["corrected_at"] <= last["at"]
    assert json.loads(_text(app, auth["alice"], record, "json"))["segments"][2]["text"] == kept[0]["text"]
    assert len(_hits(app, auth["alice"], "aligner")) == 1


def test_the_diarize_save_never_overwrites_a_correction(store, world):
    """P3-S1 for the text: the owner corrects a segment while the diarize step holds the record;
    the step's save writes its turns and the correction is still shown and searchable."""
    from conftest import save_turns

    app, auth, ids = world
    record = done_record(store, ids["alice"], TALK, diarize=True, words=True)
    claim = store.claim(Step.DIARIZE, policy())
    assert claim is not None and claim.record_id == record
    assert _edit(app, auth["alice"], record, (2, FIXED)).status_code == 200
    assert save_turns(store, claim, [{"start": 0.0, "end": 50.0, "speaker": "S1"},
                                     {"start": 50.0, "end": 95.0, "speaker": "S2"}])
    document = json.loads(_text(app, auth["alice"], record, "json"))
    assert document["segments"][2]["text"] == FIXED and document["segments"][2]["speaker"] == "S2"
    assert _hits(app, auth["alice"], "aligner") == [(record, 83.0)] and _hits(app, auth["alice"], "liner") == []
    assert "[Speaker 2]" in _text(app, auth["alice"], record) and FIXED in _text(app, auth["alice"], record)


def test_the_command_line_corrects_a_segment(store, env, owner):
    """`transcriber edit ID --segment N --text …` corrects a done record's segment, journaled as
    the operator's; `text --version recognised` prints the machine's text; a bad segment, a
    record not done or a text on two lines is refused with a message and nothing changed."""
    import subprocess
    import sys

    def run(*args):
        return subprocess.run([sys.executable, "-m", "transcriber.cli", *args], env=env, capture_output=True,
                              text=True, timeout=120)

    record = done_record(store, owner["id"], TALK)
    edited = run("edit", str(record), "--segment", "2", "--text", FIXED)
    assert edited.returncode == 0, edited.stderr
    assert FIXED in run("text", str(record)).stdout
    assert "forced liner" in run("text", str(record), "--version", "recognised").stdout
    event = [e for e in store.events(record) if e["kind"] == "corrected"][-1]
    assert event["origin"] == "human" and event["detail"]["as"] == "operator" and event["detail"]["segment"] == 2

    waiting = store.accept(owner["id"], [b"not really audio"], title="", source_name="a.bin")
    for args, said in ((("edit", str(record), "--segment", "9", "--text", "x"), "no segment 9"),
                       (("edit", str(waiting), "--segment", "0", "--text", "x"), "not done"),
                       (("edit", str(record), "--segment", "0", "--text", "two\nlines"), "one line"),
                       (("edit", str(record + 99), "--segment", "0", "--text", "x"), "no record")):
        refused = run(*args)
        assert refused.returncode != 0 and said in refused.stderr, (args, refused.stderr)
    assert len([e for e in store.events(record) if e["kind"] == "corrected"]) == 1


def test_a_later_openai_compatible_read_answers_the_corrected_text(make_api, store, tmp_path, hears_word_a_second):
    """The official `openai` client's repeat of an upload (the same Idempotency-Key) answers the
    record's text as the owner corrected it, in json, srt and verbose_json with words."""
    import openai

    from media import encode

    api = make_api()
    token = api.token("alice")
    hears_word_a_second()
    api.start_workers()
    path = encode(tmp_path / "talk.wav", "wav")
    speaker = openai.OpenAI(api_key=token, base_url=str(api.http.base_url).rstrip("/") + "/v1", timeout=300)

    def transcribe(fmt: str, **extra):
        with path.open("rb") as handle:
            return speaker.audio.transcriptions.create(model="whisper-1", file=handle, response_format=fmt,
                                                       language="en", extra_headers={"Idempotency-Key": "talk-1"},
                                                       **extra)

    assert transcribe("json").text.split() == ["word"] * 9
    record = api.http.get("/records", headers=api.auth(token)).json()["items"][0]["id"]
    fixed = "word word Montreal Forced Aligner word word word word word"
    answer = api.http.patch(f"/records/{record}/text", headers=api.auth(token),
                            json={"segments": [{"index": 0, "text": fixed}]})
    assert answer.status_code == 200, answer.text
    assert transcribe("json").text.strip() == fixed
    assert "Montreal Forced Aligner" in " ".join(transcribe("srt").split())  # on one cue line or two
    verbose = transcribe("verbose_json", timestamp_granularities=["word"])
    assert [w.word for w in verbose.words][2:5] == ["Montreal", "Forced", "Aligner"]
    assert [(w.start, w.end) for w in verbose.words][:2] == [(0.0, 0.8), (1.0, 1.8)]  # kept words keep their times


def test_a_resumed_step_keeps_the_corrections(store, world):
    """P5 keeps the owner's fields: a done record whose speakers step halted is corrected, then
    resumed (`domain.resume`, what `transcriber resume`, scripts/resume.py and the panel call)
    and its step saved; the correction is still shown, searchable and counted."""
    from conftest import save_turns
    from domain.claims import HaltReason
    from domain.resume import resume

    app, auth, ids = world
    record = done_record(store, ids["alice"], TALK, diarize=True, words=True)
    assert store.halt(store.claim(Step.DIARIZE, policy()), HaltReason.ATTEMPTS_EXHAUSTED, "boom")
    assert _edit(app, auth["alice"], record, (2, FIXED)).status_code == 200
    assert resume(store, record, by="root") == "done"
    assert save_turns(store, store.claim(Step.DIARIZE, policy()), [{"start": 0.0, "end": 95.0, "speaker": "S1"}])
    assert json.loads(_text(app, auth["alice"], record, "json"))["segments"][2]["text"] == FIXED
    assert _hits(app, auth["alice"], "aligner") == [(record, 83.0)]
    assert app.get(f"/records/{record}", headers=auth["alice"]).json()["corrections"]["count"] == 1
