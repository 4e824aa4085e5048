"""One metrics port per `dramatiq actors` run, whatever its number of worker processes.

dramatiq runs P worker processes under one main process. When TRANSCRIBER_METRICS_PORT is set,
each worker process keeps its counters in prometheus_client's multiprocess files (memory-mapped,
one file per process and metric type) in a directory private to its run, and one extra process
of the run (a dramatiq "fork", started by the main process once the workers are up) serves the
sum of all those files on that one port. Counters and histograms so add up over the processes.

The run's directory is named after the main process (its pid and its start time, so a reused pid
never inherits an old run's counts): every process of the run finds it as its parent's. The
exporter removes it when the run stops and, at start, removes those of runs whose main process
is gone (a run killed outright leaves its directory behind).

Nothing here applies to the API (`transcriber serve`/`up`): it serves its own registry at
GET /metrics, as before.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

from loguru import logger

PORT_VARIABLE = "TRANSCRIBER_METRICS_PORT"
PREFIX = "transcriber-metrics-"


def _stat(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command's name (Linux); [] where it cannot be read."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _started(pid: int) -> str:
    """The process's start time in clock ticks since boot, '' where it cannot be read."""
    fields = _stat(pid)
    return fields[19] if fields else ""


def _siblings(parent: int) -> list[int]:
    """The other live children of `parent` (the run's main process): its worker processes."""
    parent_pid, me = str(parent), os.getpid()
    return [
        int(entry.name)
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit()
        and int(entry.name) != me
        and (fields := _stat(int(entry.name)))
        and fields[1] == parent_pid
        and fields[0] != "Z"
    ]


def run_directory(main_pid: int | None = None) -> Path:
    """The multiprocess directory of the `dramatiq actors` run whose main process is `main_pid`
    (by default this process's parent)."""
    pid = os.getppid() if main_pid is None else main_pid
    return Path(tempfile.gettempdir()) / f"{PREFIX}{pid}-{_started(pid)}"


def _in_a_dramatiq_worker() -> bool:
    """This is a worker process of the `dramatiq actors` command (a child of its main process)."""
    return multiprocessing.parent_process() is not None and "dramatiq.cli" in sys.modules


def share_across_processes() -> Path | None:
    """Switch prometheus_client to multiprocess files when this is a worker process of a
    `dramatiq actors` run with TRANSCRIBER_METRICS_PORT set. Must run before any metric is
    made (service.metrics calls it first); returns the directory, or None for a lone process."""
    if not os.environ.get(PORT_VARIABLE) or not _in_a_dramatiq_worker():
        return None
    from prometheus_client import values

    directory = run_directory()
    directory.mkdir(exist_ok=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(directory)
    values.ValueClass = values.get_value_class()  # prometheus_client read the variable at import
    return directory


def process_ended(pid: int) -> None:
    """A worker process stops: its files stay (its counts still count), its live gauges go."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale_runs() -> None:
    """Remove the directories of runs whose main process is gone (killed without a clean stop)."""
    for directory in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        pid, _, started = directory.name[len(PREFIX) :].partition("-")
        if pid.isdigit() and (not _alive(int(pid)) or _started(int(pid)) != started):
            shutil.rmtree(directory, ignore_errors=True)


def serve(first_port: int, registry, tries: int = 64) -> int | None:
    """Serve `registry` on the first free port from `first_port` on; the port, or None."""
    from prometheus_client import start_http_server

    for port in range(first_port, first_port + tries):
        try:
            start_http_server(port, addr="0.0.0.0", registry=registry)
        except OSError:
            continue
        logger.info("worker metrics at http://0.0.0.0:{}/metrics", port)
        return port
    logger.warning("no free port for worker metrics from {} on; none served", first_port)
    return None


def export() -> int:
    """The run's exporter (a dramatiq fork process): the sum of every worker process's files on
    TRANSCRIBER_METRICS_PORT, until the run stops; then the run's directory goes."""
    from prometheus_client import CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    main = os.getppid()
    directory = run_directory(main)
    directory.mkdir(exist_ok=True)
    sweep_stale_runs()
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))
    # dramatiq's own handler exits at a second SIGTERM, and one comes whenever the whole process
    # group is signalled (the main process passes the signal on): it could cut the removal below
    # in half, leaving the directory and exit status 1. Any number of stop signals here just stop.
    stop = threading.Event()
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), lambda *_: stop.set())
    if serve(int(os.environ[PORT_VARIABLE]), registry) is None:
        return 0
    while not stop.wait(1.0):  # a wait with a timeout: the signal handlers run between the waits
        pass
    _remove_after_the_workers(directory, main)
    return 0


def _remove_after_the_workers(directory: Path, main: int, seconds: float = 30.0) -> None:
    """Remove the run's directory once its worker processes are gone: they stop at the same
    signal, and one still stopping may write a file into it (a count of its last moments), which
    would leave the directory behind after a removal that ran first."""
    deadline = time.monotonic() + seconds
    while _siblings(main) and time.monotonic() < deadline:
        time.sleep(0.2)
    shutil.rmtree(directory, ignore_errors=True)
