"""Speakers on the record's page, in a real Chromium: each speaker's
label in a colour of its own beside its text, the owner names them in the page (CSRF-protected,
through `PATCH /records/{id}`) and the name shows at once, then in every download; a record
without speaker labels says why. The records are made done by the pipeline's own statements and
their speakers saved by the diarize step's fenced save (no audio decoded)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import policy, save_turns
from domain.claims import HaltReason
from domain.stages import Step
from searching import done_record
from test_browser import CHROMIUM, WAIT_MS, Watched, base_of, browser, shots  # noqa: F401  (fixtures)
from test_http import make_api  # noqa: F401  (fixture)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine")

TALK = [
    (0.0, 4.0, "Good morning, the budget is ready."),
    (4.0, 10.0, "Thanks, the budget looks fine. Let us ship it."),
    (10.0, 16.0, "I will ship the release tonight then."),
]
TURNS = [{"start": 0.0, "end": 6.0, "speaker": "S1"}, {"start": 6.0, "end": 16.0, "speaker": "S2"}]
CHIPS = "#transcript .speaker"
COLOUR = "chip => getComputedStyle(chip).borderLeftColor"


def test_speakers_are_coloured_named_in_the_page_and_in_every_download(make_api, browser, shots, store):  # noqa: F811
    """A done record says its speakers are being found, and shows them when
    the diarize step saves them; two speakers show two labels in two colours, each beside its text;
    naming S1 "Alice" in the page shows "Alice" at once (no reload, same colours) and then in the
    srt, vtt, txt and json downloads; a record whose diarization halted says why it has no
    labels; the Russian page names the unnamed speaker in Russian."""
    api = make_api()
    token = api.token("erin")
    erin = store.owner_by_name("erin")["id"]
    halted = done_record(store, erin, TALK[:1], title="Stopped", diarize=True, words=True)
    assert store.halt(store.claim(Step.DIARIZE, policy()), HaltReason.ATTEMPTS_EXHAUSTED, "boom")
    record = done_record(store, erin, TALK, title="Budget call", diarize=True, words=True)

    watched = Watched(browser, base_of(api))
    page = watched.signed_in(token)
    page.wait_for_selector("#records")
    page.goto(watched.base + f"/view/{record}")
    page.wait_for_selector("#speakers-note[data-state=pending]:has-text('Finding who speaks')", timeout=WAIT_MS)
    page.evaluate("window.notReloaded = true")
    assert save_turns(store, store.claim(Step.DIARIZE, policy()), TURNS)   # the diarize step finishes after done
    page.wait_for_selector(f"{CHIPS}[data-speaker=S2]", timeout=WAIT_MS)
    chips = page.query_selector_all(CHIPS)
    assert [chip.inner_text() for chip in chips] == ["Speaker 1", "Speaker 2"]
    colours = [chip.evaluate(COLOUR) for chip in chips]
    assert colours[0] != colours[1] and "rgba(0, 0, 0, 0)" not in colours, colours
    said = page.eval_on_selector_all("#transcript .segment", "items => items.map(i => i.dataset.speaker)")
    assert said == ["S1", "S1", "S2", "S2"]                  # the middle segment split where the voice changes
    assert page.is_hidden("#speakers-note") and page.is_visible("#speakers-card")
    shots(page, "record-speakers")

    page.fill("#speaker-name-S1", "Alice")
    page.click("#speaker-names button[type=submit]")
    page.wait_for_selector(f"{CHIPS}[data-speaker=S1]:has-text('Alice')")
    assert page.evaluate("window.notReloaded") is True        # found and renamed in place, no reload
    assert [chip.inner_text() for chip in page.query_selector_all(CHIPS)] == ["Alice", "Speaker 2"]
    assert [chip.evaluate(COLOUR) for chip in page.query_selector_all(CHIPS)] == colours

    downloaded = {}
    for fmt in ("srt", "vtt", "txt", "json"):
        with page.expect_download() as download:
            page.click(f"#download-{fmt}")
        downloaded[fmt] = Path(download.value.path()).read_text(encoding="utf-8")
    for fmt in ("srt", "vtt", "txt"):
        assert "[Alice] Good morning" in downloaded[fmt] and "[Speaker 2]" in downloaded[fmt], downloaded[fmt]
    assert json.loads(downloaded["json"])["speakers"] == {"S1": "Alice", "S2": "Speaker 2"}

    page.goto(watched.base + f"/view/{halted}")
    note = page.wait_for_selector("#speakers-note:has-text('stopped')", timeout=WAIT_MS)
    assert note.inner_text() == ("No speaker labels: finding who speaks stopped (it failed too many times in a row). "
                                 "The text is complete.")
    assert page.is_hidden("#speakers-card") and not page.query_selector_all(CHIPS)
    shots(page, "record-speakers-halted")

    russian = watched.signed_in(token, locale="ru-RU")
    russian.wait_for_selector("#records")
    russian.goto(watched.base + f"/view/{record}")
    russian.wait_for_selector(f"{CHIPS}[data-speaker=S2]:has-text('Говорящий 2')", timeout=WAIT_MS)
    assert russian.input_value("#speaker-name-S1") == "Alice"
    watched.assert_all_local()
