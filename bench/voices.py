"""Voices: how often a known speaker's turns get its name, how often a turn gets a wrong one, and
what the matching costs.

    .venv/bin/python -m bench.voices [--conversations N] [--tiny] [--no-write]

Real speech only (bench/data.py `speaker_recordings()`: 13 people from the test data of two
pinned packages). Each known speaker is enrolled from one recording (its first recordings
joined, ENROL_SECONDS of speech at least): the recording is diarized as the diarize step does and
the owner names every speaker found in it with the person's name, as naming S1 on the page
does. Then conversations are built from the known speakers' OTHER recordings and from people
never enrolled (bench/diarization.py's generator: pieces cut at pauses, gaps of 0.2–1 s, 2–4
speakers, at least one of them known), diarized and matched as the diarize step does.

Two sets, no person in both: the TUNING set, on which MATCH_SIMILARITY was chosen (its rows
are printed for every threshold tried), and the SCORED set, scored once at the shipped
threshold. A third row, CONDITIONS, is no new person: the scored set's MFA speaker, enrolled
from the same talk, heard with a cold and in other voice registers (falsetto, creaky, breathy,
exaggerated) among the scored set's strangers, half as many conversations. The threshold the
tuning set chooses is halfway between the lowest score of a found
speaker against its own person's voice and the highest against any other voice there, to
the nearest 0.05. A speaker turn is a piece of the conversation; it gets the name of the found
speaker that covers most of it. Correct: a known person's turn named with that person's voice
(% of known persons' turns); wrong: a turn named with another voice, or an unknown person's turn
named at all (% of all turns).

Cost: the matching's CPU (the voices' centroids from their samples, refining the turns, the
prints and the match) as a share of the diarize work's (embeddings and clustering), on the
scored set; and the time per speaker to match against an owner with VOICES voices of SAMPLES
samples each: the numpy work alone, and the diarize step's own path (`matched_speakers`:
the samples read from PostgreSQL, a scratch database).

With --tiny: the repository's own recordings (tests/data: the LibriVox reader and the MFA
speaker, each enrolled from one recording and heard in another; one person never enrolled), one
conversation, 50 voices; nothing written.
"""
from __future__ import annotations

import argparse
import itertools
import tempfile
import time
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from audio.decode import SAMPLE_RATE
from audio.speakers import voices as matching
from audio.speakers.assign import Turn
from audio.speakers.diarize import pcm_embeddings, speaker_turns
from audio.speakers.embed import DIMENSIONS, Embeddings
from audio.speakers.regions import speech_regions
from bench.common import ROOT, report
from bench.diarization import conversation, load, speech_pieces
from service import logs

ENROL_SECONDS = 5.0  # an enrolment recording holds at least this much of its speaker's speech
GAP = 0.5  # seconds of silence between the pieces of an enrolment recording
VOICES = 500  # the owner's voices the per-speaker time is measured against…
SAMPLES = 3  # …each named in this many recordings
THRESHOLDS = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)


@dataclass(frozen=True)
class SpeakerSet:
    name: str
    known: tuple[str, ...]  # enrolled
    unknown: tuple[str, ...]  # never enrolled


TUNING = SpeakerSet("tuning", ("cards-speaker", "ipa-speaker", "forever-speaker"),
                    ("commonvoice-ja", "vad-test-speaker", "goforward-speaker"))
SCORED = SpeakerSet("scored", ("librivox-reader", "mfa-speaker", "ipa-us-speaker", "nst-swedish-speaker"),
                    ("librispeech-61", "libritts-13697", "an4-chan3-speaker"))
# not a third set of people: the scored set's MFA speaker, heard with a cold and in other voice
# registers (falsetto, creaky, breathy…), among the scored set's strangers
CONDITIONS = SpeakerSet("conditions", ("mfa-speaker-conditions",), SCORED.unknown)
TINY = SpeakerSet("tiny", ("librivox-reader", "mfa-speaker"), ("ipa-us-speaker",))


def pcm(samples: np.ndarray) -> bytes:
    return (np.clip(samples, -1, 1) * 32767).astype(np.int16).tobytes()


def enrolment(recordings: list[str]) -> tuple[list[np.ndarray], list[str]]:
    """The pieces of the enrolment recording (the first recordings, until ENROL_SECONDS of
    speech) and the recordings left for the conversations (at least one)."""
    taken: list[np.ndarray] = []
    used = 0
    while used < len(recordings) - 1 and sum(len(p) for p in taken) < ENROL_SECONDS * SAMPLE_RATE:
        taken += speech_pieces([recordings[used]])
        used += 1
    return taken, recordings[used:]


def enrol(pieces: list[np.ndarray]) -> list[matching.SpeakerPrint]:
    """The samples a voice gets from its enrolment recording: every speaker the diarization finds
    in it, named with the person's name."""
    gap = np.zeros(int(GAP * SAMPLE_RATE), np.float32)
    joined = np.concatenate([part for piece in pieces for part in (piece, gap)])
    found = pcm_embeddings([pcm(joined)])
    return list(matching.speaker_prints(found, speaker_turns(found)).values())


@dataclass
class Diarized:
    """A conversation as the diarize step sees it, with its reference turns."""

    reference: list[tuple[float, float, str]]
    found: Embeddings
    turns: list[Turn]
    cpu: float  # embeddings and clustering


def diarized(samples: np.ndarray, reference) -> Diarized:
    before = time.process_time()
    found = pcm_embeddings([pcm(samples)])
    turns = speaker_turns(found)
    return Diarized(reference, found, turns, time.process_time() - before)


def named(conversation_: Diarized, voice_ids: list[int], centroids: np.ndarray,
          threshold: float) -> tuple[list[Turn], dict[str, int]]:
    """The turns and each speaker's voice, as the diarize step finds them."""
    turns = matching.refine(conversation_.found, conversation_.turns, centroids, threshold)
    prints = matching.speaker_prints(conversation_.found, turns)
    found = matching.match(prints, voice_ids, centroids, threshold)
    return turns, {m.label: m.voice_id for m in found}


def turn_names(reference, turns: list[Turn], voices: dict[str, int]) -> list[int | None]:
    """Each reference turn's voice: that of the found speaker covering most of it (None: none)."""
    out = []
    for start, end, _ in reference:
        cover: dict[str, float] = {}
        for turn in turns:
            shared = min(end, turn.end) - max(start, turn.start)
            if shared > 0:
                cover[turn.speaker] = cover.get(turn.speaker, 0.0) + shared
        out.append(voices.get(max(cover, key=cover.__getitem__)) if cover else None)
    return out


def majority(reference, turns: list[Turn], label: str) -> str:
    """The person who says most of what the found speaker `label` says."""
    cover: dict[str, float] = {}
    for turn in turns:
        if turn.speaker == label:
            for start, end, person in reference:
                shared = min(end, turn.end) - max(start, turn.start)
                if shared > 0:
                    cover[person] = cover.get(person, 0.0) + shared
    return max(cover, key=cover.__getitem__) if cover else ""


def similarities(conversations: list[Diarized], names: list[str], centroids: np.ndarray) -> tuple[float, float]:
    """Over the found speakers with enough speech to be matched: the lowest similarity of one to
    its own person's voice, and the highest to another person's voice (or any, if unknown)."""
    same, other = [1.0], [-1.0]
    for item in conversations:
        for label, found in matching.speaker_prints(item.found, item.turns).items():
            if found.seconds < matching.MIN_MATCH_SECONDS:
                continue
            person = majority(item.reference, item.turns, label)
            for name, alike in zip(names, centroids @ found.centroid, strict=True):
                (same if name == person else other).append(float(alike))
    return min(same), max(other)


def score(conversations: list[Diarized], names: list[str], samples: list[tuple[int, bytes, float]],
          threshold: float) -> dict:
    """Correct and wrong names over the conversations' turns at `threshold`, and the matching's
    CPU (the voices' centroids from their `samples`, as each run of the step weighs them)."""
    known_turns = unknown_turns = correct = wrong = unknown_named = 0
    cpu = 0.0
    for item in conversations:
        before = time.process_time()
        voice_ids, centroids = matching.voice_centroids(samples)
        turns, voices = named(item, voice_ids, centroids, threshold)
        cpu += time.process_time() - before
        for (_, _, person), voice in zip(item.reference, turn_names(item.reference, turns, voices), strict=True):
            name = names[voice_ids.index(voice)] if voice is not None else None
            if person in names:
                known_turns += 1
                correct += name == person
                wrong += name is not None and name != person
            else:
                unknown_turns += 1
                unknown_named += name is not None
    turns_ = known_turns + unknown_turns
    return {"turns": turns_, "known_turns": known_turns,
            "correct_pct": round(100 * correct / max(known_turns, 1), 1),
            "wrong_pct": round(100 * (wrong + unknown_named) / max(turns_, 1), 1),
            "unknown_named_pct": round(100 * unknown_named / max(unknown_turns, 1), 1),
            "match_cpu": cpu, "diarize_cpu": sum(c.cpu for c in conversations)}


def run_set(chosen: SpeakerSet, recordings: dict[str, list[str]], count: int, seed: int, seconds: float,
            everyone: bool = False) -> tuple[list[Diarized], list[str], list[tuple[int, bytes, float]]]:
    """The set's conversations, diarized (with `everyone`, every person of the set speaks in
    each), its voices' names by id and their samples (enrolled)."""
    pieces: dict[str, list[np.ndarray]] = {}
    samples = []
    for number, person in enumerate(chosen.known, 1):
        enrolled, rest = enrolment(recordings[person])
        samples += [(number, p.packed(), p.seconds) for p in enrol(enrolled)]
        pieces[person] = speech_pieces(rest)
    for person in chosen.unknown:
        pieces[person] = speech_pieces(recordings[person])
    names = [chosen.known[i - 1] for i in matching.voice_centroids(samples)[0]]
    rng = np.random.default_rng(seed)
    people = list(chosen.known + chosen.unknown)
    out = []
    for i in range(count):
        size = len(people) if everyone else min(len(people), 2 + i % 3)
        while True:
            speakers = [str(s) for s in rng.choice(people, size=size, replace=False)]
            if any(s in chosen.known for s in speakers):
                break
        samples_, reference = conversation(pieces, speakers, seconds + 15 * (i % 3), seed + i)
        out.append(diarized(samples_, reference))
        print(f"{chosen.name} {i + 1}/{count}: {', '.join(speakers)}", flush=True)
    return out, names, samples


def tiny_recordings(folder: Path) -> dict[str, list[str]]:
    """The repository's own real recordings: the LibriVox reader's two excerpts (one file, cut in
    two at its longest pause, written to `folder`), two of the MFA speaker's, one of another."""
    data = ROOT / "tests" / "data"
    samples = load(str(data / "librivox_reader.ogg"))
    regions = speech_regions(samples)
    _, end, start = max((b[0] - a[1], a[1], b[0]) for a, b in itertools.pairwise(regions))
    out = []
    for number, part in enumerate((samples[: int(end * SAMPLE_RATE)], samples[int(start * SAMPLE_RATE):]), 1):
        path = folder / f"librivox-{number}.wav"
        with wave.open(str(path), "wb") as handle:
            handle.setnchannels(1)
            handle.setsampwidth(2)
            handle.setframerate(SAMPLE_RATE)
            handle.writeframes(pcm(part))
        out.append(str(path))
    return {"librivox-reader": out, "mfa-speaker": [str(data / "mfa_uhuh.flac"), str(data / "mfa_words.flac")],
            "ipa-us-speaker": [str(data / "ipa_us.flac")]}


# --- the cost of an owner with many voices -------------------------------------------------------

def many_voices(count: int, samples: int, rng: np.random.Generator) -> list[tuple[int, bytes, float]]:
    """(voice id, packed centroid, seconds) rows of `count` voices of `samples` samples each."""
    rows = []
    for voice in range(1, count + 1):
        for _ in range(samples):
            vector = rng.standard_normal(DIMENSIONS).astype(np.float32)
            rows.append((voice, (vector / np.linalg.norm(vector)).astype(np.float32).tobytes(),
                         float(rng.uniform(5, 300))))
    return rows


def speaker_prints_of(item: Diarized) -> dict[str, matching.SpeakerPrint]:
    return matching.speaker_prints(item.found, item.turns)


def numpy_ms(rows, prints: dict[str, matching.SpeakerPrint], runs: int = 20) -> float:
    """The numpy work of one record's match against the voices of `rows` (median)."""
    times = []
    for _ in range(runs):
        before = time.perf_counter()
        voice_ids, centroids = matching.voice_centroids(rows)
        matching.match(prints, voice_ids, centroids)
        times.append(time.perf_counter() - before)
    return 1000 * float(np.median(times))


def service_ms(rows, prints: dict[str, matching.SpeakerPrint], runs: int = 20) -> float:
    """The diarize step's matching of one record (`matched_speakers`: the owner's samples and the
    record's rejections read from PostgreSQL, the match; median), on a scratch database."""
    from actors.diarizing import matched_speakers
    from bench import statements
    from bench.scratch import scratch_database
    from db import Database, Store

    with scratch_database() as url, Database(url, max_size=2) as db:
        db.migrate()
        store = Store(db)
        store.add_owner("voices")
        owner_id = store.owner_by_name("voices")["id"]
        with db.transaction() as conn:
            records = [row["id"] for row in conn.execute(
                statements.query("bench_voices_records"), {"owner_id": owner_id, "count": SAMPLES + 1})]
            ids = [row["id"] for row in conn.execute(
                statements.query("bench_voices_voices"), {"owner_id": owner_id, "count": max(r[0] for r in rows)})]
            params, taken = [], {}
            for voice, packed, seconds in rows:  # a voice's k-th sample is of the k-th record
                taken[voice] = taken.get(voice, -1) + 1
                params.append({"record_id": records[taken[voice]], "label": f"S{voice}", "voice_id": ids[voice - 1],
                               "centroid": packed, "seconds": seconds})
            with conn.cursor() as cursor:
                cursor.executemany(statements.query("bench_voices_sample"), params)
            conn.execute(statements.query("bench_voices_analyze"))
        record = {"id": records[-1], "owner_id": owner_id}
        matched_speakers(store, record, prints)  # the connection pool and the cache warm
        times = []
        for _ in range(runs):
            before = time.perf_counter()
            saved = matched_speakers(store, record, prints)
            times.append(time.perf_counter() - before)
        assert len(saved) == len(prints)
    return 1000 * float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=12, help="of each set")
    parser.add_argument("--seconds", type=float, default=45, help="the shortest conversation's length")
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--tiny", action="store_true", help="the repository's recordings only; nothing written")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    logs.configure(level="WARNING")
    if args.tiny:
        folder = tempfile.TemporaryDirectory(prefix="voices-tiny-")
        recordings, sets, count, voices = tiny_recordings(Path(folder.name)), [TINY], 1, 50
    else:
        from bench.data import speaker_recordings

        recordings, sets, count, voices = (speaker_recordings(), [TUNING, SCORED, CONDITIONS], args.conversations,
                                           VOICES)
    rows, extra = [], {}
    for chosen in sets:
        conversations, names, samples = run_set(
            chosen, recordings, count // 2 if chosen is CONDITIONS else count, args.seed, args.seconds,
            everyone=args.tiny)
        tuning = chosen is TUNING
        same, other = similarities(conversations, names, matching.voice_centroids(samples)[1])
        for threshold in THRESHOLDS if tuning else (matching.MATCH_SIMILARITY,):
            got = score(conversations, names, samples, threshold)
            rows.append([chosen.name, threshold, len(conversations), got["turns"], got["correct_pct"],
                         got["wrong_pct"], got["unknown_named_pct"], round(same, 2), round(other, 2)])
            if not tuning:
                extra.update({f"{chosen.name}_correct_pct": got["correct_pct"],
                              f"{chosen.name}_wrong_pct": got["wrong_pct"]})
            if chosen in (SCORED, TINY):
                extra["match_cpu_pct_of_diarize"] = round(100 * got["match_cpu"] / got["diarize_cpu"], 2)
                timed = conversations
        if tuning:
            # the threshold the tuning set chooses: halfway between its two kinds of score
            extra["tuning_threshold"] = round((same + other) / 2 * 20) / 20
        extra[f"{chosen.name}_set"] = {"known": list(chosen.known), "never enrolled": list(chosen.unknown)}
    rng = np.random.default_rng(args.seed)
    rows_ = many_voices(voices, SAMPLES, rng)
    prints = speaker_prints_of(timed[0])
    # a record's match reads and weighs every voice once, whatever its number of speakers
    numpy_, service = numpy_ms(rows_, prints), service_ms(rows_, prints)
    extra["speakers_of_the_record_matched"] = len(prints)
    extra[f"numpy_ms_per_record_{voices}_voices"] = round(numpy_, 2)
    extra[f"numpy_ms_per_speaker_{voices}_voices"] = round(numpy_ / max(len(prints), 1), 2)
    extra[f"service_ms_per_record_{voices}_voices"] = round(service, 2)
    extra[f"service_ms_per_speaker_{voices}_voices"] = round(service / max(len(prints), 1), 2)
    extra["threshold"] = matching.MATCH_SIMILARITY
    report("voices", ["set", "threshold", "conversations", "turns", "correct % (known turns)",
                      "wrong % (all turns)", "unknown turns named %", "lowest same-person score",
                      "highest other score"], rows, extra,
           write=not (args.no_write or args.tiny))
    for key, value in extra.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
