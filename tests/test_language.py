"""Language per record. With a multilingual model the detected language and how
sure the detection was are on the card and in the JSON text; an owner may set `language` per
upload (`POST /records`, `submit --language`, the OpenAI `language` field), which wins over
TRANSCRIBER_LANGUAGE; an unknown code is refused (422 on `POST /records`), nothing stored."""
from __future__ import annotations

import json

import pytest

from audio.formats import render_record
from conftest import ROOT, settings, work_until_idle
from domain.card import card
from media import SAMPLE, encode
from service.intake import accept_file
from test_http import make_api  # noqa: F401 - the live API fixture

RUSSIAN = ROOT / "tests" / "data" / "ru.ogg"  # synthetic Russian speech (espeak-ng), 10 s


@pytest.fixture
def base(tmp_path):
    from audio.models import ModelError, resolve

    try:
        resolve("base", tmp_path / "models")
    except ModelError as error:  # the multilingual weights are an optional extra
        pytest.skip(f"base is not installed: {error}")


def test_the_detected_language_and_its_probability_are_on_the_card_and_in_the_json(base, store, owner, tmp_path):
    """Base detects Russian speech; the card and the JSON text both give `ru` and
    the detection's probability (a number in (0, 1], the same in both)."""
    the_settings = settings(whisper_model="base", home=tmp_path / "home", language="auto")
    record_id = accept_file(store, the_settings, RUSSIAN, owner_id=owner["id"])
    work_until_idle(store, the_settings)
    shown = card(store.card_row(record_id))
    assert shown["stage"] == "done" and shown["language"] == "ru"
    assert 0 < shown["language_probability"] <= 1
    text = json.loads(render_record("json", store.transcript(record_id)))
    assert (text["language"], text["language_probability"]) == ("ru", shown["language_probability"])


def test_the_owners_language_wins_over_the_service_default(base, store, owner, tmp_path):
    """With TRANSCRIBER_LANGUAGE=ru, English speech uploaded with language `en` is
    recognised as English (told, so no detection probability), and with `auto` the language is
    detected (English, with its probability)."""
    the_settings = settings(whisper_model="base", home=tmp_path / "home", language="ru")
    told = accept_file(store, the_settings, SAMPLE, owner_id=owner["id"], language="en")
    detected = accept_file(store, the_settings, SAMPLE, owner_id=owner["id"], language="auto")
    work_until_idle(store, the_settings)
    told_card, detected_card = card(store.card_row(told)), card(store.card_row(detected))
    assert (told_card["language"], told_card["language_probability"]) == ("en", None)
    assert detected_card["language"] == "en" and 0.5 < detected_card["language_probability"] <= 1
    for record_id in (told, detected):
        letters = [c for c in store.read_record(record_id)["transcript"] if c.isalpha()]
        assert letters and all(c.isascii() for c in letters)


def test_language_is_taken_per_upload_and_an_unknown_code_is_refused(make_api, store, tmp_path, database_url,  # noqa: F811
                                                                     monkeypatch, capsys):
    """`POST /records` with `language` puts it on the card; `xx` is 422
    `bad_language`; `transcriber submit --language xx` is refused with exit status 2; nothing
    is stored for either refusal."""
    from transcriber.cli import main

    api = make_api(whisper_model="base")
    token = api.token("alice")
    audio = encode(tmp_path / "a.wav")
    for language, status in (("ru", 201), ("xx", 422)):
        with audio.open("rb") as handle:
            answer = api.http.post("/records", headers=api.auth(token), files={"file": ("a.wav", handle)},
                                   data={"language": language})
        assert answer.status_code == status, answer.text
    assert answer.json()["error"] == "bad_language" and "xx" in answer.json()["message"]
    monkeypatch.setenv("TRANSCRIBER_DATABASE_URL", database_url)
    monkeypatch.setenv("TRANSCRIBER_WHISPER_MODEL", "base")
    assert main(["submit", str(audio), "--owner", "alice", "--language", "xx"]) == 2
    assert "unknown language" in capsys.readouterr().err
    rows, total = store.list_card_rows(store.owner_by_name("alice")["id"], 10, 0)
    assert total == 1 and card(rows[0])["language"] == "ru"
