"""The owner's corrections on the record's page, in a real Chromium: the edit mode (click a
segment, type, save; CSRF-protected through `PATCH /records/{id}/text`), the correction kept
over a reload, in the srt download, through recognition run again, and in search (by the
corrected word, no longer by the misheard one). The record is made done by the pipeline's own
statements (no audio decoded)."""
from __future__ import annotations

from pathlib import Path

import pytest

from searching import done_record
from test_browser import CHROMIUM, WAIT_MS, Watched, base_of, browser  # noqa: F401  (fixtures)
from test_corrections import FIXED, TALK, _recognise_again
from test_http import make_api  # noqa: F401  (fixture)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine")

CORRECTED = "#transcript .segment.corrected[data-index='2']:has-text('Forced Aligner')"


def _srt(page) -> str:
    with page.expect_download() as download:
        page.click("#download-srt")
    return Path(download.value.path()).read_text(encoding="utf-8")


def _search(page, q: str) -> None:
    page.fill("#search-q", q)
    page.press("#search-q", "Enter")


def test_a_word_corrected_in_the_page_stays_corrected_everywhere(make_api, browser, store, db):  # noqa: F811
    """The owner corrects a misheard name in the page; after a reload the segment shows the
    correction, the srt download has it, recognition run again keeps it, the card counts it, and
    the page's search finds the corrected word and not the misheard one."""
    api = make_api()
    token = api.token("erin")
    record = done_record(store, store.owner_by_name("erin")["id"], TALK, title="Alignment", words=True)
    watched = Watched(browser, base_of(api))
    page = watched.signed_in(token)
    page.wait_for_selector("#records")
    page.goto(watched.base + f"/view/{record}")

    page.click("#correct-text", timeout=WAIT_MS)
    page.click("#transcript .segment[data-index='2'] .text")
    assert page.input_value(".correction-text") == TALK[2][2]
    page.fill(".correction-text", FIXED)
    page.click(".save-correction")
    page.wait_for_selector("#correct-status:has-text('Saved.')")
    page.wait_for_selector(CORRECTED)

    page.reload()
    page.wait_for_selector(CORRECTED, timeout=WAIT_MS)
    page.wait_for_selector("#corrections-count:has-text('1')")
    srt = _srt(page)
    assert "Montreal Forced Aligner" in srt and "forced liner" not in srt, srt

    _recognise_again(store, db, record, [(s, e, t.replace("weekly", "monthly")) for s, e, t in TALK])
    page.reload()
    page.wait_for_selector(CORRECTED, timeout=WAIT_MS)
    assert "monthly" in page.inner_text("#transcript")   # the new recognition, the correction on top
    assert "Forced Aligner" in _srt(page)

    page.goto(watched.base + "/")
    _search(page, "aligner")
    page.wait_for_selector(f"#hits-{record}")
    _search(page, "liner")
    page.wait_for_selector("#search-none")
    watched.assert_all_local()
