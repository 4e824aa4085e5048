"""Bad input, as a table, with the client-input defects once found (ids, offsets, text, file names).

Each row is one kind of bad (or merely unusual) input, where it enters — the HTTP API, the command
line or the environment — and the outcome it must have: a clear 4xx in the `{error, message}`
shape, a one-line error, or acceptance followed by the pipeline reaching done or a halt with a
reason. Never a 500 or a traceback, never a record left stuck, and nothing else disturbed: the
record accepted before the bad input is still there unchanged (or done, where the pipeline ran),
and refused input leaves no record and no audio behind.

The same rows make the "Bad input" table of RELIABILITY.md; a test below keeps the two equal.
"""
from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
import wave
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import av
import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient

from conftest import ROOT, settings, work_until_idle
from media import encode, speech_pcm, write_audio

MAX_UPLOAD_MB = 1
MAX_AUDIO_SECONDS = 60


# --- inputs ---------------------------------------------------------------------------------------

def speech(path: Path, *, rate: int = 16000, layout: str = "mono", fmt: str = "wav", codec: str = "pcm_s16le",
           seconds: float = 3.0) -> Path:
    """`seconds` of the bundled speech at `rate` Hz in `layout`, written by PyAV."""
    pcm = speech_pcm()[: int(seconds * 16000) * 2]
    with av.open(str(path), "w", format=fmt) as out:
        write_audio(out, np.frombuffer(pcm, np.int16), codec, rate, layout)
    return path


def one_hertz_wav(samples: int = 7000) -> bytes:
    """A tiny WAV at 1 Hz: a few kB that would decode to hours of 16 kHz audio."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1), out.setsampwidth(2), out.setframerate(1)
        out.writeframes(b"\x01\x00" * samples)
    return buffer.getvalue()


def video_without_audio(path: Path) -> Path:
    with av.open(str(path), "w", format="mp4") as out:
        stream = out.add_stream("mpeg4", rate=5)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        for i in range(10):
            image = av.VideoFrame.from_ndarray(np.full((48, 64, 3), i * 20, np.uint8), format="rgb24")
            out.mux(stream.encode(image.reformat(format="yuv420p")))
        out.mux(stream.encode(None))
    return path


def png() -> bytes:
    buffer = io.BytesIO()
    with av.open(buffer, "w", format="image2pipe") as out:
        stream = out.add_stream("png", rate=1)
        stream.width, stream.height, stream.pix_fmt = 8, 8, "rgb24"
        out.mux(stream.encode(av.VideoFrame.from_ndarray(np.zeros((8, 8, 3), np.uint8), format="rgb24")))
        out.mux(stream.encode(None))
    return buffer.getvalue()


def truncated(tmp: Path, kind: str, keep: float | int = 0.5) -> bytes:
    """The sample speech encoded as `kind`, cut to a fraction of its bytes (or to `keep` bytes)."""
    whole = encode(tmp / f"whole-{kind}", kind).read_bytes()
    return whole[: keep if isinstance(keep, int) else int(len(whole) * keep)]


def multipart(filename: bytes, content: bytes, fields: dict[str, bytes] | None = None) -> tuple[bytes, str]:
    """A multipart/form-data body written byte by byte, so a file name can hold any bytes."""
    boundary = b"----transcriber-bad-input"
    parts = [b"--" + boundary + b'\r\nContent-Disposition: form-data; name="%s"\r\n\r\n' % name.encode() + value
             + b"\r\n" for name, value in (fields or {}).items()]
    parts.append(b"--" + boundary + b'\r\nContent-Disposition: form-data; name="file"; filename="' + filename
                 + b'"\r\nContent-Type: application/octet-stream\r\n\r\n' + content + b"\r\n")
    return b"".join(parts) + b"--" + boundary + b"--\r\n", "multipart/form-data; boundary=" + boundary.decode()


# --- the world one row runs in ----------------------------------------------------------------------

@dataclass
class World:
    store: object
    db: object
    tmp: Path
    env: dict
    settings: object
    client: TestClient
    token: str
    baseline: int
    notes: dict = field(default_factory=dict)

    def auth(self, token: str | bytes | None = None) -> dict:
        return {"Authorization": b"Bearer " + (token if isinstance(token, bytes) else (token or self.token).encode())}

    def upload(self, filename: str | bytes, content: bytes, **fields: str | bytes):
        name = filename if isinstance(filename, bytes) else filename.encode()
        values = {k: v if isinstance(v, bytes) else v.encode() for k, v in fields.items()}
        body, content_type = multipart(name, content, values)
        return self.client.post("/records", content=body, headers={**self.auth(), "content-type": content_type})

    def get(self, address: str, **headers):
        return self.client.get(address, headers=headers or self.auth())

    def patch(self, address: str, headers: dict | None = None, **kwargs):
        return self.client.patch(address, headers={**self.auth(), **(headers or {})}, **kwargs)

    def counts(self) -> tuple[int, int]:
        with self.db.transaction() as conn:
            records = conn.execute("SELECT count(*) AS n FROM records").fetchone()["n"]
            blobs = conn.execute("SELECT count(*) AS n FROM blobs").fetchone()["n"]
        return records, blobs

    def cli(self, *args: str | bytes, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "transcriber.cli", *args], env=env or self.env,
                              capture_output=True, timeout=300)

    def file(self, name: str | bytes, content: bytes) -> bytes:
        """A file in this row's folder; its path as bytes (a name may be any bytes)."""
        path = os.fsencode(self.tmp) + b"/" + (name if isinstance(name, bytes) else name.encode())
        with open(path, "wb") as handle:
            handle.write(content)
        return path


@pytest.fixture
def world(store, db, env, tmp_path, hears_word_a_second):
    """Alice's record accepted before the row; the bad input comes from mallory unless a row
    says otherwise. What this process recognises, WordASecond hears: the subject is what intake
    and conversion make of the input (decoded for real), not its words; the command line's rows
    run the real recognizer in their own processes."""
    from web.app import create_app

    hears_word_a_second()

    the_settings = settings(max_upload_mb=MAX_UPLOAD_MB, max_audio_seconds=MAX_AUDIO_SECONDS, tick_seconds=0.2)
    alice = store.add_owner("alice")
    token = store.add_owner("mallory")
    operator = store.add_operator("root")
    baseline = store.accept(store.owner_by_name("alice")["id"],
                            [speech(tmp_path / "baseline.wav", seconds=2).read_bytes()],
                            title="before", source_name="baseline.wav")
    with TestClient(create_app(store, the_settings), raise_server_exceptions=False) as client:
        yield World(store, db, tmp_path, env, the_settings, client, token, baseline,
                    {"alice": alice, "operator": operator})


# --- outcomes -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Refused:
    """An HTTP answer in the `{error, message}` shape; nothing stored."""
    status: int
    error: str

    def __str__(self):
        return f"{self.status} `{self.error}`, nothing stored"

    def check(self, w: World, answer, before) -> None:
        assert answer.status_code == self.status, answer.text
        body = answer.json()
        error = body["error"]["code"] if isinstance(body["error"], dict) else body["error"]  # OpenAI's shape too
        assert error == self.error and isinstance(body["message"], str) and body["message"], body
        assert w.counts() == before


@dataclass(frozen=True)
class Ranged:
    """The answer to a `Range` header on the audio: 416 naming the file's size, or 206 with the
    whole file as the part; nothing stored."""
    status: int

    def __str__(self):
        return "416 `Content-Range: bytes */SIZE`" if self.status == 416 else "206, the whole file"

    def check(self, w: World, answer, before) -> None:
        assert answer.status_code == self.status, answer.text
        whole = w.get(f"/records/{w.baseline}/audio", **w.auth(w.notes["alice"])).content
        if self.status == 416:
            assert answer.headers["content-range"] == f"bytes */{len(whole)}"
        else:
            assert answer.content == whole
            assert answer.headers["content-range"] == f"bytes 0-{len(whole) - 1}/{len(whole)}"
        assert w.counts() == before


@dataclass(frozen=True)
class Accepted:
    """201, then the pipeline runs until idle: the record ends done, or halted with `end`."""
    end: str = "done"

    def __str__(self):
        return "201, then done" if self.end == "done" else f"201, then halted: `{self.end}`"

    def check(self, w: World, answer, before) -> None:
        assert answer.status_code == 201, answer.text
        record_id = answer.json()["id"]
        work_until_idle(w.store, w.settings)
        card = w.get(f"/records/{record_id}").json()
        if self.end == "done":
            assert card["stage"] == "done" and card["halt"] is None, card
            assert w.get(f"/records/{record_id}/text").status_code == 200
        else:
            assert card["halt"] and card["halt"]["reason"] == self.end and card["halt"]["error"], card
        w.notes["card"] = card


@dataclass(frozen=True)
class Exits:
    """The command ends with `code` and says `says` on its last line; no traceback."""
    code: int
    says: str

    def __str__(self):
        return f"exit {self.code}: “{self.says}…”" if self.code else f"exit 0, {self.says}"

    def check(self, w: World, done, before) -> None:
        stderr = done.stderr.decode(errors="replace") if isinstance(done.stderr, bytes) else done.stderr
        assert done.returncode == self.code, stderr
        assert "Traceback" not in stderr
        if self.code:
            lines = stderr.strip().splitlines()
            assert lines and self.says in lines[-1], stderr
            assert w is None or w.counts() == before
        else:
            assert done.stdout.strip(), done.stdout


@dataclass(frozen=True)
class ConfigLine:
    """The service does not start: exit 2 and one line naming the variable."""
    variable: str

    def __str__(self):
        return f"exit 2, one line naming `{self.variable}`"

    def check(self, w, done, before) -> None:
        assert done.returncode == 2
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and self.variable in lines[0] and "Traceback" not in done.stderr, done.stderr


@dataclass(frozen=True)
class Row:
    kind: str
    where: str
    act: Callable
    expect: object
    then: Callable | None = None   # what else must hold after the row
    pipeline: bool = False         # the row runs the pipeline (which finishes the earlier record too)


def arabic_indic(number: int) -> str:
    return "".join(chr(0x0660 + int(digit)) for digit in str(number))


# --- rows -----------------------------------------------------------------------------------------

def _upload_file(name, content_of):
    return lambda w: w.upload(name, content_of(w))


def _no_escape(w):
    assert not (w.tmp.parent / "escaped.wav").exists() and not Path("/tmp/escaped.wav").exists()
    assert w.notes["card"]["source_name"] == "escaped.wav"


def _shown_as(name: str):
    def then(w):
        assert w.notes["card"]["source_name"] == name
    return then


def _chunked_64mb(w, path: str, headers: dict, head: bytes = b"", tail: bytes = b""):
    """POSTs `head`, 64 MB in 64 kB pieces and `tail`, with no length declared; counts what the
    service read."""
    from web.app import create_app

    sent = 0

    async def pieces():
        nonlocal sent
        yield head
        for _ in range(1024):
            sent += 65536
            yield b"\0" * 65536
        yield tail

    async def go():
        transport = httpx.ASGITransport(app=create_app(w.store, w.settings), raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.post(path, content=pieces(), headers=headers)

    answer = asyncio.run(go())
    w.notes["sent"] = sent
    return answer


def _oversized_chunked(w):
    body, content_type = multipart(b"endless.wav", b"")
    head, tail = body.split(b"\r\n\r\n\r\n", 1)
    return _chunked_64mb(w, "/records", {**w.auth(), "content-type": content_type}, head + b"\r\n\r\n",
                         b"\r\n" + tail)


def _disabled_session_upload(w):
    """Mallory signs in to the page, is disabled, and uploads from the page (cookie, CSRF token)."""
    from test_shared_sessions import csrf_of

    cookie = w.client.post("/session", data={"token": w.token}, follow_redirects=False).cookies["transcriber_session"]
    csrf = csrf_of(w.client.get("/").text)
    w.store.set_owner_disabled("mallory", True)
    body, content_type = multipart(b"endless.wav", b"")
    head, tail = body.split(b"\r\n\r\n\r\n", 1)
    return _chunked_64mb(w, "/records", {"cookie": f"transcriber_session={cookie}", "x-csrf-token": csrf,
                                         "content-type": content_type}, head + b"\r\n\r\n", b"\r\n" + tail)


def _audio_range(header: str):
    return lambda w: w.get(f"/records/{w.baseline}/audio", **w.auth(w.notes["alice"]), Range=header)


def _chunked_small(w):
    body, content_type = multipart(b"chunked.wav", speech(w.tmp / "chunked.wav").read_bytes())

    def pieces():
        for start in range(0, len(body), 4096):
            yield body[start:start + 4096]

    return w.client.post("/records", content=pieces(), headers={**w.auth(), "content-type": content_type})


def _read_stopped_early(w):
    assert w.notes["sent"] < 8 * 1024 * 1024, w.notes["sent"]


def _baseline_untouched_by_patch(w):
    card = w.store.card_row(w.baseline)
    assert (card["title"], card["summary"], list(card["topics"])) == ("before", "", [])


def _no_correction(w):
    assert w.store.card_row(w.baseline)["corrections"] == 0
    assert "corrected" not in [e["kind"] for e in w.store.events(w.baseline)]


def _not_record_one(w):
    assert w.get(f"/records/{w.baseline}", **w.auth(w.notes["alice"])).status_code == 200


def _card_ok(w):
    done = w.cli("card", str(w.baseline))
    assert done.returncode == 0 and b'"title": "before"' in done.stdout


def _json_names_the_file(w):
    import json

    printed = json.loads(w.notes["out"])
    assert printed["file"] == "\ufffd\ufffd-talk.wav" and printed["text"].strip()


def _cli_upload_shown_as_replacement(w):
    record_id = int(w.notes["out"])
    assert "\ufffd" in w.store.card_row(record_id)["source_name"]


def _ran(w, done):
    w.notes["out"] = done.stdout.decode()
    return done


def _cli_submit(name: bytes, content_of, *extra):
    def act(w):
        done = w.cli("submit", w.file(name, content_of(w)), "--owner", "alice", *extra)
        w.notes["out"] = done.stdout.decode().strip()
        return done
    return act


WAV = lambda w: speech(w.tmp / "short.wav").read_bytes()  # noqa: E731
TEXT = b"just some words, not audio at all\n" * 40
HTML = b"<!doctype html><html><head><title>x</title></head><body><p>not audio</p></body></html>\n" * 10

HTTP_ROWS = [
    # intake: what is not audio is refused, nothing stored
    Row("empty file", "POST /records", _upload_file("empty.wav", lambda w: b""), Refused(415, "empty_file")),
    Row("one byte", "POST /records", _upload_file("one.mp3", lambda w: b"\x00"), Refused(415, "not_audio")),
    Row("text", "POST /records", _upload_file("notes.mp3", lambda w: TEXT), Refused(415, "not_audio")),
    Row("HTML", "POST /records", _upload_file("page.ogg", lambda w: HTML), Refused(415, "not_audio")),
    Row("image (PNG)", "POST /records", _upload_file("picture.png", lambda w: png()), Refused(415, "not_audio")),
    Row("video without audio (mp4)", "POST /records",
        _upload_file("silent-film.mp4", lambda w: video_without_audio(w.tmp / "v.mp4").read_bytes()),
        Refused(415, "not_audio")),
    Row("mp3 cut to its first 300 bytes", "POST /records",
        _upload_file("head.mp3", lambda w: truncated(w.tmp, "mp3", 300)),
        Refused(415, "not_audio")),
    Row("WAV at 1 Hz (7 kB that would decode to 2 h)", "POST /records",
        _upload_file("bomb.wav", lambda w: one_hertz_wav()),
        Refused(415, "unsupported_audio")),
    Row(f"audio declared longer than TRANSCRIBER_MAX_AUDIO_SECONDS ({MAX_AUDIO_SECONDS} s)", "POST /records",
        _upload_file("long.opus", lambda w: encode(w.tmp / "long.opus", "opus", repeat=7).read_bytes()),
        Refused(413, "audio_too_long")),
    Row("no file field", "POST /records",
        lambda w: w.client.post("/records", data={"title": "x"}, headers=w.auth()), Refused(422, "invalid_request")),
    Row("NUL in the title", "POST /records", lambda w: w.upload("a.wav", WAV(w), title="a\x00b"),
        Refused(422, "invalid_request")),
    Row("line break in the title", "POST /records", lambda w: w.upload("a.wav", WAV(w), title="a\nb"),
        Refused(422, "invalid_request")),
    Row("title over 500 characters", "POST /records", lambda w: w.upload("a.wav", WAV(w), title="t" * 501),
        Refused(422, "invalid_request")),
    Row("unknown language", "POST /records", lambda w: w.upload("a.wav", WAV(w), language="xx"),
        Refused(422, "bad_language")),
    Row("oversized (length declared)", "POST /records",
        _upload_file("big.wav", lambda w: b"\0" * (MAX_UPLOAD_MB * 1024 * 1024 + 100 * 1024)),
        Refused(413, "too_large")),
    Row("oversized, chunked (64 MB, no length)", "POST /records", _oversized_chunked, Refused(413, "too_large"),
        _read_stopped_early),
    Row("a disabled owner's page session with its CSRF token, 64 MB chunked", "POST /records",
        _disabled_session_upload, Refused(401, "unauthorized"), _read_stopped_early),
    Row("a body the form does not parse (octet-stream, 64 MB chunked)", "POST /session",
        lambda w: _chunked_64mb(w, "/session", {"content-type": "application/octet-stream"}),
        Refused(413, "too_large"), _read_stopped_early),
    Row("a body the form does not parse (JSON, 64 MB chunked)", "POST /admin/session",
        lambda w: _chunked_64mb(w, "/admin/session", {"content-type": "application/json"}),
        Refused(413, "too_large"), _read_stopped_early),
    # intake: unusual but valid audio is accepted and the pipeline ends it
    Row("chunked upload within the limit", "POST /records", _chunked_small, Accepted()),
    Row("truncated mp3 (first half)", "POST /records",
        _upload_file("cut.mp3", lambda w: truncated(w.tmp, "mp3")), Accepted()),
    Row("truncated ogg/opus (first half)", "POST /records",
        _upload_file("cut.ogg", lambda w: truncated(w.tmp, "opus")), Accepted()),
    Row("truncated flac (first half)", "POST /records",
        _upload_file("cut.flac", lambda w: truncated(w.tmp, "flac")), Accepted()),
    Row("wrong extension (WAV named .mp3)", "POST /records", _upload_file("really-a-wav.mp3", WAV), Accepted()),
    Row("8 kHz audio", "POST /records",
        _upload_file("phone.wav", lambda w: speech(w.tmp / "8k.wav", rate=8000).read_bytes()), Accepted()),
    Row("96 kHz audio", "POST /records",
        _upload_file("studio.flac", lambda w: speech(w.tmp / "96k.flac", rate=96000, fmt="flac", codec="flac")
                     .read_bytes()), Accepted()),
    Row("6-channel (5.1) audio", "POST /records",
        _upload_file("surround.wav", lambda w: speech(w.tmp / "51.wav", layout="5.1").read_bytes()), Accepted()),
    Row("path-traversal file name (../../escaped.wav)", "POST /records",
        _upload_file("../../escaped.wav", WAV), Accepted(), _no_escape),
    Row("path-traversal file name (..\\..\\escaped.wav)", "POST /records",
        _upload_file(b"..\\..\\escaped.wav", WAV), Accepted(), _no_escape),
    Row("non-UTF-8 file name", "POST /records", _upload_file(b"caf\xe9-\xff\xfe.wav", WAV), Accepted(),
        _shown_as("café-ÿþ.wav")),  # the form parser reads a name that is not UTF-8 as Latin-1
    Row("control characters in the file name", "POST /records", _upload_file(b"a\x01\x7fb.wav", WAV), Accepted(),
        _shown_as("a\ufffd\ufffdb.wav")),
    Row("NUL in the file name", "POST /records", _upload_file(b"nul\x00.wav", WAV), Accepted(),
        _shown_as("nul\ufffd.wav")),
    Row("text", "POST /v1/audio/transcriptions",
        lambda w: w.client.post("/v1/audio/transcriptions", headers=w.auth(), files={"file": ("a.mp3", TEXT)}),
        Refused(415, "not_audio")),
    Row("NUL in the title, empty file", "POST /records", lambda w: w.upload("e.wav", b"", title="\x00"),
        Refused(422, "invalid_request")),
    # ids and pages
    Row("superscript digit as id (/records/²)", "GET /records/{id}", lambda w: w.get("/records/²"),
        Refused(404, "not_found")),
    Row("Arabic-Indic digits of an existing id", "GET /records/{id}",
        lambda w: w.get(f"/records/{arabic_indic(w.baseline)}", **w.auth(w.notes["alice"])),
        Refused(404, "not_found"), _not_record_one),
    # an id is ASCII digits, the whole string; a prefix of one is not an id
    Row("an existing id then NUL (/records/ID%00)", "GET /records/{id}",
        lambda w: w.get(f"/records/{w.baseline}%00", **w.auth(w.notes["alice"])),
        Refused(404, "not_found"), _not_record_one),
    Row("an existing id then an Arabic-Indic digit (/records/ID١)", "GET /records/{id}",
        lambda w: w.get(f"/records/{w.baseline}\u0661", **w.auth(w.notes["alice"])),
        Refused(404, "not_found"), _not_record_one),
    Row("id past 64 bits", "GET /records/{id}", lambda w: w.get("/records/99999999999999999999"),
        Refused(404, "not_found")),
    Row("id 0", "GET /records/{id}", lambda w: w.get("/records/0"), Refused(404, "not_found")),
    Row("negative id", "PATCH /records/{id}", lambda w: w.patch("/records/-1", json={"title": "x"}),
        Refused(404, "not_found")),
    Row("unknown id", "GET /records/{id}/text", lambda w: w.get("/records/424242/text"), Refused(404, "not_found")),
    Row("another owner's id", "GET /records/{id}", lambda w: w.get(f"/records/{w.baseline}"),
        Refused(404, "not_found")),
    Row("offset past 64 bits (9223372036854775808)", "GET /records",
        lambda w: w.get("/records?offset=9223372036854775808"), Refused(422, "invalid_request")),
    Row("negative offset", "GET /records", lambda w: w.get("/records?offset=-1"), Refused(422, "invalid_request")),
    Row("limit 0", "GET /records", lambda w: w.get("/records?limit=0"), Refused(422, "invalid_request")),
    Row("limit over 200", "GET /records", lambda w: w.get("/records?limit=201"), Refused(422, "invalid_request")),
    Row("non-numeric limit", "GET /records", lambda w: w.get("/records?limit=ten"), Refused(422, "invalid_request")),
    Row("Range starting at a number of 4301 digits", "GET /records/{id}/audio",
        _audio_range("bytes=" + "9" * 4301 + "-"), Ranged(416)),
    Row("Range of the last 4301-digit number of bytes", "GET /records/{id}/audio",
        _audio_range("bytes=-" + "9" * 4301), Ranged(206)),
    Row("unknown text format", "GET /records/{id}/text",
        lambda w: w.get(f"/records/{w.baseline}/text?format=doc", **w.auth(w.notes["alice"])),
        Refused(422, "invalid_request")),
    Row("offset past 64 bits", "GET /admin/api/halted",
        lambda w: w.get("/admin/api/halted?offset=9223372036854775808", **w.auth(w.notes["operator"])),
        Refused(422, "invalid_request")),
    Row("superscript digit as id", "POST /admin/api/records/{id}/resume",
        lambda w: w.client.post("/admin/api/records/²/resume", headers=w.auth(w.notes["operator"])),
        Refused(404, "not_found")),
    Row("Arabic-Indic digits of an existing id", "DELETE /records/{id}",
        lambda w: w.client.delete(f"/records/{arabic_indic(w.baseline)}", headers=w.auth(w.notes["alice"])),
        Refused(404, "not_found"), _not_record_one),
    # the owner's edits
    Row("NUL in the title of an edit", "PATCH /records/{id}",
        lambda w: w.client.patch(f"/records/{w.baseline}", headers=w.auth(w.notes["alice"]),
                                 json={"title": "a\x00b"}), Refused(422, "invalid_request"),
        _baseline_untouched_by_patch),
    Row("line break in the title of an edit", "PATCH /records/{id}",
        lambda w: w.client.patch(f"/records/{w.baseline}", headers=w.auth(w.notes["alice"]),
                                 json={"title": "a\r\nb"}), Refused(422, "invalid_request"),
        _baseline_untouched_by_patch),
    Row("a forged subtitle cue in a speaker's name", "PATCH /records/{id}",
        lambda w: w.client.patch(f"/records/{w.baseline}", headers=w.auth(w.notes["alice"]),
                                 json={"speakers": {"S1": "Alice\n\n9\n00:00:00,000 --> 99:59:59,000\nforged"}}),
        Refused(422, "invalid_request"), _baseline_untouched_by_patch),
    Row("tab in a speaker's name", "PATCH /records/{id}",
        lambda w: w.client.patch(f"/records/{w.baseline}", headers=w.auth(w.notes["alice"]),
                                 json={"speakers": {"S2": "Bob\t"}}), Refused(422, "invalid_request"),
        _baseline_untouched_by_patch),
    Row("unknown label among the rejected matches", "PATCH /records/{id}",
        lambda w: w.client.patch(f"/records/{w.baseline}", headers=w.auth(w.notes["alice"]),
                                 json={"speakers_rejected": ["S0"]}), Refused(422, "invalid_request"),
        _baseline_untouched_by_patch),
    # the owner's voices
    Row("line break in a voice's new name", "PATCH /voices/{id}",
        lambda w: w.patch("/voices/1", json={"name": "Alice\n\n9\n00:00:00,000 --> 99:59:59,000"}),
        Refused(422, "invalid_request")),
    Row("blank voice name", "PATCH /voices/{id}", lambda w: w.patch("/voices/1", json={"name": "  "}),
        Refused(422, "invalid_request")),
    Row("superscript digit as voice id", "PATCH /voices/{id}", lambda w: w.patch("/voices/²", json={"name": "x"}),
        Refused(404, "not_found")),
    Row("unknown voice", "DELETE /voices/{id}", lambda w: w.client.delete("/voices/424242", headers=w.auth()),
        Refused(404, "not_found")),
    Row("merge into text", "POST /voices/{id}/merge",
        lambda w: w.client.post("/voices/1/merge", headers=w.auth(), json={"into": "Alice"}),
        Refused(422, "invalid_request")),
    Row("merge of an unknown voice", "POST /voices/{id}/merge",
        lambda w: w.client.post("/voices/424242/merge", headers=w.auth(), json={"into": 1}),
        Refused(404, "not_found")),
    Row("NUL in the summary, unknown id", "PATCH /records/{id}",
        lambda w: w.patch("/records/424242", json={"summary": "x\x00"}), Refused(422, "invalid_request")),
    Row("NUL in a topic", "PATCH /records/{id}",
        lambda w: w.client.patch(f"/records/{w.baseline}", headers=w.auth(w.notes["alice"]),
                                 json={"topics": ["ok", "\x00"]}), Refused(422, "invalid_request"),
        _baseline_untouched_by_patch),
    Row("lone surrogate in the title", "PATCH /records/{id}",
        lambda w: w.client.patch(f"/records/{w.baseline}", content=b'{"title": "\\ud800"}',
                                 headers={**w.auth(w.notes["alice"]), "content-type": "application/json"}),
        Refused(422, "invalid_request"), _baseline_untouched_by_patch),
    # the owner's corrections of the text
    Row("a correction of a record not done", "PATCH /records/{id}/text",
        lambda w: w.client.patch(f"/records/{w.baseline}/text", headers=w.auth(w.notes["alice"]),
                                 json={"segments": [{"index": 0, "text": "x"}]}), Refused(409, "not_done"),
        _no_correction),
    Row("a correction of another owner's record", "PATCH /records/{id}/text",
        lambda w: w.patch(f"/records/{w.baseline}/text", json={"segments": [{"index": 0, "text": "x"}]}),
        Refused(404, "not_found"), _no_correction),
    Row("line break in a corrected segment", "PATCH /records/{id}/text",
        lambda w: w.client.patch(f"/records/{w.baseline}/text", headers=w.auth(w.notes["alice"]),
                                 json={"segments": [{"index": 0, "text": "a\nb"}]}), Refused(422, "invalid_request"),
        _no_correction),
    Row("a corrected segment over 2,000 characters", "PATCH /records/{id}/text",
        lambda w: w.client.patch(f"/records/{w.baseline}/text", headers=w.auth(w.notes["alice"]),
                                 json={"segments": [{"index": 0, "text": "x" * 2001}]}),
        Refused(422, "invalid_request"), _no_correction),
    Row("a negative segment index", "PATCH /records/{id}/text",
        lambda w: w.client.patch(f"/records/{w.baseline}/text", headers=w.auth(w.notes["alice"]),
                                 json={"segments": [{"index": -1, "text": "x"}]}), Refused(422, "invalid_request"),
        _no_correction),
    Row("malformed JSON", "PATCH /records/{id}",
        lambda w: w.patch(f"/records/{w.baseline}", content=b"{title:", headers={"content-type": "application/json"}),
        Refused(422, "invalid_request")),
    # tokens
    Row("no token", "GET /records", lambda w: w.client.get("/records"), Refused(401, "unauthorized")),
    Row("empty token", "GET /records", lambda w: w.get("/records", Authorization="Bearer "),
        Refused(401, "unauthorized")),
    Row("non-ASCII token", "GET /records", lambda w: w.get("/records", **w.auth("jeton-é-ключ".encode())),
        Refused(401, "unauthorized")),
    Row("huge token (1 MB)", "GET /records", lambda w: w.get("/records", **w.auth(b"x" * (1 << 20))),
        Refused(401, "unauthorized")),
    Row("NUL in the token", "POST /records", lambda w: w.client.post("/records", headers=w.auth(b"a\x00b")),
        Refused(401, "unauthorized")),
    Row("wrong scheme (Basic)", "GET /records", lambda w: w.get("/records", Authorization=f"Basic {w.token}"),
        Refused(401, "unauthorized")),
]

CLI_ROWS = [
    Row("superscript digit as id", "transcriber card", lambda w: w.cli("card", "²"),
        Exits(2, "a record id is a positive whole number in ASCII digits")),
    Row("Arabic-Indic digits of an existing id", "transcriber card", lambda w: w.cli("card", arabic_indic(w.baseline)),
        Exits(2, "a record id is a positive whole number in ASCII digits"), _card_ok),
    Row("Arabic-Indic digits of an existing id", "transcriber delete",
        lambda w: w.cli("delete", arabic_indic(w.baseline)),
        Exits(2, "a record id is a positive whole number in ASCII digits"), _card_ok),
    Row("unknown id", "transcriber card", lambda w: w.cli("card", "424242"), Exits(2, "no record with id 424242")),
    Row("unknown id", "transcriber resume", lambda w: w.cli("resume", "424242"), Exits(2, "no record with id 424242")),
    Row("empty file", "transcriber submit", _cli_submit(b"empty.wav", lambda w: b""), Exits(2, "the file is empty")),
    Row("text", "transcriber submit", _cli_submit(b"notes.wav", lambda w: TEXT), Exits(2, "not decodable audio")),
    Row("non-UTF-8 file name", "transcriber submit", _cli_submit(b"\xff\xfe-talk.wav", WAV),
        Exits(0, "prints the record id"), _cli_upload_shown_as_replacement),
    Row("non-UTF-8 title", "transcriber submit", _cli_submit(b"t.wav", WAV, "--title", b"caf\xe9"),
        Exits(2, "the title must be valid Unicode text")),
    Row("line break in the title", "transcriber submit", _cli_submit(b"t.wav", WAV, "--title", b"a\nb"),
        Exits(2, "the title must be one line")),
    Row("non-UTF-8 owner name", "transcriber submit",
        lambda w: w.cli("submit", w.file(b"o.wav", WAV(w)), "--owner", b"\xff"),
        Exits(2, "the owner name must be valid Unicode text")),
    Row("non-UTF-8 file name, JSON output", "transcriber transcribe",
        lambda w: _ran(w, w.cli("transcribe", "--format", "json", w.file(b"\xff\xfe-talk.wav", WAV(w)))),
        Exits(0, "prints the text"), _json_names_the_file, pipeline=True),
    Row("HTML file", "transcriber transcribe", lambda w: w.cli("transcribe", w.file(b"page.mp3", HTML)),
        Exits(2, "not decodable audio")),
]

ENV_ROWS = [
    ("TRANSCRIBER_TICK_SECONDS", "inf"),
    ("TRANSCRIBER_MAX_UPLOAD_MB", "inf"),
    ("TRANSCRIBER_CONVERT_TIME_LIMIT_SECONDS", "inf"),
    ("TRANSCRIBER_CONVERT_LEASE_SECONDS", "inf"),
    ("TRANSCRIBER_BACKOFF_SECONDS", "nan"),
    ("TRANSCRIBER_RECOGNIZE_LEASE_SECONDS", "1e308"),
    ("TRANSCRIBER_MAX_ATTEMPTS", "1e308"),
    ("TRANSCRIBER_MAX_UPLOAD_MB", "-1"),
    ("TRANSCRIBER_SYNC_WAIT_SECONDS", "-5"),
    ("TRANSCRIBER_TICK_SECONDS", "soon"),
    ("TRANSCRIBER_MAX_LOST_LEASES", "0"),
    ("TRANSCRIBER_MAX_AUDIO_SECONDS", "nan"),
    ("TRANSCRIBER_RECOGNIZE_TIME_LIMIT_SECONDS", "-inf"),
    ("TRANSCRIBER_DATABASE_URL", "not a url"),
    ("TRANSCRIBER_BROKER_URL", "ftp://broker"),
    ("TRANSCRIBER_ENGINE", "nope"),
    ("TRANSCRIBER_LANGUAGE", "klingon"),
    ("TRANSCRIBER_RECOGNIZER_THREADS", "0"),
    ("TRANSCRIBER_RECOGNIZER_THREADS", "two"),
    ("TRANSCRIBER_COMPUTE_TYPE", "int4"),
]


def _env_act(variable: str, value: str):
    def act(_):
        from transcriber import cli

        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update({k: v for k, v in saved.items() if not k.startswith("TRANSCRIBER_")})
        os.environ[variable] = value
        stderr = io.StringIO()
        real, sys.stderr = sys.stderr, stderr
        try:
            code = cli.main(["status"])
        finally:
            sys.stderr = real
            os.environ.clear()
            os.environ.update(saved)
        return subprocess.CompletedProcess(["transcriber", "status"], code, "", stderr.getvalue())
    return act


ROWS = HTTP_ROWS + CLI_ROWS + [
    Row(f"{variable.removeprefix('TRANSCRIBER_')}={value}", "environment", _env_act(variable, value),
        ConfigLine(variable)) for variable, value in ENV_ROWS]


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.where}: {r.kind}" for r in ROWS])
def test_bad_input(row: Row, request):
    """Each kind of bad input has its one clear outcome — a 4xx in
    the `{error, message}` shape, a one-line error, or acceptance and then done or a halt with a
    reason; none a 500 or a traceback, none stuck, nothing else disturbed."""
    if row.where == "environment":
        row.expect.check(None, row.act(None), None)
        return
    w = request.getfixturevalue("world")
    before = w.counts()
    baseline = w.store.card_row(w.baseline)
    row.expect.check(w, row.act(w), before)
    if row.then:
        row.then(w)
    # nothing else disturbed: the earlier record is as it was (or done, where the pipeline ran; a
    # `transcribe` that ends with its own records gives back the claims it still holds on others)
    if row.pipeline:
        work_until_idle(w.store, w.settings)
    after = w.store.card_row(w.baseline)
    if isinstance(row.expect, Accepted) or row.pipeline:
        assert after["stage"] == "done" and after["halted_at"] is None
    else:
        assert after == baseline
    # nothing stuck: every record is done, halted, or (not yet worked on) at created untouched
    with w.db.transaction() as conn:
        stuck = conn.execute("SELECT record_id, stage FROM steps WHERE stage <> 'done' AND halted_at IS NULL "
                             "AND (failures > 0 OR lease_expires_at IS NOT NULL)").fetchall()
    assert stuck == []


def table() -> str:
    """The rows as the markdown table of RELIABILITY.md's "Bad input" section."""
    lines = ["| kind | where | outcome |", "| --- | --- | --- |"]
    lines += [f"| {r.kind} | {r.where} | {r.expect} |" for r in ROWS]
    return "\n".join(lines)


def test_reliability_md_shows_this_table():
    """RELIABILITY.md's bad-input table is exactly the table tested here."""
    text = (ROOT / "RELIABILITY.md").read_text()
    section = text.split("## Bad input", 1)[1].split("\n## ", 1)[0]
    assert table() in section, "regenerate with: python tests/test_bad_input.py"
    assert len(ROWS) >= 40


if __name__ == "__main__":
    print(table())
