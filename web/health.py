"""A bounded answer to "does the database answer?" for /healthz.

A database that is down, or up but hung (it accepts and never answers), must not hold the
caller: the probe runs on a thread of its own and the caller waits at most `timeout` seconds.
At most one probe is under way at a time; callers meanwhile share its answer, so a hung
database costs one stuck thread and one pooled connection, not one per request.

The caller awaits the probe on the event loop (no worker thread of its own in between): one
hand-off between threads per probe, as many as a plain synchronous endpoint costs.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from concurrent.futures import Future

from db import Database

TIMEOUT_SECONDS = 1.5


class DatabaseProbe:
    def __init__(self, db: Database, timeout: float = TIMEOUT_SECONDS):
        self.db, self.timeout = db, timeout
        self._lock = threading.Lock()
        self._current: Future | None = None
        self._waiting: queue.SimpleQueue[Future] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def _submit(self) -> Future:
        probe: Future = Future()
        self._waiting.put(probe)
        if self._thread is None:  # one long-lived thread: cheap while the database is fine; a
            # daemon, so that a probe stuck on a hung database never holds the process's exit
            self._thread = threading.Thread(target=self._run, name="health-probe", daemon=True)
            self._thread.start()
        return probe

    def _run(self) -> None:
        while True:
            probe = self._waiting.get()
            try:
                ok = self.db.ping(timeout=self.timeout)
            except Exception:  # noqa: BLE001 - whatever the driver raises, the database did not answer
                ok = False
            probe.set_result(ok)

    async def check(self) -> bool:
        """True when the database answered a trivial query within the bound."""
        with self._lock:  # one event loop in the server; the lock is for tests' several loops
            probe = self._current
            if probe is None or probe.done():
                probe = self._current = self._submit()
        try:
            return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(probe)), self.timeout)
        except TimeoutError:
            return False
