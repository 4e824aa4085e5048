"""One claim protocol for every step: each of its operations is written once, as one named
statement on the step rows, and every step is worked through it. A step adds only its own part
to the save and the checkpoint (the fragments save_<step> and checkpoint_<step>); no statement of
its own claims, renews, fails, halts, releases, resumes or ends a gone holder's lease."""
from __future__ import annotations

import re

from actors.work import STEPS
from conftest import ROOT
from domain.stages import Step

NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)
# what writes the step rows, and the one statement of each (accept_record queues the first step)
PROTOCOL = {"claim", "save", "record_failure", "halt", "renew_lease", "checkpoint", "release", "resume",
            "end_gone_holders_lease", "accept_record"}
WRITES_STEPS = re.compile(r"\b(UPDATE\s+steps|DELETE\s+FROM\s+steps|INSERT\s+INTO\s+steps)\b", re.IGNORECASE)


def statements() -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted((ROOT / "db" / "queries").glob("*.sql")):
        parts = NAME.split(path.read_text())
        for name, body in zip(parts[1::2], parts[2::2], strict=True):
            found[name] = body
    return found


def test_each_protocol_operation_is_one_statement_for_every_step():
    """The statements that write step rows are exactly the protocol's operations, one each: no
    step has a claim, renewal, failure, halt, release, resume or end of lease of its own."""
    writers = {name for name, body in statements().items() if WRITES_STEPS.search(body)}
    assert writers == PROTOCOL
    # parameterised by the step, not written per step (resume takes whichever step is halted)
    for name in PROTOCOL - {"accept_record", "resume"}:
        assert "%(step)s" in statements()[name], name


def test_a_step_adds_only_its_save_and_checkpoint():
    """Each step's own SQL is a fragment of the save (and of the checkpoint where it keeps work
    by windows), composed into the protocol's statement; no fragment touches a step row."""
    found = statements()
    for step in Step:
        assert f"save_{step.value}" in found, step
    steps = "|".join(step.value for step in Step)
    fragments = {name: body for name, body in found.items() if re.fullmatch(rf"(save|checkpoint)_({steps})", name)}
    assert set(fragments) == {f"save_{s.value}" for s in Step} | {"checkpoint_recognize", "checkpoint_diarize"}
    for name, body in fragments.items():
        assert not WRITES_STEPS.search(body) and "claim_token =" not in body, name


def test_every_step_is_worked_by_the_one_path():
    """The worker's one run (actors.work.run_once) knows every step; a step is its work and the
    fields it owns, nothing of the claim."""
    assert set(STEPS) == set(Step)
    for spec in STEPS.values():
        assert not {"claim_token", "lease_expires_at", "failures", "halted_at"} & spec.owns

