#!/usr/bin/env python3
"""Speaker diarization: error rate, speed and memory on conversations of known speakers.

    .venv/bin/python bench/diarization.py [--long] [--smoke] [--words N]

Conversations are built by joining real recorded utterances of different speakers from the
benchmark's data (bench/data.py: the LibriVox reader, the card-names and "go forward" speakers
of pocketsphinx's tests, the MFA speaker, LibriSpeech speaker 61), cut at their pauses into
turns of at most 8 s, in a random order of speakers with gaps of 0.2–1 s: a short set of 2–5
speakers and 1–3 minutes, and with --long one of 10 and one of 30 minutes. A speaker whose
pieces run out starts over from the first (so long conversations repeat audio).

The reference turns are the pieces' spans, trimmed of leading and trailing silence. DER is
scored frame by frame (10 ms) under the best one-to-one mapping of found to true speakers:
(missed speech + false alarm + confusion) / reference speech, with no collar and with a
0.25 s collar (frames within 0.25 s of a reference boundary are not scored), as NIST's md-eval
defines them. With --words N the first N conversations are also recognised (the configured engine, window by
window as the pipeline does) and each word is given the speaker of the turn it overlaps most:
"words right" is the share of words (whose middle lies in a reference turn) whose found
speaker is their true one, each found speaker read as the true one it shares most words with.

Each conversation is diarized in a fresh process (spawned, holding the conversation's samples
as float32): CPU seconds per audio second and peak RSS are that process's own.
"""
from __future__ import annotations

import argparse
import os
import itertools
import multiprocessing
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from audio.decode import SAMPLE_RATE, pcm16k  # noqa: E402
from audio.speakers.diarize import diarize  # noqa: E402
from audio.speakers.regions import speech_regions  # noqa: E402
from common import report  # noqa: E402

PIECE_SECONDS = 8.0
FRAME = 0.01
SPEAKERS = ("librivox-reader", "cards-speaker", "goforward-speaker", "mfa-speaker", "librispeech-61")


def load(path: str) -> np.ndarray:
    pcm = b"".join(pcm16k(Path(path)))
    return np.frombuffer(pcm, np.int16).astype(np.float32) / 32768.0


def trimmed(samples: np.ndarray, threshold: float = 0.02) -> np.ndarray:
    """The samples without leading and trailing silence (20 ms frames below a peak fraction)."""
    frame = SAMPLE_RATE // 50
    energy = np.abs(samples[: len(samples) // frame * frame]).reshape(-1, frame).max(1)
    loud = np.flatnonzero(energy > threshold * max(energy.max(), 1e-6))
    return samples[loud[0] * frame: (loud[-1] + 1) * frame] if len(loud) else samples[:0]


def pieces_by_speaker() -> dict[str, list[np.ndarray]]:
    """Each speaker's speech cut at its pauses into pieces of at most PIECE_SECONDS."""
    from data import prepare

    out: dict[str, list[np.ndarray]] = {name: [] for name in SPEAKERS}
    for utterance in prepare()["en"]:
        if utterance.speaker not in out:
            continue
        samples = load(utterance.path)
        for start, end in speech_regions(samples):
            while end - start > 0.5:
                cut = min(end, start + PIECE_SECONDS)
                piece = trimmed(samples[int(start * SAMPLE_RATE): int(cut * SAMPLE_RATE)])
                if len(piece) > 0.5 * SAMPLE_RATE:
                    out[utterance.speaker].append(piece)
                start = cut
    return out


def conversation(pieces: dict[str, list[np.ndarray]], speakers: list[str], seconds: float, seed: int):
    """Samples and reference turns (start, end, speaker) of a conversation of about `seconds`."""
    rng = np.random.default_rng(seed)
    used = {name: 0 for name in speakers}
    parts, reference, at, last = [], [], 0.0, None
    while at < seconds or len({r[2] for r in reference}) < len(speakers):
        choices = [s for s in speakers if s != last]
        unheard = [s for s in choices if used[s] == 0]
        name = unheard[0] if unheard else choices[rng.integers(len(choices))]
        piece = pieces[name][used[name] % len(pieces[name])]
        used[name] += 1
        gap = np.zeros(int(rng.uniform(0.2, 1.0) * SAMPLE_RATE), np.float32)
        parts += [gap, piece]
        at += len(gap) / SAMPLE_RATE
        reference.append((at, at + len(piece) / SAMPLE_RATE, name))
        at += len(piece) / SAMPLE_RATE
        last = name
    return np.concatenate(parts), reference


def frames(turns, length: int) -> list[np.ndarray]:
    """Per speaker, a boolean frame mask."""
    masks: dict[str, np.ndarray] = {}
    for start, end, name in turns:
        mask = masks.setdefault(name, np.zeros(length, bool))
        mask[int(round(start / FRAME)): int(round(end / FRAME))] = True
    return list(masks.values())


def der(reference, found, duration: float, collar: float) -> float:
    length = int(duration / FRAME) + 1
    scored = np.ones(length, bool)
    for start, end, _ in reference:
        for edge in (start, end):
            scored[max(0, int((edge - collar) / FRAME)): int((edge + collar) / FRAME)] = False
    truth = [m & scored for m in frames(reference, length)]
    guess = [m & scored for m in frames(found, length)]
    speech = sum(m.sum() for m in truth)
    true_count = np.sum(truth, axis=0) if truth else np.zeros(length)
    found_count = np.sum(guess, axis=0) if guess else np.zeros(length)
    best_match = 0
    size = max(len(truth), len(guess))
    for order in itertools.permutations(range(size), len(truth)) if len(guess) >= len(truth) else \
            itertools.permutations(range(len(truth)), len(guess)):
        if len(guess) >= len(truth):
            match = sum((truth[i] & guess[j]).sum() for i, j in enumerate(order))
        else:
            match = sum((truth[i] & guess[j]).sum() for j, i in enumerate(order))
        best_match = max(best_match, match)
    error = np.maximum(true_count, found_count).sum() - best_match
    return float(error / max(speech, 1))


def diarized(samples: np.ndarray, queue) -> None:
    """In a fresh process: the turns, its CPU seconds and its peak RSS in MB."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    turns = diarize(samples)
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    queue.put(([(t.start, t.end, t.speaker) for t in turns], cpu, peak_mb()))


def peak_mb() -> float:
    """This process's peak resident size (VmHWM: unlike ru_maxrss, not inherited across exec
    from the parent that spawned it)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(name: str, samples: np.ndarray, reference) -> list:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=diarized, args=(samples, queue))
    child.start()
    found, cpu, peak = queue.get()
    child.join()
    duration = len(samples) / SAMPLE_RATE
    true_speakers = len({r[2] for r in reference})
    found_speakers = len({f[2] for f in found})
    return [name, round(duration, 1), true_speakers, found_speakers,
            round(100 * der(reference, found, duration, 0.25), 1), round(100 * der(reference, found, duration, 0.0), 1),
            round(cpu / duration, 4), round(peak), found]


_engine = None


def word_accuracy(samples: np.ndarray, reference, found) -> tuple[int, int]:
    """(words labelled with their true speaker, words scored): the configured engine's words,
    given the found turns' speakers, each found label read as the true speaker it shares most
    words with. Words whose middle falls outside every reference turn are not scored."""
    from audio.engines import build, spec
    from audio.speakers.assign import Turn, assign
    from audio.windows import windows
    from service import config

    global _engine
    _engine = _engine or build(spec(config.load()))
    engine = _engine
    pcm = (np.clip(samples, -1, 1) * 32767).astype(np.int16).tobytes()
    words = []
    for at, window in windows([pcm]):
        for segment in engine.recognize(window, "en").segments:
            words += [{**w, "start": w["start"] + at, "end": w["end"] + at} for w in segment["words"]]
    labelled = [w for s in assign([{"start": 0, "end": 0, "text": "", "words": words}],
                                  [Turn(*f) for f in found]) for w in s["words"]]
    pairs = []
    for word in labelled:
        middle = (word["start"] + word["end"]) / 2
        truth = next((name for start, end, name in reference if start <= middle <= end), None)
        if truth:
            pairs.append((word["speaker"], truth))
    votes: dict = {}
    for label, truth in pairs:
        votes.setdefault(label, {}).setdefault(truth, 0)
        votes[label][truth] += 1
    meaning = {label: max(count, key=count.get) for label, count in votes.items()}
    return sum(meaning[label] == truth for label, truth in pairs), len(pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--long", action="store_true", help="add a 10- and a 30-minute conversation")
    parser.add_argument("--smoke", action="store_true", help="two short conversations, nothing written")
    parser.add_argument("--words", type=int, default=0, metavar="N",
                        help="also recognise the first N conversations and score each word's speaker")
    args = parser.parse_args()
    pieces = pieces_by_speaker()
    plan = [(f"short-{i + 1}", 2 + i % 4, 60 + 15 * (i % 9), i) for i in range(2 if args.smoke else 12)]
    if args.long:
        plan += [("10-min", 4, 600, 100), ("30-min", 5, 1800, 101)]
    rows = []
    for name, count, seconds, seed in plan:
        rng = np.random.default_rng(seed)
        speakers = list(rng.choice(SPEAKERS, size=count, replace=False))
        samples, reference = conversation(pieces, speakers, seconds, seed)
        rows.append(run(name, samples, reference))
        if len(rows) <= args.words:
            right, scored = word_accuracy(samples, reference, rows[-1].pop())
            rows[-1].append(round(100 * right / max(scored, 1), 1))
        else:
            rows[-1][-1] = ""
        print(rows[-1], flush=True)
    short = [r for r in rows if r[0].startswith("short")]
    weights = np.array([r[1] for r in short])
    extra = {
        "short_der_collar_pooled": round(float(np.average([r[4] for r in short], weights=weights)), 1),
        "short_der_no_collar_pooled": round(float(np.average([r[5] for r in short], weights=weights)), 1),
        "speaker_count_right": f"{sum(r[2] == r[3] for r in rows)}/{len(rows)}",
        "engine_for_words": os.environ.get("TRANSCRIBER_WHISPER_MODEL", "the configured one"),
    }
    report("diarization", ["conversation", "seconds", "speakers", "found", "DER % (0.25 s collar)",
                           "DER % (no collar)", "CPU-s per audio-s",
                           "peak RSS MB", "words right %"], rows, extra, write=not args.smoke)
    print(extra)


if __name__ == "__main__":
    main()
