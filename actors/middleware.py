"""The worker process's own hooks on dramatiq: loading the configuration at boot, giving claims
back at shutdown, listening for the database's wake-ups, and one metrics exporter per run."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from dramatiq.middleware import Middleware
from loguru import logger

from actors import context
from actors.wakeups import Wakeups
from actors.work import stopping
from db import DatabaseUnavailable
from db.bounds import bound_thread
from db.database import UNREACHABLE, unreachable
from domain.stages import Step
from service import config, logs, machine_metrics
from service.brokers import BrokerUnavailable, connect
from service.runtime import check_engine, take_up_ended_holders


class Boot(Middleware):
    """Loads and checks the configuration when a `dramatiq actors` process boots: the settings,
    the log sinks, the recognizer's model and the broker's reachability. Anything wrong is one
    line naming the variable, and the process stops (exit status 2) before it takes any work.
    Then the claims of this machine's workers that have ended are made claimable at once.
    Importing the entry module checks none of it, so importing it never exits a process."""

    def __init__(self, configure: Callable[[config.Settings], None]):
        self.configure = configure

    def after_process_boot(self, broker):
        try:
            settings = config.load()
            logs.configure_once(level="INFO", json_path=settings.log_json)
            if settings.broker_url is None:
                # worker processes of their own would wait forever on an in-process broker
                raise config.ConfigError("TRANSCRIBER_BROKER_URL", "`dramatiq actors` needs a redis:// or amqp:// URL")
            check_engine(settings)
            connect(broker, settings.broker_url)
        except (config.ConfigError, BrokerUnavailable) as error:
            # before the process takes work, and maybe before logging is set up: one plain line
            print(f"transcriber: {error}", file=sys.stderr, flush=True)  # noqa: T201
            raise SystemExit(2) from None
        self.configure(settings)
        try:
            take_up_ended_holders(context.store())
        except DatabaseUnavailable as error:  # the claims say it again; the leases run out meanwhile
            logger.warning("could not look for claims of ended workers: {}", error)


class StopSteps(Middleware):
    """On worker shutdown, running steps give their claims back at their next beat (INV-1), and
    each worker thread ends its recognizer child as it stops, so no recognizer outlives its worker."""

    def after_worker_boot(self, broker, worker):
        stopping.clear()

    def before_worker_shutdown(self, broker, worker):
        stopping.set()

    def before_worker_thread_shutdown(self, broker, thread):
        from audio.children import close_thread_children

        close_thread_children()


class MachineMetrics(Middleware):
    """With TRANSCRIBER_METRICS_PORT set, a `dramatiq actors` run starts one exporter process
    (a dramatiq fork) that serves the sum of its worker processes' counters on that one port
    (service.machine_metrics); the first worker process to boot asks the main process for it."""

    @property
    def forks(self):
        from service import metrics

        return [machine_metrics.export] if metrics.SHARED_DIRECTORY is not None else []

    def after_worker_shutdown(self, broker, worker):
        machine_metrics.process_ended(os.getpid())


class ListenForWakeups(Middleware):
    """Each worker process keeps a wake-up listener (actors.wakeups); the one whose listener holds
    the database's forwarder lock feeds the wake-ups to the broker, for every process's actors,
    and the others stand by to take over (db.wakeups). The tick stays the safety net."""

    def __init__(self, wake: Callable[[Step], object]):
        self.wake = wake
        self.wakeups: Wakeups | None = None

    def after_worker_boot(self, broker, worker):
        settings = context.settings()
        from service import metrics

        if settings.metrics_port is not None and metrics.SHARED_DIRECTORY is None:
            metrics.serve_worker_metrics(settings.metrics_port)  # a lone process: its own port
        try:
            url = context.store().db.url
        except Exception as error:  # noqa: BLE001 - the database is away: runs find out; the tick still wakes them
            logger.warning("no wake-up listener in this worker ({}); the tick still runs", type(error).__name__)
            return
        # one forwarder per queue of a real broker; on the in-process broker each process forwards its own
        group = settings.queue if settings.broker_url else None
        self.wakeups = Wakeups(url, self.wake, group).start()

    def before_worker_shutdown(self, broker, worker):
        if self.wakeups is not None:
            self.wakeups.stop()
            self.wakeups = None


class DatabaseReachability(Middleware):
    """Every run of an actor waits for the database no longer than the shortest lease, and an
    unreachable database is one line per change in this process (service.logs.database), not a
    traceback per attempt: dramatiq is told that error is expected of every actor."""

    def after_declare_actor(self, broker, actor):
        actor.options.setdefault("throws", UNREACHABLE)

    def before_process_message(self, broker, message):
        try:
            settings = context.settings()
        except RuntimeError:  # sent work before the settings: the run says so itself
            return
        bound_thread(min(settings.policy(step).lease_seconds for step in Step))

    def after_process_message(self, broker, message, *, result=None, exception=None):
        bound_thread(None)
        if exception is None:
            logs.database.answered()
        elif unreachable(exception):
            logs.database.lost(exception)

    def after_skip_message(self, broker, message):
        bound_thread(None)
