"""Owner text cannot break a document's structure. A speaker's name or a title holding a line
break, a tab or another control character is refused at every way in (422 naming the field, a
one-line error on the command line) and nothing changes; and whatever reaches the renderers anyway
(a name an older row kept, a recognizer's text) leaves every srt, vtt and txt with exactly its own
cues and paragraphs: one line each, no `-->` in a cue's text, no blank line, no vtt NOTE block.
Real PostgreSQL; texts saved by the pipeline's own statements, names written with the store's own
statement, under the API's checks."""
from __future__ import annotations

import html
import json
import re

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from audio.formats import cue_line, cues, render
from conftest import policy, save_turns, settings
from domain.one_line import one_line
from domain.stages import Step
from searching import done_record
from web.app import create_app
from web.openai_compat import openai_text_response

TALK = [(0.0, 4.0, "Good morning, the budget is ready."), (4.0, 8.0, "Thanks, it looks fine.")]
TURNS = [{"start": 0.0, "end": 4.0, "speaker": "S1"}, {"start": 4.0, "end": 8.0, "speaker": "S2"}]
INJECTION = "Alice\n\n99\n00:00:00,000 --> 99:59:59,000\nINJECTED CUE\n\nWEBVTT NOTE"
HOSTILE = {"S1": INJECTION, "S2": "Bob\r\n\x1b\u2028NOTE\x85-->\t<b>&amp;"}  # (jsonb holds no NUL)


# --- a strict reader of srt and vtt ---------------------------------------------------------------

_TIMING = r"(\d\d):(\d\d):(\d\d)SEP(\d\d\d) --> (\d\d):(\d\d):(\d\d)SEP(\d\d\d)"


def _millis(parts: tuple[str, ...]) -> int:
    hours, minutes, secs, millis = map(int, parts)
    return ((hours * 60 + minutes) * 60 + secs) * 1000 + millis


def read_cues(fmt: str, body: str) -> list[tuple[int, int, list[str]]]:
    """The cues of an srt or vtt document as (start ms, end ms, text lines), refusing anything a
    stricter reader than ours could take otherwise: a control character other than the line
    feeds, any line break Unicode knows, a block that does not open as a cue (its number in srt,
    then the timing line), a text line that is blank or holds `-->`, raw vtt markup."""
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]", body), "a control character"
    timing = re.compile(_TIMING.replace("SEP", "," if fmt == "srt" else r"\."))
    lines = body.splitlines()
    if fmt == "vtt":
        assert lines[:2] == ["WEBVTT", ""]
        lines = lines[2:]
    blocks: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            blocks[-1].append(line)
        else:
            assert blocks[-1], "two blank lines in a row, or a blank line before the first cue"
            blocks.append([])
    if not blocks[-1]:
        blocks.pop()
    read = []
    for number, block in enumerate(blocks, 1):
        if fmt == "srt":
            assert block.pop(0) == str(number)
        found = timing.fullmatch(block[0])
        assert found, f"not a timing line: {block[0]!r}"
        text = block[1:]
        assert text and all("-->" not in line for line in text)
        if fmt == "vtt":
            assert all("<" not in line and ">" not in line for line in text)
            text = [html.unescape(line) for line in text]
        read.append((_millis(found.groups()[:4]), _millis(found.groups()[4:]), text))
    return read


def paragraphs(body: str) -> list[str]:
    """A txt document's paragraphs, each one line."""
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]", body), "a control character"
    found = body.rstrip("\n").split("\n\n")
    assert all(paragraph and "\n" not in paragraph for paragraph in found)
    return found


# --- names already in the database ----------------------------------------------------------------

def _diarized(store, names: dict[str, str] | None) -> tuple[TestClient, dict, int]:
    """An owner's done record whose speakers were found, with `names` written by the store's own
    statement, under the API's checks; the API in-process and the owner's credentials."""
    app = TestClient(create_app(store, settings()), raise_server_exceptions=False)
    token = store.add_owner("alice")
    owner_id = store.owner_by_name("alice")["id"]
    record = done_record(store, owner_id, TALK, title="budget", diarize=True, words=True)
    assert save_turns(store, store.claim(Step.DIARIZE, policy()), TURNS)
    if names:
        assert store.name_speakers(record, owner_id, names)
    return app, {"Authorization": f"Bearer {token}"}, record


def _text(app, auth, record, fmt) -> str:
    answer = app.get(f"/records/{record}/text", params={"format": fmt}, headers=auth)
    assert answer.status_code == 200, answer.text
    return answer.text


def test_hostile_names_in_the_database_leave_srt_and_vtt_their_own_cues(store):
    """Names holding line breaks, a forged cue, ESC, NEL, a Unicode line separator, `-->` and
    markup, already in the database: srt and vtt (the owner's API and the OpenAI-compatible
    answer, one renderer) still read as exactly the two cues of the record, at their times, each
    opened by its speaker's name on one line, `-->` shown as `->`, vtt markup escaped."""
    app, auth, record = _diarized(store, HOSTILE)
    row = store.transcript(record)
    for fmt in ("srt", "vtt"):
        for body in (_text(app, auth, record, fmt), openai_text_response(fmt, row, False, False).body.decode()):
            read = read_cues(fmt, body)
            assert [(start, end) for start, end, _ in read] == [(0, 4000), (4000, 8000)]
            assert read[0][2] == [
                "[Alice 99 00:00:00,000 -> 99:59:59,000 INJECTED CUE WEBVTT NOTE] Good morning, the budget is ready."]
            assert read[1][2] == ["[Bob NOTE -> <b>&amp;] Thanks, it looks fine."]
            assert "INJECTED CUE\n" not in body


def test_hostile_names_in_the_database_leave_txt_its_own_paragraphs(store):
    """The same names in txt: one paragraph per speaker turn, each on one line under its name.
    json, safe by construction, gives the names back exactly as stored, inside its strings."""
    app, auth, record = _diarized(store, HOSTILE)
    assert paragraphs(_text(app, auth, record, "txt")) == [
        "[Alice 99 00:00:00,000 --> 99:59:59,000 INJECTED CUE WEBVTT NOTE] Good morning, the budget is ready.",
        "[Bob NOTE --> <b>&amp;] Thanks, it looks fine."]
    assert json.loads(_text(app, auth, record, "json"))["speakers"] == HOSTILE


# --- names and titles at the ways in --------------------------------------------------------------

BREAKING = ["Alice\nBob", "Alice\r", "\tAlice", "A\x0bB", "A\x1bB", "A\x7fB", "A\x85B", "A\u2028B", INJECTION]


def test_the_api_refuses_names_and_titles_that_are_not_one_line(store):
    """PATCH with such a speaker's name or title, and an upload with such a title: 422 naming the
    field and what is wrong, and nothing changed (the names, the title, the documents, the
    records). A name on one line with `-->` in it is a name like any other."""
    app, auth, record = _diarized(store, {"S1": "Alice"})
    srt_before, card_before, listed_before = (_text(app, auth, record, "srt"), store.card_row(record),
                                              app.get("/records", headers=auth).json()["total"])
    for bad in BREAKING:
        for body, field in (({"speakers": {"S2": bad}}, "speakers.S2"), ({"title": bad}, "title"),
                            ({"title": "fine", "speakers": {"S1": bad}}, "speakers.S1")):
            answer = app.patch(f"/records/{record}", json=body, headers=auth)
            assert answer.status_code == 422, (body, answer.text)
            assert answer.json()["error"] == "invalid_request"
            problems = answer.json()["problems"]
            assert [p["field"] for p in problems] == [field]
            assert "must be one line" in problems[0]["problem"]
        upload = app.post("/records", data={"title": bad}, files={"file": ("a.wav", b"RIFF")}, headers=auth)
        assert upload.status_code == 422 and upload.json()["problems"][0]["field"] == "title", upload.text
    assert store.card_row(record) == card_before
    assert _text(app, auth, record, "srt") == srt_before
    assert app.get("/records", headers=auth).json()["total"] == listed_before

    assert app.patch(f"/records/{record}", json={"speakers": {"S2": "B --> C"}}, headers=auth).status_code == 200
    assert read_cues("srt", _text(app, auth, record, "srt"))[1][2] == ["[B -> C] Thanks, it looks fine."]


# --- any text at all, through the renderer --------------------------------------------------------

HOSTILE_CHARS = st.sampled_from(list("ab -><&;NOTE0:,.\n\r\t\x0b\x00\x1b\x7f\x85\u2028\u3000\u00a0"))
TEXTS = st.one_of(st.text(), st.text(HOSTILE_CHARS))


@st.composite
def talks(draw):
    """Up to four segments one after another, each of any text, with timed words cut from it at
    its spaces or without words; either all spoken by S1 or by nobody; any names."""
    segments, start = [], 0.0
    speaker = draw(st.booleans())
    for _ in range(draw(st.integers(1, 4))):
        text = draw(TEXTS)
        end = start + draw(st.floats(0.1, 20.0))
        segment = {"start": round(start, 3), "end": round(end, 3), "text": text}
        said = text.split(" ")
        if draw(st.booleans()):
            step = (end - start) / len(said)
            segment["words"] = [{"word": " " + word, "start": start + i * step, "end": start + (i + 1) * step}
                                for i, word in enumerate(said)]
        if speaker:
            segment["speaker"] = "S1"
        segments.append(segment)
        start = end + draw(st.floats(0.0, 3.0))
    return segments, {"S1": draw(TEXTS)}


def _visible(text: str) -> str:
    """What a reader takes from text whatever its line breaks and arrows: its characters other
    than whitespace and controls, each run of dashes before `>` read as one."""
    return re.sub(r"-+>", "->", "".join(one_line(text).split()))


@hypothesis_settings(max_examples=300, deadline=None, database=None, derandomize=True,
                     suppress_health_check=[HealthCheck.too_slow])
@given(talks())
def test_any_text_renders_to_cues_that_read_back_the_same(talk):
    """Any segment texts and speaker names: srt and vtt read back (strictly) as exactly the cues
    the renderer cut, at their times to the millisecond, with their texts; each cue's text is
    the sanitised text (one line, no `-->`), and together they say every visible character of the
    segments in order, each cue opened by the speaker's name where a speaker is known."""
    segments, names = talk
    made = cues(segments, names)
    for line in (line for cue in made for line in cue.lines):
        assert line.strip() and line == cue_line(line)
    for fmt in ("srt", "vtt"):
        read = read_cues(fmt, render(fmt, "", segments, names=names))
        assert read == [(round(c.start * 1000), round(c.end * 1000), c.lines) for c in made]
    prefix = f"[{cue_line(names['S1'] or 'Speaker 1')}] " if segments[0].get("speaker") else ""
    assert all(cue.lines[0].startswith(prefix) for cue in made)
    said = "".join(" ".join([cue.lines[0].removeprefix(prefix), *cue.lines[1:]]) for cue in made)
    assert _visible(said) == _visible(" ".join(segment["text"] for segment in segments))
