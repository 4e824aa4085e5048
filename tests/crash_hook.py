"""Loaded into `dramatiq actors` worker processes by the crash-loop tests
(tests/test_lost_leases.py): the conversion of a record titled `crash-always` kills its own worker
(SIGKILL to the worker's whole process group) every time; one titled `crash-once` does so the first
time only (a marker file in CRASH_HOOK_DIR remembers it). Any other record is converted as usual."""
from __future__ import annotations

import dataclasses
import os
import signal
from pathlib import Path

from actors.work import STEPS
from domain.stages import Step

_convert = STEPS[Step.CONVERT].run


def _crashing_convert(store, record, beat, settings):
    marker = Path(os.environ["CRASH_HOOK_DIR"]) / f"crashed-{record['id']}"
    if record["title"] == "crash-always" or (record["title"] == "crash-once" and not marker.exists()):
        marker.touch()
        os.killpg(os.getpgid(0), signal.SIGKILL)
    return _convert(store, record, beat, settings)


STEPS[Step.CONVERT] = dataclasses.replace(STEPS[Step.CONVERT], run=_crashing_convert)
