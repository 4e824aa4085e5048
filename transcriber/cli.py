"""The `transcriber` command line. Each command calls the same functions the HTTP API calls."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from loguru import logger

from db import DatabaseUnavailable, Store
from db.accounts import DuplicateOperator, DuplicateOwner
from audio.formats import FORMATS, render
from domain.card import card
from domain.owners import InvalidOwnerName, check_name, state
from domain.resume import NotHalted, UnknownRecord, resume
from service import config, logs
from service.intake import IntakeError
from service.runtime import open_store

EXIT_USAGE = 2


class UserError(Exception):
    """A mistake the user can mend: printed as one line, exit status 2."""


def _print_json(value: object) -> None:
    print(json.dumps(value, ensure_ascii=False, default=str))


def _record_id(text: str) -> int:
    from service.inputs import record_id

    value = record_id(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"a record id is a positive whole number in ASCII digits, got {text!r}")
    return value


def cmd_migrate(args, settings) -> int:
    from service.runtime import open_database

    db = open_database(settings, migrate=False)
    applied = db.migrate()
    print(f"migrations applied: {', '.join(map(str, applied))}" if applied else "schema is up to date")
    return 0


def cmd_owner_add(args, settings) -> int:
    check_name(args.name)
    store = open_store(settings)
    try:
        token = store.add_owner(args.name)
    except DuplicateOwner as error:
        raise UserError(str(error)) from None
    print(f"owner {args.name} created; API token (shown once, keep it):")
    print(token)
    return 0


def _no_owner(name: str) -> UserError:
    return UserError(f"no owner named {name!r} (see: transcriber owner list)")


def cmd_owner_token(args, settings) -> int:
    token = open_store(settings).new_token(args.name)
    if token is None:
        raise _no_owner(args.name)
    print(f"owner {args.name} has a new API token (shown once, keep it); the old one no longer works:")
    print(token)
    return 0


def cmd_owner_enable(args, settings) -> int:
    disable = args.owner_command == "disable"
    was_disabled = open_store(settings).set_owner_disabled(args.name, disable)
    if was_disabled is None:
        raise _no_owner(args.name)
    if was_disabled == disable:
        print(f"owner {args.name} was already {'disabled' if disable else 'enabled'}")
    elif disable:
        print(f"owner {args.name} disabled: its API token is refused until `transcriber owner enable`")
    else:
        print(f"owner {args.name} enabled: its current API token works again")
    return 0


def cmd_owner_list(args, settings) -> int:
    rows = [{"name": row["name"], "state": state(row["disabled_at"]), "records": row["records"],
             "done": row["done"], "halted": row["halted"], "created_at": row["created_at"].isoformat()}
            for row in open_store(settings).owners()]
    if args.json:
        _print_json(rows)
        return 0
    if not rows:
        print("no owners yet (create one with: transcriber owner add NAME)")
        return 0
    width = max(4, *(len(row["name"]) for row in rows))
    print(f"{'name':<{width}} {'state':<8} {'records':>7} {'done':>6} {'halted':>6}  created")
    for row in rows:
        print(f"{row['name']:<{width}} {row['state']:<8} {row['records']:>7} {row['done']:>6} {row['halted']:>6}  "
              f"{row['created_at'][:19]}")
    return 0


def cmd_submit(args, settings) -> int:
    from service.intake import submit_file
    store = open_store(settings)
    record_id = submit_file(store, settings, Path(args.file), owner=args.owner, title=args.title,
                            language=args.language)
    print(record_id)
    return 0


def _card_or_fail(store: Store, record_id: int) -> dict:
    row = store.card_row(record_id)
    if row is None:
        raise UserError(f"no record with id {record_id}")
    return card(row)


def cmd_card(args, settings) -> int:
    _print_json(_card_or_fail(open_store(settings), args.id))
    return 0


def cmd_events(args, settings) -> int:
    store = open_store(settings)
    events = store.events(args.id)
    if not events:  # an erased record still has its `deleted` line
        _card_or_fail(store, args.id)
    for event in events:
        _print_json({**event, "at": event["at"].isoformat()})
    return 0


def cmd_status(args, settings) -> int:
    rows = open_store(settings).status()
    if args.json:
        _print_json(rows)
        return 0
    print(f"{'stage':<10} {'active':>7} {'claimed':>8} {'waiting':>8} {'halted':>7}  oldest eligible")
    for row in rows:
        age = row["oldest_eligible_seconds"]
        print(f"{row['stage']:<10} {row['active']:>7} {row['claimed']:>8} {row['waiting']:>8} {row['halted']:>7}  "
              f"{'-' if age is None else f'{float(age):.0f}s'}")
    if not rows:
        print("no records yet")
    return 0


def cmd_check(args, settings) -> int:
    from db.check import Facts
    from domain.invariants import check

    store = open_store(settings)
    report = check(Facts(store.db))
    if args.json:
        _print_json(report.as_json())
    else:
        for violation in report.violations:
            print(violation.line())
        states = ", ".join(f"{count} {state}" for state, count in report.counts.items())
        print(f"{sum(report.counts.values())} records ({states}); "
              f"{len(report.violations)} violation(s)" + ("" if report.violations else ": sound"))
    return 0 if report.sound else 1


def cmd_resume(args, settings) -> int:
    return resume_command(args.id, settings)


def resume_command(record_id: int, settings) -> int:
    """Resume a halted record through the domain (P5); shared by `transcriber resume` and the script."""
    store = open_store(settings)
    try:
        stage = resume(store, record_id)
    except (UnknownRecord, NotHalted) as error:
        raise UserError(str(error)) from None
    print(f"record {record_id} resumed at stage {stage}")
    return 0


def cmd_operator_add(args, settings) -> int:
    try:
        check_name(args.name)  # the same rule as owners' names
    except InvalidOwnerName as error:
        raise UserError(str(error).replace("an owner name", "an operator name")) from None
    try:
        token = open_store(settings).add_operator(args.name)
    except DuplicateOperator as error:
        raise UserError(str(error)) from None
    print(f"operator {args.name} created; /admin token (shown once, keep it):")
    print(token)
    return 0


def cmd_delete(args, settings) -> int:
    """Erase a record for good (any owner's), as `DELETE /records/{id}` does for its owner."""
    import getpass

    try:
        by = getpass.getuser()
    except (KeyError, OSError):
        by = "operator"
    if open_store(settings).delete_record(args.id, None, by=by, role="operator") is None:
        raise UserError(f"no record with id {args.id}")
    print(f"record {args.id} deleted for good")
    return 0


def cmd_text(args, settings) -> int:
    store = open_store(settings)
    row = store.transcript(args.id)
    if row is None:
        raise UserError(f"no record with id {args.id}")
    if row["stage"] != "done":
        raise UserError(f"record {args.id} has no text yet: it is at stage {row['stage']}")
    sys.stdout.write(render(args.format, row["transcript"], row["segments"], row["duration_seconds"]))
    return 0


def cmd_transcribe(args, settings) -> int:
    from transcriber.transcribe import transcribe

    return transcribe([Path(f) for f in args.files], settings, owner=args.owner, fmt=args.format,
                      language=args.language)


def cmd_scheduler(args, settings) -> int:
    from actors.scheduler import run_forever

    logs.configure(level="INFO", json_path=settings.log_json)
    run_forever(settings.tick_seconds)
    return 0


def cmd_serve(args, settings) -> int:
    from transcriber.server import run

    logs.configure(level="INFO", json_path=settings.log_json)
    return run(settings, args.host, args.port, with_pipeline=args.command == "up")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="transcriber", description="Self-hosted speech-to-text.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("migrate", help="apply schema migrations (idempotent)")
    p.set_defaults(run=cmd_migrate)

    owner = sub.add_parser("owner", help="manage owners").add_subparsers(dest="owner_command", required=True)
    p = owner.add_parser("add", help="create an owner and print its API token once")
    p.add_argument("name")
    p.set_defaults(run=cmd_owner_add)
    p = owner.add_parser("token", help="give an owner a new API token (printed once); the old one stops working")
    p.add_argument("name")
    p.set_defaults(run=cmd_owner_token)
    for action, text in (("disable", "refuse an owner's API token until it is enabled (records stay)"),
                         ("enable", "accept a disabled owner's current API token again")):
        p = owner.add_parser(action, help=text)
        p.add_argument("name")
        p.set_defaults(run=cmd_owner_enable)
    p = owner.add_parser("list", help="owners with their state and record counts (never tokens)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_owner_list)

    p = sub.add_parser("submit", help="accept a recording into the pipeline; prints its id")
    p.add_argument("file")
    p.add_argument("--owner", required=True)
    p.add_argument("--title", default="")
    p.add_argument("--language", help="language of the speech (en, ru, …; auto detects it)")
    p.set_defaults(run=cmd_submit)

    p = sub.add_parser("transcribe", help="transcribe files now, in this process (embedded database unless configured)")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--owner", default="local", help="owner of the records (created if missing)")
    p.add_argument("--format", choices=FORMATS, default="txt")
    p.add_argument("--language", help="language of the speech (en, ru, …; auto detects it)")
    p.set_defaults(run=cmd_transcribe)

    p = sub.add_parser("text", help="print a done record's text")
    p.add_argument("id", type=_record_id)
    p.add_argument("--format", choices=FORMATS, default="txt")
    p.set_defaults(run=cmd_text)

    p = sub.add_parser("scheduler", help="send the per-step wake-ups every TRANSCRIBER_TICK_SECONDS")
    p.set_defaults(run=cmd_scheduler)

    for name, text in (("up", "everything in one process: database, migrations, scheduler, workers, API"),
                       ("serve", "the HTTP API alone")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--host", default="127.0.0.1")
        p.add_argument("--port", type=int, default=8000)
        p.set_defaults(run=cmd_serve)

    p = sub.add_parser("card", help="print a record's card as JSON")
    p.add_argument("id", type=_record_id)
    p.set_defaults(run=cmd_card)

    p = sub.add_parser("events", help="print a record's event journal as JSON lines")
    p.add_argument("id", type=_record_id)
    p.set_defaults(run=cmd_events)

    p = sub.add_parser("status", help="counts per stage, halted, waiting, oldest eligible age")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_status)

    p = sub.add_parser("check", help="verify INV-1 over the whole database; exit 1 with a line per violation")
    p.add_argument("--json", action="store_true", help="print the report as one JSON document")
    p.set_defaults(run=cmd_check)

    p = sub.add_parser("resume", help="return a halted record to work from its stage")
    p.add_argument("id", type=_record_id)
    p.set_defaults(run=cmd_resume)

    operator = sub.add_parser("operator", help="manage the service owner's /admin accounts").add_subparsers(
        dest="operator_command", required=True)
    p = operator.add_parser("add", help="create an operator account for /admin and print its token once")
    p.add_argument("name")
    p.set_defaults(run=cmd_operator_add)

    p = sub.add_parser("delete", help="erase a record, its audio and its text for good")
    p.add_argument("id", type=_record_id)
    p.set_defaults(run=cmd_delete)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = config.load()
        logs.configure(level="DEBUG" if args.verbose else "WARNING", json_path=settings.log_json)
    except config.ConfigError as error:
        print(f"transcriber: configuration error: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return args.run(args, settings)
    except (UserError, IntakeError, InvalidOwnerName) as error:
        print(f"transcriber: {error}", file=sys.stderr)
        return EXIT_USAGE
    except DatabaseUnavailable as error:
        print(f"transcriber: {error}", file=sys.stderr)
        return 1
    except config.ConfigError as error:
        print(f"transcriber: configuration error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("transcriber: interrupted; accepted records stay in the pipeline "
              "(`transcriber status`, `transcriber card ID`)", file=sys.stderr)
        return 130
    finally:
        logger.complete()


if __name__ == "__main__":
    sys.exit(main())
