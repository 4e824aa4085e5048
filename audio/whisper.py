"""The Whisper engine: faster-whisper (CTranslate2), decoding made deterministic.

Every window is decoded from a fresh state at temperature 0, with no sampling fallback, no VAD
filter and no conditioning on a previous window's text: the same bytes give the same text
whatever ran before, in any worker. What Whisper's sampling fallback was for, a window stuck
in a loop, is handled by the text guards (audio.guards) instead.
"""
from __future__ import annotations

from audio.guards import cut_repeats, loops
from audio.recognized import Recognized, rounded_seconds


class WhisperEngine:
    """faster-whisper (CTranslate2): int8 on CPU, float16 on CUDA; beam search at temperature 0
    only, each window on its own (no conditioning on a previous window's text).

    A window whose text loops (`loops`: it compresses better than LOOP_COMPRESSION, Whisper's
    own test) is decoded again with repeated 4-grams forbidden, and if that text still loops,
    its repeated tail is cut (`cut_repeats`).
    """

    name = "faster-whisper"
    OPTIONS = dict(beam_size=5, temperature=0.0, vad_filter=False, condition_on_previous_text=False,
                   word_timestamps=True)
    RETRY_OPTIONS = dict(no_repeat_ngram_size=4)  # what the second decoding of a looping window adds

    def __init__(self, model: str, device: str = "cpu", threads: int = 0, download_root: str | None = None):
        from faster_whisper import WhisperModel  # loaded only where this engine is built: it is heavy

        compute = "int8" if device == "cpu" else "float16"
        self.model = WhisperModel(model, device=device, compute_type=compute, cpu_threads=threads,
                                  download_root=download_root)

    def recognize(self, pcm: bytes, language: str | None, prompt: str | None = None) -> Recognized:
        """`prompt`, the owner's words (names, jargon), is Whisper's initial prompt for this
        window, the same for every window of a record: never the previous window's text."""
        import numpy as np

        audio = np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768.0
        prompted = {"initial_prompt": prompt} if prompt else {}
        result = self._decode(audio, language, **prompted)
        if loops(result.segments):
            result = self._decode(audio, language, **prompted, **self.RETRY_OPTIONS)
            if loops(result.segments):
                result.segments = cut_repeats(result.segments)
        return result

    def _decode(self, audio, language: str | None, **extra) -> Recognized:
        pieces, info = self.model.transcribe(audio, language=language, **{**self.OPTIONS, **extra})
        segments = []
        for piece in pieces:
            text = piece.text.strip()
            if not text:
                continue
            words = [{"word": w.word.strip(), "start": rounded_seconds(w.start), "end": rounded_seconds(w.end)}
                     for w in (piece.words or []) if w.word.strip()]
            segments.append({"start": rounded_seconds(piece.start), "end": rounded_seconds(piece.end),
                             "text": text, "words": words})
        detected = round(float(info.language_probability), 4) if language is None else None
        return Recognized(segments, info.language, detected)
