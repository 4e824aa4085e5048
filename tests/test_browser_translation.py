"""A translated record's page in a real Chromium: the original text and the English one side by
side, each segment with its time, the task among the record's facts, and the English downloads;
a record that was not translated shows one text. The records are made done by the pipeline's
own statements (no audio decoded: the subject is the page)."""
from __future__ import annotations

from pathlib import Path

import pytest

from searching import done_record
from test_browser import CHROMIUM, WAIT_MS, Watched, base_of, browser  # noqa: F401  (fixtures)
from test_http import make_api  # noqa: F401  (fixture)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine")

RUSSIAN = [(0.0, 3.2, "Добрый вечер, друзья."), (3.4, 7.9, "Сегодня мы говорим о погоде в Москве.")]
ENGLISH = [(0.0, 3.1, "Good evening, friends."), (3.4, 7.9, "Today we are talking about the weather in Moscow.")]


def test_the_original_and_the_english_side_by_side(make_api, browser, store):  # noqa: F811
    api = make_api()
    token = api.token("nina")
    owner_id = store.owner_by_name("nina")["id"]
    record = done_record(store, owner_id, RUSSIAN, language="ru", title="Погода", english=ENGLISH)
    watched = Watched(browser, base_of(api))
    page = watched.signed_in(token)
    page.wait_for_selector("#records")
    page.goto(watched.base + f"/view/{record}")

    page.wait_for_selector("#english .segment:has-text('weather in Moscow')", timeout=WAIT_MS)
    page.wait_for_selector("#transcript .segment:has-text('погоде в Москве')")
    assert page.inner_text("#original-heading") == "Original"
    assert page.inner_text("#english-column h3") == "English"
    original, english = page.locator("#transcript").bounding_box(), page.locator("#english").bounding_box()
    assert english["x"] >= original["x"] + original["width"] - 1  # beside it, not below
    assert abs(english["y"] - original["y"]) < 5
    assert page.locator("#transcript .segment").count() == 2 and page.locator("#english .segment").count() == 2
    assert page.locator("#english .segment .time").all_inner_texts() == ["0:00", "0:03"]
    page.wait_for_selector("#record-task:has-text('translate into English')")
    with page.expect_download() as download:
        page.click("#english-download-srt")
    srt = Path(download.value.path()).read_text(encoding="utf-8")
    assert "Good evening, friends." in srt and "Добрый" not in srt

    plain = done_record(store, owner_id, RUSSIAN, language="ru", title="Без перевода")
    page.goto(watched.base + f"/view/{plain}")
    page.wait_for_selector("#transcript .segment:has-text('Добрый вечер')", timeout=WAIT_MS)
    assert not page.is_visible("#english-column") and not page.is_visible("#original-heading")
    assert not page.is_visible("#english-downloads") and page.locator("#record-task").count() == 0
    watched.assert_all_local()
