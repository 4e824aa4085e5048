"""What `transcriber watch` sees of its folder: which files changed (heard through inotify where
the system has it, else found by a scan every `poll_seconds`), and which of them have stopped
growing (`Settling`). A folder that vanishes or cannot be read is said in one line, looked for
every second, and watched again when it is back."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from loguru import logger

from audio.formats import FORMATS
from transcriber import inotify

# the suffixes of what the watcher writes beside a file: never taken for a recording
RESULT_SUFFIXES = tuple(f".{fmt}" for fmt in FORMATS)
TEMPORARY_SUFFIX = ".watch-tmp"
LOOK_AGAIN_SECONDS = 1.0  # how often a folder that is gone is looked for
STALE_TEMPORARY_SECONDS = 600.0
RESCAN_SECONDS = 300.0  # inotify's safety net: a whole scan now and then (an event lost, a watch refused)

Stat = tuple[int, int]  # size in bytes, mtime in nanoseconds


def candidate(name: str) -> bool:
    """Whether a file of this name may be a recording: not hidden (a temporary file of the
    watcher's or of a program still writing), not a result of the watcher's."""
    return not name.startswith(".") and not name.endswith(RESULT_SUFFIXES) and not name.endswith(TEMPORARY_SUFFIX)


def stat_of(path: str) -> Stat | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (found.st_size, found.st_mtime_ns) if os.path.isfile(path) else None


def _drop_if_stale(entry: os.DirEntry) -> None:
    """A result's temporary file a killed watcher left: removed once surely no one writes it."""
    try:
        if time.time() - entry.stat().st_mtime > STALE_TEMPORARY_SECONDS:
            os.unlink(entry.path)
    except OSError:
        pass


@dataclass
class Settling:
    """The files seen changing, until each has kept its size and mtime for `settle_seconds`; and
    the files dealt with as they were then, so that a file is taken again only once it changes."""

    settle_seconds: float
    pending: dict[str, tuple[Stat, float]] = field(default_factory=dict)  # path: stat, since when
    handled: dict[str, Stat] = field(default_factory=dict)

    def note(self, path: str, stat: Stat | None, now: float) -> None:
        if stat is None:
            self.pending.pop(path, None)
            self.handled.pop(path, None)
        elif self.handled.get(path) != stat and self.pending.get(path, (None, 0.0))[0] != stat:
            self.pending[path] = (stat, now)

    def refresh(self, now: float) -> None:
        """Stat the pending files again (no events tell their writes when polling): a write is
        seen within a tick, not at the settle interval's end."""
        for path in list(self.pending):
            self.note(path, stat_of(path), now)

    def settled(self, now: float) -> Iterator[tuple[str, Stat]]:
        """The pending files unchanged for the settle interval, stat'ed once more to be sure."""
        for path, (stat, since) in list(self.pending.items()):
            if now - since < self.settle_seconds:
                continue
            again = stat_of(path)
            if again != stat:
                self.note(path, again, now)
                continue
            del self.pending[path]
            yield path, stat

    def done(self, path: str, stat: Stat) -> None:
        self.handled[path] = stat

    def later(self, path: str, stat: Stat, now: float) -> None:
        """Try the file again after another settle interval (the database was away, say)."""
        self.pending[path] = (stat, now)


class Folder:
    """The watched folder (with `recursive`, its subfolders too): `changes` answers the files
    that may have changed, each with its stat (None: gone)."""

    def __init__(self, root: Path, *, recursive: bool, poll: bool, poll_seconds: float):
        self.root = os.path.abspath(root)
        self.recursive = recursive
        self.poll_seconds = poll_seconds
        self.notify: inotify.Inotify | None = None
        if not poll:
            try:
                self.notify = inotify.Inotify()
            except OSError as error:
                logger.warning("no inotify here ({}); the folder is scanned every {} s", error, poll_seconds)
        self.watches: dict[int, str] = {}
        self.present = False
        self._absent_told = False  # the folder's absence was said: its return is said too
        self.snapshot: dict[str, Stat] = {}
        self.folder_mtimes: dict[str, int] = {}  # each folder's own mtime at the last scan (polling)
        self._next_scan = 0.0

    @property
    def how(self) -> str:
        return "inotify" if self.notify is not None else f"a scan every {self.poll_seconds:g} s"

    def changes(self, timeout: float) -> dict[str, Stat | None]:
        """The files that may have changed since the last call, within about `timeout` seconds."""
        now = time.monotonic()
        if not self.present and now < self._next_scan:
            time.sleep(min(timeout, self._next_scan - now))  # a folder gone is looked for each second
            return {}
        if not self.present or now >= self._next_scan:
            return self._scan_now(now)
        if self.notify is None:
            if self._folders_changed():
                return self._scan_now(now)
            time.sleep(max(0.0, min(timeout, self._next_scan - now)))
            return {}
        changed: dict[str, Stat | None] = {}
        for event in self.notify.read(timeout):
            if event.mask & inotify.IN_Q_OVERFLOW:
                self._next_scan = 0.0  # events were lost: a whole scan says what changed
                continue
            folder = self.watches.get(event.watch)
            if folder is None:
                continue
            if event.mask & (inotify.IN_DELETE_SELF | inotify.IN_MOVE_SELF | inotify.IN_IGNORED):
                self._lost_watch(event.watch, folder)
                continue
            path = os.path.join(folder, event.name)
            if event.mask & inotify.IN_ISDIR:
                if self.recursive and event.mask & (inotify.IN_CREATE | inotify.IN_MOVED_TO):
                    changed.update(self._walk(path))  # files made before its watch was in place
                continue
            if candidate(event.name):
                changed[path] = stat_of(path)
        return changed

    def _lost_watch(self, watch: int, folder: str) -> None:
        """A watched folder went (deleted, or moved: the kernel still watches it where it went).
        For the folder itself a whole scan decides at once: gone, or back already (the kernel
        gives the same watch to a folder moved back, and its move's event may come after)."""
        del self.watches[watch]
        if self.notify is not None:
            self.notify.remove(watch)
        if folder == self.root:
            self._next_scan = 0.0

    def _gone(self, why: str) -> None:
        if not self._absent_told:
            logger.warning("watched folder {}; watching for it to come back", why)
            self._absent_told = True
        self.present = False
        if self.notify is not None:
            for watch in self.watches:
                self.notify.remove(watch)
        self.watches.clear()
        self._next_scan = time.monotonic() + LOOK_AGAIN_SECONDS

    def _scan_now(self, now: float) -> dict[str, Stat | None]:
        """A whole scan: the files new, changed or gone since the last one."""
        self.folder_mtimes.clear()
        try:
            found = self._walk(self.root)
        except OSError as error:
            why = f"{self.root} is gone" if not os.path.exists(self.root) else f"{self.root} cannot be read ({error})"
            self._gone(why)
            self._next_scan = now + LOOK_AGAIN_SECONDS
            gone: dict[str, Stat | None] = dict.fromkeys(self.snapshot)  # forgotten: looked at anew once back
            self.snapshot = {}
            return gone
        if self._absent_told:
            logger.warning("watched folder {} is back; watching it with {}", self.root, self.how)
            self._absent_told = False
        self.present = True
        changed: dict[str, Stat | None] = {p: None for p in self.snapshot if p not in found}
        changed.update({p: s for p, s in found.items() if self.snapshot.get(p) != s})
        self.snapshot = {p: s for p, s in found.items() if s is not None}
        self._next_scan = now + (RESCAN_SECONDS if self.notify is not None else self.poll_seconds)
        return changed

    def _folders_changed(self) -> bool:
        """Whether a folder's own mtime moved since the last scan (an entry made, moved or
        removed): a new file is then found at the next tick, not at the next whole scan; a file
        written in place is found by the whole scans alone."""
        for folder, mtime in self.folder_mtimes.items():
            try:
                if os.stat(folder).st_mtime_ns != mtime:
                    return True
            except OSError:
                return True
        return False

    def _walk(self, top: str) -> dict[str, Stat | None]:
        """The candidate files under `top` with their stats, watching each folder met (inotify)."""
        found: dict[str, Stat | None] = {}
        folders = [top]
        while folders:
            folder = folders.pop()
            if folder == self.root and not os.path.isdir(folder):
                raise NotADirectoryError(f"not a folder: {folder}")
            with contextlib.suppress(OSError):  # taken before the listing: a change during it is seen
                self.folder_mtimes[folder] = os.stat(folder).st_mtime_ns
            if self.notify is not None and folder not in self.watches.values():
                try:
                    self.watches[self.notify.add(folder)] = folder
                except OSError as error:
                    logger.warning("cannot watch {} ({}); it is scanned every {} s", folder, error, RESCAN_SECONDS)
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        if entry.is_dir(follow_symlinks=False):
                            if self.recursive and not entry.name.startswith("."):
                                folders.append(entry.path)
                        elif entry.name.endswith(TEMPORARY_SUFFIX):
                            _drop_if_stale(entry)
                        elif candidate(entry.name) and entry.is_file():
                            try:
                                st = entry.stat()
                            except OSError:
                                continue
                            found[entry.path] = (st.st_size, st.st_mtime_ns)
            except OSError as error:
                if folder == self.root:
                    raise
                logger.warning("cannot read {} ({}); skipped", folder, error)
        return found

    def close(self) -> None:
        if self.notify is not None:
            self.notify.close()
