"""The pages with retention and quotas, in a real Chromium: the owner's list shows
what the owner uses of its quota, a record whose original retention deleted says so where the
player was, and the panel shows each owner's audio hours, stored bytes and quota."""
from __future__ import annotations

import pytest

from conftest import add_record
from test_browser import CHROMIUM, WAIT_MS, Watched, base_of, browser  # noqa: F401  (fixture)
from test_http import make_api  # noqa: F401  (fixture)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine")


def test_page_shows_usage_and_expired_audio(make_api, browser, store, db):  # noqa: F811
    """The list shows the owner's audio hours, stored MB and quota; a done record
    whose original expired shows the retention line instead of a player; /admin lists the owner
    with its hours, stored bytes and quota."""
    api = make_api()
    token = api.token("erin")
    erin = store.owner_by_name("erin")
    expired = add_record(store, erin, b"x" * 3000, title="old talk")
    add_record(store, erin, b"y" * 2048)  # kept: its 2 kB are the stored bytes
    store.set_quota("erin", size_bytes=5 * 1024 * 1024)
    with db.connection() as conn:  # what a done save leaves
        conn.execute("UPDATE records SET stage = 'done', transcript = 'hello there', duration_seconds = 3600 "
                     "WHERE id = %s", (expired,))
        conn.execute("DELETE FROM steps WHERE record_id = %s", (expired,))
    assert store.expire_audio(0.001).expired == 1

    watched = Watched(browser, base_of(api))
    page = watched.signed_in(token)
    usage = page.wait_for_selector("#usage")
    assert usage.inner_text() == "Your audio: 1.00 h, 0.0 MB stored (quota: – / 5 MB)", usage.inner_text()
    page.click(f"#record-{expired} a.title")
    gone = page.wait_for_selector("#audio-expired", timeout=WAIT_MS)
    assert "deleted by the service's retention" in gone.inner_text()
    assert page.eval_on_selector("#player", "player => player.classList.contains('hidden')")

    panel = watched.signed_in(store.add_operator("olga"), "/admin")
    row = panel.wait_for_selector("#owner-usage tr[data-owner=erin]")
    assert row.inner_text().split("\t") == ["erin", "2", "1.00", "0.0 MB", "– / 5 MB"], row.inner_text()
    watched.assert_all_local()
