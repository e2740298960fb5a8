"""Name the flaw behind a broken run, in a sentence a learner can act on.

The checker says *what* went wrong (o-1 emailed twice, o-2 lost). A hint says *why*, read
from the same history: the email went out before the claim; the claim was refused and the
email went out anyway; two deliveries claimed different keys; a claim stayed after its work
failed and blocked every retry. Each rule looks at the invocations behind one finding.
A hint has a ``code`` (tests and the mutation catalogue assert it) and its ``text``.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.history import History
from ..core.records import AwsCall, DeliveryRecord, EffectRecord, Invocation, InvokeStart, frozen, thawed
from ..sources.sqs import read_partial_response
from ..verdict.checker import Finding, Verdict
from ..vocab import (
    AWS_OK,
    CONDITIONAL_CHECK_FAILED,
    Delivery,
    Effect,
    EffectStatus,
    FindingKind,
    ItemStatus,
    Outcome,
)
from .drills import (
    HTTP_KEY,
    drill_result,
    expect_retry_after_is_lock_left,
    keyless_effects,
    lock_left,
    payload_changed_orders,
    refused_save_raised,
    sqs_message_id,
    stale_writes,
)


@dataclass(frozen=True)
class Hint:
    code: str
    text: str

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "text": self.text}


def _said(record: AwsCall | EffectRecord | DeliveryRecord, name: str) -> Any:
    """What a record's ``detail`` says of ``name``, in its JSON form (lists, dicts): a detail is free JSON, and the
    hints test and print its values as the history's JSON holds them."""
    return thawed(record.detail.get(name))


class _Run:
    """One history, indexed for the rules: each invocation's table calls and effects, in order (its typed records
    themselves: a record is frozen, so no copy is made)."""

    def __init__(self, history: History):
        meta = history.meta
        self.table, self.epoch = meta.get("table", "idempotency"), float(meta.get("epoch") or 0)
        self.invs: dict[str, Invocation] = history.invocation_records()
        self.calls: defaultdict[str, list[AwsCall]] = defaultdict(list)
        self.effects: defaultdict[str, list[EffectRecord]] = defaultdict(list)
        self.received: set[Any] = set()
        self.deliveries: list[DeliveryRecord] = history.records(DeliveryRecord)
        result = drill_result(history) or {}
        # a drill's answers: the report its note holds (plain JSON, not history records)
        self.answers: dict[Any, dict[str, Any]] = {a.get("inv"): a for a in result.get("answers") or []}
        self.drill, self.seed = str(meta.get("drill") or ""), result.get("seed")
        for e in history.records(AwsCall, EffectRecord):
            if isinstance(e, AwsCall) and e.target == self.table and e.inv:
                self.calls[e.inv].append(e)
            elif isinstance(e, AwsCall) and e.op == "ReceiveMessage":
                self.received.update(_said(e, "received") or [])
            elif isinstance(e, EffectRecord) and e.inv:
                self.effects[e.inv].append(e)

    def start(self, inv: str) -> InvokeStart | None:
        """How ``inv`` began (None: the history has no start of it)."""
        found = self.invs.get(inv)
        return found.start if found is not None else None

    def keys(self, inv: str) -> tuple[str, ...]:
        """The business keys ``inv``'s event carried (none: no start of it)."""
        start = self.start(inv)
        return start.keys if start is not None else ()

    def outcome(self, inv: str) -> str | None:
        found = self.invs.get(inv)
        return found.outcome if found is not None else None

    def error(self, inv: str) -> str | None:
        found = self.invs.get(inv)
        return found.error if found is not None else None

    def before(self, inv: str, seq: int, op: str | None = None) -> list[AwsCall]:
        return [c for c in self.calls.get(inv, []) if c.seq < seq and (op is None or c.op == op)]

    def first_effect(self, inv: str, kind: str, key: str) -> EffectRecord | None:
        done = [e for e in self.effects.get(inv, []) if e.kind == kind and e.key == key
                and EffectStatus(e.status).counted]
        return done[0] if done else None


_WRITES = ("PutItem", "UpdateItem", "TransactWriteItems")


def _wrote(c: AwsCall) -> bool:
    return c.op in _WRITES and c.result == AWS_OK


# -- duplicates -------------------------------------------------------------------------------------
#: Each invocation behind a duplicate -> its first counted effect of the finding's kind and key (None: it did none).
_Effects = dict[str, EffectRecord | None]


def _duplicate_hints(run: _Run, f: Finding) -> list[Hint]:
    invs = [i for i in f.invocations if i]
    assert f.effect is not None  # a duplicate names its effect
    effects = {i: run.first_effect(i, f.effect, f.key) for i in invs}
    hints = []
    for rule in (_condition_on_absent_attribute, _effect_before_claim, _claim_ignored, _stale_read,
                 _read_then_write, _unconditional_claim, _no_claim, _batch_claim, _key_per_delivery):
        hint = rule(run, f, effects)
        if hint is not None:
            hints.append(hint)
    if f.retention_too_short:
        hints.append(Hint("retention-too-short", "the saved result expired before the source stopped delivering "
                          "the event: keep records at least as long as any source may redeliver it (Lambda's "
                          "async queue keeps an event up to MaximumEventAgeInSeconds, 6 hours by default)"))
    if f.remaining_window:
        hints.append(_remaining_window(run, f))
    deleted = deleted_after_success(run)
    if deleted is not None:
        hints.insert(0, deleted)
    return hints


def _condition_on_absent_attribute(run: _Run, f: Finding, effects: _Effects) -> Hint | None:
    """Every copy's conditional put won the same key, because the condition tests an attribute the item never has:
    ``attribute_not_exists`` of it holds against any item this code wrote."""
    won: dict[str, list[tuple[str, AwsCall]]] = defaultdict(list)  # key -> (inv, its winning put)
    for inv, effect in effects.items():
        if effect is None:
            continue
        for c in run.before(inv, effect.seq, "PutItem"):
            if _wrote(c) and _said(c, "conditionTestsAbsent"):
                won[str(c.key)].append((inv, c))
    for key, puts in won.items():
        winners = list(dict.fromkeys(inv for inv, _ in puts))
        if len(winners) < 2:
            continue
        who = (f"{winners[0]} and {winners[1]} both" if len(winners) == 2
               else f"{', '.join(winners[:-1])} and {winners[-1]} all")
        put = puts[0][1]
        [name, *_] = _said(put, "conditionTestsAbsent")
        return Hint("condition-on-absent-attribute",
                    f"{who} won the conditional put on {key}: its condition ({_said(put, 'condition')}) tests "
                    f"{name!r}, an attribute the item you write "
                    f"never has, so the test comes out the same whether the key was claimed before or not. A claim's "
                    f"condition must test an attribute that every item it writes has (look at the table's key "
                    f"schema)")
    return None


def _effect_before_claim(run: _Run, f: Finding, effects: _Effects) -> Hint | None:
    for inv, effect in effects.items():
        if effect is None:
            continue
        later = [c for c in run.calls.get(inv, []) if c.seq > effect.seq and c.op == "PutItem"]
        if later and not any(_wrote(c) for c in run.before(inv, effect.seq)):
            return Hint("effect-before-claim", f"the {f.effect} went out before the claim, so a duplicate that "
                        f"lost the claim had already sent it: claim the key first, then do the work")
    return None


def _claim_ignored(run: _Run, f: Finding, effects: _Effects) -> Hint | None:
    for inv, effect in effects.items():
        if effect is None:
            continue
        refused = [c for c in run.before(inv, effect.seq, "PutItem") if c.result == CONDITIONAL_CHECK_FAILED]
        if refused and not any(_wrote(c) and c.key == refused[-1].key
                               for c in run.before(inv, effect.seq) if c.seq > refused[-1].seq):
            return Hint("claim-ignored", f"{inv}'s conditional put was refused (another invocation holds the key), "
                        f"yet it sent the {f.effect} anyway: when the claim fails, skip the work (or replay the "
                        f"stored result); do not catch ConditionalCheckFailedException and go on")
    return None


def _stale_read(run: _Run, f: Finding, effects: _Effects) -> Hint | None:
    for inv, effect in effects.items():
        if effect is None:
            continue
        if any(_said(c, "stale") for c in run.before(inv, effect.seq, "GetItem")):
            return Hint("stale-read", f"{inv} read the item with an eventually consistent read, which returned "
                        f"a copy up to a second old (the item had just been written): a read that decides must see "
                        f"the latest write, or better, let the claim's write itself decide")
    return None


def _read_then_write(run: _Run, f: Finding, effects: _Effects) -> Hint | None:
    for inv, effect in effects.items():
        if effect is None:
            continue
        calls = run.before(inv, effect.seq)
        reads = [c for c in calls if c.op == "GetItem"]
        blind = [c for c in calls
                 if c.op == "PutItem" and _wrote(c) and not _said(c, "condition")]
        if reads and blind and reads[0].seq < blind[0].seq:
            return Hint("read-then-write", f"{inv} read the key, then wrote it unconditionally: two invocations can "
                        f"both read 'missing' before either writes (a race). The check and the write must be one "
                        f"atomic step, which DynamoDB does for a single write, not for a read followed by a write")
    return None


def _unconditional_claim(run: _Run, f: Finding, effects: _Effects) -> Hint | None:
    """The invocations that did the effect each wrote the key unconditionally before it (and read it, if at all,
    only around that write): every such write succeeds, so no write tells one invocation it lost."""
    blind = {}
    for inv, effect in effects.items():
        calls = run.before(inv, effect.seq) if effect else []
        puts = [c for c in calls if c.op == "PutItem" and _wrote(c)]
        if effect is None or not puts or _said(puts[-1], "condition"):
            return None
        if any(c.op == "GetItem" and c.seq < puts[0].seq for c in calls):
            return None  # a read first, then the write: read-then-write names it
        blind[inv] = puts[-1]
    if len(blind) < 2:
        return None
    first, second, *_ = blind
    return Hint("unconditional-claim", f"{first} and {second} both wrote {blind[first].key} with a put that has "
                f"no ConditionExpression, so each write succeeded whatever was there, and both sent the {f.effect}: "
                f"a memory of what this container sent, or a read-back of the item after the write, cannot tell the "
                f"other invocation apart (another write can land in between). Claim with one conditional put "
                f"(attribute_not_exists(pk)) and send only if it succeeds")


def _no_claim(run: _Run, f: Finding, effects: _Effects) -> Hint | None:
    # A refused write is a claim tried (and ignored: _claim_ignored's case), not state kept in memory.
    bare = [inv for inv, effect in effects.items()
            if effect is not None and not any(c.op in _WRITES for c in run.before(inv, effect.seq))]
    if len(bare) < 2 and not (bare and len(effects) == 2):
        return None
    containers = {start.container if start is not None else None for start in map(run.start, effects)}
    where = (f"ran in different containers ({', '.join(sorted(c for c in containers if c))}), "
             if len(containers) > 1 else "")
    return Hint("no-claim", f"the invocations that sent the {f.effect} {where}and claimed nothing in DynamoDB "
                f"first: module-level state (a set, a cache) lives in one container, and a duplicate may run in "
                f"another, or after a reset. Claim the key in the idempotency table")


#: The status a claim writes: run_once's, and Powertools' ("INPROGRESS", its persistence layer's STATUS_CONSTANTS).
CLAIM_STATUSES = (ItemStatus.IN_PROGRESS, "INPROGRESS")


def _batch_claim(run: _Run, f: Finding, effects: _Effects) -> Hint | None:
    """One claim taken for an invocation that carried several orders: they succeed or fail together."""
    for inv, effect in effects.items():
        carried = run.keys(inv)
        claims = [c for c in run.calls.get(inv, []) if c.op == "PutItem" and _wrote(c)
                  and _said(c, "status") in CLAIM_STATUSES]
        touched = {e.key for e in run.effects.get(inv, [])}
        if effect is not None and len(carried) > 1 and len(claims) == 1 and len(touched) > 1:
            return Hint("claim-per-batch", f"{inv} carried {', '.join(carried)} under one claim "
                        f"({claims[0].key}): when one of them failed, the claim was given up for all, and the "
                        f"ones already done came back and were done again. A claim guards work that succeeds or "
                        f"fails as a whole")
    return None


def _key_per_delivery(run: _Run, f: Finding, effects: _Effects) -> Hint | None:
    keys = {}
    for inv, effect in effects.items():
        claims = [c for c in run.before(inv, effect.seq) if _wrote(c)] if effect else []
        if claims:
            keys[inv] = claims[-1].key or ""
    if len(set(keys.values())) < 2:
        return None
    if run.drill == "payload-changed":  # the drill changes the amount: the key may hold it, not the delivery
        return _key_holds_payload(run, f, keys)
    what = "the delivery"
    request_ids = {start.request_id if start is not None else None for start in map(run.start, keys)}
    if any(r and r in k for k in keys.values() for r in request_ids):
        what = "the invocation's request id (context.aws_request_id), which is new for most repeats"
    elif any(m in k for k in keys.values() for m in run.received):
        what = "the SQS messageId, which is new when a producer re-sends or a message is redriven"
    elif _dated(keys.values()):
        what = ("the date it was claimed, which is another date for a repeat that comes after midnight (a redrive "
                "may come days later)")
    shown = ", ".join(f"{i}: {k}" for i, k in keys.items())
    return Hint("key-per-delivery", f"the deliveries of {f.key} claimed different keys ({shown}): the key names "
                f"{what}, not the order. Key on what stays the same however the order is delivered again")


def _key_holds_payload(run: _Run, f: Finding, keys: dict[str, str]) -> Hint:
    """The payload-changed drill's two events (o-1, then o-1's id with another amount) claimed two keys: the key is
    made of more than the order's id. Powertools hashes what event_key_jmespath picks (md5 of its JSON, keys sorted),
    so a key whose hash is the whole order's is told as such; any other, as the amount or the delivery."""
    orders = payload_changed_orders(int(run.seed or 0))
    whole = {hashlib.md5(json.dumps(o, sort_keys=True).encode()).hexdigest() for o in orders}
    shown = ", ".join(f"{i}: {k}" for i, k in keys.items())
    if all(k.rpartition("#")[2] in whole for k in keys.values()):
        made = ("event_key_jmespath hashes the whole order (\"@\"), so the amount is part of the key, and the same "
                "order id with another amount made a new key")
    else:
        made = ("event_key_jmespath picks more than the order's id: a field that changed with the order (its amount), "
                "or one of the delivery's (an event id, new on every event)")
    return Hint("key-holds-payload", f"the two events for {f.key}, its id reused with another amount, claimed "
                f"different idempotency keys ({shown}): {made}. So the second ran as new work, and Powertools never "
                f"compared the payloads. Key on the order's id alone (orderId), and let payload_validation_jmespath "
                f"compare the rest: a reused id with another payload then fails with IdempotencyValidationError "
                f"({POWERTOOLS_DOC})")


def _dated(keys: Any) -> bool:
    """Do the keys differ only in a date or a time (what a clock puts in a key)?"""
    return len({re.sub(r"\d{4}-?\d{2}-?\d{2}|\d{6,}", "", str(k)) for k in keys}) == 1


def _remaining_window(run: _Run, f: Finding) -> Hint:
    if f.effect != Effect.CHARGE:
        return Hint("remaining-window", f"the {f.effect} went out, then the invocation died before saving: no claim "
                    f"closes that window, and an email takes no idempotency key")
    keys = [_said(e, "idempotencyKey") for i in f.invocations if i
            for e in run.effects.get(i, []) if e.kind == Effect.CHARGE and e.key == f.key
            and EffectStatus(e.status).counted]
    if len(keys) > 1 and all(keys) and len(set(keys)) == len(keys):
        return Hint("charge-key-per-attempt", f"each attempt gave the payment API an idempotency key, but a "
                    f"different one ({', '.join(k for k in keys if k)}): to the API each was a new charge. The key "
                    f"must name what is being charged, so that every retry of it sends the same key")
    missing = " and carried no idempotency key" if keys and not any(keys) else ""
    return Hint("downstream-key", f"the charge went through{missing}, then the invocation died before it saved: "
                f"no claim closes that window, and the payment API could not tell the retry's charge from a new one")


# -- lost orders ------------------------------------------------------------------------------------
def _lost_hints(run: _Run, f: Finding) -> list[Hint]:
    carriers = [i for i in f.invocations if i in run.invs]
    hints = [h for h in (_refusal_taken_for_success(run, carriers), _gave_up_at_refusal(run, carriers, f.key),
                         _no_release(run, carriers, f.key),
                         _no_expiry(run, carriers, f.key), _swallowed(run, f, carriers),
                         _failure_saved_as_result(run, f, carriers), _collision(run, f, carriers),
                         _skipped(run, f.key, carriers), _failure_as_4xx(run, carriers))
             if h is not None]
    if any(h.code == "failure-as-4xx" for h in hints):  # it did not return success: it answered a 4xx
        hints = [h for h in hints if h.code != "swallowed-error"]
    return hints


def _gave_up_at_refusal(run: _Run, carriers: list[str], order: str | None) -> Hint | None:
    """An invocation carrying the lost order, and before it one whose claim was refused, ended ok without ever
    trying to claim the lost one: the loop stopped at the refusal (break, return) instead of skipping that order."""
    for inv in carriers:
        keys = [str(k) for k in run.keys(inv)]
        puts = [c for c in run.calls.get(inv, []) if c.op == "PutItem"]
        # A hashed key (Powertools') names no order: an invocation that claimed as many keys as it carried orders
        # tried each of them, whichever was refused.
        tried = (any(str(c.key or "").rsplit("#", 1)[-1] == order for c in puts)
                 or len({c.key for c in puts}) >= len(keys))
        refused = [c for c in puts if c.result == CONDITIONAL_CHECK_FAILED]
        if refused and not tried and order in keys and run.invs[inv].outcome == Outcome.OK:
            return Hint("gave-up-at-refusal", f"{inv} carried {', '.join(keys)}; its claim on {refused[0].key} "
                        f"was refused, and it never tried to claim {order}: the loop stopped at the first order "
                        f"another invocation had (break, return). Skip only that order (continue) and handle the rest")
    return None


def _failure_as_4xx(run: _Run, carriers: list[str]) -> Hint | None:
    """An HTTP request whose work failed, answered with a 4xx (the drill's answers say what each invocation said)."""
    for inv in carriers:
        response = (run.answers.get(inv) or {}).get("response")
        status = response.get("statusCode") if isinstance(response, dict) else None
        failed = any(e.status == EffectStatus.FAILED for e in run.effects.get(inv, []))
        if failed and isinstance(status, int) and 400 <= status < 500:
            return failure_as_4xx_hint(status)
    return None


def failure_as_4xx_hint(status: int) -> Hint:
    return Hint("failure-as-4xx", f"the first request's email failed, and it was answered {status}: a 4xx says the "
                f"request itself is wrong, so the client never retries and the order's email is never sent. Answer "
                f"only the errors the task names with a 4xx (KeyInProgressError 409, PayloadMismatchError 422); let "
                f"any other error fail the invocation (API Gateway answers 502), so the client retries")


#: The calls a task names, by the operation that makes each.
_CALLS = {"PutItem": "claim", "UpdateItem": "save", "DeleteItem": "delete"}


def _refusal_taken_for_success(run: _Run, carriers: list[str]) -> Hint | None:
    """An invocation carrying the lost order met an error DynamoDB returned for another reason than a condition
    (throttling, a transaction conflict, a validation error), and still succeeded: a broad except took it in."""
    for inv in carriers:
        refused = [c for c in run.calls.get(inv, []) if c.op in _CALLS
                   and c.result not in (AWS_OK, CONDITIONAL_CHECK_FAILED)]
        if refused and run.invs[inv].outcome == Outcome.OK:
            return broad_except_hint(inv, _CALLS[refused[-1].op], f"{refused[-1].result}Exception")
    return None


def _skipped(run: _Run, order: str | None, carriers: list[str]) -> Hint | None:
    """A batch's record that its invocation never touched (no table call, no effect) and Lambda deleted as a success,
    while another record of the batch was reported failed: the handler stopped at that failure."""
    for inv in carriers:
        touched = any(str(c.key or "").rsplit("#", 1)[-1] == order for c in run.calls.get(inv, [])) or any(
            e.key == order for e in run.effects.get(inv, []))
        mine = [d for d in run.deliveries if d.inv == inv]
        deleted = any(d.what == Delivery.DELETED and order in d.keys for d in mine)
        failed = [k for d in mine if d.what == Delivery.BATCH_FAILED and _said(d, "partial") for k in d.keys]
        if not touched and deleted and failed and run.invs[inv].outcome == Outcome.OK:
            return Hint("records-skipped", f"{inv} carried {order} in its batch, but neither handled it (no claim, "
                        f"no email) nor named its message in batchItemFailures: after {', '.join(failed)} failed it "
                        f"stopped. Lambda deletes every message the response does not name, so {order} was lost: "
                        f"after one record fails, go on with the rest of the batch")
    return None


def _collision(run: _Run, f: Finding, carriers: list[str]) -> Hint | None:
    """The lost order's claim was refused on a key that an invocation carrying only other orders had claimed."""
    for inv in carriers:
        carried = {str(k) for k in run.invs[inv].start.keys} - {str(f.key)}
        for refused in (c for c in run.calls.get(inv, []) if c.result == CONDITIONAL_CHECK_FAILED
                        and str(c.key or "").rsplit("#", 1)[-1] not in carried):  # not another order's own
            owners = [i for i, calls in run.calls.items() if i != inv and f.key not in run.invs[i].start.keys
                      and any(c.op == "PutItem" and c.result == AWS_OK and c.key == refused.key
                              for c in calls)]
            if owners:
                return Hint("key-collision", f"{f.key}'s claim was refused on {refused.key}, a key {owners[0]} "
                            f"had claimed for another order: two different orders got the same key, so the second "
                            f"was taken for a repeat of the first. The key must tell any two orders apart")
    return None


def _claims(run: _Run, inv: str, order: str | None = None) -> list[AwsCall]:
    """The claims ``inv`` won; with ``order``, those that claimed that order (its key names it, or, where no key
    does, a claim the invocation never completed): a claim the invocation saved COMPLETED is no stuck claim."""
    won = [c for c in run.calls.get(inv, []) if c.op == "PutItem" and c.result == AWS_OK]
    if order is None:
        return won
    named = [c for c in won if str(c.key or "").rsplit("#", 1)[-1] == order or c.key == order]
    if named:
        return named
    return [c for c in won if not any(w.t >= c.t and w.key == c.key and w.result == AWS_OK
                                      and _said(w, "status") == ItemStatus.COMPLETED
                                      for w in run.calls.get(inv, []) if w is not c)]


def _refused_later(run: _Run, key: str | None, after: float) -> list[AwsCall]:
    return [c for calls in run.calls.values() for c in calls
            if c.key == key and c.result == CONDITIONAL_CHECK_FAILED and c.t > after]


def _no_release(run: _Run, carriers: list[str], order: str | None) -> Hint | None:
    for inv in carriers:
        if run.invs[inv].outcome != Outcome.ERROR:
            continue
        for claim in _claims(run, inv, order):
            deleted = any(c.op == "DeleteItem" and c.key == claim.key for c in run.calls[inv])
            refused = _refused_later(run, claim.key, claim.t)
            if not deleted and refused:
                return Hint("no-release", f"{inv}'s work failed after it claimed {claim.key}, and the claim "
                            f"stayed: {_what_retries_did(run, refused)}, so the order was lost. Delete the claim "
                            f"when the work raises, so a retry can start over")
    return None


def _what_retries_did(run: _Run, refused: list[AwsCall]) -> str:
    """What the invocations whose claims the stale claim refused did next, as their outcomes say."""
    ended = [run.invs.get(i) for i in dict.fromkeys(str(c.inv) for c in refused)]
    if ended and all(e is not None and e.outcome == Outcome.ERROR and "StillInProgressError" in str(e.error)
                     for e in ended):
        return ("every retry found the key still IN_PROGRESS and raised StillInProgressError, as if another "
                "invocation were at work, until the source stopped retrying")
    if ended and all(e is not None and e.outcome == Outcome.OK for e in ended):
        return "every retry found the key taken and skipped the work"
    return "every retry found the key taken, and none did the work"


def _no_expiry(run: _Run, carriers: list[str], order: str | None) -> Hint | None:
    for inv in carriers:
        if run.invs[inv].outcome not in (Outcome.TIMEOUT, Outcome.CRASHED):
            continue
        for claim in _claims(run, inv, order):
            refused = _refused_later(run, claim.key, claim.t)
            if not refused:
                continue
            expires = _said(claim, "expiresAt")
            if not isinstance(expires, (int, float)):
                return Hint("no-expiry", f"{inv} was stopped ({run.invs[inv].outcome}) while it held the claim, "
                            f"and a claim with no expiry blocks every retry: no except block runs after a crash or "
                            f"timeout. Give the claim an expiry (expiresAt) and let the claim take an expired one over")
            timeout = float(run.invs[inv].start.timeout or 0)
            length = float(expires) - run.epoch - claim.t
            if refused[-1].t < float(expires) - run.epoch and length > timeout + 1:
                return Hint("lock-too-long", f"{inv}'s lock on {claim.key} lasted {length:.0f} s, though "
                            f"{inv} could work {timeout:.0f} s at most (its timeout): after "
                            f"it was stopped, every retry found the key still locked, until the source gave up. A "
                            f"lock lasts as long as its owner can still be working, no longer: the time the context "
                            f"says is left (get_remaining_time_in_millis() is in milliseconds)")
            if refused[-1].t >= float(expires) - run.epoch:
                return Hint("trusts-ttl", f"{inv}'s lock expired at {float(expires) - run.epoch:.0f} s, but the "
                            f"item was still in the table (TTL deletes expired items lazily, even days later) and the "
                            f"retry's claim at {refused[-1].t:.0f} s was refused: the claim's condition treated "
                            f"an expired lock as a live one")
    return None


def _reported(run: _Run, inv: str, order: Any) -> bool:
    """Did ``inv`` tell its source that ``order`` failed: by failing, or by naming its record in batchItemFailures?"""
    return run.invs[inv].outcome != Outcome.OK or any(
        d.what == Delivery.BATCH_FAILED and d.inv == inv and order in d.keys
        for d in run.deliveries)


def _swallowed(run: _Run, f: Finding, carriers: list[str]) -> Hint | None:
    failed = [e for inv in carriers for e in run.effects.get(inv, [])
              if e.key == f.key and e.status == EffectStatus.FAILED]
    if any(_reported(run, str(e.inv), f.key) for e in failed):  # an effect indexed under its (named) invocation
        return None  # told: the failure_saved_as_result rule says why the retries did not do the work
    if failed and carriers and all(run.invs[i].outcome == Outcome.OK for i in carriers):
        return Hint("swallowed-error", f"the {f.effect} for {f.key} failed, but the invocation returned success "
                    f"(it caught the error and neither raised nor reported it), so the source considered the event "
                    f"done and the order was lost")
    return None


def _failure_saved_as_result(run: _Run, f: Finding, carriers: list[str]) -> Hint | None:
    """The work for the lost order failed and its invocation reported it, yet the record the invocation had claimed
    for the order was saved COMPLETED after the failure: the idempotent function caught the error and returned it as
    its result, so each retry's claim was refused and the failure replayed, until the source gave up."""
    for inv in carriers:
        for effect in (e for e in run.effects.get(inv, []) if e.key == f.key and e.status == EffectStatus.FAILED):
            claims = [c for c in _claims(run, inv) if c.seq < effect.seq
                      and _said(c, "status") in CLAIM_STATUSES]
            if not claims or not _reported(run, inv, f.key):
                continue
            key = claims[-1].key
            saved = [c for c in run.calls.get(inv, []) if c.seq > effect.seq and _wrote(c)
                     and c.key == key and _said(c, "status") == ItemStatus.COMPLETED]
            replays = [c for c in _refused_later(run, key, saved[0].t) if c.inv != inv] if saved else []
            if replays:
                return _failure_saved_hint(run, inv, f, str(key), len({c.inv for c in replays}))
    return None


def _failure_saved_hint(run: _Run, inv: str, f: Finding, key: str, retries: int) -> Hint:
    told = "raised" if run.invs[inv].outcome != Outcome.OK else f"named {f.key}'s record in batchItemFailures"
    where, undo = (("the function under @idempotent_function", "Powertools then deletes the record")
                   if powertools_run(run) else ("the work run_once runs", "run_once then deletes the claim"))
    return Hint("failure-saved-as-result", f"the {f.effect} for {f.key} failed and {inv} {told}, yet {inv} saved "
                f"{f.key}'s idempotency record ({key}) COMPLETED after the failure: {where} caught the error and "
                f"returned it as its result, so the record stores the failure as if it were the order's outcome. "
                f"Each later delivery ({retries} of them) found the record COMPLETED and got the failure replayed "
                f"instead of doing the work, until the source gave up. Let the error leave the idempotent function "
                f"({undo}, so a retry starts over) and catch it outside, in the handler")


# -- whole runs -------------------------------------------------------------------------------------
def _run_hints(run: _Run) -> list[Hint]:
    ended = [v for v in run.invs.values() if v.outcome]
    if not ended:
        return []
    if any(v.blocked for v in ended):
        return [Hint("blocked", "an invocation ran without reaching the sandbox (no AWS call, effect or sleep) "
                     "until the watchdog stopped it: a busy loop, a real sleep or a blocking call")]
    errors = {str(v.error) for v in ended if v.outcome != Outcome.OK}
    if len(ended) > 1 and all(v.outcome != Outcome.OK for v in ended) and len(errors) == 1:
        error = errors.pop()
        if "NotImplementedError" in error:
            return [Hint("not-implemented", "the handler still raises NotImplementedError: replace the stub "
                         "(# YOUR CODE HERE) with your code")]
        where = next((v.where for v in ended if v.where), None)
        return [Hint("always-fails", f"every invocation failed with {error}" + (f" ({where})" if where else ""))]
    return []


def diagnose(history: History, verdict: Verdict) -> list[Hint]:
    """Hints for what broke in this run, most specific first (none when nothing did)."""
    run = _Run(history)
    hints = _run_hints(run)
    for f in verdict.findings:
        if f.kind == FindingKind.DUPLICATE:
            hints += _duplicate_hints(run, f)
        elif f.kind == FindingKind.LOST:
            hints += _lost_hints(run, f)
        elif f.kind == FindingKind.BAD_BATCH_RESPONSE:
            hints += batch_hints([d for d in run.deliveries
                                  if d.what == Delivery.BATCH_FAILED and d.inv in f.invocations])
    if verdict.status != "valid":
        own = _own_claim_refused_rule("", history, run)  # a write that cannot hold for its own claim explains the rest
        hints = ([own] if own is not None else []) + hints
        notes = _note_hints(verdict, imposed_lock=bool((history.meta.get("settings") or {}).get("lock_seconds")))
        live = _overwrote_live_claim(run, verdict)
        hints += [live, *(n for n in notes if n.code != "lock-overlap")] if live else notes
        boundary = _lock_boundary_rule(str(history.meta.get("drill") or ""), history, run)
        hints = [boundary, *(h for h in hints if h.code != "lock-overlap")] if boundary else hints
    return _unique(in_powertools_terms(run, hints))


def _overwrote_live_claim(run: _Run, verdict: Verdict) -> Hint | None:
    """Two invocations worked at once on a key whose claims carry no expiry: no lock ran out, so the second claim
    went through while the first was IN_PROGRESS: its condition lets a claim overwrite a live one."""
    for f in verdict.findings:
        puts = [c for i in f.invocations if i for c in run.calls.get(i, []) if c.op == "PutItem" and _wrote(c)
                and _said(c, "status") == ItemStatus.IN_PROGRESS]
        if f.kind != FindingKind.OVERLAP or len(puts) < 2:
            continue
        if not any(isinstance(_said(c, "expiresAt"), (int, float)) for c in puts):
            condition = _said(puts[-1], "condition") or "none"
            return Hint("claim-overwrites-in-progress", f"{puts[-1].inv}'s claim on {puts[-1].key} went "
                        f"through while {puts[0].inv}'s claim was still IN_PROGRESS (its condition: {condition}), "
                        f"and both did the work. No lock ran out: the claims have no expiry. A claim must be refused "
                        f"while another invocation holds the key: only a key with no item on it may be taken "
                        f"(attribute_not_exists(pk))")
    return None


def _note_hints(verdict: Verdict, imposed_lock: bool = True) -> list[Hint]:
    """The lock and fencing hints. Where the handler sized its own lock (no ``lock_seconds`` imposed by the
    scenario), a lock that ran out under its owner is the flaw to name: fencing only limits the damage, and
    pointing at it would send the learner after the wrong fix."""
    out = []
    overlap = any(f.kind == FindingKind.OVERLAP for f in verdict.findings)
    if overlap and not imposed_lock:  # a lock the scenario imposed is short on purpose: not the handler's flaw
        out.append(Hint("lock-overlap", "the lock ran out while its owner was still working, so a duplicate took "
                        f"the key over and both did the work: {LOCK_RULE}"))
    stale = [f for f in verdict.findings if f.kind == FindingKind.STALE_WRITE]
    if stale and (imposed_lock or not overlap):
        out.append(_stale_write_hint(stale[0]))
    return out


#: What every lock hint says of its size, in the same words wherever the flaw shows (the evidence says the rest).
LOCK_RULE = ("a lock must last as long as its owner can still be working, and how long that can be is something "
             "the invocation itself can tell")


def _unique(hints: list[Hint]) -> list[Hint]:
    seen, out = set(), []
    for h in hints:
        if h.code not in seen:
            seen.add(h.code)
            out.append(h)
    return out


# -- drills and expectations -------------------------------------------------------------------------
#: Powertools' idempotency utility: each behaviour its hints name is on this page.
POWERTOOLS_DOC = "https://docs.aws.amazon.com/powertools/python/latest/utilities/idempotency/"
DRILL_HINTS: dict[str, Hint] = {
    "replay": Hint("no-replay", "the duplicate did not get the first delivery's result back: its caller needs "
                   "the answer the first one got, so the result must be kept with the COMPLETED record and be what "
                   "a duplicate returns"),
    "replay-while-saving": Hint("save-in-two-writes", "a duplicate that read the record while the first delivery "
                                "was saving got another answer than the first: the record said COMPLETED before it "
                                "held the result (two writes, status first), so the duplicate replayed a result that "
                                "was not there yet. Save the status and the result in one update"),
    "in-progress": Hint("swallowed-in-progress", "a duplicate that finds the key IN_PROGRESS must fail (raise "
                        "StillInProgressError): if it returns success, the source deletes the event, and if the owner "
                        "then fails, nobody is left to retry it"),
    "http-replay": Hint("no-replay", "store the whole response (status and body) as the result, and return it "
                        "as it is to a retry with the same Idempotency-Key"),
    "http-conflict": Hint("no-409", "a retry that arrives while the first request is still being processed was "
                          "not answered 409 Conflict: the in-progress error (KeyInProgressError) must become that "
                          "answer, telling the client when to try again"),
    "http-mismatch": Hint("no-422", "the same Idempotency-Key came back with another body (another order) and "
                          "was not refused: run_once can tell only if it is given the request's payload to compare "
                          "with the first, and such a request is answered 422"),
    "http-failure": Hint("failure-not-retried", "a request whose work failed must be answered so the client retries "
                         "it (let the error fail the invocation, or answer 5xx), its claim released, and the retry "
                         "must do the work"),
    "http-missing-key": Hint("no-400", "without an Idempotency-Key header there is nothing to deduplicate on: "
                             "answer 400 before doing any work"),
    "no-key": Hint("no-key-runs-unprotected", "an order with no idempotency key in it (an empty orderId) was "
                   "processed anyway, once per delivery: with raise_on_no_idempotency_key left off (its default), "
                   "Powertools only warns and runs the function with no record at all. Set "
                   "raise_on_no_idempotency_key=True, so that such an event fails with IdempotencyKeyError "
                   f"({POWERTOOLS_DOC})"),
    "payload-changed": Hint("no-payload-validation", "an event reused a handled order's id with another amount, and "
                            "got the first order's result back as if it were the same order: Powertools compares "
                            "payloads only when payload_validation_jmespath names the fields that make two orders "
                            "the same (\"@\": all of them); then it raises IdempotencyValidationError. Let that "
                            f"error fail the invocation ({POWERTOOLS_DOC})"),
    "sqs-in-progress": Hint("swallowed-in-progress", "a record whose order is IN_PROGRESS elsewhere must be named "
                            "in batchItemFailures (catch StillInProgressError for that record): if the handler "
                            "reports success, SQS deletes the message, and if the owner then fails it is lost"),
}


#: A Powertools idempotency key: "<key_prefix, or module.function>#<md5 of what event_key_jmespath picked>"
#: (aws_lambda_powertools/utilities/idempotency/persistence/base.py, _get_hashed_idempotency_key).
_POWERTOOLS_KEY = re.compile(r"#[0-9a-f]{32}$")
#: A flaw the generic rules find, said in Powertools' terms (its option) when the run's records are Powertools'.
POWERTOOLS_HINTS: dict[str, Hint] = {
    "key-per-delivery": Hint("powertools-key-per-delivery", "the deliveries of one order made different idempotency "
                             "keys: event_key_jmespath picks something that is new on every delivery (a messageId, a "
                             "request id, an event id, or the whole event with them in it). Point it at what names "
                             f"the order, which every delivery of it carries unchanged ({POWERTOOLS_DOC})"),
    "retention-too-short": Hint("powertools-expiry-too-short", "the COMPLETED record expired before the source "
                                "stopped delivering the event, so the late retry ran as new work: "
                                "expires_after_seconds (Powertools' default is 3600, one hour) must cover the "
                                "source's redelivery horizon; an async event may wait in Lambda's queue up to "
                                f"MaximumEventAgeInSeconds, 6 hours ({POWERTOOLS_DOC})"),
    "lock-too-long": Hint("powertools-no-lambda-context", "an invocation was stopped while its record was "
                          "IN_PROGRESS, and every retry found it still IN_PROGRESS until the source gave up: without "
                          "config.register_lambda_context(context) in the handler (@idempotent_function does not do "
                          "it; @idempotent does), Powertools writes no in_progress_expiration, so an IN_PROGRESS "
                          f"record lasts as long as expires_after_seconds ({POWERTOOLS_DOC})"),
    "claim-per-batch": Hint("powertools-whole-batch", "one idempotency record covered a whole batch of orders (as "
                            "@idempotent on the handler does, or @idempotent_function given the whole event): when "
                            "one order failed, Powertools deleted the record, the batch came back whole, and the "
                            "orders already done were done again. Put @idempotent_function on the work for one record "
                            "(or one order), call it per record, and name the failed ones in batchItemFailures "
                            f"({POWERTOOLS_DOC})"),
}
POWERTOOLS_HINTS["no-expiry"] = POWERTOOLS_HINTS["lock-too-long"]
# Powertools makes and checks the claim itself: an effect no claim guarded ran outside its decorated function, and
# the kit's advice (skip the work when the conditional put is refused) names nothing a Powertools answer wrote.
POWERTOOLS_HINTS["claim-ignored"] = POWERTOOLS_HINTS["effect-before-claim"] = Hint(
    "powertools-work-outside", "an effect of the order went out that no idempotency record guarded: Powertools' "
    "claim was refused (the order was done, or in progress elsewhere) or not yet taken, and the work ran anyway, so "
    "it runs outside the function under @idempotent_function. Powertools guards only what that function does: do "
    f"every effect of the order (the charge and the email) inside it ({POWERTOOLS_DOC})")
# The course kit raises StillInProgressError; Powertools raises its own class, which is no subclass of it.
POWERTOOLS_HINTS["swallowed-in-progress"] = Hint(
    "powertools-swallowed-in-progress", "a record whose order is IN_PROGRESS elsewhere must be named in "
    "batchItemFailures: for it @idempotent_function raises IdempotencyAlreadyInProgressError "
    "(aws_lambda_powertools.utilities.idempotency.exceptions). Catching that error and going on (continue, pass) "
    "reports the record a success, so SQS deletes the message, and if the owner then fails the order is lost: let "
    f"it reach the except that names the record ({POWERTOOLS_DOC})")


def powertools_run(run: _Run) -> bool:
    """Are the run's idempotency records Powertools' (every key on the table is one of its hashed keys, and its
    claims wrote Powertools' own status, "INPROGRESS")? A key alone is not enough: an answer of exercise 05 that
    keys on a hash of the record's body ends its keys the same way."""
    calls = [c for calls in run.calls.values() for c in calls]
    keys = [c.key for c in calls]
    statuses = {_said(c, "status") for c in calls if c.op == "PutItem"}
    return (bool(keys) and all(isinstance(k, str) and _POWERTOOLS_KEY.search(k) for k in keys)
            and CLAIM_STATUSES[1] in statuses)


def in_powertools_terms(run: _Run, hints: list[Hint]) -> list[Hint]:
    """The hints, each generic one that has a Powertools counterpart replaced by it when the records are Powertools'."""
    if not hints or not powertools_run(run):
        return hints
    return [POWERTOOLS_HINTS.get(h.code, h) for h in hints]


#: The drills in which a slow attempt loses its key to a duplicate: the flaw they find is an unfenced write.
STALE_OWNER_DRILLS = ("stale-owner", "stale-release", "stale-save")


def drill_hints(drill: str, history: History) -> list[Hint]:
    """The hint for what this drill's run shows: each rule reads the run, and the drill's own hint is the last
    resort (a stale read is named instead of a missing result, a string header instead of a missing 409)."""
    run = _Run(history)
    for rule in _DRILL_RULES:
        found = rule(drill, history, run)
        if found is not None:
            return [found]
    return in_powertools_terms(run, [DRILL_HINTS[drill]] if drill in DRILL_HINTS else [])


def _stale_read_rule(drill: str, history: History, run: _Run) -> Hint | None:
    stale = any(_said(c, "stale") for calls in run.calls.values() for c in calls)
    if drill in ("replay", "http-replay") and stale:
        return Hint("stale-read", "the duplicate read the record with an eventually consistent read and saw an "
                    "older copy (up to a second old), not the result just saved: a read that decides must see the "
                    "latest write")
    return None


def _fencing_rule(drill: str, history: History, run: _Run) -> Hint | None:
    if drill in STALE_OWNER_DRILLS and stale_writes(history):
        return _stale_write_hint(stale_writes(history)[0], run)
    if drill in ("stale-owner", "stale-save") and _refused_save_failed(history, run):
        return Hint("refused-save-raised", "the save was refused because another invocation owns the key now, and "
                    "that refusal is not this invocation's failure: its work is done. Catch the conditional check's "
                    "failure in save (log it if you like) and let the handler answer with the result; an error "
                    "here makes the source deliver the event again")
    return None


def _refused_save_failed(history: History, run: _Run) -> bool:
    """The stale drill's first attempt's save was refused by its condition, and the attempt ended with an error (the
    refusal itself, or any error raised for it)."""
    answers = (drill_result(history) or {}).get("answers") or []
    if refused_save_raised(drill_result(history) or {}):
        return True
    if not answers or answers[0].get("outcome") == Outcome.OK:
        return False
    return any(c.op == "UpdateItem" and c.result == CONDITIONAL_CHECK_FAILED
               for c in run.calls.get(answers[0]["inv"], []))


def _http_rule(drill: str, history: History, run: _Run) -> Hint | None:
    if drill == "http-conflict" and _retry_status(history) == 409 and _retry_status(history, 0) in range(200, 300):
        return _retry_after_hint(history)
    if drill in ("http-replay", "http-conflict") and _retry_status(history) == 422:
        return Hint("payload-per-request", "the retry carried the same Idempotency-Key and the same body, and was "
                    "answered 422 as if it were another request: the payload run_once compares holds something "
                    "that changes with every request (an API Gateway event's requestContext, its request id, its "
                    "headers); compare only what makes two requests the same one")
    if drill == "http-failure" and _retry_status(history, 0) in range(400, 500):
        return failure_as_4xx_hint(_retry_status(history, 0))
    if drill == "http-mismatch" and _retry_status(history) in range(200, 300):
        second = ((drill_result(history) or {}).get("answers") or [{}, {}])[1].get("inv")
        claims = [c for c in run.calls.get(second, []) if c.op == "PutItem"]
        if claims and all(HTTP_KEY not in str(c.key) for c in claims):
            return Hint("key-not-header", f"{second} carried Idempotency-Key {HTTP_KEY}, the key of a request "
                        f"already done, but claimed {claims[0].key}: the idempotency key is the client's "
                        f"header, which names the request; keyed on anything else, a reused key with another order "
                        f"is never compared with the first request, and the new order goes through")
    if drill == "http-replay" and _retry_status(history) == 400:
        return Hint("key-header-case", "the retry carried the same key, with the header's name in lower case "
                    "(idempotency-key), and was answered 400 as if it had none: HTTP header names are "
                    "case-insensitive, so look the header up whatever its case")
    return None


def _refused_call_rule(drill: str, history: History, run: _Run) -> Hint | None:
    """A call DynamoDB refused for another reason than its condition, and the invocation still succeeded: an
    ``except`` around the call the task names caught more than the conditional check's failure."""
    if drill not in ("dynamodb-errors", "save-errors"):
        return None
    return _refusal_taken_for_success(run, list(run.calls)) or _refusal_taken_for_in_progress(run)


def _refusal_taken_for_in_progress(run: _Run) -> Hint | None:
    """A claim DynamoDB refused for another reason than its condition, answered with StillInProgressError: an except
    around the claim took the error for another invocation's claim (here the table held no item for the key)."""
    for inv, calls in run.calls.items():
        refused = [c for c in calls if c.op == "PutItem" and c.result not in (AWS_OK, CONDITIONAL_CHECK_FAILED)]
        if refused and "StillInProgressError" in str(run.error(inv)):
            return Hint("refusal-as-in-progress", f"{inv}'s claim failed with {refused[-1].result}Exception, "
                        f"and {inv} raised StillInProgressError as if another invocation held the key (none did): "
                        f"the except around the claim caught more than ConditionalCheckFailedException (except "
                        f"Exception, except ClientError). Only the condition's refusal means the key is taken; let "
                        f"every other error fail the invocation as itself")
    return None


def broad_except_hint(inv: str, call: str, error: str) -> Hint:
    """The hint of a broad ``except`` around a call the task names: the same words wherever the flaw shows."""
    return Hint("broad-except", f"{inv}'s {call} failed with {error}, and {inv} went on and succeeded: the except "
                f"around the {call} caught more than ConditionalCheckFailedException (except Exception, except "
                f"ClientError). Only the condition's refusal is yours to tolerate; catch that one "
                f"(table().meta.client.exceptions.ConditionalCheckFailedException) and let every other error fail "
                f"the invocation, so its source delivers the event again")


def _own_claim_refused_rule(drill: str, history: History, run: _Run) -> Hint | None:
    """A conditional save or delete refused though no other invocation had claimed the key since this one did: the
    condition itself can never hold for its own owner (it names an attribute the item does not have)."""
    for inv, calls in run.calls.items():
        for c in calls:
            if c.op not in ("UpdateItem", "DeleteItem") or c.result != CONDITIONAL_CHECK_FAILED:
                continue
            mine = [w for w in calls if w.op == "PutItem" and _wrote(w) and w.key == c.key
                    and w.seq < c.seq]
            others = [w for i, ws in run.calls.items() if i != inv for w in ws if w.op == "PutItem" and _wrote(w)
                      and w.key == c.key and mine and mine[-1].seq < w.seq < c.seq]
            if mine and not others:
                return _own_claim_hint(inv, c, run.outcome(inv) == Outcome.OK)
    return None


def _own_claim_hint(inv: str, call: AwsCall, swallowed: bool) -> Hint:
    write = "save" if call.op == "UpdateItem" else "delete"
    undone = "saved for a duplicate to replay" if write == "save" else "removed for a retry to start over"
    condition = _said(call, "condition")
    hidden = (f", and {inv} still succeeded: a broad except hid the refusal" if swallowed else "")
    return Hint("save-refused-own-claim" if write == "save" else "delete-refused-own-claim",
                f"{inv}'s {write} of {call.key} was refused (ConditionalCheckFailed) though no other "
                f"invocation had claimed the key: its condition ({condition}) cannot hold even for the claim's own "
                f"owner{hidden}. Compare each attribute it names with the ones the claim writes (names are "
                f"case-sensitive); nothing was {undone}")


def _sqs_response_rule(drill: str, history: History, run: _Run) -> Hint | None:
    """The sqs-in-progress drill's answer, told by the rule every SQS batch is judged by (``batch_hints``)."""
    if drill != "sqs-in-progress":
        return None
    answers = (drill_result(history) or {}).get("answers") or []
    if len(answers) < 2:
        return None
    second = answers[1]
    if second.get("outcome") != Outcome.OK:
        return batch_hints([_drill_batch((), {})])[0]
    named, bad = read_partial_response(second.get("response"), [sqs_message_id((drill_result(history) or {})
                                                                                .get("seed"))], "a messageId")
    if bad is not None:
        return batch_hints([_drill_batch(run.keys(second["inv"]), {**bad, "messageIds": []})])[0]
    return None


def _drill_batch(keys: Sequence[str], detail: Mapping[str, Any]) -> DeliveryRecord:
    """A drill's answer read as the batch failure Lambda would record for it, so one rule judges both."""
    return DeliveryRecord(0, 0.0, what=Delivery.BATCH_FAILED, keys=tuple(keys), detail=frozen(detail))


def _deleted_after_success_rule(drill: str, history: History, run: _Run) -> Hint | None:
    return deleted_after_success(run)


def deleted_after_success(run: _Run) -> Hint | None:
    """An invocation that saved its key COMPLETED, then deleted it: the next duplicate finds the key free."""
    for inv, calls in run.calls.items():
        saved = [c for c in calls if _wrote(c) and _said(c, "status") == ItemStatus.COMPLETED]
        gone = [c for c in calls if c.op == "DeleteItem" and c.result == AWS_OK and saved
                and c.key == saved[0].key and c.seq > saved[0].seq]
        if gone:
            return Hint("deleted-after-success", f"{inv} saved {gone[0].key} COMPLETED, then deleted it at "
                        f"{gone[0].t:.1f} s: a duplicate after that (a losing copy's retry, a redelivery) found "
                        f"the key free and did the work again. Delete the claim only when the work raised; a "
                        f"completed record must stay to be replayed")
    return None


def _lock_boundary_rule(drill: str, history: History, run: _Run) -> Hint | None:
    """The lock-boundary drill's duplicate got in while the owner could still work: was the lock rounded down, or did
    the claim take a key in the very second its expiresAt names?"""
    answers = (drill_result(history) or {}).get("answers") or []
    if drill != "lock-boundary" or len(answers) < 2:
        return None
    owner, duplicate = str(answers[0]["inv"]), str(answers[1]["inv"])
    start = run.start(owner)
    deadline = start.t + float(start.timeout or 0) if start is not None else 0.0
    claims = [c for c in _claims(run, owner) if isinstance(_said(c, "expiresAt"), (int, float))]
    taken = [c for c in _claims(run, duplicate) if claims and c.key == claims[-1].key]
    if not claims or not taken:
        return None
    key, end = claims[-1].key, float(_said(claims[-1], "expiresAt")) - run.epoch
    if end + 1 < deadline:
        return Hint("lock-rounded-down", f"{owner}'s lock on {key} ended at {end:.0f} s (its expiresAt), though "
                    f"{owner} could work until its timeout at {deadline:.1f} s: the remaining time was rounded down to "
                    f"whole seconds (int(), //), which loses up to a second. Round it up (math.ceil)")
    return Hint("expiry-boundary", f"{duplicate} took {key} over at {taken[-1].t:.1f} s, in the very second its "
                f"expiresAt names ({end:.0f} s), while {owner} could still work until {deadline:.1f} s: expiresAt is "
                f"in whole seconds, so a lock holds through the second it names. Take a key over only once its "
                f"expiresAt is in the past (expiresAt < :now)")


def _no_key_rule(drill: str, history: History, run: _Run) -> Hint | None:
    """The no-key drill sent nothing, yet an invocation answered success: the key's error was caught and dropped."""
    answers = (drill_result(history) or {}).get("answers") or []
    if drill != "no-key" or keyless_effects(history) or not any(a.get("outcome") == Outcome.OK for a in answers[1:]):
        return None
    return Hint("swallowed-key-error", "the order with no idempotency key sent nothing, but the invocation answered "
                "success, so its source deletes the event and nobody learns of the producer's bug: let "
                "IdempotencyKeyError fail the invocation (or, in an SQS batch, name the record in batchItemFailures), "
                f"so the event goes to the failure destination ({POWERTOOLS_DOC})")


def _keyed_without_order_rule(drill: str, history: History, run: _Run) -> Hint | None:
    """The no-key drill's keyless order was worked on under a record: the key came from something else in the event."""
    answers = (drill_result(history) or {}).get("answers") or []
    keyless = [a.get("inv") for a in answers[1:]]
    if drill != "no-key" or not keyless_effects(history) or not any(run.calls.get(i) for i in keyless):
        return None
    return Hint("key-not-the-order", "an order with an empty orderId was worked on under an idempotency record: "
                "event_key_jmespath found a key in its event all the same, so the key is not the order's id (it is "
                "the delivery's id, or the whole event or message). Key on the order's id, with "
                "raise_on_no_idempotency_key=True, and an order without one fails with IdempotencyKeyError "
                f"({POWERTOOLS_DOC})")


def _payload_changed_rule(drill: str, history: History, run: _Run) -> Hint | None:
    """The reused id was answered with success, but not with the first order's result: the refusal was caught."""
    answers = (drill_result(history) or {}).get("answers") or []
    if drill != "payload-changed" or len(answers) < 2 or answers[1].get("outcome") != Outcome.OK:
        return None
    if answers[1].get("response") == answers[0].get("response"):
        return None  # replayed: the drill's own hint (no payload validation)
    return Hint("swallowed-validation-error", "the reused order id was refused, but the handler caught "
                "IdempotencyValidationError and answered success, so the source drops the event and nobody learns "
                "that two different orders share an id: let the error fail the invocation (or, in an SQS batch, name "
                f"the record in batchItemFailures) ({POWERTOOLS_DOC})")


_DRILL_RULES = (_stale_read_rule, _fencing_rule, _http_rule, _refused_call_rule, _own_claim_refused_rule,
                _sqs_response_rule, _deleted_after_success_rule, _lock_boundary_rule, _no_key_rule,
                _keyed_without_order_rule, _payload_changed_rule)


def refusal_raised_hints(history: History, inv: str) -> list[Hint]:
    """An invocation whose claim its condition refused, and which then failed: the refusal escaped (an except that
    did not match ConditionalCheckFailedException: a misspelt error code, another class)."""
    run = _Run(history)
    refused = [c for c in run.calls.get(inv, []) if c.op == "PutItem" and c.result == CONDITIONAL_CHECK_FAILED]
    if not refused:
        return []
    return [Hint("refusal-raised", f"{inv}'s claim on {refused[-1].key} was refused by its condition "
                 f"(ConditionalCheckFailedException): another invocation has the order, and that is no error. Yet "
                 f"{inv} failed ({run.error(inv)}), so its source retried it (an async event "
                 f"twice more, then to the on-failure destination; an API caller gets a 502). The except did not "
                 f"match the refusal: catch table().meta.client.exceptions.ConditionalCheckFailedException (or compare "
                 f"the error code with 'ConditionalCheckFailedException', spelt in full) and skip the order")]


def reported_handled_hints(delivery: DeliveryRecord, handled: list[str]) -> list[Hint]:
    """A partial batch response that named records the invocation had handled (``scoring.expect_partial_batch``)."""
    inv = delivery.inv
    return [Hint("handled-records-reported", f"batchItemFailures named the messages of {', '.join(handled)}, "
                 f"which {inv} had handled: Lambda returns exactly the named messages to the queue, "
                 f"so naming every message of the batch when one fails is the whole-batch retry over again. Name "
                 f"only the records that failed, each in its own try/except")]


def _stale_write_hint(f: Finding, run: _Run | None = None) -> Hint:
    write, did = ("delete", "removed") if "deleted the record" in f.text else ("save", "overwrote")
    op = "DeleteItem" if write == "delete" else "UpdateItem"
    fenced = [c for c in (run.calls.get(f.invocations[0] or "", []) if run else []) if c.op == op
              and c.result == AWS_OK and re.search(r"\w\s*=\s*:\w|:\w+\s*=\s*\w", _condition(c))]
    if fenced:
        return Hint("shared-owner-token", f"{f.invocations[0]}'s {write} was conditional "
                    f"({_said(fenced[-1], 'condition')}) and still went through after "
                    f"{f.invocations[1]} had taken the key over: {f.invocations[1]}'s claim stored the very token "
                    f"{f.invocations[0]} compared with. A token made once per container (at init, in a module "
                    f"global) is shared by every invocation that container runs and by every environment SnapStart "
                    f"restores from one snapshot; make a fresh one in each invocation")
    return Hint("stale-write", f"{f.invocations[0]}'s {write} went through after {f.invocations[1]} had taken the "
                f"key over, and {did} that invocation's record: the {write} checked only the key, not who holds the "
                f"claim now. Each claim stores its own owner token; a save or delete by an invocation whose token "
                f"is no longer there must be refused")


def _condition(call: AwsCall) -> str:
    return str(_said(call, "condition"))


def _retry_after_hint(history: History) -> Hint:
    answers = (drill_result(history) or {}).get("answers") or []
    headers = ((answers[1].get("response") or {}).get("headers") or {}) if len(answers) > 1 else {}
    value = next((v for k, v in headers.items() if str(k).lower() == "retry-after"), None)
    if value is None:
        got = "no Retry-After header: the client is not told when to try again"
    elif isinstance(value, str) and value.isdigit() and expect_retry_after_is_lock_left(history):
        left = lock_left(history)
        got = (f"Retry-After {value!r}, but the first request's lock had {left[1] if left else 0:.0f} s left: "
               f"Retry-After is the seconds left on the lock (KeyInProgressError's retry_after), not a constant")
    elif isinstance(value, str):
        got = f"Retry-After {value!r}: the client reads it as whole seconds to wait, digits only"
    else:
        got = (f"Retry-After {value!r}, of type {type(value).__name__}: a proxy response's header values are "
               f"strings")
    return Hint("retry-after", f"the retry was answered 409, with {got}")


def _retry_status(history: History, n: int = 1) -> Any:
    """The status code the drill's second request (``n``: another) was answered with, if it answered one."""
    answers = (drill_result(history) or {}).get("answers") or []
    response = answers[n].get("response") if len(answers) > n and isinstance(answers[n], dict) else None
    return response.get("statusCode") if isinstance(response, dict) else None


def batch_hints(deliveries: Sequence[DeliveryRecord]) -> list[Hint]:
    """Why a batch failed as a whole: the first response Lambda could not read, else no partial response at all."""
    for d in deliveries:
        keys, detail = d.keys, thawed(d.detail)  # the detail in its JSON form: its values are printed as JSON has them
        if not detail.get("badResponse"):
            continue
        name = "messageId" if detail.get("messageIds") is not None else "sequence number"
        ident = detail.get("itemIdentifier")
        if ident is not None and ident in keys:
            return [Hint("wrong-identifier", f"batchItemFailures named {ident!r}, the order's own id: each entry's "
                         f"itemIdentifier must be the {name} of the record that failed, and any other value makes "
                         f"Lambda fail the whole batch")]
        return [Hint("wrong-identifier", f"batchItemFailures must name each failed record by the {name} it came "
                     f"with (as each entry's itemIdentifier); anything else makes Lambda fail the whole batch")]
    return [Hint("batch-not-partial", "one record's failure failed the whole batch, so every record in it came "
                 "back: handle each record on its own, catch its error, and name only the failed ones in "
                 "batchItemFailures")]
