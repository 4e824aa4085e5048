"""Speaker embeddings: a CAM++ vector for each window sliding over the speech.

Filter banks are computed once per speech region (kaldi-native-fbank, 80 log-mel bins, 25 ms
frames every 10 ms) and cut into WINDOW_SECONDS windows every SHIFT_SECONDS; each window is
mean-normalised and embedded. A region shorter than a window gives one shorter window; one
shorter than MIN_SECONDS gives none (too little to tell a voice). Windows of full length are
embedded in batches, so the cost is one model call per BATCH windows.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from audio.decode import SAMPLE_RATE
from domain.errors import TranscriberError

MODEL = Path(__file__).with_name("campplus.onnx")
MODEL_SHA256 = "a4c5cf5ecb0a86efad55495697ce16a2a6344e4a3d7a481bfc75958a8dc1cb18"
WINDOW_SECONDS = 1.5
SHIFT_SECONDS = 0.75
MIN_SECONDS = 0.4
BATCH = 8  # windows per model call: larger batches cost more memory, not less CPU
FRAMES_PER_SECOND = 100  # a 10 ms frame shift
DIMENSIONS = 192


class SpeakerModelError(TranscriberError, code="speaker_model_unusable"):
    """The shipped embedding model is missing or is not the file this code was written for."""


@dataclass
class Embeddings:
    """Windows of speech and their unit-length embeddings: `times` is (n, 2) start/end seconds,
    `vectors` (n, DIMENSIONS) float32."""

    times: np.ndarray
    vectors: np.ndarray

    @classmethod
    def empty(cls) -> Embeddings:
        return cls(np.zeros((0, 2), np.float32), np.zeros((0, DIMENSIONS), np.float32))

    @classmethod
    def joined(cls, parts: list[Embeddings]) -> Embeddings:
        parts = [cls.empty(), *parts]
        return cls(np.concatenate([p.times for p in parts]), np.concatenate([p.vectors for p in parts]))

    def __len__(self) -> int:
        return len(self.times)


_session = None
_session_lock = threading.Lock()


def session(threads: int = 1):
    """The process's one inference session, made on first use after the model's hash is checked."""
    global _session
    with _session_lock:
        if _session is None:
            import onnxruntime

            if not MODEL.is_file():
                raise SpeakerModelError(f"{MODEL} is missing")
            digest = hashlib.sha256(MODEL.read_bytes()).hexdigest()
            if digest != MODEL_SHA256:
                raise SpeakerModelError(f"{MODEL.name}: SHA-256 {digest}, expected {MODEL_SHA256}")
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            _session = onnxruntime.InferenceSession(str(MODEL), options, providers=["CPUExecutionProvider"])
        return _session


def filter_banks(samples: np.ndarray) -> np.ndarray:
    """(frames, 80) log-mel filter banks of float samples in [-1, 1]."""
    import kaldi_native_fbank as knf

    options = knf.FbankOptions()
    options.frame_opts.samp_freq = SAMPLE_RATE
    options.frame_opts.dither = 0.0
    options.mel_opts.num_bins = 80
    bank = knf.OnlineFbank(options)
    bank.accept_waveform(SAMPLE_RATE, (samples * 32768.0).astype(np.float32))
    bank.input_finished()
    count = bank.num_frames_ready
    if count == 0:
        return np.zeros((0, 80), np.float32)
    return np.stack([bank.get_frame(i) for i in range(count)]).astype(np.float32)


def embed(samples: np.ndarray, regions: list[tuple[float, float]], offset: float = 0.0, threads: int = 1) -> Embeddings:
    """Embeddings of the windows over `regions` (seconds within `samples`); times are reported
    shifted by `offset`, the recording time at which `samples` begins. Windows are embedded as
    soon as a batch is full, so memory holds one batch of features, not the recording's."""
    width, step = round(WINDOW_SECONDS * FRAMES_PER_SECOND), round(SHIFT_SECONDS * FRAMES_PER_SECOND)
    pending: list[np.ndarray] = []
    pending_times: list[tuple[float, float]] = []
    vectors: list[np.ndarray] = []
    times: list[tuple[float, float]] = []

    def flush() -> None:
        if pending:
            vectors.append(_run(session(threads), np.stack(pending)))
            times.extend(pending_times)
            pending.clear()
            pending_times.clear()

    for start, end in regions:
        if end - start < MIN_SECONDS:
            continue
        features = filter_banks(samples[int(start * SAMPLE_RATE) : int(end * SAMPLE_RATE)])
        frames = len(features)
        if frames < MIN_SECONDS * FRAMES_PER_SECOND:
            continue
        if frames <= width:  # one shorter window: a batch of its own (the model takes any length)
            vectors.append(_run(session(threads), features[None]))
            times.append((start, end))
            continue
        firsts = list(range(0, frames - width + 1, step))
        if firsts[-1] + width < frames:
            firsts.append(frames - width)  # the last window ends with the region
        for first in firsts:
            pending.append(features[first : first + width])
            pending_times.append((start + first / FRAMES_PER_SECOND, start + (first + width) / FRAMES_PER_SECOND))
            if len(pending) == BATCH:
                flush()
    flush()
    if not vectors:
        return Embeddings.empty()
    found = np.array(times, np.float32) + offset
    joined = np.concatenate(vectors)
    order = np.argsort(found[:, 0], kind="stable")
    return Embeddings(found[order], joined[order])


def _run(model, batch: np.ndarray) -> np.ndarray:
    batch = batch - batch.mean(axis=1, keepdims=True)
    out = model.run(None, {"features": batch.astype(np.float32)})[0]
    return (out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-8)).astype(np.float32)
