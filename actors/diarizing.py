"""The diarize step: who spoke when in a done record, worked from its side row (issue 19).

The record is done and readable before this runs; the step claims the record's row in
record_speakers, decodes the ORIGINAL audio again (the converted PCM was let go at done) one
recognition window at a time, keeps only the speaker embeddings of each window (never the
audio; saved under the token as a checkpoint, so a run taken over goes on from the last window),
clusters them at the end and saves the turns under its token. A stale holder's save
is refused; a failure counts against the row's attempts and a run that fails for good halts the
row only: the card then says why speakers are missing, the text stays served.
"""
from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path

from typing import Iterable, Iterator

import numpy as np
from loguru import logger

from actors.heartbeat import Heartbeat
from actors.running import HolderWrites, run_claimed
from actors.steps import spool_original
from actors.outcomes import Outcome, stopping
from audio.decode import UndecodableAudio, pcm16k
from db import Store
from domain.claims import NO_WORK, Claim, ClaimLost, HaltReason, NoWork, PermanentStepError
from domain.stages import Step
from service import metrics, runtime
from service.config import Settings


class _SideLease:
    """What the heartbeat renews through: the side row's lease, not the record's."""

    def __init__(self, store: Store):
        self.store = store

    def renew_lease(self, claim: Claim, lease_seconds: float, progress_seconds: float | None = None) -> bool:
        return self.store.renew_speakers_lease(claim, lease_seconds, progress_seconds)


def find_turns(store: Store, job: dict, beat: Heartbeat, settings: Settings) -> list[dict]:
    """Speaker turns of the record's original audio, streamed window by window from the last
    checkpoint on: each window's embeddings are saved under the claim as it is done, so a run
    taken over (a crash, a stopping worker) embeds no window twice."""
    from audio.speakers.diarize import speaker_turns, window_embeddings
    from audio.speakers.embed import Embeddings
    from audio.windows import end_of, start_byte, windows

    if job["original_blob_id"] is None:
        raise PermanentStepError(HaltReason.AUDIO_EXPIRED, "the original audio was deleted by retention")
    done = job["embedded_seconds"]
    found = [_unpacked(row) for row in store.speaker_windows(job["record_id"], done)]
    with tempfile.TemporaryDirectory(prefix="transcriber-speakers-") as folder:
        original = spool_original(store, job["original_blob_id"], Path(folder), beat)
        try:
            pcm = _from_byte(pcm16k(original, max_seconds=settings.max_audio_seconds), start_byte(done), beat)
            for at, window in windows(pcm, done):
                beat(at)
                embedded = window_embeddings(window, at)
                end = end_of(at, window)
                if not store.speakers_checkpoint(beat.claim, at, end, embedded.times.astype(np.float64).tobytes(),
                                                 embedded.vectors.astype(np.float32).tobytes(),
                                                 beat.policy.lease_seconds):
                    raise ClaimLost()
                found.append(embedded)
                beat(end)
        except UndecodableAudio as error:
            raise PermanentStepError(HaltReason.UNDECODABLE_AUDIO, str(error)) from None
    embeddings = Embeddings.joined(found)
    if not len(embeddings):  # no speech found: no speakers, and nothing to retry
        return []
    turns = speaker_turns(embeddings, job["speakers"])
    return [{"start": t.start, "end": t.end, "speaker": t.speaker} for t in turns]


def _unpacked(row: dict):
    """A checkpointed window's embeddings as the clustering takes them."""
    from audio.speakers.embed import DIMENSIONS, Embeddings

    return Embeddings(np.frombuffer(row["times"], np.float64).reshape(-1, 2),
                      np.frombuffer(row["vectors"], np.float32).reshape(-1, DIMENSIONS))


def _from_byte(pieces: Iterable[bytes], skip: int, beat: Heartbeat) -> Iterator[bytes]:
    """The decoded stream from byte `skip` on (what the checkpoints already hold is passed by)."""
    for piece in pieces:
        if skip >= len(piece):
            skip -= len(piece)
            beat()
            continue
        yield piece[skip:]
        skip = 0


def save_turns(store: Store, claim: Claim, turns: list[dict]) -> bool:
    """Save the turns under the claim, with each segment's speakers for its search row (so a
    search can keep one speaker's words); False when the claim has moved on."""
    from audio.speakers.assign import Turn, segment_speakers

    row = store.transcript(claim.record_id)
    segments = (row or {}).get("segments") or []
    said = segment_speakers(segments, [Turn(t["start"], t["end"], t["speaker"]) for t in turns])
    return store.save_speakers(claim, turns, said)


def diarize_once(store: Store, settings: Settings, stop: threading.Event = stopping) -> Outcome | NoWork:
    """Work one record's speakers, or NO_WORK when no side row is claimable."""
    started = time.monotonic()
    outcome = _diarize_once(store, settings, stop)
    metrics.step_ran(Step.DIARIZE.value, None if outcome is NO_WORK else outcome.value, time.monotonic() - started)
    return outcome


def _diarize_once(store: Store, settings: Settings, stop: threading.Event) -> Outcome | NoWork:
    if not settings.diarize_on:  # this worker cannot (or may not) diarize: it leaves the rows to others
        return NO_WORK
    policy = settings.policy(Step.DIARIZE)
    claim = store.claim_speakers(policy)
    if claim is NO_WORK and runtime.lookout.look(store):
        claim = store.claim_speakers(policy)  # one of the claims let go may be a speakers row
    if claim is NO_WORK:
        return NO_WORK
    job = store.speakers_job(claim.record_id)
    if job is None:  # the record was deleted right after the claim
        return Outcome.REFUSED
    # failures count against the side row, never the record; the heartbeat renews the row's lease
    writes = HolderWrites(store.release_speakers, store.speakers_halt, store.speakers_failure)
    turns = run_claimed(_SideLease(store), writes, claim, policy, stop, job["failures"],
                        lambda beat: find_turns(store, job, beat, settings))
    if isinstance(turns, Outcome):
        return turns
    if save_turns(store, claim, turns):
        logger.bind(record_id=claim.record_id, step="diarize").info("record {}: speakers saved ({} turns)", claim.record_id, len(turns))
        return Outcome.SAVED
    return Outcome.REFUSED
