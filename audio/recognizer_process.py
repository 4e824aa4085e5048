"""The recognizer's own process: `python -m audio.recognizer_process SPEC`.

`audio.isolation.IsolatedEngine` starts one per worker thread and holds it to a deadline; this
side only builds the engine and answers. SPEC is the JSON of `audio.engines.spec`. The process
loads its engine once and says so with one JSON line (`{"ready": true}` or `{"error": …}`).
Then for each request line `{"pcm": PATH, "language": CODE|null}` it recognises the window of
PCM in that file and answers one JSON line: `{"segments": […], "language": …, "suppressed": […]}` or
`{"error": …}`. It ends when its parent closes the pipe (or kills it).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import json
import signal
import sys
from pathlib import Path

from audio.engines import build


def _heap_trimmer():
    """glibc's malloc_trim, where there is one: a window's decoding leaves some 70 MB of freed
    heap that glibc would otherwise keep (and let grow over a long recording); handing it back
    to the system after each window keeps the process at its model's size between windows."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc: nothing to trim
        return None


def _say(answer: dict) -> None:
    sys.stdout.buffer.write(json.dumps(answer).encode() + b"\n")
    sys.stdout.buffer.flush()


def main(spec: dict) -> None:
    # Its parent decides when it ends (closing the pipe, or killing it): a Ctrl-C or SIGTERM
    # meant for the whole process group must not cut a window short under a live step.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        engine = build(spec)
    except Exception as error:  # a model that will not load: the parent reports it
        _say({"error": f"{type(error).__name__}: {error}"})
        return
    _say({"ready": True})
    trim = _heap_trimmer()
    for line in sys.stdin.buffer:
        try:
            request = json.loads(line)
            result = engine.recognize(Path(request["pcm"]).read_bytes(), request.get("language"))
            answer = {"segments": result.segments, "language": result.language,
                      "suppressed": result.suppressed}
        except Exception as error:  # reported to the parent, which counts a failed attempt
            answer = {"error": f"{type(error).__name__}: {error}"}
        if trim is not None:
            trim(0)
        _say(answer)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
