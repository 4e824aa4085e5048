"""The recognizer's own process: `python -m audio.recognizer_process SPEC`.

`audio.isolation.IsolatedEngine` starts one per worker thread and holds it to a deadline; this
side only builds the engine and answers. SPEC is the JSON of `audio.engines.spec`. The process
loads its engine once and says so with one JSON line (`{"ready": true}` or `{"error": …}`).
Then for each request line `{"pcm": PATH, "language": CODE|null, "prompt": TEXT|null, "task":
"transcribe"|"translate"}` it recognises (or translates) the window of PCM in that file and
answers one JSON line: `{"segments": […], "language": …, "suppressed": […]}` or `{"error": …}`.
It ends when its parent closes the pipe (or kills it).

With `--folder PATH` after SPEC, PATH is the folder its parent writes windows to: the child
removes it when it ends. It never outlives the parent thread that started it (audio.children).
With `--check` after SPEC it only loads the model (audio.model_check), says whether it could,
and ends.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import shutil
import signal
import sys
from pathlib import Path

from audio.engines import build
from audio.model_check import preflight
from audio.models import ModelError


def _heap_trimmer():
    """glibc's malloc_trim, where there is one: a window's decoding leaves some 70 MB of freed
    heap that glibc would otherwise keep (and let grow over a long recording); handing it back
    to the system after each window keeps the process at its model's size between windows."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc: nothing to trim
        return None


def _die_with_parent_thread() -> None:
    """Linux's parent-death signal: SIGKILL when the thread that started this process ends, by
    whatever means (its worker stopping, a signal, SIGKILL of the whole service). A parent that
    is gone already (it died before this line) ends the process here."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the closed pipe still ends it, after its window
        pass
    parent = os.environ.get("TRANSCRIBER_RECOGNIZER_PARENT")
    if parent and os.getppid() != int(parent):
        sys.exit(0)


def _say(answer: dict) -> None:
    sys.stdout.buffer.write(json.dumps(answer).encode() + b"\n")
    sys.stdout.buffer.flush()


def main(spec: dict, check: bool = False, folder: str | None = None) -> None:
    _die_with_parent_thread()
    try:
        _serve(spec, check)
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def _serve(spec: dict, check: bool) -> None:
    # Its parent decides when it ends (closing the pipe, or killing it): a Ctrl-C or SIGTERM
    # meant for the whole process group must not cut a window short under a live step.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        if check:
            preflight(spec)
        engine = build(spec)
    except ModelError as error:  # already said in words a person can act on
        _say({"error": str(error), "reason": "model"})
        return
    except Exception as error:  # noqa: BLE001 - a model that will not load: the parent reports it
        _say({"error": f"{type(error).__name__}: {error}"})
        return
    _say({"ready": True})
    if check:
        return
    trim = _heap_trimmer()
    for line in sys.stdin.buffer:
        try:
            request = json.loads(line)
            result = engine.recognize(
                Path(request["pcm"]).read_bytes(),
                request.get("language"),
                request.get("prompt"),
                request.get("task") or "transcribe",
            )
            answer = {
                "segments": result.segments,
                "language": result.language,
                "language_probability": result.language_probability,
                "suppressed": result.suppressed,
            }
        except Exception as error:  # noqa: BLE001 - reported to the parent, which counts a failed attempt
            answer = {"error": f"{type(error).__name__}: {error}"}
        if trim is not None:
            trim(0)
        _say(answer)


if __name__ == "__main__":
    options = sys.argv[2:]
    main(
        json.loads(sys.argv[1]),
        check="--check" in options,
        folder=options[options.index("--folder") + 1] if "--folder" in options else None,
    )
