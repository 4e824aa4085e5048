"""The service's own commands: `migrate`, `status`, `check`, `scheduler`, `serve`, `up` and the
newcomer's `transcribe`."""

from __future__ import annotations

from pathlib import Path

from audio.formats import FORMATS
from domain.asked import TASKS, TRANSCRIBE
from service import logs
from service.runtime import open_store
from transcriber.console import print_json


def cmd_migrate(args, settings) -> int:
    from service.runtime import open_database

    db = open_database(settings, migrate=False)
    applied = db.migrate()
    print(f"migrations applied: {', '.join(map(str, applied))}" if applied else "schema is up to date")
    return 0


def cmd_status(args, settings) -> int:
    rows = open_store(settings).status()
    if args.json:
        print_json(rows)
        return 0
    print(f"{'stage':<10} {'active':>7} {'claimed':>8} {'waiting':>8} {'halted':>7}  oldest eligible")
    for row in rows:
        age = row["oldest_eligible_seconds"]
        print(
            f"{row['stage']:<10} {row['active']:>7} {row['claimed']:>8} {row['waiting']:>8} {row['halted']:>7}  "
            f"{'-' if age is None else f'{float(age):.0f}s'}"
        )
    if not rows:
        print("no records yet")
    return 0


def cmd_check(args, settings) -> int:
    from db.check import Facts
    from domain.invariants import check

    store = open_store(settings)
    report = check(Facts(store.db))
    if args.json:
        print_json(report.as_json())
    else:
        for violation in report.violations:
            print(violation.line())
        states = ", ".join(f"{count} {state}" for state, count in report.counts.items())
        print(
            f"{sum(report.counts.values())} records ({states}); "
            f"{len(report.violations)} violation(s)" + ("" if report.violations else ": sound")
        )
    return 0 if report.sound else 1


def cmd_transcribe(args, settings) -> int:
    from transcriber.transcribe import transcribe

    return transcribe(
        [Path(f) for f in args.files],
        settings,
        owner=args.owner,
        fmt=args.format,
        language=args.language,
        prompt=args.prompt,
        speakers=args.speakers,
        task=args.task,
    )


def cmd_scheduler(args, settings) -> int:
    import actors
    from actors.scheduler import run_forever
    from service.brokers import connect

    connect(actors.broker, settings.broker_url)
    logs.configure(level="INFO", json_path=settings.log_json)
    run_forever(settings.tick_seconds, settings.audio_retention_seconds)
    return 0


def cmd_serve(args, settings) -> int:
    from transcriber.server import run

    logs.configure(level="INFO", json_path=settings.log_json)
    return run(settings, args.host, args.port, with_pipeline=args.command == "up")


def add_commands(sub) -> None:
    p = sub.add_parser("migrate", help="apply schema migrations (idempotent)")
    p.set_defaults(run=cmd_migrate)

    p = sub.add_parser("transcribe", help="transcribe files now, in this process (embedded database unless configured)")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--owner", default="local", help="owner of the records (created if missing)")
    p.add_argument("--format", choices=FORMATS, default="txt")
    p.add_argument("--language", help="language of the speech (en, ru, …; auto detects it)")
    p.add_argument("--prompt", help="names, jargon or context to help recognition (at most 800 characters)")
    p.add_argument(
        "--speakers",
        default="auto",
        help="who spoke when: auto (when the speakers extra is installed), off, or their number",
    )
    p.add_argument(
        "--task",
        choices=TASKS,
        default=TRANSCRIBE,
        help="transcribe, or translate: an English translation beside the original text (a multilingual model)",
    )
    p.set_defaults(run=cmd_transcribe)

    p = sub.add_parser("scheduler", help="send the per-step wake-ups every TRANSCRIBER_TICK_SECONDS")
    p.set_defaults(run=cmd_scheduler)

    for name, text in (
        ("up", "everything in one process: database, migrations, scheduler, workers, API"),
        ("serve", "the HTTP API alone"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("--host", default="127.0.0.1")
        p.add_argument("--port", type=int, default=8000)
        p.set_defaults(run=cmd_serve)

    p = sub.add_parser("status", help="counts per stage, halted, waiting, oldest eligible age")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_status)

    p = sub.add_parser("check", help="verify INV-1 over the whole database; exit 1 with a line per violation")
    p.add_argument("--json", action="store_true", help="print the report as one JSON document")
    p.set_defaults(run=cmd_check)
