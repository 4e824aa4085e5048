"""The owner's word edits (`PATCH /records/{id}/text` with `words`): one word of a segment
changed, every other word keeping its times; on top of an earlier correction; all or none, with
the bad-input rules of segment edits. Real PostgreSQL, texts saved by the pipeline's own
statements, the API in-process."""
from __future__ import annotations

import json

from test_corrections import FIXED, TALK, _hits, _text, world  # noqa: F401  (fixture)
from searching import done_record


def _words(app, auth, record_id, *edits, segments=()):
    body = {"words": [{"segment": s, "index": i, "text": t} for s, i, t in edits]}
    if segments:
        body["segments"] = [{"index": i, "text": t} for i, t in segments]
    return app.patch(f"/records/{record_id}/text", headers=auth, json=body)


def _segment(app, auth, record_id, index, **params) -> dict:
    return json.loads(_text(app, auth, record_id, "json", **params))["segments"][index]


def test_a_word_edit_changes_that_word_and_keeps_every_time(store, world):  # noqa: F811
    """"forced liner" → "Forced Aligner" word by word: the segment reads as corrected in every
    format and in search, each word keeps its recognised times (the edited ones their own), the
    recognised text stays, and each word edit is a `corrected` event naming segment and word."""
    app, auth, ids = world
    record = done_record(store, ids["alice"], TALK, windows=2, words=True)
    whole = json.loads(_text(app, auth["alice"], record, "json"))["segments"]
    before = whole[2]
    assert [w["word"].strip() for w in before["words"]][7:9] == ["forced", "liner"]

    answer = _words(app, auth["alice"], record, (2, 7, "Forced"), (2, 8, "Aligner"))
    assert answer.status_code == 200, answer.text
    after = answer.json()["segments"][2]
    assert after["text"] == FIXED and after["corrected"] is True
    assert [(w["start"], w["end"]) for w in after["words"]] == [(w["start"], w["end"]) for w in before["words"]]
    assert [w["word"].strip() for w in after["words"]] == FIXED.split()
    assert "Montreal Forced Aligner" in _text(app, auth["alice"], record, "srt")
    now = json.loads(_text(app, auth["alice"], record, "json"))["segments"]
    assert now[:2] + now[3:] == whole[:2] + whole[3:]  # no other segment changed
    assert "forced liner" in _text(app, auth["alice"], record, version="recognised")
    assert _hits(app, auth["alice"], "aligner") == [(record, 83.0)] and _hits(app, auth["alice"], "liner") == []
    events = [e["detail"] for e in store.events(record) if e["kind"] == "corrected"]
    assert [(e["segment"], e["word"]) for e in events] == [(2, 7), (2, 8)]
    assert all(e["by"] == "alice" and FIXED not in json.dumps(e) for e in events)
    card = app.get(f"/records/{record}", headers=auth["alice"]).json()
    assert card["corrections"]["count"] == 1


def test_a_word_edit_lies_on_an_earlier_correction(store, world):  # noqa: F811
    """A segment corrected first, then one of its words: the word edit changes the corrected
    words, not the recognised ones, and keeps the times the correction gave them."""
    app, auth, ids = world
    record = done_record(store, ids["alice"], TALK, words=True)
    first = app.patch(f"/records/{record}/text", headers=auth["alice"],
                      json={"segments": [{"index": 0, "text": "Good morning and welcome to the monthly meeting."}]})
    assert first.status_code == 200, first.text
    corrected = first.json()["segments"][0]
    answer = _words(app, auth["alice"], record, (0, 0, "Hello"))
    assert answer.status_code == 200, answer.text
    segment = answer.json()["segments"][0]
    assert segment["text"] == "Hello morning and welcome to the monthly meeting."
    assert [(w["start"], w["end"]) for w in segment["words"]] == [(w["start"], w["end"]) for w in corrected["words"]]


def test_bad_word_edits_are_refused_and_change_nothing(store, world):  # noqa: F811
    """A word past the segment's last (422 `no_such_word`, and a valid edit sent with it is not
    applied), of a segment the record lacks (422 `no_such_segment`), a word with a space, an empty
    or over-long one, a line break, a negative place, no edit at all (422), a record not done
    (409), another owner's (404): nothing changes, nothing is journaled."""
    app, auth, ids = world
    record = done_record(store, ids["alice"], TALK, words=True)
    waiting = store.accept(ids["alice"], [b"not really audio"], title="", source_name="a.bin")
    before = _text(app, auth["alice"], record, "json")

    past = _words(app, auth["alice"], record, (0, 0, "Fine"), (2, 11, "Past"))
    assert past.status_code == 422 and past.json()["error"] == "no_such_word", past.text
    assert past.json()["segment"] == 2 and past.json()["word"] == 11 and "has 11 timed words" in past.json()["message"]
    missing = _words(app, auth["alice"], record, (4, 0, "Nowhere"))
    assert missing.status_code == 422 and missing.json()["error"] == "no_such_segment"
    for word in ("two words", "", "x" * 101, "line\nbreak", "nul\x00"):
        assert _words(app, auth["alice"], record, (0, 0, word)).status_code == 422, word
    for body in ({"words": [{"segment": 0, "index": -1, "text": "x"}]}, {"words": []}, {},
                 {"words": [{"segment": 0, "text": "x"}]}, {"words": [{"segment": 0, "index": 0, "text": "x", "at": 1}]}):
        assert app.patch(f"/records/{record}/text", headers=auth["alice"], json=body).status_code == 422, body
    not_done = _words(app, auth["alice"], waiting, (0, 0, "x"))
    assert not_done.status_code == 409 and not_done.json()["error"] == "not_done"
    foreign = _words(app, auth["bob"], record, (0, 0, "x"))
    assert foreign.status_code == 404

    assert _text(app, auth["alice"], record, "json") == before
    assert [e for e in store.events(record) if e["kind"] == "corrected"] == []


def test_the_command_line_corrects_a_word(store, env, owner):
    """`transcriber edit ID --segment N --word W --text …` changes that word only, journaled as
    the operator's; a word past the segment's last is refused with a message, nothing changed."""
    import subprocess
    import sys

    def run(*args):
        return subprocess.run([sys.executable, "-m", "transcriber.cli", *args], env=env, capture_output=True,
                              text=True, timeout=120)

    record = done_record(store, owner["id"], TALK, words=True)
    edited = run("edit", str(record), "--segment", "2", "--word", "8", "--text", "Aligner")
    assert edited.returncode == 0 and "word 8 of segment 2 corrected" in edited.stdout, edited.stderr
    assert "Montreal forced Aligner last night." in run("text", str(record)).stdout
    refused = run("edit", str(record), "--segment", "2", "--word", "11", "--text", "x")
    assert refused.returncode != 0 and "has no word 11" in refused.stderr, refused.stderr
    spaced = run("edit", str(record), "--segment", "2", "--word", "1", "--text", "two words")
    assert spaced.returncode != 0 and "one word" in spaced.stderr, spaced.stderr
    events = [e["detail"] for e in store.events(record) if e["kind"] == "corrected"]
    assert [(e["segment"], e["word"], e["as"]) for e in events] == [(2, 8, "operator")]
