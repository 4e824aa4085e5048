"""The Whisper engine: faster-whisper (CTranslate2), decoding made deterministic.

Every window is decoded from a fresh state at temperature 0, with no sampling fallback, no VAD
filter and no conditioning on a previous window's text: the same bytes give the same text
whatever ran before, in any worker. What Whisper's sampling fallback was for, a window stuck
in a loop or text invented over silence, is handled by the guards (audio.guards) instead.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from audio.guards import confident, cut_repeats, fill_in, loops, suppress
from audio.recognized import Recognized, rounded_seconds, words_on_voice

SAMPLE_RATE = 16000
# Tokens a person's speech takes per second at most: 6 words/s (audio.guards) at some 1.5 tokens
# a word, and a timestamp pair per segment. It caps every decoding (by twice the window's voiced
# time, a strict one by its voiced time): a loop or an invented sentence stops short and costs
# little (a looping 7 s window took 35 CPU seconds to write its 448 tokens).
TOKENS_PER_SECOND = 10
MOST_TOKENS = 440  # Whisper's own limit is 448 tokens, prompt included
# Where the voice detector (Silero) hears a voice: a speech probability of 0.25 or more. Its
# usual threshold, 0.5, hears none in whispered speech (the MFA whispers peak at 0.3 to 0.7 and
# mostly stay under 0.4), and the guard then dropped real words; silence and room noise stay
# under 0.1. Music-like tones reach 0.6 at either threshold: the decoder and the guard's other
# tests keep them wordless (tests/test_invented_text.py).
VOICE = dict(threshold=0.25)
# How the weights are computed with (TRANSCRIBER_COMPUTE_TYPE) when unset: `default_compute`.
# int8 is exact only where the CPU multiplies bytes with VNNI: without it (AVX2, AVX, older, and
# AVX-512 before VNNI) the int8 kernels add byte products in 16 bits, which saturate, and held-out
# speech lost 1.5 to 2 points of WER to the same model on VNNI (BENCHMARKS.md, "Per CPU kind").
# float32 wrote the same text on every kernel family measured, at 2 to 2.5 times int8's CPU.
VNNI_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})
# The caps that hold oneDNN (ONEDNN_MAX_CPU_ISA) or MKL (MKL_ENABLE_INSTRUCTIONS), the libraries
# CTranslate2 does its int8 products in, to an older instruction set; a cap that names none of
# these keeps them off VNNI whatever the CPU has.
_VNNI_CAPS = ("VNNI", "AMX", "AVX10", "BF16", "FP16", "_E1", "_E2", "_E3", "_E4", "_E5")
_CAPS = ("ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")


class WhisperEngine:
    """faster-whisper (CTranslate2): `default_compute` unless told otherwise; beam search at temperature 0
    only, each window on its own (no conditioning on a previous window's text).

    A window whose text loops (`loops`: it compresses better than LOOP_COMPRESSION, Whisper's
    own test) is decoded again with repeated 4-grams forbidden, and if that text still loops,
    its repeated tail is cut (`cut_repeats`). A window with a segment no one could have said
    (`audio.guards.implausible`: text over no voice, faster than people speak, or looping) is
    decoded again strictly, on its voiced parts only (Silero VAD) with repeats forbidden, still at
    temperature 0; the strict decoding's plausible and likely segments (`confident`) fill the
    holes (`fill_in`), and a hole none fills is dropped and listed in `suppressed`. Every word
    kept is then clamped to the voice under it (`words_on_voice`), and its segment to its words.
    """

    name = "faster-whisper"
    OPTIONS: ClassVar[dict[str, Any]] = dict(
        beam_size=5, temperature=0.0, vad_filter=False, condition_on_previous_text=False, word_timestamps=True
    )
    # what the second decoding of a looping window adds
    RETRY_OPTIONS: ClassVar[dict[str, Any]] = dict(no_repeat_ngram_size=4)
    # ... and of an implausible one
    STRICT_OPTIONS: ClassVar[dict[str, Any]] = dict(vad_filter=True, vad_parameters=VOICE, no_repeat_ngram_size=4)

    def __init__(
        self,
        model: str,
        device: str = "cpu",
        threads: int = 0,
        download_root: str | None = None,
        compute: str | None = None,
    ):
        from faster_whisper import WhisperModel  # loaded only where this engine is built: it is heavy

        self.compute = compute or default_compute(device)
        self.model = WhisperModel(
            model, device=device, compute_type=self.compute, cpu_threads=threads, download_root=download_root
        )

    def recognize(
        self, pcm: bytes, language: str | None, prompt: str | None = None, task: str = "transcribe"
    ) -> Recognized:
        """`prompt`, the owner's words (names, jargon), is Whisper's initial prompt for this
        window, the same for every window of a record: never the previous window's text.
        `task` "translate" writes the window's speech in English (Whisper's own translate task,
        a multilingual model only), under the same guards as its transcription."""
        import numpy as np

        audio = np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768.0
        voice = voice_spans(audio)
        if not voice:  # whatever a decoding wrote here would be over no voice: nothing is said
            return Recognized([], language)
        voiced = sum(end - start for start, end in voice)
        # text longer than twice the voiced time could hold is too fast anyway: not written out
        most = _most_tokens(min(2 * voiced + 1, len(audio) / SAMPLE_RATE))
        prompted: dict[str, Any] = {"task": task, **({"initial_prompt": prompt} if prompt else {})}
        result = self._guarded(audio, language, **prompted, max_new_tokens=most)
        kept, suppressed = suppress(result.segments, voice)
        if suppressed:
            strict = self._guarded(
                audio, language, **prompted, **self.STRICT_OPTIONS, max_new_tokens=_most_tokens(voiced)
            )
            strict_kept, _ = suppress(confident(strict.segments), voice)
            kept, suppressed = fill_in(kept, suppressed, strict_kept)
        # a word's time is where the voice is (words_on_voice): its subtitle is on screen while it is said
        on_voice = [words_on_voice(_plain(s), voice) for s in kept]
        return Recognized(on_voice, result.language, result.language_probability, suppressed)

    def _guarded(self, audio, language: str | None, **extra) -> Recognized:
        """The window decoded with `extra` options, loops decoded again and then cut."""
        result = self._decode(audio, language, **extra)
        if loops(result.segments):
            result = self._decode(audio, language, **{**extra, **self.RETRY_OPTIONS})
            for segment in result.segments:
                segment["retried"] = True  # the guard holds it to Whisper's own log-probability test
            if loops(result.segments):
                # the loop's repeats are gone: what made it run into the cap is mended
                result.segments = [{k: v for k, v in s.items() if k != "cut"} for s in cut_repeats(result.segments)]
        return result

    def _decode(self, audio, language: str | None, **extra) -> Recognized:
        """One decoding; each segment carries what the decoder knew of it, for the guards."""
        pieces, info = self.model.transcribe(audio, language=language, **{**self.OPTIONS, **extra})
        segments, tokens = [], 0
        for piece in pieces:
            tokens += len(piece.tokens) + 2  # and its two timestamps
            text = piece.text.strip()
            if not text:
                continue
            words = [
                {"word": w.word.strip(), "start": rounded_seconds(w.start), "end": rounded_seconds(w.end)}
                for w in (piece.words or [])
                if w.word.strip()
            ]
            segments.append(
                {
                    "start": rounded_seconds(piece.start),
                    "end": rounded_seconds(piece.end),
                    "text": text,
                    "words": words,
                    "no_speech_prob": piece.no_speech_prob,
                    "avg_logprob": piece.avg_logprob,
                }
            )
        if segments and tokens >= extra.get("max_new_tokens", MOST_TOKENS + 8):
            segments[-1]["cut"] = True  # it ran into the cap: more text than the voice could hold
        detected = round(float(info.language_probability), 4) if language is None else None
        return Recognized(segments, info.language, detected)


def default_compute(device: str, flags: frozenset[str] | None = None, env=os.environ) -> str:
    """What a model computes with when the owner has not said: float16 on CUDA; on CPU int8
    where its products are exact (VNNI, or a CPU that is not x86), float32 on an x86 CPU without
    it, so that an older CPU writes the text every machine without VNNI writes, not a worse one.
    `flags` are the x86 CPU's (from /proc/cpuinfo; None on another CPU or where it cannot be read:
    int8, not measured there)."""
    if device != "cpu":
        return "float16"
    flags = cpu_flags() if flags is None else flags
    if flags is None:
        return "int8"
    capped = any(
        env.get(cap)
        and env[cap].upper() not in ("ALL", "DEFAULT")
        and not any(mark in env[cap].upper() for mark in _VNNI_CAPS)
        for cap in _CAPS
    )
    return "int8" if flags & VNNI_FLAGS and not capped else "float32"


def cpu_flags() -> frozenset[str] | None:
    """The instruction sets Linux says this x86 CPU has (other CPUs list "Features"); None elsewhere."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return None


def voice_spans(audio) -> list[tuple[float, float]]:
    """Where the window has a voice, as (start, end) seconds: faster-whisper's Silero detector."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    return [
        (span["start"] / SAMPLE_RATE, span["end"] / SAMPLE_RATE)
        for span in get_speech_timestamps(audio, VadOptions(**VOICE))
    ]


def _most_tokens(seconds: float) -> int:
    """The most tokens a decoding of `seconds` of speech may write."""
    return min(MOST_TOKENS, int(TOKENS_PER_SECOND * seconds) + 16)


def _plain(segment: dict) -> dict:
    """A segment as a transcript keeps it: the decoder's figures were for the guards only."""
    return {key: segment[key] for key in ("start", "end", "text", "words")}
