"""Search by meaning on the owner's page, in a real headless Chromium against a live server on
a PostgreSQL with pgvector: a question asked in other words than were said finds the passage
that says it, and its time opens the recording playing from the passage's start."""
from __future__ import annotations

import pytest

from conftest import settings
from test_browser import CHROMIUM, Watched, base_of, browser  # noqa: F401  (fixture)
from test_http import Api

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine")


def test_a_paraphrased_question_finds_the_passage_and_plays_from_it(vector_store, browser, tmp_path):  # noqa: F811
    """The box's mode switch: by words the paraphrase finds nothing; by meaning (and by both, the
    default) it finds the passage, marked as found by meaning; its time link plays from there."""
    from media import encode
    from searching import done_record
    from test_search_meaning import FOOD, LAUNCH

    api = Api(vector_store, settings(tick_seconds=0.2))
    try:
        token = api.token("dana")
        audio = encode(tmp_path / "long.wav", "wav", repeat=10).read_bytes()  # about 100 s
        owner_id = vector_store.owner_by_name("dana")["id"]
        record = done_record(vector_store, owner_id, LAUNCH, title="Weekly", audio=audio, passages=True)
        watched = Watched(browser, base_of(api))
        page = watched.signed_in(token)
        page.fill("#search-q", FOOD)
        page.select_option("#search-mode", "words")
        page.click("#search button[type=submit]")
        page.wait_for_selector("#search-results[data-mode=words] #search-none")
        page.select_option("#search-mode", "both")
        page.click("#search button[type=submit]")
        page.wait_for_selector(f"#search-results[data-mode=both] #hits-{record} li.hit.by-meaning")
        page.select_option("#search-mode", "meaning")
        page.click("#search button[type=submit]")
        first = page.wait_for_selector(f"#search-results[data-mode=meaning] #hits-{record} li.hit.by-meaning a.hit-time")
        assert first.inner_text() == "1:00" and "cafeteria" in page.inner_text(f"#hits-{record} li.hit")
        first.click()
        page.wait_for_url(f"**/view/{record}#t=60")
        assert page.wait_for_selector(".segment.hit").get_attribute("data-start") == "60"
        page.wait_for_function("() => document.getElementById('player').currentTime >= 60")
        watched.assert_all_local()
    finally:
        api.close()
