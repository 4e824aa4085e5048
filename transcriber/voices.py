"""`transcriber voices --owner NAME`: the owner's known voices, one a line; `transcriber speakers
ID [--name S1=Alice] [--reject S2]`: a record's speakers named (enrolling their voices) or their
matches rejected, then listed. Through the same store functions and input rules as the HTTP API's
`GET /voices` and `PATCH /records/{id}`."""

from __future__ import annotations

from pydantic import ValidationError

from domain.card import card
from domain.voices import voice_view
from service import inputs
from service.runtime import open_store
from transcriber.console import UserError, listed_elsewhere, name_width, print_json, record_id_argument


def cmd_voices(args, settings) -> int:
    store = open_store(settings)
    owner = store.owner_by_name(args.owner)
    if owner is None:
        raise UserError(f"no owner named {args.owner!r}")
    rows = [voice_view(row) for row in store.voices(owner["id"])]
    done = listed_elsewhere(rows, args.json, "no voices yet (name a speaker of a record: its voice is known then)")
    if done is not None:
        return done
    width = name_width(rows)
    print(f"{'id':>6}  {'name':<{width}}  {'recordings':>10}  {'seconds':>8}")
    for row in rows:
        print(f"{row['id']:>6}  {row['name']:<{width}}  {row['recordings']:>10}  {row['seconds']:>8.1f}")
    return 0


def cmd_speakers(args, settings) -> int:
    store = open_store(settings)
    row = store.card_row(args.id)
    if row is None:
        raise UserError(f"no record with id {args.id}")
    names: dict[str, str | None] = dict(_label_and_name(given) for given in args.name or ())
    try:
        change = inputs.Edit(speakers=names or None, speakers_rejected=args.reject or None)
    except ValidationError as error:
        problem = error.errors()[0]
        raise UserError(f"{'.'.join(map(str, problem['loc']))}: {problem['msg']}") from None
    if change.speakers:
        store.name_speakers(args.id, row["owner_id"], change.speakers)
    if change.speakers_rejected:
        store.reject_matches(args.id, row["owner_id"], change.speakers_rejected)
    listed = card(store.card_row(args.id) or row)["speakers"]["list"]
    if args.json:
        print_json(listed)
        return 0
    for speaker in listed:
        voice = speaker["voice"]
        match = "" if voice is None else f"  voice {voice['id']} {voice['name']} ({voice['score']:.2f})"
        print(f"{speaker['label']}  {speaker['name']}{match}{'  rejected' if speaker['rejected'] else ''}")
    return 0


def _label_and_name(given: str) -> tuple[str, str]:
    label, sign, name = given.partition("=")
    if not sign:
        raise UserError(f"--name takes LABEL=NAME (S1=Alice; S1= takes the name away), got {given!r}")
    return label.strip(), name.strip()


def add_commands(sub) -> None:
    p = sub.add_parser("voices", help="list an owner's known voices: id, name, recordings, seconds")
    p.add_argument("--owner", required=True)
    p.add_argument("--json", action="store_true", help="one JSON array")
    p.set_defaults(run=cmd_voices)
    p = sub.add_parser("speakers", help="name a record's speakers (their voices are kept), reject matches; list them")
    p.add_argument("id", type=record_id_argument)
    p.add_argument("--name", action="append", metavar="S1=NAME", help="name a speaker (S1= takes the name away)")
    p.add_argument("--reject", action="append", metavar="S2", help="the voice matched to this speaker is not its own")
    p.add_argument("--json", action="store_true", help="one JSON array")
    p.set_defaults(run=cmd_speakers)
