"""Speaker diarization: error rate, speed and memory on conversations of known speakers.

    .venv/bin/python -m bench.diarization [--long] [--long-hours H] [--smoke] [--words N]

Conversations are built by joining real recorded utterances of different speakers from the
benchmark's data (bench/data.py: the LibriVox reader, the card-names and "go forward" speakers
of pocketsphinx's tests, the MFA speaker, LibriSpeech speaker 61), cut at their pauses into
turns of at most 8 s, in a random order of speakers with gaps of 0.2–1 s: a short set of 2–5
speakers and 1–3 minutes; a brief set of 6 where one more speaker says 1.5–2 s once, halfway
(is a speaker with little speech kept?); an overlap set of 6 where 30 % of turns start 1–2 s
before the previous one ends (both speak at once, mixed); with --long one of 10 and one of 30
minutes, and with --long-hours H one of H hours. A speaker whose pieces run out starts over from the first (so long
conversations repeat audio).

The reference turns are the pieces' spans, trimmed of leading and trailing silence. DER is
scored frame by frame (10 ms) under the best one-to-one mapping of found to true speakers:
(missed speech + false alarm + confusion) / reference speech, with no collar and with a
0.25 s collar (frames within 0.25 s of a reference boundary are not scored), as NIST's md-eval
defines them. With --words N the first N conversations are also recognised (the configured engine, window by
window as the pipeline does) and each word is given the speaker of the turn it overlaps most:
"words right" is the share of words (whose middle lies in a reference turn) whose found
speaker is their true one, each found speaker read as the true one it shares most words with.

Each conversation is written to a temporary 16-bit WAV file as it is built and diarized in a
fresh process (spawned) that reads the file in 16 s pieces, as the pipeline's step reads a
recording from storage: CPU seconds per audio second and peak RSS are that process's own,
model loading included.
"""
from __future__ import annotations

import argparse
import itertools
import multiprocessing
import os
import resource
import tempfile
import wave
from pathlib import Path

import numpy as np

from audio.decode import SAMPLE_RATE, pcm16k
from audio.speakers.cluster import cluster
from audio.speakers.diarize import pcm_embeddings, speaker_turns
from audio.speakers.regions import speech_regions
from bench.common import report

PIECE_SECONDS = 8.0
BRIEF_SECONDS = 2.0          # a brief speaker says one piece of 1.5 s to this
OVERLAP_SHARE = 0.3          # the overlap set: this share of turns starts 1–2 s before the last ends
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


def speech_pieces(paths: list[str]) -> list[np.ndarray]:
    """The speech of the recordings at `paths`, cut at its pauses into pieces of at most
    PIECE_SECONDS (none under 0.5 s), in order."""
    out = []
    for path in paths:
        samples = load(path)
        for start, end in speech_regions(samples):
            while end - start > 0.5:
                cut = min(end, start + PIECE_SECONDS)
                piece = trimmed(samples[int(start * SAMPLE_RATE): int(cut * SAMPLE_RATE)])
                if len(piece) > 0.5 * SAMPLE_RATE:
                    out.append(piece)
                start = cut
    return out


def pieces_by_speaker() -> dict[str, list[np.ndarray]]:
    """Each speaker's speech cut at its pauses into pieces of at most PIECE_SECONDS."""
    from bench.data import prepare

    paths: dict[str, list[str]] = {name: [] for name in SPEAKERS}
    for utterance in prepare()["en"]:
        if utterance.speaker in paths:
            paths[utterance.speaker].append(utterance.path)
    return {name: speech_pieces(found) for name, found in paths.items()}


def conversation_parts(pieces: dict[str, list[np.ndarray]], speakers: list[str], seconds: float, seed: int,
                       brief: str | None = None, overlap: float = 0.0):
    """The turns (start seconds, samples, speaker) of a conversation of about `seconds`, as they
    are made. `brief` says one piece of at most BRIEF_SECONDS once, halfway through; with
    `overlap` that share of turns starts 1–2 s before the previous one ends (both talk at once).
    A speaker whose pieces run out starts over from the first."""
    rng = np.random.default_rng(seed)
    used = {name: 0 for name in speakers}
    at, last, previous, heard, brief_said = 0.0, None, 0.0, set(), brief is None
    while at < seconds or len(heard) < len(speakers):
        if not brief_said and at >= seconds / 2:
            said = next(p for p in pieces[brief] if len(p) >= 1.5 * SAMPLE_RATE)
            name, piece, brief_said = brief, said[: int(BRIEF_SECONDS * SAMPLE_RATE)], True
        else:
            choices = [s for s in speakers if s != last]
            unheard = [s for s in choices if used[s] == 0]
            name = unheard[0] if unheard else choices[rng.integers(len(choices))]
            piece = pieces[name][used[name] % len(pieces[name])]
            used[name] += 1
        gap = rng.uniform(0.2, 1.0)
        if overlap and last is not None and rng.random() < overlap:
            gap = -min(rng.uniform(1.0, 2.0), previous / 2)
        at = max(0.0, at + gap)
        yield at, piece, name
        previous = len(piece) / SAMPLE_RATE
        at += previous
        last, heard = name, heard | {name}


def conversation(pieces: dict[str, list[np.ndarray]], speakers: list[str], seconds: float, seed: int,
                 brief: str | None = None, overlap: float = 0.0):
    """Samples and reference turns (start, end, speaker) of a conversation of about `seconds`."""
    turns_ = list(conversation_parts(pieces, speakers, seconds, seed, brief, overlap))
    samples = np.zeros(int(max(at * SAMPLE_RATE + len(piece) for at, piece, _ in turns_)) + 1, np.float32)
    for at, piece, _ in turns_:
        first = int(at * SAMPLE_RATE)
        samples[first: first + len(piece)] += piece
    return samples, [(at, at + len(piece) / SAMPLE_RATE, name) for at, piece, name in turns_]


def write_conversation(pieces: dict[str, list[np.ndarray]], speakers: list[str], seconds: float, seed: int,
                       path: Path, brief: str | None = None, overlap: float = 0.0) -> tuple[list, float]:
    """The conversation written to `path` as 16 kHz mono 16-bit WAV as it is made (a 2-hour one
    is never held whole): its reference turns and its length in seconds."""
    reference, pending, written = [], np.zeros(0, np.float32), 0
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(SAMPLE_RATE)

        def write(count: int) -> None:
            nonlocal pending, written
            out.writeframes((np.clip(pending[:count], -1, 1) * 32767).astype(np.int16).tobytes())
            pending, written = pending[count:], written + count

        for at, piece, name in conversation_parts(pieces, speakers, seconds, seed, brief, overlap):
            # everything before this turn's start is final: no later turn starts before it
            ready = int(at * SAMPLE_RATE) - written
            pending = np.concatenate([pending, np.zeros(max(0, ready + len(piece) - len(pending)), np.float32)])
            write(ready)
            pending[: len(piece)] += piece
            reference.append((at, at + len(piece) / SAMPLE_RATE, name))
        write(len(pending))
    return reference, written / SAMPLE_RATE


def read_samples(path: Path) -> np.ndarray:
    with wave.open(str(path), "rb") as source:
        return np.frombuffer(source.readframes(source.getnframes()), np.int16).astype(np.float32) / 32768.0


def pcm_chunks(path: Path, seconds: float = 16.0):
    """The WAV file's 16-bit PCM in pieces, as a pipeline step reads a recording from storage."""
    with wave.open(str(path), "rb") as source:
        while chunk := source.readframes(int(seconds * SAMPLE_RATE)):
            yield chunk


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


def diarized(path: Path, queue, overlaps: bool) -> None:
    """In a fresh process: the turns of the WAV file at `path`, streamed through the diarizer
    in pieces (the process never holds the recording), its CPU seconds and its peak RSS in MB;
    with `overlaps`, also the spans the candidate overlap rule marks (after the measurement)."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    found = pcm_embeddings(pcm_chunks(path))
    turns = speaker_turns(found)
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    marked = overlapped(found) if overlaps else []
    queue.put(([(t.start, t.end, t.speaker) for t in turns], cpu, peak_mb(), marked))


# The candidate overlap rule, measured here and not in the engine: a window is marked as two
# voices at once when its second most alike speaker is at least OVERLAP_SECOND alike and the
# first leads by less than OVERLAP_MARGIN (chosen on conversations kept apart from these).
OVERLAP_SECOND = 0.30
OVERLAP_MARGIN = 0.40


def overlapped(found) -> list[tuple[float, float]]:
    """The middle halves (the part a window speaks for in the turns) of the marked windows."""
    from audio.speakers.cluster import centroids

    labels = cluster(found.vectors)
    if labels.max(initial=0) < 1:
        return []
    likeness = np.sort(found.vectors @ centroids(found.vectors, labels)[1].T, axis=1)[:, ::-1]
    marked = (likeness[:, 1] >= OVERLAP_SECOND) & (likeness[:, 0] - likeness[:, 1] < OVERLAP_MARGIN)
    quarter = (found.times[:, 1] - found.times[:, 0]) / 4
    return [(float(a + q), float(b - q)) for (a, b), q, m in zip(found.times, quarter, marked) if m]


def pooled_overlap_scores(conversations: list) -> dict:
    """Precision and recall of the marked frames against the frames where two or more speak,
    pooled over the overlap set's (reference, marked, duration)."""
    both = marked_frames = true_frames = 0
    for reference, marked, duration in conversations:
        length = int(duration / FRAME) + 1
        truth = np.sum(frames(reference, length), axis=0) >= 2
        guess = np.zeros(length, bool)
        for start, end in marked:
            guess[int(round(start / FRAME)): int(round(end / FRAME))] = True
        both, marked_frames, true_frames = both + (truth & guess).sum(), marked_frames + guess.sum(), true_frames + truth.sum()
    if not conversations:
        return {}
    return {"overlap_seconds": round(float(true_frames * FRAME), 1),
            "overlap_marked_seconds": round(float(marked_frames * FRAME), 1),
            "overlap_precision_pct": round(float(100 * both / max(marked_frames, 1)), 1),
            "overlap_recall_pct": round(float(100 * both / max(true_frames, 1)), 1)}


def peak_mb() -> float:
    """This process's peak resident size (VmHWM: unlike ru_maxrss, not inherited across exec
    from the parent that spawned it)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(name: str, path: Path, reference, duration: float, overlaps: bool = False) -> tuple[list, list]:
    """The conversation's row (its found turns last) and the spans marked as overlap."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=diarized, args=(path, queue, overlaps))
    child.start()
    found, cpu, peak, marked = queue.get()
    child.join()
    true_speakers = len({r[2] for r in reference})
    found_speakers = len({f[2] for f in found})
    return [name, round(duration, 1), true_speakers, found_speakers,
            round(100 * der(reference, found, duration, 0.25), 1), round(100 * der(reference, found, duration, 0.0), 1),
            round(cpu / duration, 4), round(peak), found], marked


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
    parser.add_argument("--long-hours", type=float, default=0, metavar="H",
                        help="add a conversation of H hours (5 speakers): memory and CPU on a long recording")
    args = parser.parse_args()
    pieces = pieces_by_speaker()
    plan = [(f"short-{i + 1}", 2 + i % 4, 60 + 15 * (i % 9), i, False, 0.0) for i in range(2 if args.smoke else 12)]
    if not args.smoke:
        plan += [(f"brief-{i + 1}", 2 + i % 3, 60 + 15 * (i % 9), 200 + i, True, 0.0) for i in range(6)]
        plan += [(f"overlap-{i + 1}", 2 + i % 4, 60 + 15 * (i % 9), 300 + i, False, OVERLAP_SHARE) for i in range(6)]
    if args.long:
        plan += [("10-min", 4, 600, 100, False, 0.0), ("30-min", 5, 1800, 101, False, 0.0)]
    if args.long_hours:
        plan += [(f"{args.long_hours:g}-hour", 5, 3600 * args.long_hours, 102, False, 0.0)]
    rows, overlaps = [], []
    with tempfile.TemporaryDirectory(prefix="diarization-") as folder:
        for name, count, seconds, seed, brief, overlap in plan:
            rng = np.random.default_rng(seed)
            chosen = list(rng.choice(SPEAKERS, size=count + brief, replace=False))
            speakers, brief = chosen[:count], chosen[count] if brief else None
            path = Path(folder) / "conversation.wav"
            reference, duration = write_conversation(pieces, speakers, seconds, seed, path, brief, overlap)
            row, marked = run(name, path, reference, duration, overlap > 0)
            rows.append(row)
            if overlap:
                overlaps.append((reference, marked, duration))
            if len(rows) <= args.words:
                right, scored = word_accuracy(read_samples(path), reference, rows[-1].pop())
                rows[-1].append(round(100 * right / max(scored, 1), 1))
            else:
                rows[-1][-1] = ""
            print(rows[-1], flush=True)
    short = [r for r in rows if r[0].startswith("short")]
    plain = [r for r in rows if not r[0].startswith("overlap")]
    weights = np.array([r[1] for r in short])
    extra = {
        "short_der_collar_pooled": round(float(np.average([r[4] for r in short], weights=weights)), 1),
        "short_der_no_collar_pooled": round(float(np.average([r[5] for r in short], weights=weights)), 1),
        "speaker_count_right": f"{sum(r[2] == r[3] for r in rows)}/{len(rows)}",
        "speaker_count_right_without_overlap_set": f"{sum(r[2] == r[3] for r in plain)}/{len(plain)}",
        **pooled_overlap_scores(overlaps),
        "engine_for_words": os.environ.get("TRANSCRIBER_WHISPER_MODEL", "the configured one"),
    }
    report("diarization", ["conversation", "seconds", "speakers", "found", "DER % (0.25 s collar)",
                           "DER % (no collar)", "CPU-s per audio-s",
                           "peak RSS MB", "words right %"], rows, extra, write=not args.smoke)
    print(extra)


if __name__ == "__main__":
    main()
