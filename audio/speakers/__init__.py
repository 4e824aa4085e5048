"""Who spoke when: offline speaker diarization on the CPU, from the optional extra `speakers`.

    regions (where there is speech: faster-whisper's Silero VAD) -> embed (a CAM++ embedding
    for each 1.5 s window sliding over the speech) -> cluster (how many speakers, which window
    is whose) -> assign (speaker turns; each word gets the turn it overlaps most, and a
    transcript segment is split where its speaker changes)

The embedding model is an ONNX file shipped in this package (converted once by
scripts/export_speaker_model.py, SHA-256 checked at load; licence in NOTICE) and run with
onnxruntime, which faster-whisper brings. The one extra dependency is kaldi-native-fbank for
the filter-bank features; without it `available()` is False and nothing here is imported.
No torch, no network, no instruction-set assumption beyond what onnxruntime checks itself.
"""

from __future__ import annotations

import importlib.util


def available() -> bool:
    """Whether diarization can run here: the extra's feature library is installed."""
    return importlib.util.find_spec("kaldi_native_fbank") is not None
