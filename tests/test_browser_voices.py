"""The owner's voices in Chromium: a record's speaker matched to a voice the owner named elsewhere
shows that name with no action, can be rejected on the record's page; the Voices section of the
records page renames and deletes a voice, and every record follows. The prints are made up (unit
vectors, no model runs); the match is the diarize step's own code over the owner's voices."""
from __future__ import annotations

import numpy as np
import pytest

from actors.diarizing import matched_speakers, said_by
from audio.speakers.embed import DIMENSIONS
from audio.speakers.voices import SpeakerPrint
from conftest import policy
from domain.stages import Step
from searching import done_record
from test_browser import CHROMIUM, WAIT_MS, Watched, base_of, browser, shots  # noqa: F401  (fixtures)
from test_http import make_api  # noqa: F401  (fixture)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine")

TALK = [(0.0, 4.0, "Good morning, the budget is ready."), (4.0, 10.0, "Thanks, the budget looks fine.")]
TURNS = [{"start": 0.0, "end": 4.0, "speaker": "S1"}, {"start": 4.0, "end": 10.0, "speaker": "S2"}]
CHIPS = "#transcript .speaker"


def _voice(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).normal(size=DIMENSIONS).astype(np.float32)
    return vector / np.linalg.norm(vector)


def _diarized(store, owner_id: int, title: str) -> int:
    """A done record of two speakers, S1 with voice 1 and S2 with voice 2, saved by the diarize
    step's save with the speakers the step would match among the owner's voices."""
    record = done_record(store, owner_id, TALK, title=title, diarize=True, words=True)
    claim = store.claim(Step.DIARIZE, policy())
    prints = {"S1": SpeakerPrint(_voice(1), 10.0), "S2": SpeakerPrint(_voice(2), 10.0)}
    row = store.read_for_step(claim)
    speakers = matched_speakers(store, row, prints)
    assert store.save(claim, {"turns": TURNS}, {"said": said_by(store, record, TURNS), "speakers": speakers},
                      next_step=None)
    return record


def test_a_matched_voice_is_named_rejected_renamed_and_deleted_in_the_page(make_api, browser, shots,  # noqa: F811
                                                                         store):
    api = make_api()
    token = api.token("vera")
    vera = store.owner_by_name("vera")["id"]
    first = _diarized(store, vera, "Monday")
    assert store.name_speakers(first, vera, {"S1": "Alice"})
    second = _diarized(store, vera, "Tuesday")

    watched = Watched(browser, base_of(api))
    page = watched.signed_in(token)
    page.wait_for_selector("#records")
    page.goto(watched.base + f"/view/{second}")
    page.wait_for_selector(f"{CHIPS}[data-speaker=S1]:has-text('Alice')", timeout=WAIT_MS)
    assert page.is_visible("#voice-match-S1") and not page.query_selector("#voice-match-S2")
    shots(page, "record-voice-match")
    page.click("#voice-reject-S1")
    page.wait_for_selector(f"{CHIPS}[data-speaker=S1]:has-text('Speaker 1')", timeout=WAIT_MS)
    assert not page.query_selector("#voice-match-S1")

    page.goto(watched.base + "/")
    page.wait_for_selector("#voices .voice")
    [voice] = page.query_selector_all("#voices .voice")
    assert voice.query_selector(".voice-name").input_value() == "Alice"
    shots(page, "voices")
    voice.query_selector(".voice-name").fill("Alicia")
    voice.query_selector(".voice-rename").click()
    page.wait_for_selector("#voices-status:has-text('Saved')", timeout=WAIT_MS)
    page.goto(watched.base + f"/view/{first}")
    page.wait_for_selector(f"{CHIPS}[data-speaker=S1]:has-text('Alicia')", timeout=WAIT_MS)

    page.goto(watched.base + "/")
    page.wait_for_selector("#voices .voice")
    page.on("dialog", lambda dialog: dialog.accept())
    page.click("#voices .voice-delete")
    page.wait_for_selector("#no-voices", timeout=WAIT_MS)
    page.goto(watched.base + f"/view/{first}")
    page.wait_for_selector(f"{CHIPS}[data-speaker=S1]:has-text('Alicia')", timeout=WAIT_MS)  # the owner's own name
    watched.assert_all_local()
