"""The rules every history is judged by, whatever its sources: each accepted order gets each effect it is owed
exactly once (no duplicate, none lost, none nobody owed), and what the history cannot tell is unknown (an order
still in flight, an invocation abandoned while blocked)."""
from __future__ import annotations

from ...core.records import AwsCall, EffectRecord, Invocation
from ...vocab import AWS_OK, Delivery, EffectStatus, FindingKind, ItemStatus, Outcome
from ..facts import SAVES, TTL_ATTRIBUTE, Facts, describe, fmt, write_op
from ..findings import Finding
from ..judges import Rule

#: How an invocation that did not return ok ended, in words.
_ENDING: dict[str | None, str] = {Outcome.ERROR: "raised an error", Outcome.TIMEOUT: "timed out",
                                  Outcome.CRASHED: str(Outcome.CRASHED)}


def exactly_once(facts: Facts) -> list[Finding]:
    """A finding for each (order, effect) pair that did not happen exactly once, order by order."""
    findings = []
    for key, counts in facts.effects_per_key.items():
        for kind in sorted(counts):
            finding = _judge(facts, key, kind)
            if finding is not None:
                findings.append(finding)
    return findings


def _judge(facts: Facts, key: str, kind: str) -> Finding | None:
    """The finding for one (order, effect) pair, or None when it happened exactly once."""
    done = facts.effects.get((kind, key), [])
    if key not in facts.owed or kind not in facts.owed[key]:
        return Finding(FindingKind.UNEXPECTED, key, kind, f"{key}: {len(done)} {kind} effect(s), but no accepted "
                       f"order owes one", [e.inv for e in done])
    if len(done) > 1:
        return _duplicate(facts, key, kind, done)
    if done:
        return None
    if key in facts.pending:
        return Finding(FindingKind.PENDING, key, kind,
                       f"{key}: no {kind} yet, and the order was still in flight when the run stopped")
    if any(inv.blocked and key in inv.start.keys for inv in facts.invs.values()):
        return None  # an invocation that carried it never returned: what it would have done is unknown (abandoned)
    return _lost(facts, key, kind)


def _duplicate(facts: Facts, key: str, kind: str, done: list[EffectRecord]) -> Finding:
    who = ", ".join(f"{describe(facts.invs.get(e.inv), e.inv)} at {fmt(e.t)}" for e in done)
    remaining = in_remaining_window(facts, done[0])
    text = f"{key}: {kind} sent {len(done)} times, by {who}."
    if remaining:
        first_inv = facts.invs.get(done[0].inv)
        outcome = first_inv.outcome if first_inv is not None else None
        text += (f" Remaining window: {done[0].inv} claimed the key and did the {kind}, then "
                 f"{_ENDING.get(outcome, 'ended')} before saving its result, so the retry "
                 f"repeated it. No claim closes this window; only a downstream idempotency key does.")
    late = _late_repeat(facts, done)
    if late is not None:
        repeat, save, expired = late
        text += (f" Retention shorter than the redelivery horizon: {done[0].inv} saved its result at "
                 f"{fmt(save.t)}, kept until {fmt(expired)} (its expiresAt), but {repeat.inv} "
                 f"started at {fmt(facts.invs[repeat.inv].t)}, after the record had expired, so the "
                 f"claim took it for new work. Keep idempotency records longer than any source may still "
                 f"deliver the event.")
    if any(e.status == EffectStatus.INDEFINITE for e in done):
        text += " (One of them was cut off by a deadline but still reached the provider.)"
    return Finding(FindingKind.DUPLICATE, key, kind, text, [e.inv for e in done],
                   (done[0].t, done[-1].t), remaining, retention_too_short=late is not None)


def in_remaining_window(facts: Facts, first: EffectRecord) -> bool:
    """Did the first effect's invocation claim the key, do the effect, then die before saving?

    That is the window the article admits no claim can close: the work happened, the
    record of it did not, so the retry repeats it. A claim is a successful write before
    the effect; a save is a successful write after it (a delete saves nothing).
    """
    inv = facts.invs.get(first.inv)
    if inv is None or inv.outcome in (Outcome.OK, None) or first.inv is None:
        return False
    writes = [e for e in facts.table_writes.get(first.inv, []) if write_op(e) in SAVES and e.result == AWS_OK]
    claims = [e for e in writes if e.seq < first.seq]
    if not claims:
        return False
    # The write just before the effect is the claim that guarded it; a save is a later
    # write to that same item (another order's claim is no save).
    key = claims[-1].key
    return not any(e.seq > first.seq and e.key in (key, None) for e in writes)


def _late_repeat(facts: Facts, done: list[EffectRecord]) -> tuple[EffectRecord, AwsCall, float] | None:
    """(repeated effect, the first one's save, when that save expired) for the first repeat that came too late."""
    for e in done[1:]:
        hit = _expired_save(facts, done[0], e)
        if hit is not None:
            return (e, *hit)
    return None


def _expired_save(facts: Facts, first: EffectRecord, repeat: EffectRecord) -> tuple[AwsCall, float] | None:
    """The first effect's invocation saved its result (a COMPLETED record with an ``expiresAt``), and the
    invocation that repeated the effect started after that record had expired: (the save, when it expired).

    ``expiresAt`` is epoch seconds; the history's times count from ``meta["epoch"]``.
    """
    repeat_inv = facts.invs.get(repeat.inv)
    if repeat_inv is None or first.inv is None:
        return None
    saves = [e for e in facts.table_writes.get(first.inv, [])
             if write_op(e) in SAVES and e.result == AWS_OK and e.seq > first.seq
             and e.detail.get("status") == ItemStatus.COMPLETED
             and isinstance(e.detail.get(TTL_ATTRIBUTE), (int, float))]
    if not saves:
        return None
    expired = float(saves[-1].detail[TTL_ATTRIBUTE]) - facts.epoch
    return (saves[-1], expired) if repeat_inv.t >= expired else None


def _lost(facts: Facts, key: str, kind: str) -> Finding:
    where = ""
    if facts.dropped.get(key):
        d = facts.dropped[key][-1]
        reason = d.detail.get("reason")
        ended = "Its execution failed" if d.what == Delivery.EXECUTION_FAILED else f"It ended {d.what}"
        where = f" {ended} at {fmt(d.t)}" + (f" ({reason})" if reason else "") + "."
    tried = [i for i, v in facts.invs.items() if key in v.start.keys]
    if tried:
        tried_text = " Invocations that carried it: " + ", ".join(
            f"{describe(facts.invs[i], i)} -> {facts.invs[i].outcome}{_never_ran(facts.invs[i])}"
            for i in tried) + "."
    else:
        tried_text = " No invocation ever carried it."
    return Finding(FindingKind.LOST, key, kind, f"{key}: accepted but no {kind} was ever sent.{where}{tried_text}",
                   tried)


def _never_ran(inv: Invocation) -> str:
    """Words for an invocation whose handler never ran (its init failed): a lost order's likeliest cause, which
    an outcome alone ("error") hides."""
    error = str(inv.error or "")
    return " (Runtime.InitError: the handler never ran)" if error.startswith("Runtime.InitError") else ""


def abandoned(facts: Facts) -> list[Finding]:
    """Each invocation blocked outside the sandbox: what it did after that is unknown."""
    return [Finding(FindingKind.ABANDONED, ",".join(inv.start.keys) or str(inv_id), None,
                    f"{inv_id} was blocked outside the sandbox, so what it did after that is unknown", [inv_id])
            for inv_id, inv in facts.invs.items() if inv.blocked]


EXACTLY_ONCE = Rule("exactly once", 10, exactly_once)
ABANDONED = Rule("abandoned invocations", 20, abandoned)
