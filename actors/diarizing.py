"""The diarize step: who spoke when in a done record.

The record is done and readable before this runs. The step decodes the ORIGINAL audio again (the
converted PCM was let go at done) one recognition window at a time and keeps only the speaker
embeddings of each window (never the audio), saved under the claim as a checkpoint, so a run
taken over goes on from the last window; it clusters them at the end, and its save writes the
turns and each segment's speakers for search. It is claimed, fenced, failed and halted like every
step; a halt leaves the record done: the card then says why speakers are missing, the text stays
served.
"""

from __future__ import annotations

import base64
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from actors.heartbeat import Heartbeat
from actors.steps import spool_original
from audio.decode import UndecodableAudio, pcm16k
from db import Store
from domain.claims import HaltReason, PermanentStepError
from domain.corrections import RECOGNISED
from service.config import Settings
from service.meaning import record_passages


def find_turns(
    store: Store, record: dict, beat: Heartbeat, settings: Settings
) -> tuple[list[dict], dict, tuple[list[int], np.ndarray]]:
    """Speaker turns of the record's original audio, streamed window by window from the last
    checkpoint on: each window's embeddings are saved under the claim as it is done, so a run
    taken over (a crash, a stopping worker) embeds no window twice. Unless the upload fixed the
    number of speakers, the clustering's turns are re-drawn with the owner's voices as anchors
    (audio.speakers.voices.refine). With the turns, each speaker's print
    (audio.speakers.voices.SpeakerPrint by label) taken from those embeddings, and the owner's
    voices (`owner_voices`, read once the embeddings are done) to match them with."""
    from audio.speakers.diarize import speaker_turns, window_embeddings
    from audio.speakers.embed import Embeddings
    from audio.speakers.voices import refine, speaker_prints
    from audio.windows import end_of, start_byte, windows

    if record["original_blob_id"] is None:
        raise PermanentStepError(HaltReason.AUDIO_EXPIRED, "the original audio was deleted by retention")
    done = record["checkpoint_seconds"]
    found = [_unpacked(row) for row in store.speaker_windows(record["id"], done)]
    with tempfile.TemporaryDirectory(prefix="transcriber-speakers-") as folder:
        original = spool_original(store, record["original_blob_id"], Path(folder), beat)
        try:
            pcm = _from_byte(pcm16k(original, max_seconds=settings.max_audio_seconds), start_byte(done), beat)
            for at, window in windows(pcm, done):
                beat(at)
                embedded = window_embeddings(window, at)
                end = end_of(at, window)
                beat.checkpoint(
                    at,
                    end,
                    {
                        "times": embedded.times.astype(np.float64).tobytes(),
                        "vectors": embedded.vectors.astype(np.float32).tobytes(),
                    },
                )
                found.append(embedded)
        except UndecodableAudio as error:
            raise PermanentStepError(HaltReason.UNDECODABLE_AUDIO, str(error)) from None
    embeddings = Embeddings.joined(found)
    if not len(embeddings):  # no speech found: no speakers, and nothing to retry
        return [], {}, ([], np.zeros((0, 0), np.float32))
    voices = owner_voices(store, record)
    turns = speaker_turns(embeddings, speakers_asked(record))
    if speakers_asked(record) is None:  # a count the owner fixed is kept
        turns = refine(embeddings, turns, voices[1])
    found_turns = [{"start": t.start, "end": t.end, "speaker": t.speaker} for t in turns]
    return found_turns, speaker_prints(embeddings, turns), voices


def _unpacked(row: dict):
    """A checkpointed window's embeddings as the clustering takes them."""
    from audio.speakers.embed import DIMENSIONS, Embeddings

    return Embeddings(
        np.frombuffer(row["times"], np.float64).reshape(-1, 2),
        np.frombuffer(row["vectors"], np.float32).reshape(-1, DIMENSIONS),
    )


def _from_byte(pieces: Iterable[bytes], skip: int, beat: Heartbeat) -> Iterator[bytes]:
    """The decoded stream from byte `skip` on (what the checkpoints already hold is passed by)."""
    for piece in pieces:
        if skip >= len(piece):
            skip -= len(piece)
            beat()
            continue
        yield piece[skip:]
        skip = 0


def diarize(store: Store, record: dict, beat: Heartbeat, settings: Settings) -> dict:
    """The step's work: the turns found; `said`, each segment's speaker labels in the text's
    order (what its search row keeps, so a search can keep one speaker's words); and `speakers`,
    each speaker's print with the owner's voice it matches, if any (`matched_speakers`); and the
    text's passages cut again at the speakers' changes."""
    turns, prints, voices = find_turns(store, record, beat, settings)
    beat()
    said = said_by(store, record["id"], turns)
    return {
        "turns": turns,
        "said": said,
        "speakers": matched_speakers(store, record, prints, voices),
        # the passages cut again where the speaker changes (embedded here, before the save)
        "passages": record_passages(store, record["id"], record["language"], said),
    }


def owner_voices(store: Store, record: dict) -> tuple[list[int], np.ndarray]:
    """The ids and centroids of the voices of the record's owner, and only theirs: another
    owner's recording is never compared with them."""
    from audio.speakers.voices import voice_centroids

    return voice_centroids(
        (row["voice_id"], row["centroid"], row["seconds"]) for row in store.voice_samples(record["owner_id"])
    )


def matched_speakers(
    store: Store, record: dict, prints: dict, voices: tuple[list[int], np.ndarray] | None = None
) -> list[dict]:
    """Each speaker's print and the voice of the record's owner it matches (one to one, above
    the threshold, never a voice the owner rejected for that speaker of this record), as the
    diarize save takes them; the owner's `voices` are read unless given."""
    from audio.speakers.voices import match_allowed

    if not prints:
        return []
    voice_ids, centroids = voices if voices is not None else owner_voices(store, record)
    rejected = store.rejected_matches(record["id"])
    found = {m.label: m for m in match_allowed(prints, voice_ids, centroids, rejected)}
    return [
        {
            "label": label,
            "centroid": base64.b64encode(voice_print.packed()).decode("ascii"),
            "seconds": round(voice_print.seconds, 3),
            "voice_id": found[label].voice_id if label in found else None,
            "score": found[label].score if label in found else None,
        }
        for label, voice_print in prints.items()
    ]


def said_by(store: Store, record_id: int, turns: list[dict]) -> list[list[str]]:
    """Each segment's speaker labels under `turns`, in the text's order."""
    from audio.speakers.assign import Turn, segment_speakers

    # as recognised: the search rows are the recognised segments, one each (corrections keep
    # their segment's times, and a detached one is no search row)
    segments = (store.transcript(record_id, version=RECOGNISED) or {}).get("segments") or []
    said = segment_speakers(segments, [Turn(t["start"], t["end"], t["speaker"]) for t in turns])
    return [list(labels) for labels in said]


def speakers_asked(record: dict) -> int | None:
    """The number of speakers the upload fixed; None: the step finds how many."""
    wanted = record["speakers_wanted"]
    return int(wanted) if wanted.isdigit() else None
