"""End-to-end CPU per record against raw recognition of the same files. Prints a table, writes
bench/results/e2e_cpu.json.

    .venv/bin/python -m bench.e2e_cpu [--records N] [--repeat K] [--runs R]   (defaults 3, 3, 3)

The same N recordings (the bundled speech sample repeated K times, as mp3) are
  * raw: decoded and recognised in a plain loop in one fresh process (PyAV, the configured
    engine fed window by window, nothing else);
  * pipeline: accepted, converted and recognised by `transcriber up`'s in-process workers in one
    fresh process, with the wake-ups and the tick running, after two warm-up records (so each
    worker thread's recognizer process has started and loaded its model, untimed, as the raw
    loop loads its model untimed).
CPU is user+system time of the whole process tree (recognizer child processes included) and,
for the pipeline, of the database server's backends serving its connections. The engine is the
configured one (TRANSCRIBER_ENGINE, default faster-whisper tiny.en). The two alternate within
every run; figures are medians of R runs.
"""
from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import time
from pathlib import Path

from bench.common import median, report
from bench.scratch import scratch_database


def tree_cpu(pids: list[int] | None = None) -> dict[int, float]:
    """CPU seconds of this process, its live children and `pids` (database backends), by pid."""
    import psutil

    me = psutil.Process()
    found = {}
    for pid in [me.pid, *(c.pid for c in me.children(recursive=True)), *(pids or [])]:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.NoSuchProcess:
            continue
        found[pid] = times.user + times.system + times.children_user + times.children_system
    return found


def spent(before: dict[int, float], after: dict[int, float]) -> float:
    return sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())


def raw(paths: list[str]) -> float:
    from audio.decode import pcm16k
    from audio.engines import build, spec
    from audio.windows import windows
    from service import config

    settings = config.load()
    recognizer = build(spec(settings))
    language = None if settings.language == "auto" else settings.language
    before = tree_cpu()
    for path in paths:
        for _, window in windows(pcm16k(Path(path))):
            recognizer.recognize(window, language)
    return spent(before, tree_cpu())


def pipeline(url: str, paths: list[str]) -> float:
    from bench import statements
    from db import Database, Store
    from service import config, logs
    from transcriber.local import LocalPipeline

    logs.configure(level="WARNING")
    settings = config.load()
    with Database(url, max_size=20) as db:
        store = Store(db)
        owner = store.owner_by_name("bench")["id"]
        with LocalPipeline(store, settings):
            # warm up: each worker thread's recognizer process started and its model loaded, as
            # in a service that has run for a while (the raw loop loads its model untimed too)
            warm = [store.accept(owner, [Path(paths[0]).read_bytes()], source_name="warm") for _ in range(2)]
            while any(store.stage_of(r) != "done" for r in warm):
                time.sleep(0.1)
            time.sleep(1)

            def backends() -> list[int]:
                with db.connection() as conn:
                    return [row["pid"] for row in conn.execute(statements.query("bench_backends"))]

            before = tree_cpu(backends())
            records = [store.accept(owner, [Path(p).read_bytes()], source_name=Path(p).name) for p in paths]
            while any(store.stage_of(r) != "done" for r in records):
                time.sleep(0.1)
            return spent(before, tree_cpu(backends()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3, help="sample repeats per recording (~10 s each)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="print only (a smoke run)")
    args = parser.parse_args()
    from bench.recordings import sample_recording
    from db import Database, Store
    from service import config, logs

    logs.configure(level="WARNING")
    settings = config.load()
    results = {"raw": [], "pipeline": []}
    context = multiprocessing.get_context("spawn")
    with scratch_database() as url, tempfile.TemporaryDirectory() as folder:
        with Database(url, max_size=2) as db:
            db.migrate()
            Store(db).add_owner("bench")
        paths = [str(sample_recording(Path(folder) / f"{i}.mp3", "mp3", repeat=args.repeat)) for i in range(args.records)]
        for run in range(args.runs):
            for side in (("raw", "pipeline") if run % 2 == 0 else ("pipeline", "raw")):
                with context.Pool(1, maxtasksperchild=1) as pool:
                    if side == "raw":
                        results[side].append(pool.apply(raw, (paths,)))
                    else:
                        results[side].append(pool.apply(pipeline, (url, paths)))
    raw_cpu, pipe_cpu = median(results["raw"]), median(results["pipeline"])
    ratio = median([p / r for p, r in zip(results["pipeline"], results["raw"])])
    rows = [["raw recognition (plain loop)", round(raw_cpu / args.records, 2), 1.0],
            ["pipeline (transcriber up workers)", round(pipe_cpu / args.records, 2), round(ratio, 3)]]
    print(f"engine: {settings.engine}; {args.records} records of ~{args.repeat * 10} s, median of {args.runs} runs")
    report("e2e_cpu", ["", "CPU s per record", "ratio"], rows,
           {"engine": settings.engine, "model": settings.whisper_model, "records": args.records,
            "repeat": args.repeat, "runs": args.runs, "raw_seconds": results["raw"],
            "pipeline_seconds": results["pipeline"]}, write=not args.no_write)


if __name__ == "__main__":
    main()
