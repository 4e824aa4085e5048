"""The model check a recognising process makes once, when it starts: can the configured model
be loaded at all?

Without it a model that cannot load (an unknown name, a damaged file, weights that would have
to be downloaded on a machine with no network) was found out by the first record, which then
failed and was retried until it halted, and so would every record after it. Here the model
is loaded once, in a child process like the recognizer's own (a damaged file can crash the
loader, never the service), and a failure is one reason a person can act on.

Bundled weights are not loaded: every one of their files has just passed its pinned SHA-256
(audio.models), which says more than a trial load would, and costs no second of start-up.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from audio.models import BUNDLED, ModelError

HUB_HOST = "huggingface.co"  # where faster-whisper downloads its named models from
CHECK_SECONDS = 600.0  # a first download of a large model over a slow line


def preflight(spec: dict) -> None:
    """In the checking child, before the model is built: a name that faster-whisper would
    download is known to it, and is either in the download cache already or the hub can be
    reached. Raises ModelError with the reason."""
    model = spec.get("model")
    if spec.get("engine") != "faster-whisper" or model is None or Path(model).is_dir():
        return
    from faster_whisper.utils import available_models, download_model

    if "/" not in model and model not in available_models():
        known = ", ".join(sorted(set(BUNDLED) | set(available_models())))
        raise ModelError(f"unknown model name; use a CTranslate2 model directory or one of: {known}")
    try:
        download_model(model, local_files_only=True, cache_dir=spec.get("download_root"))
        return  # downloaded before: no network needed
    except Exception:  # noqa: BLE001 - not in the cache, whatever the hub library calls that
        pass
    try:
        with socket.create_connection((HUB_HOST, 443), timeout=5):
            pass
    except OSError as error:
        raise ModelError(
            f"it is not on this machine and would be downloaded from {HUB_HOST}, which cannot "
            f"be reached (no network: {error.strerror or error}); use tiny.en or base (installed "
            "with the package) or a CTranslate2 model directory"
        ) from None


def check_loads(spec: dict, timeout: float = CHECK_SECONDS) -> None:
    """Load the model `spec` describes once, in a child process, and end it; ModelError with
    the loader's reason when it cannot. Bundled weights, verified by their hashes, pass as
    they are."""
    if spec.get("engine") != "faster-whisper" or _is_bundled(spec):
        return
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    try:
        run = subprocess.run(
            [sys.executable, "-m", "audio.recognizer_process", json.dumps(spec), "--check"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=env,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise ModelError(f"the model did not load within {timeout:g}s") from None
    first = run.stdout.split(b"\n", 1)[0]
    try:
        answer = json.loads(first)
    except ValueError:
        answer = {"error": f"the loader ended with status {run.returncode} before it said a word"}
    if "error" in answer:
        said = answer["error"]
        raise ModelError(said if answer.get("reason") == "model" else f"it cannot be loaded: {said}")


def _is_bundled(spec: dict) -> bool:
    """Whether the spec's model is a bundled one, assembled (and hash-checked) by audio.models."""
    label = spec.get("label", "")
    return label.startswith("faster-whisper/") and label.split("/", 1)[1] in BUNDLED
