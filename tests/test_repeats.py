"""The same request means the same parameters: a repeat of an upload's bytes is answered by the
earlier record only when it asks alike (language, prompt, speakers: `domain.asked`); anything that
only shapes the answer (response_format, timestamp_granularities) may differ. Driven by the
official `openai` client against a live server, by `POST /records`, and by `transcriber
transcribe` as a user runs it, on real PostgreSQL and real audio."""
from __future__ import annotations

import json
import subprocess
import sys

import openai

from conftest import ROOT
from media import encode
from test_http import make_api  # noqa: F401  (the live server fixture)
from test_transcribe import RUN



def _records(store) -> list[dict]:
    with store.db.transaction() as conn:
        return conn.execute("SELECT id, prompt, asked FROM records ORDER BY id").fetchall()


def test_a_repeat_with_another_prompt_or_language_is_a_new_recognition(make_api, store, tmp_path,
                                                                        hears_word_a_second):
    """The same bytes again through the `openai` client: in other response formats (and
    timestamp granularities) they are answered by the first record, no second one is made; with
    another prompt, or a language where none was asked, they are a new record that carries what
    the new request asked for. (The words are a stand-in's: the subject is the records.)"""
    api = make_api()
    token = api.token("alice")
    hears_word_a_second()
    api.start_workers()
    client = openai.OpenAI(api_key=token, base_url=str(api.http.base_url).rstrip("/") + "/v1", timeout=120)
    audio = encode(tmp_path / "talk.flac", "flac", seconds=3)

    def create(**asked):
        with audio.open("rb") as handle:
            return client.audio.transcriptions.create(model="whisper-1", file=handle, **asked)

    first = create(response_format="json")
    assert first.text.split() == ["word"] * 3
    assert "word" in create(response_format="srt")
    verbose = create(response_format="verbose_json", timestamp_granularities=["word"])
    assert [w.word for w in verbose.words] == ["word"] * 3
    assert [r["id"] for r in _records(store)] == [1]

    assert create(prompt="Quarterly budget review").text.split() == ["word"] * 3
    assert create(prompt="Quarterly budget review", response_format="text").split() == ["word"] * 3
    records = _records(store)
    assert [(r["id"], r["prompt"]) for r in records] == [(1, None), (2, "Quarterly budget review")]

    create(language="en")
    records = _records(store)
    assert len(records) == 3 and records[2]["asked"]["language"] == "en" and records[2]["prompt"] is None


def test_a_key_sent_again_asking_for_something_else_is_refused(make_api, store, tmp_path):
    """`POST /records` with the same `Idempotency-Key` and bytes but another prompt or speakers is
    not the key's first upload: 422 `idempotency_key_reused`, nothing stored; asked alike, the
    repeat is the first record (200)."""
    api = make_api()
    token = api.token("alice")
    audio = encode(tmp_path / "talk.wav", "wav", seconds=2)

    def post(**asked):
        with audio.open("rb") as handle:
            return api.http.post("/records", headers={**api.auth(token), "Idempotency-Key": "k1"},
                                 files={"file": ("talk.wav", handle)}, data=asked)

    first = post(prompt="Anna Petrova")
    assert first.status_code == 201, first.text
    assert post(prompt="Anna Petrova").json() == first.json()
    for other in ({"prompt": "Quarterly budget review"}, {"prompt": "Anna Petrova", "speakers": "2"}, {}):
        refused = post(**other)
        assert refused.status_code == 422 and refused.json()["error"] == "idempotency_key_reused", other
    assert len(_records(store)) == 1


def _stand_in_transcribe(env, *args):
    """`transcriber transcribe ARGS` whose words are a stand-in's (`window_hook`)."""
    script = RUN.format(root=str(ROOT), tests=str(ROOT / "tests"))
    return subprocess.run([sys.executable, "-c", script, "transcribe", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=300)


def test_two_copies_of_one_file_give_two_results_in_order(env, tmp_path):
    """`transcribe a.flac b.flac other.wav a.flac` where b is a byte copy of a: one result per
    argument, in the order given, each named after its own file; the copies share one record and
    the JSON says so (`same_as`). In txt, srt and vtt each file has its own heading and text. (The
    words are a stand-in's.)"""
    a = encode(tmp_path / "a.flac", "flac", seconds=3)
    b = tmp_path / "b.flac"
    b.write_bytes(a.read_bytes())
    other = encode(tmp_path / "other.wav", "wav", seconds=2)
    done = _stand_in_transcribe(env, "--format", "json", a, b, other, a)
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(x["file"], x["same_as"]) for x in answers] == [
        ("a.flac", None), ("b.flac", "a.flac"), ("other.wav", None), ("a.flac", "a.flac")]
    assert answers[0]["record"] == answers[1]["record"] == answers[3]["record"] != answers[2]["record"]
    assert answers[1]["text"] == answers[0]["text"] and answers[0]["text"].split() == ["word"] * 3
    assert answers[2]["text"].split() == ["word"] * 2
    assert f"[record {answers[1]['record']}] b.flac: the same recording as a.flac" in done.stderr

    for fmt, starts in (("txt", "word"), ("srt", "1\n00:00:0"), ("vtt", "WEBVTT")):
        shown = _stand_in_transcribe(env, "--format", fmt, a, b)
        assert shown.returncode == 0, shown.stderr
        heads = [line for line in shown.stdout.splitlines() if line.startswith("==> ")]
        record = heads[0].split("(record ")[1].rstrip(") <=")
        assert heads == [f"==> a.flac (record {record}) <==", f"==> b.flac (record {record}, the same as a.flac) <=="]
        first, second = (part.strip() for part in shown.stdout.split("==> ")[1:])
        assert first.split("\n", 1)[1].startswith(starts) and first.split("\n", 1)[1] == second.split("\n", 1)[1]


def test_an_unfinished_run_is_continued_only_when_asked_alike(store, owner, tmp_path):
    """`transcribe`'s intake goes on with an unfinished record of the same bytes only when the
    new run asks alike: another prompt, or no language where the first run asked for one, is a
    new record with what the new run asked for; the same again goes on with the first."""
    from conftest import settings
    from service.intake import accept_from_command_line

    s = settings()
    talk = encode(tmp_path / "talk.wav", "wav", seconds=2)

    def intake(**asked):
        return accept_from_command_line(store, s, talk, owner="alice", continue_unfinished=True, **asked)

    first, _ = intake(language="en", prompt="Anna Petrova")
    assert intake(language="en", prompt="Anna Petrova") == (first, False)
    other_prompt, new = intake(language="en", prompt="Quarterly budget review")
    assert new and store.read_record(other_prompt)["prompt"] == "Quarterly budget review"
    no_language, new = intake(prompt="Anna Petrova")
    assert new and store.read_record(no_language)["language"] is None
    assert intake(prompt="Anna Petrova") == (no_language, False)
