"""Opening the service's database from its settings: the configured server or the embedded one."""

from __future__ import annotations

import threading
import time

from db import Database, DatabaseUnavailable, Store
from db.database import embedded_url
from domain import holders
from domain.claims import Claim
from domain.stages import Step
from service.config import Settings


def open_database(settings: Settings, *, max_size: int = 10, migrate: bool = True) -> Database:
    if settings.database_url is None:
        try:
            url = embedded_url(settings.home)
        except Exception as error:  # noqa: BLE001 - whatever stops the embedded server, say it in one line
            raise DatabaseUnavailable(
                f"the embedded database under {settings.home} (TRANSCRIBER_HOME) could not start: "
                f"{type(error).__name__}: {error}"
            ) from None
    else:
        url = settings.database_url
    try:
        db = Database(url, max_size=max_size)
    except DatabaseUnavailable as error:
        where = "TRANSCRIBER_DATABASE_URL" if settings.database_url else "TRANSCRIBER_HOME"
        raise DatabaseUnavailable(f"{error} (check {where})") from None
    if migrate:
        db.migrate()
    return db


_CHECKED_MODELS: set[str] = set()  # the model specs this process has already found loadable


def check_engine(settings: Settings) -> None:
    """Fail at start, naming the variable, when the configured model cannot be used: an unknown
    name, a missing directory, a file that fails its hash or will not load, a name that would
    need a download on a machine with no network (audio.model_check). Checked once per process:
    `transcribe`, `up` and each `dramatiq actors` process, before they accept any work."""
    import json

    from audio.engines import spec
    from audio.model_check import check_loads
    from audio.models import ModelError
    from service.config import ConfigError

    if settings.engine != "faster-whisper":
        return
    try:
        described = spec(settings)
        key = json.dumps(described, sort_keys=True)
        if key not in _CHECKED_MODELS:
            check_loads(described)
            _CHECKED_MODELS.add(key)
    except ModelError as error:
        raise ConfigError("TRANSCRIBER_WHISPER_MODEL", f"{settings.whisper_model}: {error}") from None


def open_store(settings: Settings, *, max_size: int = 10) -> Store:
    return Store(open_database(settings, max_size=max_size))


def take_up_ended_holders(store: Store) -> list[int]:
    """End the leases of the claims held by processes of this machine that have ended (a worker
    killed outright, by an operator or the OOM killer): a worker starting after them takes their
    work up at once instead of after their leases, counting the lost leases as ever. The records
    whose leases were ended."""
    machine = holders.this_machine()
    if machine is None:
        return []
    return [row["record_id"] for row in store.claims_held_on_machine(machine) if end_if_holder_gone(store, row)]


def end_if_holder_gone(store: Store, held: dict) -> bool:
    """End the lease of the claim `held` (record_id, step, claim_token, claim_holder) if its
    holder is known to have ended; whether it was ended now."""
    if not holders.gone(held["claim_holder"]):
        return False
    claim = Claim(held["record_id"], held["claim_token"], Step(held["step"]))
    return store.end_gone_holders_lease(claim, held["claim_holder"])


class EndedHoldersLookout:
    """An idle worker's look for claims whose holders on this machine have ended, at most once
    per `every` seconds in a process. A worker run killed beside live ones (two runs on one
    machine, a `transcribe` beside `up`) leaves records that the live runs then take up at
    their next idle moment, not after the leases. Only an idle worker looks: a busy one could
    not take them up anyway, and the look is one query on the held claims' indexes."""

    def __init__(self, every: float = 30.0):
        self.every = every
        self._next = 0.0
        self._lock = threading.Lock()

    def look(self, store: Store) -> list[int]:
        with self._lock:
            now = time.monotonic()
            if now < self._next:
                return []
            self._next = now + self.every
        return take_up_ended_holders(store)


lookout = EndedHoldersLookout()  # this process's: its idle workers share one look every 30 s
