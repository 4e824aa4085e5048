"""Fair turns between owners: the claim takes new work by turn, so one owner's
backlog does not hold up another owner's recording."""
from __future__ import annotations

from conftest import add_record, policy, save_result
from domain.stages import Step


def _owners(store, *names: str) -> list[dict]:
    for name in names:
        store.add_owner(name)
    return [store.owner_by_name(name) for name in names]


def _claim_order(store, step: Step, count: int) -> list[int]:
    """The records one worker claims, one after another, each run to its next stage."""
    order = []
    for _ in range(count):
        claim = store.claim(step, policy())
        order.append(claim.record_id)
        fields = {"duration_seconds": 1.0} if step is Step.CONVERT else {"engine": "x"}
        assert save_result(store, claim, fields)
    return order


def test_one_owners_backlog_does_not_hold_up_another(store):
    """Owner A submits 30 records, then owner B one; with one worker, B's record is
    claimed before A's third — at convert and again at recognize — and each owner's records
    keep the order they were submitted in."""
    a, b = _owners(store, "alice", "bob")
    mine = [add_record(store, a) for _ in range(30)]
    theirs = add_record(store, b)
    for step in (Step.CONVERT, Step.RECOGNIZE):
        order = _claim_order(store, step, 31)
        assert order.index(theirs) < order.index(mine[2]), order
        assert [i for i in order if i != theirs] == mine


def test_owners_take_turns_and_a_newcomer_joins_the_current_turn(store):
    """Three owners with backlogs are served in turns (one record each, by id within
    a turn); an owner who uploads later joins the turn being served instead of the queue's end,
    and an owner's second upload goes behind its first."""
    a, b, c = _owners(store, "a", "b", "c")
    a_ids = [add_record(store, a) for _ in range(3)]
    b_ids = [add_record(store, b) for _ in range(3)]
    first = _claim_order(store, Step.CONVERT, 2)
    assert first == [a_ids[0], b_ids[0]]
    c_ids = [add_record(store, c) for _ in range(2)]
    rest = _claim_order(store, Step.CONVERT, 6)
    assert rest == [a_ids[1], b_ids[1], c_ids[0], a_ids[2], b_ids[2], c_ids[1]]
