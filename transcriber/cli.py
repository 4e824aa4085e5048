"""The `transcriber` command line: its parser and its one way of reporting errors. The commands
live beside it by concern (accounts, records, operations); each calls the same functions the
HTTP API calls."""

from __future__ import annotations

import argparse
import sys

from loguru import logger

from db import DatabaseUnavailable
from domain.owners import InvalidOwnerName
from service import config, logs
from service.brokers import BrokerUnavailable
from service.intake import IntakeError
from transcriber import accounts, meaning, operations, records, search, voices, watch
from transcriber.console import EXIT_USAGE, UserError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="transcriber", description="Self-hosted speech-to-text.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for commands in (operations, accounts, records, search, meaning, voices, watch):
        commands.add_commands(sub)
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
    except (UserError, IntakeError, InvalidOwnerName, BrokerUnavailable) as error:
        print(f"transcriber: {error}", file=sys.stderr)
        return EXIT_USAGE
    except DatabaseUnavailable as error:
        print(f"transcriber: {error}", file=sys.stderr)
        return 1
    except config.ConfigError as error:
        print(f"transcriber: configuration error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(
            "transcriber: interrupted; accepted records stay in the pipeline "
            "(`transcriber status`, `transcriber card ID`)",
            file=sys.stderr,
        )
        return 130
    finally:
        logger.complete()


if __name__ == "__main__":
    sys.exit(main())
