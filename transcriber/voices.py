"""`transcriber voices --owner NAME`: the owner's known voices, one a line, through the same
store function the HTTP API's `GET /voices` calls."""

from __future__ import annotations

from domain.voices import voice_view
from service.runtime import open_store
from transcriber.console import UserError, listed_elsewhere, name_width


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


def add_commands(sub) -> None:
    p = sub.add_parser("voices", help="list an owner's known voices: id, name, recordings, seconds")
    p.add_argument("--owner", required=True)
    p.add_argument("--json", action="store_true", help="one JSON array")
    p.set_defaults(run=cmd_voices)
