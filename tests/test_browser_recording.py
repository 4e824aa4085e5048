"""Recording in the owner's page, in a real Chromium whose microphone plays real speech (Chromium's
fake capture device fed a WAV file made from the bundled sample): the Record button streams the
recording into a deferred-length tus upload while it runs; Stop makes a record whose text appears
on the page; a page closed mid-recording leaves a record of what it had sent, marked cut short."""
from __future__ import annotations

import av
import httpx
import numpy as np
import pytest

from media import speech_pcm, write_audio
from test_browser import CHROMIUM, WAIT_MS, Watched, base_of, shots, sync_api  # noqa: F401  (fixture)
from test_http import make_api  # noqa: F401  (fixture)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine")

# a recording's row in the page once the server has acknowledged `bytes` of it
SENT = "bytes => Number(document.querySelector('.upload.recording[data-state=recording]')?.dataset.sent) >= bytes"


@pytest.fixture(scope="module")
def microphone(tmp_path_factory):
    """Chromium with a microphone that says the bundled sample (48 kHz, as capture runs)."""
    speech = tmp_path_factory.mktemp("microphone") / "speech.wav"
    with av.open(str(speech), "w", format="wav") as out:
        write_audio(out, np.frombuffer(speech_pcm(), dtype=np.int16), "pcm_s16le", 48000)
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
            f"--use-file-for-fake-audio-capture={speech}"])
        yield launched
        launched.close()


def test_record_stop_and_the_text_appears(make_api, microphone, shots):  # noqa: F811
    """Record, stop: the pieces went up while it ran (acknowledged before Stop), the record is
    made of them and its text appears on the record's page."""
    api = make_api()
    api.start_workers()
    token = api.token("dana")
    watched = Watched(microphone, base_of(api))
    page = watched.signed_in(token)
    page.wait_for_selector("#records")
    page.click("#record")
    page.wait_for_function(SENT, arg=96 * 1024)  # a few seconds of speech already with the server
    shots(page, "recording")
    page.click("#record")
    row = page.wait_for_selector(".upload.recording[data-state=accepted]", timeout=WAIT_MS)
    record = int(row.get_attribute("data-record"))
    card = api.card(token, record)
    assert card["source_name"].startswith("recording-") and not card.get("cut_short")
    page.wait_for_selector(f"#record-{record}")
    row.query_selector("a.record-link").click()
    page.wait_for_url(f"**/view/{record}")
    page.wait_for_selector("#transcript .segment .text", timeout=WAIT_MS)
    assert page.inner_text("#transcript").strip()
    watched.assert_all_local()


def test_a_page_closed_mid_recording_leaves_a_record_cut_short(make_api, microphone):  # noqa: F811
    """Record, close the page while recording: after TRANSCRIBER_RECORDING_IDLE_SECONDS the server
    finishes the upload into a record of every byte it acknowledged, which the owner's page lists
    as cut short."""
    api = make_api(recording_idle_seconds=3)
    token = api.token("dana")
    watched = Watched(microphone, base_of(api))
    page = watched.signed_in(token)
    page.wait_for_selector("#records")
    page.click("#record")
    page.wait_for_function(SENT, arg=1)
    row = page.query_selector(".upload.recording")
    address, acknowledged = row.get_attribute("data-upload"), int(row.get_attribute("data-sent"))
    context = page.context
    page.close()

    again = context.new_page()
    again.goto(watched.base + "/")
    badge = again.wait_for_selector("tr.record .badge.cut-short", timeout=WAIT_MS)
    record = int(badge.evaluate("b => b.closest('tr').id.split('-')[1]"))
    card = api.card(token, record)
    assert card["cut_short"] is True
    headers = {"Authorization": f"Bearer {token}"}
    state = httpx.get(watched.base + address, headers={**headers, "Tus-Resumable": "1.0.0"}).json()
    assert state["record"] == record and state["length"] == state["offset"] >= acknowledged
    audio = httpx.get(f"{watched.base}/records/{record}/audio", headers=headers)
    assert audio.status_code == 200 and len(audio.content) == state["length"]
    again.click(f"#record-{record} a.title")
    again.wait_for_selector("#cut-short")
    watched.assert_all_local()
