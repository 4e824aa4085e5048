"""A model that cannot load stops the start, not every record.

Each recognising process (`transcriber transcribe`, `transcriber up`, `dramatiq actors`) checks
the configured model once when it starts; a bad one is one line naming
TRANSCRIBER_WHISPER_MODEL and the reason, exit status 2, and nothing is accepted.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from media import encode


def _corrupt_model(tmp_path: Path) -> Path:
    """A CTranslate2 directory with every file of tiny.en but a model.bin that is not one."""
    from audio.models import resolve

    real = Path(resolve("tiny.en", tmp_path / "cache"))
    folder = tmp_path / "corrupt-model"
    folder.mkdir()
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        shutil.copy(real / name, folder / name)
    (folder / "model.bin").write_bytes(b"this is not a model" * 1000)
    return folder


def _one_line(run: subprocess.CompletedProcess, *words: str) -> None:
    line = run.stderr.strip()
    assert run.returncode == 2, run.stderr
    assert "\n" not in line and "TRANSCRIBER_WHISPER_MODEL" in line, line
    for word in words:
        assert word in line, line


@pytest.mark.parametrize("model, words", [
    ("no-such-model", ("no-such-model", "unknown model name")),
    ("{tmp}/nowhere", ("no such model directory",)),
    ("{corrupt}", ("cannot be loaded",)),
])
def test_a_bad_model_stops_transcribe_before_anything_is_accepted(model, words, store, env, tmp_path):
    """A missing name, a missing directory and a directory with a corrupt model.bin
    each stop `transcriber transcribe` with one line naming TRANSCRIBER_WHISPER_MODEL and why,
    exit status 2, and no record is accepted."""
    model = model.format(tmp=tmp_path, corrupt=_corrupt_model(tmp_path) if "corrupt" in model else "")
    run = subprocess.run([sys.executable, "-m", "transcriber.cli", "transcribe", str(encode(tmp_path / "a.wav"))],
                         env={**env, "TRANSCRIBER_WHISPER_MODEL": model}, capture_output=True, text=True,
                         timeout=300)
    _one_line(run, *words)
    assert store.status() == []  # nothing was accepted


def test_a_corrupt_model_stops_up_and_dramatiq_actors(tmp_path, env):
    """`transcriber up` and a `dramatiq actors` worker with a corrupt model.bin stop
    at start with the one line and exit status 2 (the worker takes no message)."""
    bad = {**env, "TRANSCRIBER_WHISPER_MODEL": str(_corrupt_model(tmp_path))}
    up = subprocess.run([sys.executable, "-m", "transcriber.cli", "up", "--port", "0"], env=bad,
                        capture_output=True, text=True, timeout=300)
    _one_line(up, "cannot be loaded")
    assert "is up at" not in up.stdout
    worker = subprocess.run([sys.executable, "-m", "dramatiq", "actors", "--processes", "1", "--threads", "1"],
                            env={**bad, "TRANSCRIBER_BROKER_URL": "redis://127.0.0.1:6379/0"}, cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert worker.returncode != 0
    said = [line for line in worker.stderr.splitlines() if "TRANSCRIBER_WHISPER_MODEL" in line]
    assert len(said) == 1 and "cannot be loaded" in said[0], worker.stderr


def test_a_name_that_needs_a_download_says_there_is_no_network(tmp_path, monkeypatch):
    """A model name faster-whisper would download, on a machine that cannot reach the
    hub, is refused at start saying so (the hub's address made unreachable here)."""
    from audio import model_check
    from audio.models import ModelError

    monkeypatch.setattr(model_check, "HUB_HOST", "hub.invalid")
    with pytest.raises(ModelError, match="no network"):
        model_check.preflight({"engine": "faster-whisper", "model": "small", "download_root": str(tmp_path)})
    with pytest.raises(ModelError, match="unknown model name"):
        model_check.preflight({"engine": "faster-whisper", "model": "tiny.en.typo", "download_root": str(tmp_path)})


@pytest.mark.parametrize("cap, compute_type, said", [
    ({"ONEDNN_MAX_CPU_ISA": "AVX2"}, "auto", "float32 (this CPU has no VNNI, where int8 loses words; "
                                           "TRANSCRIBER_COMPUTE_TYPE=int8"),
    ({"ONEDNN_MAX_CPU_ISA": "AVX2"}, "int8", "int8 (TRANSCRIBER_COMPUTE_TYPE)"),
])
def test_a_process_says_what_its_recognizer_computes_in_and_why(cap, compute_type, said, monkeypatch):
    """A process logs, once, when it makes its recognizer, what the model computes
    in and why: on a CPU without VNNI (here its kernels held to AVX2) float32 and how to trade
    words for speed; an owner's TRANSCRIBER_COMPUTE_TYPE as set. (Not at the start: a start that
    fails, say on an unreachable broker, says so in one line.)"""
    from loguru import logger

    from audio import engines
    from conftest import settings

    for name, value in cap.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(engines, "_RECOGNIZERS", {})  # as in a process that has made none yet
    lines: list[str] = []
    sink = logger.add(lambda message: lines.append(message.record["message"]), level="INFO")
    try:
        engines.engine(settings(compute_type=compute_type))
        engines.engine(settings(compute_type=compute_type))  # once per process
    finally:
        logger.remove(sink)
    said_lines = [line for line in lines if "computes in" in line]
    assert len(said_lines) == 1 and "faster-whisper/tiny.en" in said_lines[0], lines
    assert said in said_lines[0], said_lines
