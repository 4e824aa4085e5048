"""The claim cycle's client CPU as a count of instructions, which the load of a shared machine
does not move: the service's cycle against bare psycopg's (`bench.claims`'s two sides, one
claimer), each run under valgrind's callgrind for a short and a long queue; the difference
divided by the difference in cycles is one cycle's instructions, start-up and set-up left out.
Prints a table, writes bench/results/claim_instructions.json. Needs valgrind; takes a few
minutes (a program runs ~50 times slower under it).

    .venv/bin/python -m bench.claim_instructions [--short N] [--long N]     (defaults 100, 600)

The count is this process's user-space instructions, psycopg's and libpq's included; the
kernel's share of a cycle (its 9 system calls, the same on both sides) and the server's are not
in it.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys

from bench.common import ROOT, report

SIDES = ("bare", "service")


def run_cycles(side: str, cycles: int) -> None:
    """The measured program: `cycles` cycles of one side on a fresh queue, after a warm-up of
    both sides (psycopg prepares a statement at its fifth run)."""
    from bench import claims
    from bench.scratch import scratch_database
    from db import Database, Store

    claims.configure_logging()
    with scratch_database() as url, Database(url, max_size=2) as db:
        db.migrate()
        store = Store(db)
        store.add_owner("bench")
        owner = store.owner_by_name("bench")["id"]
        blob, _ = store.store_blob([b"x"], "application/octet-stream")
        for warm_up in SIDES:
            claims.fill(db, owner, blob, 20)
            cycle(claims, warm_up, store, url)
        claims.fill(db, owner, blob, cycles)
        cycle(claims, side, store, url)


def cycle(claims, side: str, store, url: str) -> None:
    if side == "service":
        claims.service_cycles(store)
    else:
        claims.bare_cycles(url)


def instructions(side: str, cycles: int) -> int:
    """The instructions callgrind counts over a whole run of `cycles` cycles of one side."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-m", __spec__.name,
         "--run", side, str(cycles)],
        cwd=ROOT, capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"callgrind gave no count:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", type=int, default=100)
    parser.add_argument("--long", type=int, default=600)
    parser.add_argument("--run", nargs=2, metavar=("SIDE", "CYCLES"), help=argparse.SUPPRESS)
    parser.add_argument("--no-write", action="store_true", help="print only (a smoke run)")
    args = parser.parse_args()
    if args.run:
        run_cycles(args.run[0], int(args.run[1]))
        return
    per_cycle = {side: (instructions(side, args.long) - instructions(side, args.short)) / (args.long - args.short)
                 for side in SIDES}
    rows = [[side, round(per_cycle[side]), round(per_cycle[side] / per_cycle["bare"], 3)] for side in SIDES]
    report("claim_instructions", ["side", "instructions/cycle", "vs bare"], rows,
           {"short": args.short, "long": args.long, "note": "callgrind, one claimer, (long - short) / cycles"},
           write=not args.no_write)


if __name__ == "__main__":
    main()
