"""`transcriber search --owner NAME [--mode words|meaning|both] "query"`: the owner's hits, one a
line, `id  hh:mm:ss  snippet`, through the same function the HTTP API's `/search` calls."""

from __future__ import annotations

import sys

from domain.search import MARK_START, MARK_STOP, clock
from service.runtime import open_store
from service.search import MODES, MeaningUnavailable, QueryProblem, search
from transcriber.console import UserError

MAX_LINES = 100


def cmd_search(args, settings) -> int:
    store = open_store(settings)
    owner = store.owner_by_name(args.owner)
    if owner is None:
        raise UserError(f"no owner named {args.owner!r}")
    try:
        answer = search(store, owner["id"], args.query, mode=args.mode, limit=args.limit, speaker=args.speaker)
    except (QueryProblem, MeaningUnavailable) as problem:
        raise UserError(str(problem)) from None
    found, (total, capped) = answer.items, answer.counted
    for note in answer.notes:
        print(f"({note})", file=sys.stderr)
    for hit in found:
        snippet = " ".join(hit["snippet"].replace(MARK_START, "[").replace(MARK_STOP, "]").split())
        print(f"{hit['record']['id']}  {clock(hit['at'])}  {snippet}")
    if total > len(found):
        print(f"({len(found)} of {'more than ' if capped else ''}{total} hits shown; --limit shows more)")
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("search", help="search an owner's transcripts, titles and topics")
    p.add_argument("--owner", required=True)
    p.add_argument("--limit", type=int, default=20, choices=range(1, MAX_LINES + 1), metavar=f"1..{MAX_LINES}")
    p.add_argument("--speaker", help="only what this speaker said: a label (S1), its name or its voice's name")
    p.add_argument(
        "--mode",
        choices=MODES,
        default="both",
        help="words, meaning (passages that mean it, in other words) or both fused (the default)",
    )
    p.add_argument("query", help='words; "quotes" make a phrase; the last word matches as a prefix')
    p.set_defaults(run=cmd_search)
