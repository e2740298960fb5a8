"""The checker: reads a history, gives a verdict in Maelstrom's terms, and explains it.

- ``valid``: every accepted order got each effect it is owed exactly once.
- ``invalid``: some effect happened twice or more (a duplicate), an accepted order never
  got an effect it is owed (lost), an effect happened for an order nobody accepted, the
  orders of a FIFO message group were handled out of the order they were sent in, or a
  handler answered a batch with a partial batch response Lambda could not read (one naming
  a record the batch did not hold, say), so Lambda failed the whole batch: a broken contract
  with the event source, whether or not the redelivery it caused repeated anything.
- ``unknown``: nothing is wrong yet, but the history cannot say: an order is still in
  flight when the run stopped, or an invocation was abandoned while blocked.

It reads only the history, so it judges a live run, a saved JSON file or a hand-built
history the same way, and it decides from record fields alone, never from message text.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..core.history import History
from ..core.views import html_of
from ..vocab import (
    AWS_OK,
    DROPPED,
    DYNAMODB_READS,
    IDEMPOTENCY_TABLE,
    BadBatchResponse,
    Delivery,
    EffectStatus,
    FindingKind,
    ItemStatus,
    Outcome,
    RecordType,
    Status,
)
from .ownership import Ownership

#: Writes that can save an invocation's result in the idempotency table (a delete saves nothing);
#: a write inside a transaction or a batch counts as the single-item call it amounts to.
_SAVES = ("PutItem", "UpdateItem")
#: Where the record's expiry is kept.
TTL_ATTRIBUTE = IDEMPOTENCY_TABLE.ttl_attribute
DOC_FIFO_ORDER = "https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html"
#: AWS's list of the partial batch responses that fail a whole batch ("Success and failure conditions").
DOC_BATCH_RESPONSE = DOC_FIFO_ORDER + "#services-sqs-batchfailurereporting"
DOC_STREAM_BATCH_RESPONSE = "https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-batchfailurereporting.html"


def _write_op(record: dict) -> str:
    return (record.get("detail") or {}).get("as") or record["op"]


@dataclass
class Finding:
    kind: str  # a FindingKind
    key: str
    effect: str | None
    text: str
    invocations: list[str | None] = field(default_factory=list)  # None: the world's own (no invocation)
    window: tuple[float, float] | None = None
    remaining_window: bool = False
    #: The repeat came after the first invocation's saved result had expired: the idempotency
    #: record's retention was shorter than the time the source could still deliver the event.
    retention_too_short: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "key": self.key, "effect": self.effect, "text": self.text,
                "invocations": self.invocations, "window": list(self.window) if self.window else None,
                "remaining_window": self.remaining_window, "retention_too_short": self.retention_too_short}


@dataclass
class Verdict:
    status: str  # a Status: valid, invalid or unknown
    findings: list[Finding]
    effects_per_key: dict[str, dict[str, int]]

    @property
    def valid(self) -> bool:
        return self.status == Status.VALID

    @property
    def duplicates(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == FindingKind.DUPLICATE]

    @property
    def lost(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == FindingKind.LOST]

    @property
    def notes(self) -> list[Finding]:
        """Findings about the idempotency record (lock overlaps, stale writes): they explain, never judge."""
        return [f for f in self.findings if FindingKind(f.kind).note]

    def explain(self) -> str:
        def s(n: int) -> str:  # the plural ending: 0 orders, 1 order, 2 orders
            return "" if n == 1 else "s"

        judged = [f for f in self.findings if not FindingKind(f.kind).note]
        if not judged:
            orders = len(self.effects_per_key)
            total = sum(sum(v.values()) for v in self.effects_per_key.values())
            lines = [f"valid: {orders} order{s(orders)}, {total} effect{s(total)}, each exactly once."]
        else:
            lines = [f"{self.status}: {len(judged)} finding{s(len(judged))}"]
            lines += [f"- {f.text}" for f in judged]
        if self.notes:
            lines.append("Notes on the idempotency record:")
            lines += [f"- {f.text}" for f in self.notes]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()

    def __repr__(self) -> str:
        n = len(self.findings)
        return f"<Verdict {self.status}: {n} finding{'' if n == 1 else 's'}>"

    def _repr_html_(self) -> str | None:
        return html_of("verdict", self)


def _fmt(t: float) -> str:
    """A time in the checker's words, to the millisecond under two minutes: two events 25 ms apart never read
    as one ("0.35 s" and "0.375 s", where one decimal said "0.3 s" and "0.4 s")."""
    if t < 120:
        text = f"{t:.3f}".rstrip("0")
        return f"{text}0 s" if text.endswith(".") else f"{text} s"
    if t < 3600:
        return f"{t / 60:.1f} min"
    hours, minutes = divmod(round(t / 60), 60)
    return f"{hours} h {minutes} min"


def _describe(inv: dict[str, Any] | None, inv_id: str | None) -> str:
    if inv is None:
        return inv_id or "outside any invocation"
    return f"{inv_id} ({inv['source']}, {inv['cause']})"


class _Facts:
    """What the checker needs from one history, read once."""

    def __init__(self, history: History):
        self.table = history.meta.get("table", "idempotency")
        epoch = history.meta.get("epoch")
        self.epoch = float(epoch) if isinstance(epoch, (int, float)) else 0.0
        # Both by invocation id, looked up with a record's ``inv`` (None for the world's own doings).
        self.invs: dict[Any, dict[str, Any]] = history.invocations()
        self.owed: dict[str, set[str]] = defaultdict(set)
        self.effects: dict[tuple[str, str], list[dict]] = defaultdict(list)
        self.pending: set[str] = set()
        self.dropped: dict[str, list[dict]] = defaultdict(list)
        self.table_writes: dict[Any, list[dict]] = defaultdict(list)  # inv -> its writes to the table
        #: key -> the world's own writes that moved its lock's end (a drill ending a claim's lock, say)
        self.lock_ends: dict[str, list[dict]] = defaultdict(list)
        self.drill: str | None = history.meta.get("drill")
        self.groups: dict[str, list[str]] = defaultdict(list)  # FIFO message group -> its orders, as sent
        self.bad_responses: list[dict] = []  # "batch failed" records of a response Lambda could not read
        for e in history:
            self._read(e)

    def _read(self, e: dict) -> None:
        kind = e["type"]
        if kind == RecordType.ACCEPT:
            self.owed[e["key"]].update(e.get("expects") or [])
            group = e.get("group")
            if group is not None and e["key"] not in self.groups[group]:
                self.groups[group].append(e["key"])
        elif kind == RecordType.EFFECT and EffectStatus(e["status"]).counted:
            self.effects[(e["kind"], e["key"])].append(e)
        elif kind == RecordType.DELIVERY and e.get("what") == Delivery.PENDING:
            self.pending.update(e.get("keys") or [])
        elif kind == RecordType.DELIVERY and e.get("what") in DROPPED:
            for k in e.get("keys") or []:
                self.dropped[k].append(e)
        elif (kind == RecordType.DELIVERY and e.get("what") == Delivery.BATCH_FAILED
              and (e.get("detail") or {}).get("badResponse") in set(BadBatchResponse)):
            self.bad_responses.append(e)
        elif kind == RecordType.AWS and e.get("target") == self.table and e.get("inv") is not None:
            self.table_writes[e["inv"]].append(e)
        elif (kind == RecordType.AWS and e.get("target") == self.table and e.get("result") == AWS_OK
              and e["op"] not in DYNAMODB_READS and isinstance(e.get("key"), str) and _lock_end_of(e) is not None):
            self.lock_ends[e["key"]].append(e)  # outside any invocation

    def in_remaining_window(self, first: dict) -> bool:
        """Did the first effect's invocation claim the key, do the effect, then die before saving?

        That is the window the article admits no claim can close: the work happened, the
        record of it did not, so the retry repeats it. A claim is a successful write before
        the effect; a save is a successful write after it (a delete saves nothing).
        """
        inv = self.invs.get(first.get("inv"))
        if inv is None or inv["outcome"] in (Outcome.OK, None):
            return False
        writes = [e for e in self.table_writes.get(first["inv"], [])
                  if _write_op(e) in _SAVES and e["result"] == AWS_OK]
        claims = [e for e in writes if e["seq"] < first["seq"]]
        if not claims:
            return False
        # The write just before the effect is the claim that guarded it; a save is a later
        # write to that same item (another order's claim is no save).
        key = claims[-1].get("key")
        return not any(e["seq"] > first["seq"] and e.get("key") in (key, None) for e in writes)

    def expired_save(self, first: dict, repeat: dict) -> tuple[dict, float] | None:
        """The first effect's invocation saved its result (a COMPLETED record with an ``expiresAt``), and the
        invocation that repeated the effect started after that record had expired: (the save, when it expired).

        ``expiresAt`` is epoch seconds; the history's times count from ``meta["epoch"]``.
        """
        repeat_inv = self.invs.get(repeat.get("inv"))
        if repeat_inv is None:
            return None
        saves = [e for e in self.table_writes.get(first.get("inv"), [])
                 if _write_op(e) in _SAVES and e["result"] == AWS_OK and e["seq"] > first["seq"]
                 and (e.get("detail") or {}).get("status") == ItemStatus.COMPLETED
                 and isinstance((e.get("detail") or {}).get(TTL_ATTRIBUTE), (int, float))]
        if not saves:
            return None
        expired = float(saves[-1]["detail"][TTL_ATTRIBUTE]) - self.epoch
        return (saves[-1], expired) if repeat_inv["t"] >= expired else None


def check(history: History) -> Verdict:
    facts = _Facts(history)
    findings: list[Finding] = []
    effects_per_key: dict[str, dict[str, int]] = {}
    kinds_seen = sorted({kind for kind, _ in facts.effects} | {k for v in facts.owed.values() for k in v})
    for key in sorted(set(facts.owed) | {key for _, key in facts.effects}, key=_natural):
        effects_per_key[key] = {kind: len(facts.effects.get((kind, key), [])) for kind in kinds_seen
                                if kind in facts.owed.get(key, set()) or (kind, key) in facts.effects}
        for kind in sorted(effects_per_key[key]):
            finding = _judge(facts, key, kind)
            if finding is not None:
                findings.append(finding)
    findings += _abandoned(facts)
    findings += _out_of_order(facts)
    findings += _bad_batch_responses(facts)
    findings += record_notes(facts)
    if any(FindingKind(f.kind).breaks for f in findings):
        status = Status.INVALID
    elif any(not FindingKind(f.kind).note for f in findings):
        status = Status.UNKNOWN
    else:
        status = Status.VALID
    return Verdict(status, findings, effects_per_key)


def _judge(facts: _Facts, key: str, kind: str) -> Finding | None:
    """The finding for one (order, effect) pair, or None when it happened exactly once."""
    done = facts.effects.get((kind, key), [])
    if key not in facts.owed or kind not in facts.owed[key]:
        return Finding(FindingKind.UNEXPECTED, key, kind, f"{key}: {len(done)} {kind} effect(s), but no accepted "
                       f"order owes one", [e.get("inv") for e in done])
    if len(done) > 1:
        return _duplicate(facts, key, kind, done)
    if done:
        return None
    if key in facts.pending:
        return Finding(FindingKind.PENDING, key, kind,
                       f"{key}: no {kind} yet, and the order was still in flight when the run stopped")
    if any(inv.get("blocked") and key in (inv.get("keys") or []) for inv in facts.invs.values()):
        return None  # an invocation that carried it never returned: what it would have done is unknown (_abandoned)
    return _lost(facts, key, kind)


def _duplicate(facts: _Facts, key: str, kind: str, done: list[dict]) -> Finding:
    who = ", ".join(f"{_describe(facts.invs.get(e.get('inv')), e.get('inv'))} at {_fmt(e['t'])}" for e in done)
    remaining = facts.in_remaining_window(done[0])
    text = f"{key}: {kind} sent {len(done)} times, by {who}."
    if remaining:
        first_inv = facts.invs.get(done[0].get("inv"), {})
        text += (f" Remaining window: {done[0].get('inv')} claimed the key and did the {kind}, then "
                 f"{_ENDING.get(first_inv.get('outcome'), 'ended')} before saving its result, so the retry "
                 f"repeated it. No claim closes this window; only a downstream idempotency key does.")
    late = _late_repeat(facts, done)
    if late is not None:
        repeat, save, expired = late
        text += (f" Retention shorter than the redelivery horizon: {done[0].get('inv')} saved its result at "
                 f"{_fmt(save['t'])}, kept until {_fmt(expired)} (its expiresAt), but {repeat.get('inv')} "
                 f"started at {_fmt(facts.invs[repeat['inv']]['t'])}, after the record had expired, so the "
                 f"claim took it for new work. Keep idempotency records longer than any source may still "
                 f"deliver the event.")
    if any(e["status"] == EffectStatus.INDEFINITE for e in done):
        text += " (One of them was cut off by a deadline but still reached the provider.)"
    return Finding(FindingKind.DUPLICATE, key, kind, text, [e.get("inv") for e in done],
                   (done[0]["t"], done[-1]["t"]), remaining, retention_too_short=late is not None)


#: How an invocation that did not return ok ended, in words.
_ENDING: dict[str | None, str] = {Outcome.ERROR: "raised an error", Outcome.TIMEOUT: "timed out",
                                  Outcome.CRASHED: str(Outcome.CRASHED)}


def _late_repeat(facts: _Facts, done: list[dict]) -> tuple[dict, dict, float] | None:
    """(repeated effect, the first one's save, when that save expired) for the first repeat that came too late."""
    for e in done[1:]:
        hit = facts.expired_save(done[0], e)
        if hit is not None:
            return (e, *hit)
    return None


def _lost(facts: _Facts, key: str, kind: str) -> Finding:
    where = ""
    if facts.dropped.get(key):
        d = facts.dropped[key][-1]
        reason = (d.get("detail") or {}).get("reason")
        ended = "Its execution failed" if d["what"] == Delivery.EXECUTION_FAILED else f"It ended {d['what']}"
        where = f" {ended} at {_fmt(d['t'])}" + (f" ({reason})" if reason else "") + "."
    tried = [i for i, v in facts.invs.items() if key in (v.get("keys") or [])]
    if tried:
        tried_text = " Invocations that carried it: " + ", ".join(
            f"{_describe(facts.invs[i], i)} -> {facts.invs[i]['outcome']}{_never_ran(facts.invs[i])}"
            for i in tried) + "."
    else:
        tried_text = " No invocation ever carried it."
    return Finding(FindingKind.LOST, key, kind, f"{key}: accepted but no {kind} was ever sent.{where}{tried_text}",
                   tried)


def _never_ran(inv: dict[str, Any]) -> str:
    """Words for an invocation whose handler never ran (its init failed): a lost order's likeliest cause, which
    an outcome alone ("error") hides."""
    error = str(inv.get("error") or "")
    return " (Runtime.InitError: the handler never ran)" if error.startswith("Runtime.InitError") else ""


def _abandoned(facts: _Facts) -> list[Finding]:
    return [Finding(FindingKind.ABANDONED, ",".join(inv.get("keys") or []) or inv_id, None,
                    f"{inv_id} was blocked outside the sandbox, so what it did after that is unknown", [inv_id])
            for inv_id, inv in facts.invs.items() if inv.get("blocked")]


def _out_of_order(facts: _Facts) -> list[Finding]:
    """A FIFO message group whose orders got their first effect out of the order they were sent in.

    AWS: with a FIFO queue the function "should stop processing messages after the first failure and
    return all failed and unprocessed messages" (DOC_FIFO_ORDER), so the group's order holds.
    """
    findings = []
    for group, keys in sorted(facts.groups.items()):
        firsts = {k: min((e for (_, key), done in facts.effects.items() if key == k for e in done),
                         key=lambda e: e["seq"], default=None) for k in keys}
        first = {k: e for k, e in firsts.items() if e is not None}  # the orders that got an effect
        for i, key in enumerate(keys):
            if key not in first:
                continue
            earlier = [k for k in keys[i + 1:] if k in first and first[k]["seq"] < first[key]["seq"]]
            if earlier:
                later = ", ".join(earlier)
                text = (f"{key}: its first {first[key]['kind']} came at {_fmt(first[key]['t'])}, after those of "
                        f"{later}, which were sent after it in FIFO message group {group}. A FIFO queue keeps a "
                        f"group in order only if the function stops at its first failure and returns that message "
                        f"and every one after it ({DOC_FIFO_ORDER})")
                findings.append(Finding(FindingKind.OUT_OF_ORDER, key, first[key]["kind"], text,
                                        [first[key].get("inv")] + [first[k].get("inv") for k in earlier]))
                break  # one finding per group: its first order handled late
    return findings


def _bad_batch_responses(facts: _Facts) -> list[Finding]:
    """Each invocation whose partial batch response Lambda could not read, so it failed the whole batch.

    The handler returned normally and meant to report some records; what it returned failed every record
    instead, those it had handled included (DOC_BATCH_RESPONSE). One finding per invocation.
    """
    findings, seen = [], set()
    for d in facts.bad_responses:
        inv = d.get("inv")
        if inv in seen:
            continue
        seen.add(inv)
        detail = d.get("detail") or {}
        keys = list(d.get("keys") or [])
        fault = detail["badResponse"]
        if fault == BadBatchResponse.UNKNOWN_IDENTIFIER:
            said = (f"a batchItemFailures entry naming {detail.get('itemIdentifier')!r}, which is not the "
                    f"{_id_name(d)} of any record in the batch")
        elif fault == BadBatchResponse.NO_IDENTIFIER:
            said = "a batchItemFailures entry without an itemIdentifier"
        else:
            said = "a batchItemFailures that is not a list"
        carried = f"its batch (carrying {', '.join(keys)})" if keys else "its batch"
        if _id_name(d) == "messageId":
            rule = (f"An entry that names no record of the batch, or none at all, fails the whole batch "
                    f"({DOC_BATCH_RESPONSE})")
        else:  # a stream: AWS lists empty and null identifiers; an unknown one is the sandbox's reading (shards.py)
            rule = (f"An entry without an identifier fails the whole batch ({DOC_STREAM_BATCH_RESPONSE}); the "
                    f"sandbox treats one naming no record of the batch the same")
        text = (f"{inv} ended ok but returned {said}, so Lambda failed {carried} as a whole at {_fmt(d['t'])}: "
                f"every record came back, any already handled included. {rule}")
        findings.append(Finding(FindingKind.BAD_BATCH_RESPONSE, ",".join(keys) or str(inv), None, text, [inv]))
    return findings


def _id_name(d: dict) -> str:
    """What a batch's records are named by, as its source's partial batch response names them."""
    return "messageId" if (d.get("detail") or {}).get("messageIds") is not None else "sequence number"


def _natural(key: str):
    head, _, tail = key.rpartition("-")
    return (head, int(tail)) if tail.isdigit() else (key, -1)


# -- notes on the idempotency record -----------------------------------------------------------------
def record_notes(facts: _Facts) -> list[Finding]:
    """Lock overlaps and stale writes, key by key, from the table writes that took effect."""
    by_key: dict[str, list[dict]] = defaultdict(list)
    for writes in facts.table_writes.values():
        for e in writes:
            if e["result"] == AWS_OK and e.get("key") is not None and e["op"] not in DYNAMODB_READS:
                by_key[e["key"]].append(e)
    notes: list[Finding] = []
    for key, writes in sorted(by_key.items()):
        notes += _key_notes(facts, key, sorted(writes, key=lambda e: e["seq"]))
    return notes


def _key_notes(facts: _Facts, key: str, writes: list[dict]) -> list[Finding]:
    notes, owners = [], Ownership()
    for e in writes:
        write = owners.write(e["inv"], key, _write_op(e), (e.get("detail") or {}).get("status"), e["seq"], e)
        if write.over is None:
            continue
        if write.claim and _running(facts, write.over.inv, e["t"]):
            notes.append(_overlap(facts, key, write.over.record, e))
        elif write.stale:
            notes.append(_stale(facts, key, write.over.record, e))
    return notes


def _running(facts: _Facts, inv_id: str, t: float) -> bool:
    inv = facts.invs.get(inv_id) or {}
    end = inv.get("end")
    return end is None or end > t


def _lock_end_of(record: dict) -> Any:
    detail = record.get("detail") or {}
    return detail.get("lockUntil", detail.get(TTL_ATTRIBUTE))


def _lock_end(facts: _Facts, claim: dict) -> float | None:
    until = _lock_end_of(claim)
    return float(until) - facts.epoch if isinstance(until, (int, float)) else None


def _overlap(facts: _Facts, key: str, first: dict, second: dict) -> Finding:
    end = _lock_end(facts, first)
    lock = f" with a lock until {_fmt(end)}" if end is not None else ""
    ended = [w for w in facts.lock_ends.get(key, []) if first["seq"] < w["seq"] < second["seq"]]
    if ended:  # the lock did not run out by itself: the run ended it from outside, on purpose
        who = f"the {facts.drill} drill" if facts.drill else "a write from outside any invocation"
        text = (f"{key}: lock overlap, caused on purpose by {who}. {first['inv']} claimed the key at "
                f"{_fmt(first['t'])}{lock}; at {_fmt(ended[-1]['t'])} {who} set the lock's end to the past (standing "
                f"in for a lock that runs out under its owner), and {second['inv']} took the key over at "
                f"{_fmt(second['t'])} while {first['inv']} was still running. What {first['inv']} writes to the "
                f"record after that is what this run tests.")
    else:
        text = (f"{key}: lock overlap. {first['inv']} claimed the key at {_fmt(first['t'])}{lock} and was still "
                f"running when {second['inv']} took the key over at {_fmt(second['t'])}, so both did the work. "
                f"A lock must outlast the work it guards.")
    return Finding(FindingKind.OVERLAP, key, None, text, [first["inv"], second["inv"]], (first["t"], second["t"]))


def _stale(facts: _Facts, key: str, owner: dict, e: dict) -> Finding:
    what = "deleted the record" if _write_op(e) == "DeleteItem" else "overwrote the record"
    text = (f"{key}: stale write. {e['inv']} {what} at {_fmt(e['t'])}, though {owner['inv']} had "
            f"taken the key over at {_fmt(owner['t'])}. A write conditional on still owning the claim (a "
            f"fencing token) would have been refused.")
    return Finding(FindingKind.STALE_WRITE, key, None, text, [e["inv"], owner["inv"]], (owner["t"], e["t"]))
