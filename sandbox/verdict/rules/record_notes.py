"""Notes on the idempotency record, for every history: lock overlaps and stale writes, key by key.

They explain effects, never judge them (``FindingKind.note``). Who owned a key when is :class:`Ownership`'s
rule, which the timeline's markers follow too.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from ...core.records import AwsCall
from ...vocab import AWS_OK, DYNAMODB_READS, FindingKind
from ..facts import TTL_ATTRIBUTE, Facts, fmt, write_op
from ..findings import Finding
from ..judges import Rule
from ..ownership import Ownership


def record_notes(facts: Facts) -> list[Finding]:
    """Lock overlaps and stale writes, key by key, from the table writes that took effect."""
    by_key: dict[str, list[AwsCall]] = defaultdict(list)
    for writes in facts.table_writes.values():
        for e in writes:
            if e.result == AWS_OK and e.key is not None and e.op not in DYNAMODB_READS:
                by_key[e.key].append(e)
    notes: list[Finding] = []
    lock_ends = _lock_ends(facts)
    for key, writes in sorted(by_key.items()):
        notes += _key_notes(facts, lock_ends, key, sorted(writes, key=lambda e: e.seq))
    return notes


def _lock_ends(facts: Facts) -> dict[str, list[AwsCall]]:
    """Key -> the world's own writes that moved its lock's end (a drill ending a claim's lock, say)."""
    ends: dict[str, list[AwsCall]] = defaultdict(list)
    for e in facts.records:
        if (isinstance(e, AwsCall) and e.target == facts.table and e.inv is None and e.result == AWS_OK
                and e.op not in DYNAMODB_READS and isinstance(e.key, str) and _lock_end_of(e) is not None):
            ends[e.key].append(e)
    return ends


def _key_notes(facts: Facts, lock_ends: dict[str, list[AwsCall]], key: str, writes: list[AwsCall]) -> list[Finding]:
    notes, owners = [], Ownership()
    for e in writes:
        assert e.inv is not None  # table_writes holds the writes of invocations only
        write = owners.write(e.inv, key, write_op(e), e.detail.get("status"), e.seq, e)
        if write.over is None:
            continue
        if write.claim and _running(facts, write.over.inv, e.t):
            ended = [w for w in lock_ends.get(key, []) if write.over.record.seq < w.seq < e.seq]
            notes.append(_overlap(facts, key, write.over.record, e, ended))
        elif write.stale:
            notes.append(_stale(key, write.over.record, e))
    return notes


def _running(facts: Facts, inv_id: str, t: float) -> bool:
    inv = facts.invs.get(inv_id)
    end = inv.ended_at if inv is not None else None
    return end is None or end > t


def _lock_end_of(record: AwsCall) -> Any:
    return record.detail.get("lockUntil", record.detail.get(TTL_ATTRIBUTE))


def _lock_end(facts: Facts, claim: AwsCall) -> float | None:
    until = _lock_end_of(claim)
    return float(until) - facts.epoch if isinstance(until, (int, float)) else None


def _overlap(facts: Facts, key: str, first: AwsCall, second: AwsCall, ended: list[AwsCall]) -> Finding:
    """``ended``: the world's own writes between the two claims that moved the first one's lock's end."""
    end = _lock_end(facts, first)
    lock = f" with a lock until {fmt(end)}" if end is not None else ""
    if ended:  # the lock did not run out by itself: the run ended it from outside, on purpose
        drill = facts.meta.get("drill")
        who = f"the {drill} drill" if drill else "a write from outside any invocation"
        text = (f"{key}: lock overlap, caused on purpose by {who}. {first.inv} claimed the key at "
                f"{fmt(first.t)}{lock}; at {fmt(ended[-1].t)} {who} set the lock's end to the past (standing "
                f"in for a lock that runs out under its owner), and {second.inv} took the key over at "
                f"{fmt(second.t)} while {first.inv} was still running. What {first.inv} writes to the "
                f"record after that is what this run tests.")
    else:
        text = (f"{key}: lock overlap. {first.inv} claimed the key at {fmt(first.t)}{lock} and was still "
                f"running when {second.inv} took the key over at {fmt(second.t)}, so both did the work. "
                f"A lock must outlast the work it guards.")
    return Finding(FindingKind.OVERLAP, key, None, text, [first.inv, second.inv], (first.t, second.t))


def _stale(key: str, owner: AwsCall, e: AwsCall) -> Finding:
    what = "deleted the record" if write_op(e) == "DeleteItem" else "overwrote the record"
    text = (f"{key}: stale write. {e.inv} {what} at {fmt(e.t)}, though {owner.inv} had "
            f"taken the key over at {fmt(owner.t)}. A write conditional on still owning the claim (a "
            f"fencing token) would have been refused.")
    return Finding(FindingKind.STALE_WRITE, key, None, text, [e.inv, owner.inv], (owner.t, e.t))


RECORD_NOTES = Rule("notes on the idempotency record", 90, record_notes)
