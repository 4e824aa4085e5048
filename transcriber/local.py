"""The pipeline inside one process: dramatiq workers on threads and the tick, for `transcribe`
and `up`. The same actors and the same database rules as workers on many machines."""

from __future__ import annotations

import dramatiq

from db import Store
from service.config import Settings


class LocalPipeline:
    def __init__(self, store: Store, settings: Settings, *, threads: int = 2):
        import actors
        from actors.scheduler import start_background
        from service.brokers import connect
        from service.runtime import check_engine, take_up_ended_holders

        check_engine(settings)
        take_up_ended_holders(store)
        connect(actors.broker, settings.broker_url)
        actors.use(settings, store)
        self.worker = dramatiq.Worker(actors.broker, worker_threads=threads, worker_timeout=100)
        self.worker.start()
        self.scheduler = start_background(settings.tick_seconds, settings.audio_retention_seconds)

    def stop(self) -> None:
        """Stop ticking; running steps give their claims back at their next beat (INV-1)."""
        from actors.work import stopping

        self.scheduler.shutdown(wait=False)
        self.worker.stop(timeout=30_000)  # sets `stopping` first (actors.StopSteps)
        stopping.clear()  # nothing of this process is stopping any more
        # a stopped worker leaves its hook on the broker; a later worker in this process needs none
        broker = self.worker.broker
        broker.middleware[:] = [m for m in broker.middleware if getattr(m, "worker", None) is not self.worker]

    def __enter__(self) -> LocalPipeline:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
