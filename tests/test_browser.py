"""The owner's page and the panel in a real headless Chromium, against a live server with real
workers and PostgreSQL.

Debian's `chromium` is driven by Playwright for Python (`executable_path`; no browser is ever
downloaded). Where no Chromium is installed the tests are skipped with that reason. Every request
the browser makes is recorded and must go to 127.0.0.1. With TRANSCRIBER_SCREENSHOTS=docs/screenshots
the screenshots shown in the README are written again.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import urlparse

import pytest

from conftest import ROOT, save_turns
from test_http import make_api  # noqa: F401  (fixture)

SAMPLE = ROOT / "transcriber" / "samples" / "hello.ogg"
CHROMIUM = next((path for path in (os.environ.get("TRANSCRIBER_CHROMIUM"), "/usr/bin/chromium",
                                   shutil.which("chromium"), shutil.which("chromium-browser")) if path
                 and Path(path).exists()), None)
sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine (Debian: apt-get install "
                                                         "chromium; .ci/run installs it)")
WAIT_MS = 180_000


@pytest.fixture(scope="module")
def browser():
    """One Chromium for a module's tests (a launch costs some 2.5 CPU-s); each test works in
    contexts of its own, which share no cookies or storage."""
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM,
                                              args=["--no-sandbox", "--autoplay-policy=no-user-gesture-required"])
        yield launched
        launched.close()


@pytest.fixture
def shots(tmp_path):
    """Where screenshots go: the README's folder when asked for, else the test's own."""
    folder = Path(os.environ.get("TRANSCRIBER_SCREENSHOTS") or tmp_path / "shots")
    folder = folder if folder.is_absolute() else ROOT / folder
    folder.mkdir(parents=True, exist_ok=True)
    return lambda page, name: page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


class Watched:
    """Browser contexts whose every request is recorded, to prove nothing leaves 127.0.0.1."""

    def __init__(self, browser, base: str):
        self.browser, self.base, self.urls = browser, base, []

    def context(self, locale: str = "en-US"):
        context = self.browser.new_context(locale=locale, accept_downloads=True,
                                           viewport={"width": 1200, "height": 800})
        context.on("request", lambda request: self.urls.append(request.url))
        context.set_default_timeout(60_000)
        return context

    def signed_in(self, token: str, path: str = "/", locale: str = "en-US"):
        page = self.context(locale).new_page()
        page.goto(self.base + path)
        page.fill("#token", token)
        page.click("#sign-in button[type=submit]")
        return page

    def assert_all_local(self):
        assert self.urls
        for url in self.urls:
            parsed = urlparse(url)
            assert parsed.scheme in ("data", "blob") or parsed.hostname == "127.0.0.1", url


def base_of(api) -> str:
    return str(api.http.base_url).rstrip("/")


DROP = """(files) => {
    const transfer = new DataTransfer();
    for (const [name, size] of files)
        transfer.items.add(new File([new Uint8Array(size).fill(120)], name, {type: "application/octet-stream"}));
    const zone = document.getElementById("drop-zone");
    for (const kind of ["dragenter", "dragover", "drop"])
        zone.dispatchEvent(new DragEvent(kind, {dataTransfer: transfer, bubbles: true, cancelable: true}));
}"""

STAGES_SEEN = """() => {
    window.stagesSeen = [];
    window.notReloaded = true;
    new MutationObserver(() => {
        for (const row of document.querySelectorAll("tr.record"))
            window.stagesSeen.push(row.dataset.stage);
    }).observe(document.getElementById("records"), {subtree: true, childList: true, attributes: true});
}"""


def test_owner_signs_in_uploads_and_watches_it_done_live(make_api, browser, shots):
    """The owner's page end to end: sign in (a wrong token refused), upload a real recording
    (picker) and a refused file (drag and drop, the API's reason beside its name), watch it reach
    done live without a reload, play from a segment, download srt, edit title and topics; another
    owner sees none of it; the Russian page and the switch; delete with confirmation; no request
    leaves 127.0.0.1."""
    api = make_api()
    api.start_workers()
    dana, erin = api.token("dana"), api.token("erin")
    watched = Watched(browser, base_of(api))

    first = watched.context().new_page()
    first.goto(watched.base + "/")
    shots(first, "sign-in")
    first.fill("#token", "wrong")
    first.click("#sign-in button[type=submit]")
    first.wait_for_selector(".error")
    first.context.close()

    page = watched.signed_in(dana)
    page.wait_for_selector("#no-records")
    page.evaluate(STAGES_SEEN)
    page.set_input_files("#file-picker", str(SAMPLE))
    page.evaluate(DROP, [["notes.txt", 300], ["empty.ogg", 0]])
    refused = page.wait_for_selector(".upload.refused[data-name='notes.txt']")
    assert "not decodable audio" in refused.inner_text()
    assert page.wait_for_selector(".upload.refused[data-name='empty.ogg'] .status").inner_text().startswith("refused: ")
    accepted = page.wait_for_selector(".upload.accepted")
    assert accepted.get_attribute("data-name") == "hello.ogg"
    assert accepted.eval_on_selector("progress", "bar => bar.value") == 100
    record_id = api.store.list_card_rows(api.store.owner_by_name("dana")["id"], 10, 0)[0][0]["id"]
    page.wait_for_selector(f"#record-{record_id}[data-stage=done]", timeout=WAIT_MS)
    assert page.evaluate("window.notReloaded") is True  # it came live, not by a reload
    seen = page.evaluate("window.stagesSeen")
    assert seen[-1] == "done" and seen.index("done") > 0, seen  # an earlier stage was shown first
    shots(page, "records")

    page.click(f"#record-{record_id} a.title")
    page.wait_for_url(f"**/view/{record_id}")
    segment = page.wait_for_selector(".segment", timeout=WAIT_MS)
    start = float(segment.get_attribute("data-start"))
    page.wait_for_function("() => document.getElementById('player').readyState >= 1")
    page.evaluate("() => { const p = document.getElementById('player'); p.currentTime = p.duration - 0.05; }")
    segment.query_selector("button.time").click()
    page.wait_for_function(f"() => {{ const p = document.getElementById('player');"
                           f" return !p.paused && p.currentTime >= {start} && p.currentTime < {start} + 1.5; }}")
    page.evaluate("() => document.getElementById('player').pause()")
    shots(page, "record")

    with page.expect_download() as download:
        page.click("#download-srt")
    srt = Path(download.value.path()).read_text(encoding="utf-8")
    assert srt.startswith("1\n") and " --> " in srt

    page.fill("#edit-title", "Greeting")
    page.fill("#edit-topics", "hello, test")
    page.click("#edit button[type=submit]")
    page.wait_for_selector("#save-status:has-text('Saved.')")
    assert page.inner_text("#record-title") == "Greeting"
    assert api.card(dana, record_id)["topics"] == ["hello", "test"]

    other = watched.signed_in(erin)
    other.wait_for_selector("#no-records")
    other.goto(watched.base + f"/view/{record_id}")
    other.wait_for_selector("#not-found")
    assert other.request.get(watched.base + f"/records/{record_id}").status == 404
    assert other.request.get(watched.base + f"/records/{record_id}/audio").status == 404

    russian = watched.signed_in(dana, locale="ru-RU")
    russian.wait_for_selector(f"#record-{record_id}")
    assert russian.get_attribute("html", "lang") == "ru"
    assert "Название" in russian.inner_text("#records") and "готово" in russian.inner_text(f"#record-{record_id}")
    with russian.expect_navigation(wait_until="domcontentloaded", timeout=WAIT_MS):
        russian.click("button[data-lang=en]")  # the switch reloads the page in the other language
    assert russian.get_attribute("html", "lang") == "en"

    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#delete")
    page.wait_for_url(watched.base + "/")
    page.wait_for_selector("#no-records")
    assert api.http.get(f"/records/{record_id}", headers=api.auth(dana)).status_code == 404

    watched.assert_all_local()


def test_docs_render_offline(make_api, browser, shots):
    """The API docs work offline: /docs renders Swagger UI in the browser with no request beyond 127.0.0.1."""
    api = make_api()
    watched = Watched(browser, base_of(api))
    page = watched.context().new_page()
    page.goto(watched.base + "/docs")
    page.wait_for_selector(".swagger-ui .opblock", timeout=60_000)
    shots(page, "docs")
    watched.assert_all_local()


def test_operator_resumes_a_halted_record_from_the_panel(make_api, browser, shots, db):
    """The panel end to end: the owner's list shows the halt reason in plain words; an operator
    (not an owner's token) signs in to /admin, sees the figures and the halted record with its
    owner, reason, error, stage and age, reads its journal, presses Resume; the owner's live
    list shows it back at work and then done; the journal has `resumed` by the operator, origin
    human; no request leaves 127.0.0.1."""
    api = make_api(max_attempts=1, backoff_seconds=0)
    dana = api.token("dana")
    olga = api.store.add_operator("olga")
    record_id = api.upload(dana, SAMPLE).json()["id"]
    with db.transaction() as conn:  # storage loses the original for a while: the conversion fails
        kept = conn.execute("SELECT blob_id, seq, data FROM blob_chunks").fetchall()
        conn.execute("DELETE FROM blob_chunks")
    api.start_workers()
    api.wait(dana, record_id, lambda c: c["halt"] is not None, 120)
    watched = Watched(browser, base_of(api))

    owner_page = watched.signed_in(dana)
    row = owner_page.wait_for_selector(f"#record-{record_id}[data-halted=attempts_exhausted]")
    assert "it failed too many times in a row" in row.inner_text()
    owner_page.evaluate("window.notReloaded = true")
    shots(owner_page, "records-halted")

    refused = watched.signed_in(dana, "/admin")  # an owner's token does not open the panel
    refused.wait_for_selector(".error")
    shots(refused, "panel-sign-in")
    assert refused.url.endswith("/admin/session")

    panel = watched.signed_in(olga, "/admin")
    halted = panel.wait_for_selector(f"#halted-{record_id}")
    text = halted.inner_text()
    assert "dana" in text and "it failed too many times in a row" in text and "missing from storage" in text
    panel.wait_for_selector("#totals [data-figure=halted] .value:has-text('1')")
    shots(panel, "panel")

    panel.click(f"#halted-{record_id} a")
    panel.wait_for_url(f"**/admin/record/{record_id}")
    panel.wait_for_selector("#journal tr.event[data-kind=halted]")
    shots(panel, "panel-journal")

    with db.transaction() as conn:  # the storage is mended; now a resume can succeed
        for chunk in kept:
            conn.execute("INSERT INTO blob_chunks (blob_id, seq, data) VALUES (%(blob_id)s, %(seq)s, %(data)s)", chunk)
    panel.click(f"button.resume[data-record='{record_id}']")
    panel.wait_for_selector(".resume-status:has-text('Resumed.')")
    panel.wait_for_selector("#journal tr.event[data-kind=resumed]")

    owner_page.wait_for_selector(f"#record-{record_id}:not([data-halted])")
    owner_page.wait_for_selector(f"#record-{record_id}[data-stage=done]", timeout=WAIT_MS)
    assert owner_page.evaluate("window.notReloaded") is True
    resumed = [e for e in api.store.events(record_id) if e["kind"] == "resumed"]
    assert resumed and resumed[-1]["origin"] == "human" and "olga" in str(resumed[-1]["detail"])
    panel.goto(watched.base + "/admin")
    panel.wait_for_selector("#no-halted")
    watched.assert_all_local()


def test_records_in_pages_and_an_oversized_upload(make_api, browser, store):
    """The list is newest first in pages of 20 (Older / Newer), and a file over
    TRANSCRIBER_MAX_UPLOAD_MB shows the API's too-large reason beside its name."""
    from conftest import add_record

    api = make_api(max_upload_mb=1)
    token = api.token("dana")
    watched = Watched(browser, base_of(api))
    page = watched.signed_in(token)
    page.wait_for_selector("#no-records")
    for i in range(25):  # they appear without a reload
        add_record(store, store.owner_by_name("dana"), title=f"talk {i}")
    page.wait_for_selector("tr.record >> nth=19")
    titles = page.eval_on_selector_all("tr.record a.title", "links => links.map(a => a.textContent)")
    assert titles == [f"talk {i}" for i in range(24, 4, -1)]
    page.click("#older")
    page.wait_for_selector("tr.record a.title:has-text('talk 0')")
    assert page.eval_on_selector_all("tr.record", "rows => rows.length") == 5
    page.click("#newer")
    page.wait_for_selector("tr.record a.title:has-text('talk 24')")
    page.evaluate(DROP, [["long.ogg", 2 * 1024 * 1024]])
    too_large = page.wait_for_selector(".upload.refused[data-name='long.ogg'] .status")
    assert "larger than the limit of 1 MB" in too_large.inner_text(), too_large.inner_text()
    watched.assert_all_local()


def test_list_shows_recognition_progress_and_pause_in_words(make_api, browser, store, db):
    """While recognising, the list shows seconds done of the total (and a bar); a
    record waiting out a pause shows its failed attempts and when it tries again; both in
    Russian too; a disabled owner's page asks to sign in again, and the sign-in says why not."""
    from conftest import add_record

    api = make_api()
    token = api.token("dana")
    dana = store.owner_by_name("dana")
    working, paused = add_record(store, dana, title="working"), add_record(store, dana, title="paused")
    with db.transaction() as conn:  # the columns a running recognition and a failed attempt leave
        conn.execute("UPDATE records SET stage = 'converted', duration_seconds = 95 WHERE id = %s", (working,))
        conn.execute("UPDATE steps SET step = 'recognize', stage = 'converted', progress_seconds = 42, claim_token = 7,"
                     " lease_expires_at = now() + interval '10 minutes' WHERE record_id = %s", (working,))
        conn.execute("UPDATE steps SET failures = 2, retry_after = now() + interval '10 minutes'"
                     " WHERE record_id = %s", (paused,))
    watched = Watched(browser, base_of(api))
    page = watched.signed_in(token)
    row = page.wait_for_selector(f"#record-{working}")
    assert "0:42 of 1:35" in row.inner_text() and "working now" in row.inner_text()
    assert row.eval_on_selector("progress", "bar => [bar.value, bar.max]") == [42, 95]
    row = page.wait_for_selector(f"#record-{paused}")
    assert "2 failed" in row.inner_text() and "pause: next try in" in row.inner_text()
    with page.expect_navigation(wait_until="domcontentloaded", timeout=WAIT_MS):
        page.click("button[data-lang=ru]")
    assert page.get_attribute("html", "lang") == "ru"
    assert "0:42 из 1:35" in page.wait_for_selector(f"#record-{working}").inner_text()
    assert "неудач: 2" in page.wait_for_selector(f"#record-{paused}").inner_text()
    store.set_owner_disabled("dana", True)  # its session ends: the page asks to sign in, and says why
    page.wait_for_selector("#sign-in")
    page.fill("#token", token)
    page.click("#sign-in button[type=submit]")
    page.wait_for_selector("p.error:has-text('отключён')")
    watched.assert_all_local()


def test_search_box_opens_the_record_playing_from_the_hit(make_api, browser, tmp_path):
    """The owner's search box lists hits grouped by recording, the matched
    words marked; a hit's time link opens the record's page playing from that second with its
    segment highlighted; the same in Russian; another owner's words are not found. The box's
    speaker field (a label or the owner's name for it) keeps that speaker's hits."""
    from conftest import policy
    from domain.stages import Step
    from media import encode
    from searching import done_record
    from test_search import RUSSIAN, TALK
    from test_search_speakers import TALK as SPOKEN, TURNS

    api = make_api()
    dana, erin = api.token("dana"), api.token("erin")
    audio = encode(tmp_path / "long.wav", "wav", repeat=10).read_bytes()  # about 100 s
    owner_id = api.store.owner_by_name("dana")["id"]
    talk = done_record(api.store, owner_id, TALK, title="Weekly", windows=2, audio=audio)
    russian = done_record(api.store, owner_id, RUSSIAN, language="ru", title="Отчёт")
    done_record(api.store, api.store.owner_by_name("erin")["id"], [(0.0, 2.0, "erin's pipeline")])
    spoken = done_record(api.store, owner_id, SPOKEN, title="Budget", diarize=True, words=True)
    assert save_turns(api.store, api.store.claim(Step.DIARIZE, policy()), TURNS)  # S1 0–6 s, S2 after
    assert api.store.name_speakers(spoken, owner_id, {"S1": "Alice"})
    watched = Watched(browser, base_of(api))

    page = watched.signed_in(dana)
    page.fill("#search-q", "pipel")
    page.click("#search button[type=submit]")
    link = page.wait_for_selector(f"#hits-{talk} a.hit-time")
    assert page.locator(".hit-group").count() == 1 and link.inner_text() == "1:23"
    assert page.inner_text(f"#hits-{talk} mark") == "pipeline"
    link.click()
    page.wait_for_url(f"**/view/{talk}#t=83")
    assert page.wait_for_selector(".segment.hit").get_attribute("data-start") == "83"
    page.wait_for_function("() => document.getElementById('player').currentTime >= 83")

    russian_page = watched.signed_in(dana, locale="ru-RU")
    assert russian_page.inner_text("#search button[type=submit]") == "Поиск"
    russian_page.fill("#search-q", "конвейер")
    russian_page.click("#search button[type=submit]")
    assert russian_page.wait_for_selector(f"#hits-{russian} mark").inner_text() == "конвейера"
    russian_page.fill("#search-q", "erin's")
    russian_page.click("#search button[type=submit]")
    assert russian_page.wait_for_selector("#search-none").inner_text() == "Ничего не найдено."

    # "ship" is said at 0:08, in a segment Alice opens (0:04–0:10), and at 0:11 in one of S2's
    # alone: each hit is at its word, not at its segment's start
    assert russian_page.get_attribute("#search-speaker", "placeholder") == "Говорящий (S1 или имя)"
    def hits_at(times: str) -> str:  # the page's hits on the diarized record are at these times
        return (f"() => [...document.querySelectorAll('#hits-{spoken} a.hit-time')]"
                f".map(a => a.textContent).join(' ') === '{times}'")

    russian_page.fill("#search-q", "ship")
    russian_page.click("#search button[type=submit]")
    russian_page.wait_for_function(hits_at("0:08 0:11"))
    russian_page.fill("#search-speaker", "alice")
    russian_page.click("#search button[type=submit]")
    russian_page.wait_for_function(hits_at("0:08"))
    russian_page.fill("#search-speaker", "S3")  # nobody of that label: nothing found
    russian_page.click("#search button[type=submit]")
    russian_page.wait_for_selector("#search-none")
    watched.assert_all_local()
