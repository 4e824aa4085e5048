"""How one step run ended, and the signal that stops running steps: shared by every step."""

from __future__ import annotations

import enum
import threading

# Set when the process is stopping: running steps give their claims back at the next beat.
stopping = threading.Event()


class Outcome(enum.StrEnum):
    SAVED = "saved"
    FAILED = "failed"
    HALTED = "halted"
    REFUSED = "refused"  # the claim moved on before the result was written: nothing written (P3)
    LOST = "lost"  # a lease renewal was refused: the step stopped early (P3)
    ABANDONED = "abandoned"  # the worker is stopping: the claim was given back
