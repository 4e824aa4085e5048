"""The lifetime of recognizer child processes: none outlives the thread that started it.

A child holds a whole model in memory (some 150 MB for tiny.en) and a temporary folder for its
windows (`transcriber-window-<pid>-…`). They are ended, and the folder removed, by whichever of
these comes first:

- its thread stops working: a dramatiq worker thread says so (actors.middleware), any thread's
  local state is dropped when it ends and a child held only there is closed with it;
- its worker shuts down, or the process exits normally (`close_all`, also at exit);
- the thread that started it dies by any means, signals and SIGKILL included: the kernel sends
  the child SIGKILL (Linux's parent-death signal, which follows the starting thread), and a
  child that finds its pipe closed ends by itself and removes its folder;
- what even that leaves (parent and child both killed outright) is swept at the next start:
  folders named after a process that no longer exists (`sweep_stale_folders`).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
import weakref
from pathlib import Path

from domain.holders import process

FOLDER_PREFIX = "transcriber-window-"
_OWNER_PID = re.compile(re.escape(FOLDER_PREFIX) + r"(\d+)-")

_alive: weakref.WeakSet = weakref.WeakSet()  # every child of this process still open
_alive_lock = threading.Lock()
_this_thread = threading.local()  # .children: {engine id: Child} of this thread


class Child:
    """One recognizer process and the folder it reads its windows from."""

    def __init__(self, process: subprocess.Popen[bytes], folder: Path):
        if process.stdin is None or process.stdout is None:
            raise ValueError("a recognizer process talks through pipes on its standard input and output")
        self.process, self.folder = process, folder
        self.stdin, self.stdout = process.stdin, process.stdout
        self.buffer = bytearray()  # what the child has written that is not yet a whole line
        self._closed = False
        with _alive_lock:
            _alive.add(self)

    def running(self) -> bool:
        return not self._closed and self.process.poll() is None and not _ending(self.process.pid)

    def close(self) -> None:
        """Kill the process (if it still runs) and remove its folder; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        process = self.process
        if process.poll() is None:
            process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):  # unkillable (stuck in the kernel): nothing more to do
            process.wait(timeout=30)
        for stream in (process.stdin, process.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        shutil.rmtree(self.folder, ignore_errors=True)

    def __del__(self):  # the thread that held it ended: nothing else may use it
        self.close()


def new_folder() -> Path:
    """A window folder named after this process, so a later start can tell a stale one."""
    return Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-"))


def of_this_thread(engine_id: int) -> Child | None:
    return getattr(_this_thread, "children", {}).get(engine_id)


def hold(engine_id: int, child: Child | None) -> None:
    """Make `child` this thread's child for the engine (None: it has none)."""
    children = _this_thread.__dict__.setdefault("children", {})
    if child is None:
        children.pop(engine_id, None)
    else:
        children[engine_id] = child


def close_thread_children() -> None:
    """End every child this thread started (a worker thread that stops)."""
    children = getattr(_this_thread, "children", {})
    for child in list(children.values()):
        child.close()
    children.clear()


def close_all() -> None:
    """End every child of this process (a worker that shuts down, a process that exits)."""
    with _alive_lock:
        children = list(_alive)
    for child in children:
        child.close()


def open_children() -> int:
    """How many children of this process are still open."""
    with _alive_lock:
        return sum(1 for child in _alive if child.running())


def _ending(pid: int) -> bool:
    """Whether the child has ended though poll() does not say so yet: a child taken for alive
    then would be handed a window only to fail the run (domain.holders.process tells; where
    there is no /proc, poll() is the only word)."""
    found = process(pid)
    return found[0] if found is not None else os.path.isdir("/proc/self")


def _alive_pid(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def sweep_stale_folders() -> int:
    """Remove window folders whose process no longer exists; how many were removed."""
    removed = 0
    for folder in Path(tempfile.gettempdir()).glob(FOLDER_PREFIX + "*"):
        found = _OWNER_PID.match(folder.name)
        if found and not _alive_pid(int(found.group(1))):
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed


atexit.register(close_all)
