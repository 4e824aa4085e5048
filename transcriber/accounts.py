"""`transcriber owner …` and `transcriber operator …`: the accounts the service owner manages."""

from __future__ import annotations

import argparse
import math
from typing import Any

from db.accounts import DuplicateOperator, DuplicateOwner
from domain.owners import InvalidOwnerName, check_name, state
from domain.quotas import HOUR, MB, usage_view
from service.runtime import open_store
from transcriber.console import UserError, listed_elsewhere, name_width


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
        print(
            f"owner {args.name} disabled: its API token is refused until `transcriber owner enable`, "
            "and its browser sessions have ended"
        )
    else:
        print(f"owner {args.name} enabled: its current API token works again (browsers sign in again)")
    return 0


def cmd_owner_list(args, settings) -> int:
    rows = [
        {
            "name": row["name"],
            "state": state(row["disabled_at"]),
            "records": row["records"],
            "done": row["done"],
            "halted": row["halted"],
            "created_at": row["created_at"].isoformat(),
            **usage_view(row),
        }
        for row in open_store(settings).owners()
    ]
    done = listed_elsewhere(rows, args.json, "no owners yet (create one with: transcriber owner add NAME)")
    if done is not None:
        return done
    width = name_width(rows)
    print(
        f"{'name':<{width}} {'state':<8} {'records':>7} {'done':>6} {'halted':>6} {'hours':>8} {'stored MB':>10}  "
        f"{'quota':<18} created"
    )
    for row in rows:
        print(
            f"{row['name']:<{width}} {row['state']:<8} {row['records']:>7} {row['done']:>6} {row['halted']:>6} "
            f"{row['audio_hours']:>8.2f} {row['stored_bytes'] / MB:>10.2f}  {_limits(row['quota']):<18} "
            f"{row['created_at'][:19]}"
        )
    return 0


def _limits(quota: dict) -> str:
    hours = "-" if quota["hours"] is None else f"{quota['hours']:g} h"
    storage = "-" if quota["storage_mb"] is None else f"{quota['storage_mb']:g} MB"
    return "none" if quota["hours"] is None and quota["storage_mb"] is None else f"{hours} / {storage}"


def cmd_owner_quota(args, settings) -> int:
    """Set, clear or show an owner's quota; always print what it is now and what the owner uses."""
    if args.none and (args.hours is not None or args.storage_mb is not None):
        raise UserError("--none clears both limits; give it alone, or give --hours/--storage-mb")
    store = open_store(settings)
    changes: dict[str, Any] = {}
    if args.none:
        changes = {"seconds": None, "size_bytes": None}
    if args.hours is not None:
        changes["seconds"] = args.hours * HOUR
    if args.storage_mb is not None:
        changes["size_bytes"] = int(args.storage_mb * MB)
    if changes and not store.set_quota(args.name, **changes):
        raise _no_owner(args.name)
    found = store.owner_by_name(args.name)
    if found is None:
        raise _no_owner(args.name)
    usage = store.owner_usage(found["id"])
    if usage is None:  # deleted meanwhile
        raise _no_owner(args.name)
    use = usage_view(usage)
    print(
        f"owner {args.name}: quota {_limits(use['quota'])}; uses {use['audio_hours']:.2f} h of audio, "
        f"{use['stored_bytes'] / MB:.2f} MB stored"
    )
    return 0


def _amount(text: str) -> float:
    """A limit: a finite number, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0 or value > 1e9:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1e9, got {text!r}")
    return value


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


def add_commands(sub) -> None:
    owner = sub.add_parser("owner", help="manage owners").add_subparsers(dest="owner_command", required=True)
    p = owner.add_parser("add", help="create an owner and print its API token once")
    p.add_argument("name")
    p.set_defaults(run=cmd_owner_add)
    p = owner.add_parser("token", help="give an owner a new API token (printed once); the old one stops working")
    p.add_argument("name")
    p.set_defaults(run=cmd_owner_token)
    for action, text in (
        ("disable", "refuse an owner's API token until it is enabled and end its browser sessions (records stay)"),
        ("enable", "accept a disabled owner's current API token again"),
    ):
        p = owner.add_parser(action, help=text)
        p.add_argument("name")
        p.set_defaults(run=cmd_owner_enable)
    p = owner.add_parser(
        "quota", help="set (or with --none clear) an owner's limits; without options show them with what the owner uses"
    )
    p.add_argument("name")
    p.add_argument("--hours", type=_amount, help="the most hours of audio the owner's records may hold")
    p.add_argument("--storage-mb", type=_amount, help="the most MB of original audio kept for the owner")
    p.add_argument("--none", action="store_true", help="no limits at all")
    p.set_defaults(run=cmd_owner_quota)
    p = owner.add_parser(
        "list", help="owners with their state, record counts, audio hours, stored bytes and quota (never tokens)"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_owner_list)

    operator = sub.add_parser("operator", help="manage the service owner's /admin accounts").add_subparsers(
        dest="operator_command", required=True
    )
    p = operator.add_parser("add", help="create an operator account for /admin and print its token once")
    p.add_argument("name")
    p.set_defaults(run=cmd_operator_add)
