"""What the actors of one process work with: its settings and its store.

A worker process of `dramatiq actors` loads its settings when it boots (actors.middleware.Boot);
an in-process runner (`transcriber transcribe`, `transcriber up`, a test) hands over the settings
and the store it already has. The store is opened on first use, so a process that never claims
never connects.
"""

from __future__ import annotations

import threading

from db import Store
from service.config import Settings
from service.runtime import open_store

_lock = threading.Lock()
_settings: Settings | None = None
_store: Store | None = None


def use(settings: Settings, store: Store | None = None) -> None:
    """Work with these settings (and this store, else one opened from them when first needed)."""
    global _settings, _store
    with _lock:
        _settings, _store = settings, store


def settings() -> Settings:
    if _settings is None:
        raise RuntimeError("the actors were sent work before their process loaded its settings")
    return _settings


def store() -> Store:
    global _store
    with _lock:
        if _store is None:
            _store = open_store(settings(), max_size=20)
        return _store
