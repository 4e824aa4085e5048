"""Accuracy and speed of each engine and model on real speech with reference transcripts.

    .venv/bin/python -m bench.accuracy [--runs N] [--json PATH] [--only LABEL ...] [--isa KIND ...] [--compute float32]
    .venv/bin/python -m bench.accuracy --prompt-effect [--runs N]

For each recognizer: word error rate on normalised text (bench/wer.py) with its
substitutions, deletions and insertions; real-time factor as wall seconds and as process CPU
seconds per audio second (medians over --runs passes, default 3); model load time; and the
peak resident memory of the child process the recognizer runs in (one fresh process per
recognizer, so the numbers do not mix), and the most words a recording's text has for each
word of its reference (an invented sentence shows there). `--isa` runs each recognizer again
with CTranslate2's kernels held to an older CPU's (AVX2, AVX, GENERIC: see CPU_KINDS), since
text is reproducible per machine, not across machines. The data (bench/data.py) is fetched on
first use.
Prints a table and writes JSON (default bench/results/accuracy.json).

--prompt-effect measures the owner's prompt instead, what naming a rare term in it does to the
text: the MFA "registers" set (short phrases, most of them "Montreal Forced Aligner") with each
Whisper model, without a prompt and with prompt="Montreal Forced Aligner" (JSON:
bench/results/accuracy_prompt.json).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import resource
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from bench import data
from bench.common import RESULTS, cpu
from bench.wer import NONE, Errors, normalise, score


@dataclass(frozen=True)
class Recognizer:
    engine: str             # "pocketsphinx" or "faster-whisper"
    model: str | None       # the faster-whisper model name, resolved by audio.models
    language: str | None    # what the recognizer is told; None lets it detect the language
    dataset: str            # which set of bench/data.py it is scored on
    prompt: str | None = None  # the owner's prompt, given with every window

    @property
    def label(self) -> str:
        name = self.engine if self.model is None else f"{self.engine} {self.model}"
        prompted = f' prompt="{self.prompt}"' if self.prompt else ""
        return f"{name} [{self.language or 'auto'}] on {self.dataset}{prompted}"


# How to make this machine's CTranslate2 pick the kernels of an older CPU: it does its int8 work
# through oneDNN, which has its own cap; CT2_FORCE_CPU_ISA alone changes nothing where oneDNN runs.
CPU_KINDS = {
    "native": {},
    "AVX2": {"CT2_USE_MKL": "0", "CT2_FORCE_CPU_ISA": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "AVX": {"CT2_USE_MKL": "0", "CT2_FORCE_CPU_ISA": "AVX", "ONEDNN_MAX_CPU_ISA": "AVX"},
    "GENERIC": {"CT2_USE_MKL": "0", "CT2_FORCE_CPU_ISA": "GENERIC", "ONEDNN_MAX_CPU_ISA": "SSE41"},
    # an Intel CPU with VNNI and without AMX (Cascade Lake, Ice Lake) as oneDNN serves it
    "AVX512_VNNI": {"CT2_USE_MKL": "0", "ONEDNN_MAX_CPU_ISA": "AVX512_CORE_VNNI"},
    # not an older CPU but another library: CTranslate2 computes through MKL on an Intel CPU and
    # through oneDNN on any other (on an AMD CPU, MKL takes other paths than on Intel's: measured,
    # it writes neither vendor's text)
    "MKL": {"CT2_USE_MKL": "1"},
}

RECOGNIZERS = [
    Recognizer("pocketsphinx", None, "en", "en"),
    Recognizer("faster-whisper", "tiny.en", "en", "en"),
    Recognizer("faster-whisper", "base", "en", "en"),
    Recognizer("faster-whisper", "base", None, "en"),
    Recognizer("faster-whisper", "base", "ru", "ru"),
    Recognizer("faster-whisper", "base", None, "ru"),
]

MFA_PROMPT = "Montreal Forced Aligner"
PROMPT_RECOGNIZERS = [Recognizer("faster-whisper", model, "en", "registers", prompt)
                      for model in ("tiny.en", "base") for prompt in (None, MFA_PROMPT)]


# --- the one place that calls a recognizer ----------------------------------------------------

@dataclass
class Heard:
    text: str
    language: str | None    # the language used or detected
    wall: float             # seconds spent recognising (model loading excluded)
    cpu: float              # process CPU seconds in that time, every thread counted
    suppressed: list        # what the engine's guards dropped: {"start", "end", "reason"} per span


# (pcm: 16 kHz mono s16 bytes of one recording, language or None) -> Heard
Recognize = Callable[[bytes, "str | None"], Heard]


class _Clock:
    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu


def open_recognizer(recognizer: Recognizer) -> tuple[Recognize, str | None]:
    """Load the recognizer; the function that recognises one recording with it, and what the
    engine computes with (int8 or float32, chosen by the CPU; None for pocketsphinx).

    Both engines are the service's own (audio.whisper, audio.sphinx), fed the service's
    windows (audio.windows: at most 30 s, cut where quiet) and called in this process, so the
    text is what a worker writes. faster-whisper is loaded once with the service's settings on two CPU
    threads (its repetition guard included). pocketsphinx makes a fresh decoder per window, as in
    the service: its model load (about 0.3 s) is inside the clock, once per recording here since
    every recording is shorter than a window.
    """
    from audio.models import resolve
    from audio.sphinx import PocketsphinxEngine
    from audio.whisper import WhisperEngine
    from audio.windows import windows
    from service import config

    if recognizer.engine == "pocketsphinx":
        engine = PocketsphinxEngine()
    else:
        engine = WhisperEngine(resolve(recognizer.model, data.CACHE / "models"), "cpu", threads=2,
                               compute=config.load().compute_type)

    def recognize(pcm: bytes, language: str | None) -> Heard:
        texts, detected, suppressed = [], None, []
        with _Clock() as clock:
            for _, window in windows([pcm]):
                result = engine.recognize(window, language, recognizer.prompt)
                texts.extend(segment["text"] for segment in result.segments)
                detected = detected or result.language
                suppressed.extend(result.suppressed)
        return Heard(" ".join(texts), detected, clock.wall, clock.cpu, suppressed)

    return recognize, getattr(engine, "compute", None)


# --- measuring, in a child process per recognizer ---------------------------------------------

def measure(recognizer: Recognizer, utterances: list[dict], runs: int) -> dict:
    """Run in a fresh process: every recording `runs` times; texts, timings, peak memory."""
    from audio.decode import BYTES_PER_SECOND, pcm16k

    audio = [b"".join(pcm16k(Path(u["path"]))) for u in utterances]
    with _Clock() as load:
        recognize, compute = open_recognizer(recognizer)
    texts: list[str] = []
    detected: list[str | None] = []
    suppressed: list[list] = []
    passes = []
    stable = True
    for run in range(runs):
        total_wall = total_cpu = 0.0
        for number, pcm in enumerate(audio):
            heard = recognize(pcm, recognizer.language)
            total_wall += heard.wall
            total_cpu += heard.cpu
            if run == 0:
                texts.append(heard.text)
                detected.append(heard.language)
                suppressed.append(heard.suppressed)
            elif heard.text != texts[number]:
                stable = False
        passes.append((total_wall, total_cpu))
    return {
        "audio_seconds": sum(len(pcm) for pcm in audio) / BYTES_PER_SECOND,
        "texts": texts, "detected": detected, "suppressed": suppressed, "same_text_every_run": stable,
        "wall_seconds": [w for w, _ in passes], "cpu_seconds": [c for _, c in passes],
        "load_wall_seconds": load.wall, "load_cpu_seconds": load.cpu,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "compute": compute,
    }


def pocketsphinx_load_seconds() -> float:
    """How long one pocketsphinx model load takes (paid once per window, inside the timing above)."""
    from pocketsphinx import Decoder

    started = time.perf_counter()
    Decoder(loglevel="FATAL")
    return time.perf_counter() - started


def evaluate(recognizer: Recognizer, utterances: list[data.Utterance], runs: int, isa: str = "native") -> dict:
    context = multiprocessing.get_context("spawn")
    saved = dict(os.environ)
    os.environ.update(CPU_KINDS[isa])  # the spawned child reads them when CTranslate2 loads
    try:
        with context.Pool(1, maxtasksperchild=1) as pool:
            measured = pool.apply(measure, (recognizer, [asdict(u) for u in utterances], runs))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    most_words = 0.0
    per_utterance, total, by_kind, by_speaker = [], NONE, {}, {}
    for utterance, text, language, dropped in zip(utterances, measured["texts"], measured["detected"],
                                                  measured["suppressed"]):
        errors = score(utterance.reference, text)
        most_words = max(most_words, len(normalise(text)) / max(1, errors.reference_words))
        total = total + errors
        by_kind[utterance.kind] = by_kind.get(utterance.kind, NONE) + errors
        by_speaker[utterance.speaker] = by_speaker.get(utterance.speaker, NONE) + errors
        per_utterance.append({"id": utterance.id, "kind": utterance.kind, "speaker": utterance.speaker,
                              "reference": " ".join(normalise(utterance.reference)),
                              "hypothesis": " ".join(normalise(text)), "raw_hypothesis": text,
                              "detected_language": language, "suppressed": dropped, **_errors(errors)})
    seconds = measured["audio_seconds"]
    wall, cpu = statistics.median(measured["wall_seconds"]), statistics.median(measured["cpu_seconds"])
    compute = measured["compute"]
    label = recognizer.label + "".join(f" ({part})" for part in (compute, isa if isa != "native" else None) if part)
    result = {
        "label": label, **asdict(recognizer), "isa": isa, "compute": compute,
        **({"compute_chosen_by": "TRANSCRIBER_COMPUTE_TYPE" if os.environ.get("TRANSCRIBER_COMPUTE_TYPE") else "CPU"}
           if compute else {}),
        "recordings": len(utterances),
        "audio_seconds": round(seconds, 2), **_errors(total), "most_words_per_reference_word": round(most_words, 2),
        "wer_by_kind": {kind: _errors(errors) for kind, errors in sorted(by_kind.items())},
        "wer_by_speaker": {who: _errors(errors) for who, errors in sorted(by_speaker.items())},
        "rtf_wall": wall / seconds, "rtf_cpu": cpu / seconds, "runs": len(measured["wall_seconds"]),
        "wall_seconds_per_run": measured["wall_seconds"], "cpu_seconds_per_run": measured["cpu_seconds"],
        "load_wall_seconds": measured["load_wall_seconds"], "peak_rss_mb": round(measured["peak_rss_mb"], 1),
        "same_text_every_run": measured["same_text_every_run"],
        "detected_languages": {lang: measured["detected"].count(lang) for lang in set(measured["detected"])},
        "recordings_detail": per_utterance,
    }
    if recognizer.engine == "pocketsphinx":
        with context.Pool(1, maxtasksperchild=1) as pool:
            # a fresh decoder per window loads the model each time, inside the timed part
            result["load_wall_seconds"] = pool.apply(pocketsphinx_load_seconds)
    return result


def _errors(errors: Errors) -> dict:
    return {"wer": round(errors.wer, 4), "reference_words": errors.reference_words,
            "substitutions": errors.substitutions, "deletions": errors.deletions,
            "insertions": errors.insertions}


HEADER = (f"{'recognizer':<40} {'audio s':>7} {'WER %':>6} {'S':>4} {'D':>4} {'I':>4} {'N':>5} "
          f"{'RTF wall':>8} {'RTF CPU':>7} {'load s':>6} {'peak RSS MB':>11} {'most x ref':>10}")


def row(result: dict) -> str:
    return (f"{result['label']:<40} {result['audio_seconds']:7.0f} {100 * result['wer']:6.1f} "
            f"{result['substitutions']:4} {result['deletions']:4} {result['insertions']:4} "
            f"{result['reference_words']:5} {result['rtf_wall']:8.3f} {result['rtf_cpu']:7.3f} "
            f"{result['load_wall_seconds']:6.1f} {result['peak_rss_mb']:11.0f} "
            f"{result.get('most_words_per_reference_word', float('nan')):10.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="timing passes per recognizer (median)")
    parser.add_argument("--json", type=Path, default=RESULTS / "accuracy.json")
    parser.add_argument("--only", nargs="*", default=None,
                        help="run only recognizers whose label contains one of these strings")
    parser.add_argument("--prompt-effect", action="store_true",
                        help='the MFA "registers" set without and with prompt="Montreal Forced Aligner"')
    parser.add_argument("--isa", nargs="*", default=["native"], choices=sorted(CPU_KINDS),
                        help="CPU kinds to run each recognizer as (emulated through CTranslate2/oneDNN)")
    parser.add_argument("--compute", choices=("int8", "float32"), default=None,
                        help="what faster-whisper computes with (TRANSCRIBER_COMPUTE_TYPE; default: the "
                             "service's choice by CPU kind, int8 with VNNI and float32 without)")
    args = parser.parse_args()
    if args.compute:
        os.environ["TRANSCRIBER_COMPUTE_TYPE"] = args.compute  # the recognizers' child processes read it
    sets = data.prepare()
    sets["registers"] = [u for u in sets["en"] if u.kind == "registers"]
    catalogue = PROMPT_RECOGNIZERS if args.prompt_effect else RECOGNIZERS
    if args.prompt_effect and args.json == parser.get_default("json"):
        args.json = args.json.with_name("accuracy_prompt.json")
    chosen = [r for r in catalogue if not args.only or any(s in r.label for s in args.only)]
    results = []
    print(HEADER, flush=True)
    for recognizer in chosen:
        for isa in args.isa if recognizer.engine == "faster-whisper" else ["native"]:
            result = evaluate(recognizer, sets[recognizer.dataset], args.runs, isa)
            result["when"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            results.append(result)
            print(row(result), flush=True)
    for title, key in (("kind of speech", "wer_by_kind"), ("speaker or voice", "wer_by_speaker")):
        print(f"\nWER % by {title} (reference words):")
        for result in results:
            parts = ", ".join(f"{name} {100 * e['wer']:.1f} ({e['reference_words']})" for name, e in result[key].items())
            print(f"  {result['label']:<40} {parts}")
    if args.only and args.json.is_file():
        # a partial run replaces its own rows and keeps the others, in the order of RECOGNIZERS
        fresh = {result["label"]: result for result in results}
        earlier = {result["label"]: result for result in json.loads(args.json.read_text())["results"]}
        results = [*(earlier[label] for label in earlier if label not in fresh), *fresh.values()]
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({
        "machine": {"cpus": multiprocessing.cpu_count(), "platform": platform.platform(), "cpu": cpu(),
                    "python": platform.python_version()},
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "runs": args.runs,  # of the last run
        "sources": [asdict(s) for s in data.SOURCES],
        "results": results,
    }, indent=1, ensure_ascii=False))
    print(f"\nwritten {args.json}")


if __name__ == "__main__":
    main()
