"""A bounded answer to "does the database answer?" for /healthz.

A database that is down, or up but hung (it accepts and never answers), must not hold the
caller: the probe runs on a thread of its own and the caller waits at most `timeout` seconds.
At most one probe is under way at a time; callers meanwhile share its answer, so a hung
database costs one stuck thread and one pooled connection, not one per request.
"""
from __future__ import annotations

import queue
import threading

from db import Database

TIMEOUT_SECONDS = 1.5


class Probe:
    def __init__(self):
        self.done = threading.Event()
        self.ok = False


class DatabaseProbe:
    def __init__(self, db: Database, timeout: float = TIMEOUT_SECONDS):
        self.db, self.timeout = db, timeout
        self._lock = threading.Lock()
        self._current: Probe | None = None
        self._waiting: queue.SimpleQueue[Probe] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def check(self) -> bool:
        """True when the database answered a trivial query within the bound."""
        with self._lock:
            probe = self._current
            if probe is None or probe.done.is_set():
                probe = self._current = Probe()
                self._waiting.put(probe)
                if self._thread is None:  # one long-lived thread: cheap while the database is fine
                    self._thread = threading.Thread(target=self._run, name="health-probe", daemon=True)
                    self._thread.start()
        return probe.done.wait(self.timeout) and probe.ok

    def _run(self) -> None:
        while True:
            probe = self._waiting.get()
            try:
                probe.ok = self.db.ping(timeout=self.timeout)
            except Exception:  # whatever the driver raises, the database did not answer
                probe.ok = False
            finally:
                probe.done.set()
