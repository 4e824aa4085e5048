"""`transcriber watch DIR --owner NAME`: a folder a recorder drops files into, transcribed.

Each file that has stopped growing (its size and mtime unchanged for the settle interval) is
accepted once per content: its SHA-256 is claimed in `watched_files` (`db.watched`) before
intake, so a restart, a rename, a copy or a second watcher on the same folder makes no second
record. The record is made by the one intake (`service.intake.accept_recording`), under a key
of its content (`db.uploads`): a watcher killed between making the record and noting it, and
taken over, finds that record instead of making another. Once the record is done its results
are written beside the file, each through a temporary file made whole and then renamed over
the name (`results`), so nothing reads half a result. What intake refuses gets
`NAME.error.txt` with the reason, and is not tried again until the file changes.

The watcher needs only the database: workers anywhere (`transcriber up`, `dramatiq actors`)
transcribe what it accepts, or `--work` runs them in this process.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from loguru import logger

from audio.formats import FORMATS
from db import Store
from db.database import unreachable
from db.uploads import SameUpload
from db.watched import SeenFile
from domain import holders
from domain.card import card, finished
from service.config import Settings
from service.intake import IntakeError, accept_recording, owner_named
from service.logs import Reachability
from service.runtime import open_store
from transcriber import results
from transcriber.console import UserError
from transcriber.folder import Folder, Settling, Stat, stat_of

# A claim on a content lasts this long without its holder: a watcher on another machine that
# died is taken over after it (one of this machine's, as soon as its process is seen gone). The
# record is made once even if a live holder is taken over (intake's key), so this only bounds
# the wait.
LEASE_SECONDS = 300.0
DUE_SECONDS = 1.0  # how often the records accepted are looked at for results to write
KEY_PREFIX = "transcriber-watch:"
TICK_SECONDS = 0.1
UNWORKED_SECONDS = 60.0  # a record not taken up by any worker this long: no worker may be running


def content_key(sha256: bytes) -> SameUpload:
    """What makes intake answer a content the watchers already made a record of with that
    record: an upload key of the owner's, named by the content."""
    return SameUpload(sha256, key=KEY_PREFIX + sha256.hex())


def sha256_of(path: str) -> bytes:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").digest()


class Watcher:
    """One folder's watcher for one owner: `step` looks once, `run` until stopped."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        folder: Folder,
        *,
        owner_id: int,
        formats: tuple[str, ...],
        settle_seconds: float,
        holder: str | None = None,
    ):
        self.store, self.settings, self.folder = store, settings, folder
        self.owner_id, self.formats = owner_id, formats
        self.prefix = os.path.join(folder.root, "")
        # this process, and this watcher in it (a process may run two, a test does)
        self.holder = holder or f"{holders.this_process()}/{secrets.token_hex(4)}"
        self.settling = Settling(settle_seconds)
        self.reach = Reachability("the watcher keeps")
        self.halts_told: set[int] = set()
        self.problems_told: set[int] = set()
        self.unworked_told = False
        self._next_due = 0.0
        self._known = False

    def step(self, timeout: float = TICK_SECONDS) -> None:
        """Look at the folder once: note what changed, take the files settled, write the results due."""
        if not self._known and not self._attempt(self._remember):
            time.sleep(timeout)
            return
        changes = self.folder.changes(timeout)
        now = time.monotonic()  # after the wait: a change is dated no earlier than it was heard
        for path, stat in changes.items():
            self.settling.note(path, stat, now)
        if self.folder.notify is None:
            self.settling.refresh(now)
        for path, stat in self.settling.settled(time.monotonic()):
            if self._attempt(self.take, path, stat):
                self.settling.done(path, stat)
            else:
                self.settling.later(path, stat, time.monotonic())
        if time.monotonic() >= self._next_due and self.folder.present:
            self._attempt(self.write_due)
            self._next_due = time.monotonic() + DUE_SECONDS

    def run(self) -> None:
        try:
            while True:
                self.step()
        finally:
            self.folder.close()

    def _attempt(self, work: Callable[..., Any], *args: Any) -> bool:
        """Run `work`; False when the database could not be reached (said once, then once more
        when it answers again), or `work` said to try later."""
        try:
            done = work(*args)
        except Exception as error:
            if not unreachable(error):
                raise
            self.reach.lost(error)
            return False
        self.reach.answered()
        return done is not False

    def _remember(self) -> None:
        """What the database knows of the folder's files: those unchanged since are not read again."""
        for row in self.store.watched_known(self.owner_id, self.prefix):
            if row["state"] != "accepting":
                self.settling.done(row["path"], (row["size_bytes"], row["mtime_ns"]))
        self._known = True

    def take(self, path: str, stat: Stat) -> bool:
        """Accept the settled file at `path` unless its content is known; False to try it later
        (it changed while read, or another watcher is accepting the same content now)."""
        if stat[0] == 0:
            return True  # nothing written yet: looked at again once it grows
        try:
            sha256 = sha256_of(path)
        except OSError:
            return True  # gone meanwhile: its removal is noted like any change
        if stat_of(path) != stat:
            return False
        seen = SeenFile(path, sha256, *stat)
        row = self.store.claim_watched(self.owner_id, seen, self.holder, LEASE_SECONDS)
        if row is not None:
            if row["state"] != "accepting":
                self._known_content(seen, row)
                return True
            was = row["holder"]
            if was != self.holder and not (row["lapsed"] or holders.gone(was)):
                return False  # a live watcher is making its record: known once it has
            if not self.store.take_over_watched(self.owner_id, seen, was, self.holder, LEASE_SECONDS):
                return False
            made = self.store.watched_made(self.owner_id, seen)
            if made is not None:  # its holder ended after intake made the record
                self._accepted(seen, made)
                return True
        self._accept(seen)
        return True

    def _accept(self, seen: SeenFile) -> None:
        try:
            record_id, _ = accept_recording(
                self.store, self.settings, Path(seen.path), owner_id=self.owner_id, same=content_key(seen.sha256)
            )
        except IntakeError as error:
            self.store.watched_refused(self.owner_id, seen, str(error))
            results.write_error(seen.path, str(error))
            _say(f"{seen.path}: refused: {error}")
            return
        self._accepted(seen, record_id)

    def _accepted(self, seen: SeenFile, record_id: int) -> None:
        self.store.watched_accepted(self.owner_id, seen, record_id)
        logger.info("record {} accepted from the watched file {}", record_id, os.path.basename(seen.path))
        _say(f"[record {record_id}] {seen.path}: accepted")

    def _known_content(self, seen: SeenFile, row: dict[str, Any]) -> None:
        """A content accepted before, seen at `seen.path`: a rename of a file whose results are
        not written yet takes them along; a copy of one refused is told so beside it."""
        first, record_id = row["path"], row["record_id"]
        if first == seen.path:
            return
        if row["state"] == "refused":
            results.write_error(seen.path, row["error"])
        elif row["state"] == "accepted" and not os.path.exists(first):
            self.store.watched_moved(self.owner_id, seen)
            _say(f"[record {record_id}] {seen.path}: renamed from {first}: its results go here")
            return
        _say(f"{seen.path}: the same content as {first} (record {record_id}): not transcribed again")

    def write_due(self) -> None:
        """Write the results of each record accepted here that has finished since."""
        for row in self.store.watched_due(self.owner_id, self.prefix):
            c = card(row)
            if not finished(c):
                self._unworked(row, c)
                continue
            record_id, path = c["id"], row["watched_path"]
            if c["halt"]:
                if record_id not in self.halts_told:
                    halt = c["halt"]
                    reason = f"record {record_id} halted at {c['stage']}: {halt['reason']}: {halt['error']}"
                    self._write(record_id, results.write_error, path, reason)
                    _say(f"[record {record_id}] {path}: {reason}")
                    self.halts_told.add(record_id)
                continue
            transcript = self.store.transcript(record_id)
            if transcript is not None and self._write(record_id, results.write_results, path, transcript, self.formats):
                self.store.watched_written(self.owner_id, row["watched_sha256"])
                _say(f"[record {record_id}] {path}: results written ({', '.join(self.formats)})")

    def _unworked(self, row: dict[str, Any], c: dict[str, Any]) -> None:
        """Say once when a record accepted here has waited long for its first step: no worker
        may be running on this database."""
        waited = (datetime.now(UTC) - row["created_at"]).total_seconds()
        if self.unworked_told or c["stage"] != "created" or c["working"] or c["attempts"] or waited < UNWORKED_SECONDS:
            return
        self.unworked_told = True
        logger.warning(
            "record {} has waited {:.0f} s for a worker: records are transcribed by workers on this "
            "database (transcriber up, dramatiq actors), or by the watcher itself with --work",
            c["id"],
            waited,
        )

    def _write(self, record_id: int, write: Callable[..., None], *args: Any) -> bool:
        try:
            write(*args)
        except OSError as error:
            if record_id not in self.problems_told:
                logger.warning("record {}: its results cannot be written: {}; tried again", record_id, error)
                self.problems_told.add(record_id)
            return False
        self.problems_told.discard(record_id)
        return True


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def formats_argument(value: str) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
    unknown = [fmt for fmt in chosen if fmt not in FORMATS]
    if unknown or not chosen:
        raise UserError(f"--format takes a list of {', '.join(FORMATS)} separated by commas, not {value!r}")
    return chosen


def cmd_watch(args, settings: Settings) -> int:
    from transcriber.transcribe import stop_on_sigterm

    stop_on_sigterm()
    formats = formats_argument(args.format)
    root = Path(args.dir)
    if not root.is_dir():
        raise UserError(f"no such folder: {root}")
    store = open_store(settings)
    owner_id = owner_named(store, args.owner)
    folder = Folder(root, recursive=args.recursive, poll=args.poll, poll_seconds=args.poll_seconds)
    watcher = Watcher(store, settings, folder, owner_id=owner_id, formats=formats, settle_seconds=args.settle)
    _say(
        f"watching {folder.root}{' and its subfolders' if args.recursive else ''} for {args.owner} "
        f"with {folder.how}; results as {', '.join(formats)} beside each file"
    )
    if not args.work:
        _say("records are transcribed by workers on this database (transcriber up, or --work in this process)")
        watcher.run()
        return 0
    from transcriber.local import LocalPipeline

    with LocalPipeline(store, settings):
        watcher.run()
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("watch", help="transcribe each new file of a folder once, results written beside it")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--owner", required=True, help="owner of the records (an existing one)")
    p.add_argument("--format", default="srt,txt", help=f"results to write, of {', '.join(FORMATS)} (default srt,txt)")
    p.add_argument("--recursive", action="store_true", help="watch the subfolders too")
    p.add_argument("--work", action="store_true", help="run workers in this process too (as transcribe does)")
    p.add_argument(
        "--settle", type=float, default=1.0, help="seconds a file must keep its size and mtime to count as finished"
    )
    p.add_argument("--poll", action="store_true", help="scan the folder instead of inotify (network filesystems)")
    p.add_argument("--poll-seconds", type=float, default=0.5, help="seconds between scans when polling")
    p.set_defaults(run=cmd_watch)
