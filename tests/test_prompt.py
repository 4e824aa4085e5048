"""The owner's words help. An optional `prompt` (names, jargon, context; at most
800 characters) given with an upload, by `POST /records`, `transcriber submit --prompt`,
`transcriber transcribe --prompt` or the OpenAI-compatible endpoint's `prompt`, is an owner
field of the card and goes to the recognizer with every window; it never puts words on silence."""
from __future__ import annotations

import json
import wave

import numpy as np
import pytest

from conftest import settings, work_until_idle
from media import encode
from test_http import make_api  # noqa: F401 - the live API fixture
from test_remote_engine import KEY, StandIn

PROMPT = "Montreal Forced Aligner"


def silence(path, seconds: float = 10.0):
    """`seconds` of digital silence, 16 kHz mono WAV."""
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(np.zeros(int(16000 * seconds), dtype=np.int16).tobytes())
    return path


def test_the_prompt_is_an_owner_field_of_the_card_and_too_long_is_refused(make_api, store, tmp_path):  # noqa: F811
    """`POST /records` with `prompt` shows it on the card; over 800 characters is
    422 `bad_prompt` saying the limit, nothing stored; the OpenAI-compatible endpoint takes its
    own `prompt` field the same way (400 `bad_prompt`, param `prompt`, in OpenAI's shape)."""
    api = make_api(sync_wait_seconds=0)
    token = api.token("alice")
    audio = encode(tmp_path / "a.wav")
    with audio.open("rb") as handle:
        made = api.http.post("/records", headers=api.auth(token), files={"file": ("a.wav", handle)},
                             data={"prompt": PROMPT})
    assert made.status_code == 201, made.text
    assert api.card(token, made.json()["id"])["prompt"] == PROMPT
    with audio.open("rb") as handle:
        long = api.http.post("/records", headers=api.auth(token), files={"file": ("a.wav", handle)},
                             data={"prompt": "x" * 801})
    assert long.status_code == 422 and long.json()["error"] == "bad_prompt"
    assert "801" in long.json()["message"] and "800" in long.json()["message"]
    with audio.open("rb") as handle:
        compat = api.http.post("/v1/audio/transcriptions", headers=api.auth(token),
                               files={"file": ("a.wav", handle)}, data={"prompt": "y" * 900})
    assert compat.status_code == 400 and compat.json()["error"]["param"] == "prompt"
    other = encode(tmp_path / "b.wav", repeat=2)  # the same bytes would attach to the first record
    with other.open("rb") as handle:
        waited = api.http.post("/v1/audio/transcriptions", headers=api.auth(token),
                               files={"file": ("b.wav", handle)}, data={"prompt": PROMPT})
    assert waited.status_code == 504  # no workers here: it names the record, which keeps the prompt
    assert api.card(token, waited.json()["error"]["record"]["id"])["prompt"] == PROMPT
    assert store.list_card_rows(store.owner_by_name("alice")["id"], 10, 0)[1] == 2


def test_the_prompt_goes_with_every_window(store, owner, tmp_path):
    """A 40 s recording (two windows) recognised by a remote engine: each window's
    request carries the owner's prompt, the same each time (never the previous window's text)."""
    from service.intake import accept_recording

    standin = StandIn()
    try:
        the_settings = settings(engine="openai", openai_base_url=standin.base_url, openai_api_key=KEY,
                                home=tmp_path / "home")
        record_id, _ = accept_recording(store, the_settings, encode(tmp_path / "long.wav", repeat=4),
                                        owner_id=owner["id"], prompt=PROMPT)
        work_until_idle(store, the_settings)
    finally:
        standin.stop()
    assert store.read_record(record_id)["stage"] == "done"
    assert len(standin.received) >= 2
    assert [sent["prompt"] for sent in standin.received] == [PROMPT] * len(standin.received)


def test_the_cli_takes_a_prompt(store, owner, tmp_path, monkeypatch, database_url, capsys, hears_word_a_second):
    """`transcriber submit --prompt` and `transcriber transcribe --prompt` store the
    owner's prompt on the card; a prompt over 800 characters is refused with a clear line and
    exit status 2, nothing stored."""
    from domain.card import card
    from transcriber.cli import main

    monkeypatch.setenv("TRANSCRIBER_DATABASE_URL", database_url)
    audio = str(encode(tmp_path / "a.wav"))
    assert main(["submit", audio, "--owner", "alice", "--prompt", PROMPT]) == 0
    record_id = int(capsys.readouterr().out.strip())
    assert card(store.card_row(record_id))["prompt"] == PROMPT
    assert main(["submit", audio, "--owner", "alice", "--prompt", "z" * 801]) == 2
    assert "at most 800" in capsys.readouterr().err
    assert store.list_card_rows(owner["id"], 10, 0)[1] == 1
    hears_word_a_second()  # only the prompt matters here, not the words
    assert main(["transcribe", audio, "--owner", "alice", "--prompt", PROMPT, "--format", "json"]) == 0
    transcribed = json.loads(capsys.readouterr().out)["record"]
    assert card(store.card_row(transcribed))["prompt"] == PROMPT


@pytest.mark.parametrize("model", ["tiny.en", "base"])
def test_a_prompt_never_puts_words_on_silence(model, store, owner, tmp_path):
    """A prompt never puts words on silence: 10 s of silence with the prompt "Montreal Forced
    Aligner" gives no words, with each model."""
    from service.intake import accept_recording

    the_settings = settings(whisper_model=model, home=tmp_path / "home", language="en")
    record_id, _ = accept_recording(store, the_settings, silence(tmp_path / "quiet.wav"), owner_id=owner["id"],
                                    prompt=PROMPT)
    work_until_idle(store, the_settings)
    row = store.read_record(record_id)
    assert row["stage"] == "done"
    assert not (row["transcript"] or "").split()
