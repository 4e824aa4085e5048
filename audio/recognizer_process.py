"""The recognizer's own process: `python -m audio.recognizer_process ENGINE`.

Reads recordings from stdin as length-prefixed PCM frames (an empty frame ends a recording),
writes one JSON line per recording to stdout: the text and segments, or an error. It loads
the model once and serves recordings until its parent closes the pipe.
"""
from __future__ import annotations

import json
import signal
import sys

from audio.engines import make, read_frame


def main(name: str) -> None:
    # Its parent decides when it ends (closing the pipe, or killing it): a Ctrl-C or SIGTERM
    # meant for the whole process group must not cut a recording short under a live step.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    recognizer = make(name)
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    ended = False

    def recording():
        nonlocal ended
        while True:
            frame = read_frame(source)
            if frame is None:
                ended = True
                return
            if not frame:
                return
            yield frame

    while not ended:
        try:
            result = recognizer.transcribe(recording(), lambda seconds: None)
            answer = {"text": result.text, "segments": result.segments}
        except Exception as error:  # reported to the parent, which counts a failed attempt
            answer = {"error": f"{type(error).__name__}: {error}"}
        if ended:
            return
        sink.write(json.dumps(answer).encode() + b"\n")
        sink.flush()


if __name__ == "__main__":
    main(sys.argv[1])
