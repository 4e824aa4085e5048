"""Done records with texts of a test's choosing, saved by the pipeline's own statements (a
checkpoint per window, then the done save), for the search tests and the search benchmark."""
from __future__ import annotations

import contextlib
import gc
import os
import threading
import time

import psycopg

from conftest import checkpoint, policy, save_result
from db import Database
from db.queries import migrations, query
from domain.asked import TRANSLATE, Asked
from domain.stages import Step


def done_record(store, owner_id: int, segments: list[tuple[float, float, str]], *, language: str = "en",
                title: str = "", windows: int = 1, audio: bytes = b"not really audio", diarize: bool = False,
                words: bool = False, english: list[tuple[float, float, str]] | None = None,
                passages: bool = False) -> int:
    """A record of the owner's, done, whose text is `segments` (start, end, text), saved in
    `windows` checkpoints as recognition saves them, its original `audio`; with `diarize`, queued
    for the diarize step; with `words`, each word timed evenly across its segment; with `english`,
    asked to translate, and these its English segments, each saved with the window it starts in;
    with `passages`, its passages made and embedded as the recognize step makes them. The store
    must have no other claimable record."""
    asked = Asked(task=TRANSLATE) if english is not None else Asked()
    record_id = store.accept(owner_id, [audio], title=title, source_name="a.bin", asked=asked)
    end = max((segment[1] for segment in segments), default=1.0)
    claim = store.claim(Step.CONVERT, policy())
    assert claim.record_id == record_id
    assert save_result(store, claim, {"duration_seconds": end})
    claim = store.claim(Step.RECOGNIZE, policy())
    shaped = [{"start": s, "end": e, "text": t, "words": timed_words(s, e, t) if words else []}
              for s, e, t in segments]
    size = max(1, -(-len(shaped) // windows))
    edges = [0.0] + [shaped[i + size]["start"] for i in range(0, len(shaped) - size, size)] + [end]
    for index, (start, stop) in enumerate(zip(edges, edges[1:])):
        part = shaped[index * size:(index + 1) * size]
        translated = None if english is None else [
            {"start": s, "end": e, "text": t, "words": timed_words(s, e, t)}
            for s, e, t in english if start <= s < stop or (s >= stop and index == len(edges) - 2)]
        assert checkpoint(store, claim, start, stop, part, language, 60, english=translated)
    params = None
    if passages:
        from service.meaning import record_passages

        params = {"passages": record_passages(store, record_id, language)}
    assert save_result(store, claim, {"engine": "test"}, diarize=diarize, params=params)
    return record_id


def timed_words(start: float, end: float, text: str) -> list[dict]:
    """The words of `text`, each given an equal share of [start, end]."""
    said = text.split()
    step = (end - start) / max(1, len(said))
    return [{"word": " " + word, "start": round(start + i * step, 3), "end": round(start + (i + 1) * step, 3)}
            for i, word in enumerate(said)]


def _threads_cpu() -> dict[int, float]:
    """CPU seconds (user and system) each live thread of this process has spent, by thread id."""
    tick = os.sysconf("SC_CLK_TCK")
    spent = {}
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended between the listing and the read
        spent[int(task)] = (int(fields[11]) + int(fields[12])) / tick
    return spent


def request_cpu(call):
    """`call()`'s answer and the CPU seconds the request spent: the process's CPU over the call
    less what threads already running before it (an earlier test's, say) spent meanwhile, with
    the garbage collector held off, so that only the work the request itself caused is counted."""
    gc.collect()
    gc.disable()
    try:
        mine = threading.get_native_id()
        before, started = _threads_cpu(), time.process_time()
        answer = call()
        spent = time.process_time() - started
        after = _threads_cpu()
    finally:
        gc.enable()
    others = sum(after[t] - before[t] for t in before if t in after and t != mine)
    return answer, max(0.0, spent - others)


@contextlib.contextmanager
def database_before(admin: str, name: str, version: int):
    """A fresh database `name` on the server `admin` names, built by the migrations before
    `version` and no further (its Database open), dropped afterwards."""
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        with Database(psycopg.conninfo.make_conninfo(admin, dbname=name), max_size=4) as db:
            with db.transaction() as conn:
                conn.execute(query("create_migrations_table"))
                for number, migration, text in migrations():
                    if number < version:
                        conn.execute(text)
                        conn.execute(query("record_migration"), {"version": number, "name": migration})
            yield db
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
