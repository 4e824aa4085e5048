"""`transcriber submit`, `card`, `text`, `edit`, `events`, `resume`, `delete`: one record at a time, through
the same functions the HTTP API calls."""

from __future__ import annotations

import sys
from pathlib import Path

from audio.formats import FORMATS, render_record
from db import Store
from domain.asked import TASKS, TRANSCRIBE
from domain.card import card
from domain.corrections import CORRECTED, VERSIONS
from domain.errors import TranscriberError
from domain.resume import NotHalted, UnknownRecord, resume
from service import meaning
from service.intake import accept_from_command_line
from service.runtime import open_store
from transcriber.console import UserError, print_json, record_id_argument


def cmd_submit(args, settings) -> int:
    store = open_store(settings)
    record_id, _ = accept_from_command_line(
        store,
        settings,
        Path(args.file),
        owner=args.owner,
        title=args.title,
        language=args.language,
        prompt=args.prompt,
        speakers=args.speakers,
        task=args.task,
    )
    print(record_id)
    return 0


def _card_or_fail(store: Store, record_id: int) -> dict:
    row = store.card_row(record_id)
    if row is None:
        raise UserError(f"no record with id {record_id}")
    return card(row)


def cmd_card(args, settings) -> int:
    print_json(_card_or_fail(open_store(settings), args.id))
    return 0


def cmd_events(args, settings) -> int:
    store = open_store(settings)
    events = store.events(args.id)
    if not events:  # an erased record still has its `deleted` line
        _card_or_fail(store, args.id)
    for event in events:
        print_json({**event, "at": event["at"].isoformat()})
    return 0


def cmd_text(args, settings) -> int:
    store = open_store(settings)
    try:
        row = store.transcript(args.id, version=args.version)
    except TranscriberError as error:
        raise UserError(str(error)) from None
    if row is None:
        raise UserError(f"no record with id {args.id}")
    if row["stage"] != "done":
        raise UserError(f"record {args.id} has no text yet: it is at stage {row['stage']}")
    sys.stdout.write(render_record(args.format, row))
    return 0


def cmd_resume(args, settings) -> int:
    """Resume a halted record through the domain (P5); `scripts/resume.py` runs this too."""
    store = open_store(settings)
    try:
        stage = resume(store, args.id)
    except (UnknownRecord, NotHalted) as error:
        raise UserError(str(error)) from None
    print(f"record {args.id} resumed at stage {stage}")
    return 0


def _operator() -> str:
    """Who runs the command, as the journal names a human's action from the command line."""
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "operator"


def cmd_edit(args, settings) -> int:
    """Correct one segment of a done record's text (any owner's), or with `--word` one word of it,
    as `PATCH /records/{id}/text` does for its owner: kept apart from the recognised text,
    journaled as the operator's."""
    from pydantic import ValidationError

    from service.inputs import SegmentEdit, WordEdit

    try:
        if args.word is None:
            segments, words = [(args.segment, SegmentEdit(index=args.segment, text=args.text).text)], []
        else:
            word = WordEdit(segment=args.segment, index=args.word, text=args.text)
            segments, words = [], [(word.segment, word.index, word.text)]
    except ValidationError as error:
        raise UserError(f"--segment/--word/--text: {error.errors()[0]['msg']}") from None
    store = open_store(settings)
    try:
        written = meaning.correct(store, args.id, None, segments, words=words, by=_operator(), role="operator")
    except TranscriberError as error:
        raise UserError(str(error)) from None
    if not written:
        raise UserError(f"no record with id {args.id}")
    which = f"segment {args.segment}" if args.word is None else f"word {args.word} of segment {args.segment}"
    print(f"record {args.id}: {which} corrected")
    return 0


def cmd_delete(args, settings) -> int:
    """Erase a record for good (any owner's), as `DELETE /records/{id}` does for its owner."""
    if open_store(settings).delete_record(args.id, None, by=_operator(), role="operator") is None:
        raise UserError(f"no record with id {args.id}")
    print(f"record {args.id} deleted for good")
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("submit", help="accept a recording into the pipeline; prints its id")
    p.add_argument("file")
    p.add_argument("--owner", required=True)
    p.add_argument("--title", default="")
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
    p.set_defaults(run=cmd_submit)

    by_id = (
        ("text", cmd_text, "print a done record's text"),
        ("card", cmd_card, "print a record's card as JSON"),
        ("events", cmd_events, "print a record's event journal as JSON lines"),
        ("resume", cmd_resume, "return a halted record to work from its stage"),
        ("delete", cmd_delete, "erase a record, its audio and its text for good"),
    )
    for name, run, text in by_id:
        p = sub.add_parser(name, help=text)
        p.add_argument("id", type=record_id_argument)
        if name == "text":
            p.add_argument("--format", choices=FORMATS, default="txt")
            p.add_argument(
                "--version",
                choices=VERSIONS,
                default=CORRECTED,
                help="with the owner's corrections (default), as recognised, or english (a translated record's)",
            )
        p.set_defaults(run=run)

    p = sub.add_parser("edit", help="correct one segment of a done record's text (kept through re-runs)")
    p.add_argument("id", type=record_id_argument)
    p.add_argument("--segment", type=int, required=True, help="the segment's place, from 0 (as the json text lists it)")
    p.add_argument("--word", type=int, help="correct only this word of the segment (from 0, its place in `words`)")
    p.add_argument("--text", required=True, help="the segment's corrected text, on one line (with --word: one word)")
    p.set_defaults(run=cmd_edit)
