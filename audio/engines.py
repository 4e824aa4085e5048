"""The registry of recognition engines: which engine a configuration means, and the one
recognizer each process shares.

Every engine takes one window of PCM (16 kHz mono s16) and gives timed segments with words
(audio.recognized). Every window is recognised from a fresh state: nothing one recording (or one
window) leaves in an engine reaches the next, so the same bytes give the same text whatever ran
before, in any worker. The engines themselves live in audio.whisper, audio.sphinx and
audio.remote; this module is the only place that chooses between them.

Workers reach a local engine through `IsolatedEngine` (audio.isolation), which runs it in a
child process of its own with a deadline on every exchange; the child builds it from `spec`
with `build`. The remote engine speaks HTTP from the worker itself.
"""

from __future__ import annotations

import json
import os
import threading

from loguru import logger

from audio.isolation import IsolatedEngine
from audio.models import resolve
from audio.recognized import Beat, Engine, Recognized
from audio.sphinx import PocketsphinxEngine
from audio.whisper import WhisperEngine, default_compute


def spec(settings) -> dict:
    """What a child process needs to build the configured local engine: plain JSON. Resolving
    the model verifies its files (raises audio.models.ModelError)."""
    if settings.engine == "pocketsphinx":
        return {"engine": "pocketsphinx", "label": "pocketsphinx"}
    models = settings.home / "models"
    return {
        "engine": "faster-whisper",
        "model": resolve(settings.whisper_model, models),
        "device": settings.device,
        "threads": settings.recognizer_threads or os.cpu_count() or 1,
        "download_root": str(models),
        "compute": settings.compute_type,
        "label": f"faster-whisper/{settings.whisper_model}",
    }


def build(spec: dict) -> Engine:
    """The engine a spec describes, in this process."""
    if spec["engine"] == "pocketsphinx":
        return PocketsphinxEngine()
    if spec["engine"] == "faster-whisper":
        return WhisperEngine(
            spec["model"], spec["device"], spec["threads"], spec.get("download_root"), spec.get("compute")
        )
    raise ValueError(f"unknown local engine {spec['engine']!r}")


_RECOGNIZERS: dict[str, RemoteRecognizer | IsolatedEngine] = {}
_RECOGNIZERS_LOCK = threading.Lock()


def engine(settings):
    """The process's recognizer for the configured engine, made once: a local engine runs in a
    child process per worker thread; the remote one speaks HTTP from the worker itself. Its
    `recognize(pcm, language, beat)` recognises one window."""
    key = json.dumps(
        [
            settings.engine,
            settings.whisper_model,
            settings.device,
            str(settings.home),
            settings.openai_base_url,
            settings.recognizer_timeout_seconds,
            settings.recognizer_threads,
            settings.compute_type,
        ]
    )
    with _RECOGNIZERS_LOCK:
        if key not in _RECOGNIZERS:
            if settings.engine == "openai":
                _RECOGNIZERS[key] = RemoteRecognizer(settings)
            else:
                _RECOGNIZERS[key] = IsolatedEngine(spec(settings), settings.recognizer_timeout_seconds)
                if settings.engine == "faster-whisper":
                    logger.info("recognizer {} computes in {}", _RECOGNIZERS[key].name, compute_said(settings))
        return _RECOGNIZERS[key]


def compute_said(settings) -> str:
    """What the local Whisper computes with and why, logged when a process makes its recognizer:
    an operator whose CPU has no VNNI sees why recognition costs float32's CPU, and how to
    trade words for speed."""
    if settings.compute_type:
        return f"{settings.compute_type} (TRANSCRIBER_COMPUTE_TYPE)"
    chosen = default_compute(settings.device)
    if chosen == "float32":
        return (
            "float32 (this CPU has no VNNI, where int8 loses words; TRANSCRIBER_COMPUTE_TYPE=int8 "
            "trades them for about 2.5 times less CPU)"
        )
    return f"{chosen} (the default for this {'CPU' if settings.device == 'cpu' else 'device'})"


class RemoteRecognizer:
    """The remote engine behind the same call as the isolated ones: it beats before and after
    its one request (the HTTP client's own timeout bounds the wait in between)."""

    def __init__(self, settings):
        # Imported here, not above: every recognizer child process imports this module (for
        # `build`) and would otherwise load an HTTP client it never uses (some 16 MB each).
        from audio.remote import OpenAIEngine

        self.remote = OpenAIEngine(settings.openai_base_url, settings.openai_api_key, settings.openai_model)
        self.name = f"openai/{settings.openai_model}"

    def recognize(
        self,
        pcm: bytes,
        language: str | None,
        beat: Beat = lambda *a: None,
        prompt: str | None = None,
        task: str = "transcribe",
    ) -> Recognized:
        beat()
        result = self.remote.recognize(pcm, language, prompt, task)
        beat()
        return result
