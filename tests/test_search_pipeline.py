"""Search over records that went through the whole pipeline: real recordings
uploaded over HTTP, converted, and recognised by the remote engine against a local
OpenAI-compatible stand-in that answers with texts of the test's choosing (English and Russian,
timed from the recording's start), so that the words said at a given second are known."""
from __future__ import annotations

import io
import wave

import pytest
from fastapi import Request
from fastapi.responses import JSONResponse

from media import encode
from searching import timed_words
from test_http import make_api  # noqa: F401  (fixture)
from test_remote_engine import KEY, StandIn

SAID_AT = 83.0   # 00:01:23
SEGMENT_SECONDS = 2.0
WORDS = {"en": ("the weekly meeting goes on", "the conversion pipeline stalled"),
         "ru": ("совещание продолжается", "работа конвейера остановилась")}


class Narrator(StandIn):
    """Answers each window (they come one after another) with segments of two seconds, timed
    within the window; the one holding SAID_AT says the marked words of the asked language."""

    def __init__(self):
        super().__init__()
        self.heard_seconds = 0.0

    async def transcriptions(self, request: Request):
        form = await request.form()
        with wave.open(io.BytesIO(await form["file"].read()), "rb") as wav:
            seconds = wav.getnframes() / wav.getframerate()
        language = form.get("language") or "en"
        ordinary, marked = WORDS[language]
        segments, words, at = [], [], 0.0
        while at < seconds - 0.01:
            end = min(seconds, at + SEGMENT_SECONDS)
            absolute = self.heard_seconds
            said = marked if absolute + at <= SAID_AT < absolute + end else ordinary
            segments.append({"id": len(segments), "start": at, "end": end, "text": " " + said})
            words += timed_words(at, end, said)
            at = end
        self.heard_seconds += seconds
        return JSONResponse({"task": "transcribe", "language": {"ru": "russian"}.get(language, "english"),
                             "duration": seconds, "text": " ".join(s["text"] for s in segments),
                             "segments": segments, "words": words})



@pytest.fixture
def narrator():
    server = Narrator()
    yield server
    server.stop()


@pytest.mark.parametrize("language, query", [("en", "pipeline"), ("ru", "конвейер")])
def test_words_said_at_a_second_are_found_there(make_api, narrator, tmp_path, language, query):
    """A word said at 00:01:23 of a recording that went through the pipeline is
    found with `start` <= 83 < `end` (its segment's) and `at` the second its word was said (the
    third of four words timed evenly over the segment; "конвейера" the second of three); in
    Russian, "конвейер" finds "конвейера"; another owner finds nothing of it."""
    api = make_api(engine="openai", openai_base_url=narrator.base_url, openai_api_key=KEY)
    alice, bob = api.token("alice"), api.token("bob")
    path = encode(tmp_path / "talk.wav", "wav", repeat=10)  # about 100 s
    with open(path, "rb") as handle:
        answer = api.http.post("/records", headers=api.auth(alice), files={"file": ("talk.wav", handle)},
                               data={"language": language})
    assert answer.status_code == 201, answer.text
    record = answer.json()["id"]
    api.start_workers()
    card = api.wait(alice, record, lambda c: c["stage"] == "done" or c["halt"] is not None)
    assert card["stage"] == "done" and card["duration_seconds"] > SAID_AT, card
    found = api.http.get("/search", params={"q": query}, headers=api.auth(alice)).json()
    assert [item["record"]["id"] for item in found["items"]] == [record]
    hit = found["items"][0]
    assert hit["start"] <= SAID_AT < hit["end"] and "<mark>" in hit["snippet"]
    marked = WORDS[language][1].split()
    index = next(i for i, word in enumerate(marked) if word.startswith(query))
    assert hit["at"] == pytest.approx(hit["start"] + index * (hit["end"] - hit["start"]) / len(marked), abs=0.01)
    strangers = api.http.get("/search", params={"q": query}, headers=api.auth(bob)).json()
    assert (strangers["items"], strangers["total"], strangers["next"]) == ([], 0, None)
