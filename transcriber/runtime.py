"""Opening the service's database from its settings: the configured server or the embedded one."""
from __future__ import annotations

from db import Database, Store
from db.database import embedded_url
from transcriber.config import Settings


def open_database(settings: Settings, *, max_size: int = 10, migrate: bool = True) -> Database:
    url = settings.database_url or embedded_url(settings.home)
    db = Database(url, max_size=max_size)
    if migrate:
        db.migrate()
    return db


def open_store(settings: Settings, *, max_size: int = 10) -> Store:
    return Store(open_database(settings, max_size=max_size))
