"""Supervision of a local engine in a child process: start it, talk to it, end it on a deadline.

A recognizer holds the interpreter lock while it decodes: in the worker's own process it would
stall every other thread there (the HTTP API of `transcriber up`, other workers), and a decoder
that hangs could not be stopped. In a child process of its own it does neither harm: two worker
threads really decode in parallel, and a child that stops answering is killed.

The child is audio/recognizer_process.py; the two speak JSON lines over its stdin and stdout,
the window's PCM passing through a file (the protocol is in that module's docstring).
"""

from __future__ import annotations

import itertools
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

from loguru import logger

from audio import children
from audio.children import Child
from audio.decode import BYTES_PER_SECOND
from audio.recognized import Beat, Recognized
from domain.errors import TranscriberError

_engine_keys = itertools.count(1)


class RecognizerError(TranscriberError, code="recognizer_failed"):
    """The recognizer process failed, died or stopped answering: a failed attempt (P4)."""


class IsolatedEngine:
    """A local engine in a child process of its own, one per worker thread.

    The model is loaded once per child. Every exchange has a deadline: a child that stops
    answering is killed, the run fails (and is counted), and the next run gets a new child, as
    does the run after one that died. While it waits the step keeps beating, so a lost claim or
    a stopping worker ends the wait at once (and the child, which would otherwise hold half a
    window).
    """

    START_SECONDS = 180.0  # loading a model on a loaded machine
    BASE_SECONDS = 60.0  # per window, plus PER_AUDIO_SECOND for each second of it
    PER_AUDIO_SECOND = 8.0
    POLL_SECONDS = 0.5

    _swept = False  # stale window folders are swept once per process

    def __init__(self, spec: dict, window_timeout_seconds: float | None = None):
        self.spec = spec
        self.name = spec["label"]
        self.window_timeout_seconds = window_timeout_seconds
        self._key = next(_engine_keys)  # names this engine's child among a thread's children
        if not IsolatedEngine._swept:
            IsolatedEngine._swept = True
            children.sweep_stale_folders()

    # the child of this thread ------------------------------------------------------------------
    def _running_child(self, beat: Beat) -> Child:
        """This thread's child, started (and its model loaded) if there is none alive. It lives
        and dies with this thread (audio.children)."""
        child = children.of_this_thread(self._key)
        if child is not None and child.running():
            return child
        if child is not None:
            self._end_child()
            logger.warning(
                "recognizer process {} had ended (status {}); starting a new one",
                child.process.pid,
                child.process.returncode,
            )
        root = str(Path(__file__).resolve().parent.parent)
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
            "TRANSCRIBER_RECOGNIZER_PARENT": str(os.getpid()),
        }
        folder = children.new_folder()
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", "audio.recognizer_process", json.dumps(self.spec), "--folder", str(folder)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
            )
        except BaseException:
            folder.rmdir()
            raise
        child = Child(process, folder)
        children.hold(self._key, child)
        answer = self._read_answer(child, self.window_timeout_seconds or self.START_SECONDS, beat, "to load its model")
        if "error" in answer:
            self._end_child()
            raise RecognizerError(f"the recognizer could not start: {answer['error']}")
        return child

    def _end_child(self) -> None:
        """Kill this thread's child (if it still runs) and remove its window folder."""
        child = children.of_this_thread(self._key)
        children.hold(self._key, None)
        if child is not None:
            child.close()

    def _read_answer(self, child: Child, timeout: float, beat: Beat, doing: str) -> dict:
        """The child's next JSON line within `timeout` seconds; beats while it waits."""
        deadline = time.monotonic() + timeout
        buffer = child.buffer
        process = child.process
        fd = child.stdout.fileno()
        try:
            while b"\n" not in buffer:
                left = deadline - time.monotonic()
                if left <= 0:
                    logger.warning(
                        "recognizer process {} gave no answer {} within {:g}s; killed", process.pid, doing, timeout
                    )
                    raise RecognizerError(f"the recognizer gave no answer {doing} within {timeout:g}s and was stopped")
                ready, _, _ = select.select([fd], [], [], min(self.POLL_SECONDS, left))
                if ready:
                    data = os.read(fd, 1 << 16)
                    if not data:
                        raise RecognizerError("the recognizer process ended unexpectedly")
                    buffer += data
                else:
                    beat()
        except BaseException:
            self._end_child()  # a child that failed us, or that holds half a window, is not reused
            raise
        line, _, rest = bytes(buffer).partition(b"\n")
        buffer[:] = rest
        return json.loads(line)

    def recognize(
        self,
        pcm: bytes,
        language: str | None,
        beat: Beat = lambda *a: None,
        prompt: str | None = None,
        task: str = "transcribe",
    ) -> Recognized:
        child = self._running_child(beat)
        window = child.folder / "window.pcm"
        window.write_bytes(pcm)
        asked = {"pcm": str(window), "language": language, "prompt": prompt, "task": task}
        request = json.dumps(asked).encode() + b"\n"
        try:
            child.stdin.write(request)  # a small line: never blocks, even on a stopped child
            child.stdin.flush()
        except OSError:
            self._end_child()
            raise RecognizerError("the recognizer process ended unexpectedly") from None
        seconds = len(pcm) / BYTES_PER_SECOND
        timeout = self.window_timeout_seconds or self.BASE_SECONDS + self.PER_AUDIO_SECOND * seconds
        answer = self._read_answer(child, timeout, beat, f"for a {seconds:.0f}s window")
        if "error" in answer:
            raise RecognizerError(answer["error"])
        return Recognized(
            answer["segments"], answer.get("language"), answer.get("language_probability"), answer.get("suppressed", [])
        )

    @property
    def pid(self) -> int | None:
        """The process id of this thread's recognizer child, while one runs."""
        child = children.of_this_thread(self._key)
        return child.process.pid if child is not None and child.running() else None

    def close(self) -> None:
        """End this thread's child (a worker thread that stops)."""
        self._end_child()
