"""`transcriber transcribe FILE…`: the newcomer's main job, on the durable pipeline.

The files are accepted as records like any upload, in-process workers convert and recognise
them, progress shows on stderr, and the texts go to stdout. Nothing here bypasses the pipeline:
kill it at any moment and the records wait in the database for the next run or worker. A run
given a file that an earlier run left unfinished (stopped with Ctrl-C, say) goes on with that
record from its last checkpoint instead of starting over (`continue_unfinished` of
`service.intake.accept_recording`).
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audio.formats import render_record
from db import Store
from db.accounts import DuplicateOwner
from domain.asked import TRANSLATE
from domain.card import card, finished
from domain.corrections import CORRECTED, ENGLISH
from domain.owners import check_name
from service.config import Settings
from service.inputs import source_name
from service.intake import IntakeError, accept_from_command_line
from service.runtime import check_engine, open_store
from transcriber.console import UserError
from transcriber.local import LocalPipeline

POLL_SECONDS = 0.25


def _ensure_owner(store: Store, name: str) -> None:
    check_name(name)
    if store.owner_by_name(name) is None:
        with contextlib.suppress(DuplicateOwner):  # another process added it meanwhile
            store.add_owner(name)  # its token is not needed here: `owner add` makes one to use


def _describe(c: dict) -> str:
    if c["halt"]:
        return f"halted at {c['stage']}: {c['halt']['reason']} ({c['halt']['error']})"
    duration = c["duration_seconds"]
    if c["stage"] == "created":
        return "converting" if c["working"] else "waiting to convert"
    if c["stage"] == "converted":
        if c["working"]:
            done = c["progress_seconds"] or 0.0
            return f"recognizing {done:.0f}/{duration:.0f} s of audio"
        if c["progress_seconds"]:
            return f"recognised {c['progress_seconds']:.0f}/{duration:.0f} s, waiting to go on"
        if c["retry_after"]:
            return f"retrying recognition in {c['retry_in_seconds']:.0f} s (attempt {c['attempts']} failed)"
        return f"converted ({duration:.1f} s of audio), waiting to recognise"
    if c["speakers"]["state"] == "pending":
        return f"done ({duration:.1f} s of audio), finding who spoke when"
    if c["speakers"]["state"] == "halted":
        return f"done ({duration:.1f} s of audio), without speakers: {c['speakers']['reason']}"
    return f"done ({duration:.1f} s of audio)"


def stop_on_sigterm() -> None:
    """SIGTERM stops like Ctrl-C: the workers give their claims back and end their recognizer
    children (and their folders) before the process exits."""

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, interrupt)


def _still_there(row: dict[str, Any] | None, record_id: int) -> dict[str, Any]:
    """A record of this run, read again: gone only if someone deleted it meanwhile."""
    if row is None:
        raise UserError(f"record {record_id} was deleted while this run transcribed it")
    return row


@dataclass(frozen=True)
class Result:
    """One file argument's result: its record, and the earlier argument of this run whose record
    it shares (a byte copy asked for alike is the same recording), if any."""

    path: Path
    record_id: int
    same_as: Path | None = None

    @property
    def name(self) -> str:
        return source_name(self.path.name)


def transcribe(
    paths: list[Path],
    settings: Settings,
    *,
    owner: str,
    fmt: str,
    language: str | None = None,
    prompt: str | None = None,
    speakers: str | None = None,
    task: str | None = None,
) -> int:
    stop_on_sigterm()
    check_engine(settings)  # a model that cannot load stops here, before any file is accepted
    store = open_store(settings, max_size=20)
    _ensure_owner(store, owner)
    results, refused = _accept_all(
        store, settings, paths, owner=owner, language=language, prompt=prompt, speakers=speakers, task=task
    )
    if not results:
        return 2
    with LocalPipeline(store, settings):
        cards = _watch(store, [r for r in results if r.same_as is None])
    halted = _print_texts(store, results, cards, fmt, several=len(paths) > 1)
    return 1 if halted or refused else 0


def _accept_all(store: Store, settings: Settings, paths: list[Path], **asked: Any) -> tuple[list[Result], int]:
    """One result per file accepted, in the order given (an earlier run's record, where it left
    the same one unfinished; an earlier argument's, where it is the same recording), and how many
    files were refused."""
    results: list[Result] = []
    refused = 0
    for path in paths:
        try:
            record_id, new = accept_from_command_line(store, settings, path, continue_unfinished=True, **asked)
        except IntakeError as error:
            print(f"{path}: refused: {error}", file=sys.stderr)
            refused += 1
            continue
        first = next((r.path for r in results if r.record_id == record_id and r.same_as is None), None)
        results.append(Result(path, record_id, first))
        if first is not None:
            how = f"the same recording as {source_name(first.name)}, asked for alike: its record answers both"
        elif not new:
            how = "going on with this record, which an earlier run left unfinished"
        else:
            continue
        print(f"[record {record_id}] {path.name}: {how}", file=sys.stderr, flush=True)
    return results, refused


def _watch(store: Store, results: list[Result]) -> dict[int, dict[str, Any]]:
    """Each record's card, a line on stderr whenever it changes, until every one has finished."""
    shown: dict[int, str] = {}
    cards: dict[int, dict[str, Any]] = {}
    while True:
        for result in results:
            record_id = result.record_id
            cards[record_id] = card(_still_there(store.card_row(record_id), record_id))
            line = _describe(cards[record_id])
            if shown.get(record_id) != line:
                shown[record_id] = line
                print(f"[record {record_id}] {result.path.name}: {line}", file=sys.stderr, flush=True)
        if all(finished(c) for c in cards.values()):
            return cards
        time.sleep(POLL_SECONDS)


def _print_texts(
    store: Store, results: list[Result], cards: dict[int, dict[str, Any]], fmt: str, *, several: bool
) -> int:
    """Each file's text on stdout in `fmt`, in the order given (a halted one's reason on stderr);
    how many halted."""
    halted = shown = 0
    for result in results:
        record_id, c = result.record_id, cards[result.record_id]
        same_as = None if result.same_as is None else source_name(result.same_as.name)
        if c["halt"]:
            halted += 1
            print(
                f"{result.path.name}: halted (record {record_id}): {c['halt']['reason']}: {c['halt']['error']}",
                file=sys.stderr,
            )
            continue
        # a translated record's English text: what the run was asked for
        version = ENGLISH if c["task"] == TRANSLATE else CORRECTED
        body = render_record(fmt, _still_there(store.transcript(record_id, version=version), record_id))
        if fmt == "json":
            answer = {"record": record_id, "file": result.name, "same_as": same_as, **json.loads(body)}
            print(json.dumps(answer, ensure_ascii=False))
            continue
        if several:
            if shown:
                print()  # as `tail` heads several files: a blank line between one file and the next
            shared = "" if same_as is None else f", the same as {same_as}"
            print(f"==> {result.name} (record {record_id}{shared}) <==")
        shown += 1
        sys.stdout.write(body if body.endswith("\n") or not body else body + "\n")
    return halted
