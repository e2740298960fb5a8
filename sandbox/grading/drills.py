"""Drills: small worlds built to test one promise a scenario cannot show on its own.

A scenario judges effects (each email once, no order lost). Some promises are about what a
handler *answers*: a duplicate gets the stored result back, a key still in progress makes the
duplicate fail (so its source tries again), an HTTP client gets 409, 422 or 400. A drill
invokes the handler directly in a fresh world, then writes what each invocation answered to
the history as one note (``drill-result {json}``), so the grader judges it from its own copy
of the history like everything else. ``expect(history)`` says what is wrong, or None.

    run_drill("replay", "exercises/03_store_and_replay.py:handler", seed=0)
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..aws.event_shapes import ApiGatewayProxyEvent, SqsMessage
from ..core.faults import AwsFault, ProviderFault
from ..core.history import History
from ..core.jsonvalues import LambdaEvent
from ..core.records import AwsCall, EffectRecord, Note
from ..core.scheduler import DEFAULT_WATCHDOG
from ..events import Order, apigateway_event, make_orders, sqs_record
from ..sources.sqs import read_partial_response
from ..verdict.checker import Finding, check
from ..vocab import AWS_OK, Cause, Effect, EffectStatus, FindingKind, Outcome
from ..world import Sandbox
from .shapes import DrillAnswer, DrillResult

NOTE_PREFIX = "drill-result "
QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:orders"
#: How long the first invocation's email takes, so a duplicate arrives while it still works.
SLOW_EMAIL = 5.0


@dataclass(frozen=True)
class Drill:
    name: str
    what: str
    drive: Callable[[Sandbox, Any, int], list[Any]]  # -> the invocations whose answers matter
    expect: Callable[[DrillResult], str | None]  # the drill's result -> what is wrong, or None
    timeout: float = 30.0
    #: What is wrong in the history itself (how the table was written), or None; judged after ``expect``.
    expect_history: Callable[[History], str | None] | None = None


def answer(inv: Any) -> DrillAnswer:
    error = inv.error if isinstance(inv.error, BaseException) else None
    return {"inv": inv.id, "outcome": str(inv.outcome), "response": inv.result if inv.outcome == Outcome.OK else None,
            "error": inv.error_text, "error_types": _classes(error)}


def _classes(error: BaseException | None) -> list[str]:
    """The error's class and its bases, by name (as its execution environment saw them, when it had one)."""
    if error is None:
        return []
    return list(getattr(error, "classes", None) or [c.__name__ for c in type(error).__mro__])


def run_drill(name: str, handler: Any, seed: int = 0, watchdog: float | None = None) -> History:
    drill = DRILLS[name]
    with Sandbox(seed=seed, meta={"drill": name}, watchdog=watchdog or DEFAULT_WATCHDOG) as sb:
        fn = sb.function(handler, timeout=drill.timeout)
        invs = drill.drive(sb, fn, seed)
        sb.run()
        sb.note(NOTE_PREFIX + json.dumps({"drill": name, "seed": seed, "answers": [answer(i) for i in invs]},
                                         default=str))
    return sb.history


def drill_result(history: History) -> DrillResult | None:
    for e in history.records(Note):
        if e.text.startswith(NOTE_PREFIX):
            try:
                return json.loads(e.text[len(NOTE_PREFIX):])
            except ValueError:
                return None
    return None


def judge(name: str, history: History) -> str | None:
    result = drill_result(history)
    if result is None or result.get("drill") != name:
        return f"the drill {name!r} left no result in the history (it did not finish)"
    drill = DRILLS[name]
    wrong = drill.expect(result)
    if wrong is None and drill.expect_history is not None:
        wrong = drill.expect_history(history)
    return wrong


# -- the worlds -------------------------------------------------------------------------------------
def _one_order(sb: Sandbox, seed: int, accept: bool = True) -> Order:
    [order] = make_orders(1, seed)
    if accept:
        sb.accept(order)
    return order


def _twice_in_a_row(sb: Sandbox, fn: Any, first: Any, second: Any, order: Order,
                    cause: str = Cause.REDELIVERY) -> list[Any]:
    """The first invocation, then its repeat (``cause``: why it came) right after it ended."""
    a = fn.invoke(first, keys=[order["orderId"]])
    sb.advance(0.3)  # within a second: an eventually consistent read may still see the claim
    return [a, fn.invoke(second, keys=[order["orderId"]], cause=cause, prev=a.id)]


def _while_in_progress(sb: Sandbox, fn: Any, first: Any, second: Any, order: Order,
                       cause: str = Cause.CONCURRENT_DUPLICATE) -> list[Any]:
    """The first invocation, and one second in, while it still works, its repeat (``cause``: why it came)."""
    sb.services.timings.email = SLOW_EMAIL
    a = fn.start(first, keys=[order["orderId"]])
    sb.advance(1.0)
    b = fn.start(second, keys=[order["orderId"]], cause=cause, prev=a.id)
    sb.run()
    return [a, b]


#: The Idempotency-Key the HTTP drills' client sends.
HTTP_KEY = "key-1"


def _http(order: Order, request: int, key: str | None = HTTP_KEY,
          header: str = "Idempotency-Key") -> ApiGatewayProxyEvent:
    return apigateway_event(order, f"req-{request}", key, key_header=header)


def _sqs_event(order: Order, message_id: str) -> LambdaEvent:
    message: SqsMessage = {"MessageId": message_id, "ReceiptHandle": f"rh-{message_id}", "Body": json.dumps(order)}
    return {"Records": [sqs_record(message, QUEUE_ARN)]}


def drive_replay(sb, fn, seed):
    order = _one_order(sb, seed)
    event = sb.order_event([order])
    return _twice_in_a_row(sb, fn, event, event, order)


#: The replay-while-saving drill: how long each AWS request takes (varied, seeded), and its duplicates' spacing.
SAVING_ROUND_TRIP, SAVING_COPIES, SAVING_EVERY = 1.0, 16, 0.25


def drive_replay_while_saving(sb, fn, seed):
    """AWS requests take about a second, and duplicates of the event arrive every quarter second while the first
    delivery claims, works and saves: whatever each one reads, it must raise StillInProgressError or get the first
    one's result back. A save in two writes (status first, result after) shows a COMPLETED record without its result
    to the duplicates that read in between."""
    order = _one_order(sb, seed)
    event = sb.order_event([order])
    sb.faults.round_trip = SAVING_ROUND_TRIP
    first = fn.start(event, keys=[order["orderId"]])
    copies = []
    for _ in range(SAVING_COPIES):
        sb.advance(SAVING_EVERY)
        copies.append(fn.start(event, keys=[order["orderId"]], cause=Cause.CONCURRENT_DUPLICATE, prev=first.id))
    sb.run()
    return [first, *copies]


def expect_replay_while_saving(result):
    answered = [a for a in _answers(result) if a["outcome"] == Outcome.OK]
    if not answered:
        return "no delivery of the event finished its work"
    for a in _answers(result):
        if a["outcome"] != Outcome.OK and "StillInProgressError" not in a["error_types"]:
            return f"a delivery failed: {_failed(a)}"
    for a in answered[1:]:
        if a["response"] != answered[0]["response"]:
            return (f"{answered[0]['inv']} answered {answered[0]['response']!r} and {a['inv']} answered "
                    f"{a['response']!r}: deliveries of one event that came while it was being saved got different "
                    f"answers. A duplicate gets the stored result back, or raises StillInProgressError while there "
                    f"is none yet")
    return None


def drive_in_progress(sb, fn, seed):
    order = _one_order(sb, seed)
    event = sb.order_event([order])
    return _while_in_progress(sb, fn, event, event, order)


def drive_http_replay(sb, fn, seed):
    order = _one_order(sb, seed)
    # The retry's client spells the header in lower case (HTTP/2 clients do): the same header, the same key.
    return _twice_in_a_row(sb, fn, _http(order, 1), _http(order, 2, header="idempotency-key"), order,
                           Cause.CLIENT_RETRY)


def drive_http_conflict(sb, fn, seed):
    order = _one_order(sb, seed)
    return _while_in_progress(sb, fn, _http(order, 1), _http(order, 2), order, Cause.CLIENT_RETRY)


def drive_http_mismatch(sb, fn, seed):
    order = _one_order(sb, seed)
    # The client reuses its key for another order (another order id, another amount): the most different body.
    changed: Order = {**make_orders(2, seed)[1], "amount": order["amount"] + 100}
    return _twice_in_a_row(sb, fn, _http(order, 1), _http(changed, 2), order, Cause.CLIENT_RETRY)


def drive_http_failure(sb, fn, seed):
    """The first request's email fails; the client retries what failed on the server's side (the function's error,
    which API Gateway answers 502, or a 5xx), never a 4xx, which says the request itself is wrong."""
    order = _one_order(sb, seed)
    sb.faults.add(ProviderFault(Effect.EMAIL, order["orderId"], fail=1))
    first = fn.invoke(_http(order, 1), keys=[order["orderId"]])
    status = first.result.get("statusCode") if first.outcome == Outcome.OK and isinstance(first.result, dict) else 502
    if not (isinstance(status, int) and status >= 500):
        return [first]
    sb.advance(1.0)
    return [first, fn.invoke(_http(order, 2), keys=[order["orderId"]], cause=Cause.CLIENT_RETRY, prev=first.id)]


def drive_http_missing_key(sb, fn, seed):
    order = _one_order(sb, seed, accept=False)
    return [fn.invoke(_http(order, 1, key=None), keys=[order["orderId"]])]


def drive_sqs_in_progress(sb, fn, seed):
    order = _one_order(sb, seed)
    event = _sqs_event(order, sqs_message_id(seed))  # the same message, delivered twice at once
    return _while_in_progress(sb, fn, event, event, order)


def sqs_message_id(seed: Any) -> str:
    """The messageId of the sqs-in-progress drill's message (the drill's result keeps its seed)."""
    return f"m-{seed}"


def _end_locks(sb: Sandbox, keys: list[str]) -> None:
    """End each claim's lock now, from outside the function: whatever the handler sized it to, it has run out
    (as a lock sized too short does), so a duplicate may take the key over."""
    past = int(sb.clock.now()) - 1
    for key in keys:
        try:
            sb.table.update_item(Key={"pk": key}, UpdateExpression="SET expiresAt = :past",
                                 ConditionExpression="attribute_exists(pk)", ExpressionAttributeValues={":past": past})
        except sb.table.meta.client.exceptions.ConditionalCheckFailedException:
            pass  # no claim to end: the drill's judge says the duplicate could not take over


def _stale_attempts(sb: Sandbox, fn: Any, seed: int, save: bool = True, delete: bool = True) -> list[Any]:
    """Slow first attempts lose their keys mid-work to duplicates; then o-1's (with ``save``) reaches its save,
    and o-2's (with ``delete``: its email failed) its delete. Each order's email goes out once, so only the
    record shows the harm. Whatever the handler sized its lock to, the drill ends it. The function has SnapStart on,
    so what its init made (a token made once per container) is the same in every attempt's environment."""
    if fn.in_processes:  # SnapStart: every environment restored from one snapshot, as a scaled-up function's are
        fn.use_snapstart()
    saver, deleter = make_orders(2, seed)
    orders = [o for o, on in ((saver, save), (deleter, delete)) if on]
    for order in orders:
        sb.accept(order)
    faults = {saver["orderId"]: ProviderFault(Effect.EMAIL, saver["orderId"], extra_seconds=SLOW_EMAIL, calls=1),
              deleter["orderId"]: ProviderFault(Effect.EMAIL, deleter["orderId"], fail=1, extra_seconds=SLOW_EMAIL,
                                                calls=1)}
    sb.faults.add(*(faults[o["orderId"]] for o in orders))
    events = [(sb.order_event([o]), [o["orderId"]]) for o in orders]
    first = [fn.start(e, keys=keys) for e, keys in events]
    sb.advance(1.0)
    _end_locks(sb, [f"order-confirmation#{o['orderId']}" for o in orders])
    whose = "both claims' locks" if len(orders) > 1 else "the claim's lock"
    sb.note(f"the drill ends {whose} now (sets expiresAt to the past), as a lock sized too short runs out while "
            f"its owner still works")
    sb.advance(1.0)
    if save:  # o-1's duplicate is still working (its email is slower, then fails) when the first attempt saves.
        sb.faults.add(ProviderFault(Effect.EMAIL, saver["orderId"], fail=1, extra_seconds=3 * SLOW_EMAIL, calls=1))
    second = [fn.start(e, keys=keys, cause=Cause.CONCURRENT_DUPLICATE, prev=a.id)
              for (e, keys), a in zip(events, first)]
    sb.run()
    return first + second


def drive_stale_owner(sb, fn, seed):
    return _stale_attempts(sb, fn, seed)


def drive_stale_release(sb, fn, seed):
    return _stale_attempts(sb, fn, seed, save=False)


def drive_stale_save(sb, fn, seed):
    return _stale_attempts(sb, fn, seed, delete=False)


#: What a DynamoDB write may meet besides its condition's refusal: the AwsFault kind, and the error the handler sees
#: (throttling is retried by the SDK first; the fault outlasts its retries). Each is on the write's list of errors
#: (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_PutItem.html#API_PutItem_Errors).
REFUSALS = (("throttle", "ProvisionedThroughputExceededException"),
            ("transaction-conflict", "TransactionConflictException"), ("validation", "ValidationException"))


def _refused_writes(sb: Sandbox, fn: Any, seed: int, op: str, retry: bool = False) -> list[Any]:
    """One order per kind of refusal, one invocation each, whose every ``op`` on the table DynamoDB refuses so.
    With ``retry``, an invocation that failed is retried a second later, the refusal over (its source's retry):
    where the refused call comes before the work, that retry does it, so an order is lost only if the refusal
    was taken for success. The answers judged are the first invocations'."""
    invs = []
    for (kind, _), order in zip(REFUSALS, make_orders(len(REFUSALS), seed)):
        sb.accept(order)
        event = sb.order_event([order])
        inv = fn.start(event, keys=[order["orderId"]])
        sb.faults.add(AwsFault(kind, "dynamodb", op, target=sb.table_name, times=50, invocation=inv.id))
        sb.run()
        if retry and inv.outcome != Outcome.OK:
            sb.advance(1.0)
            fn.start(event, keys=[order["orderId"]], cause=Cause.retry(1), prev=inv.id)
            sb.run()
        invs.append(inv)
    return invs


def drive_dynamodb_errors(sb, fn, seed):
    return _refused_writes(sb, fn, seed, "PutItem", retry=True)


def drive_save_errors(sb, fn, seed):
    return _refused_writes(sb, fn, seed, "UpdateItem")


def drive_claimed_then_new(sb, fn, seed):
    """o-1 is delivered and handled; then an event carrying o-1 again and a new o-2 (a producer that batches a
    re-send with a new order, an SQS batch holding a duplicate): o-2 must still be sent. Both are owed an email, so
    the checker finds o-2 lost if the handler gave up on the event at o-1's refused claim."""
    first, new = make_orders(2, seed)
    sb.accept(first)
    sb.accept(new)
    a = fn.invoke(sb.order_event([first]), keys=[first["orderId"]])
    sb.advance(1.0)
    return [a, fn.invoke(sb.order_event([first, new]), keys=[first["orderId"], new["orderId"]],
                         cause=Cause.REDELIVERY, prev=a.id)]


#: The lock-boundary drill: the function's timeout, when (into a second) the first attempt starts, and how long before
#: that attempt's timeout its duplicate arrives: in the last second its owner can still be working.
BOUNDARY_TIMEOUT, BOUNDARY_START, BOUNDARY_EARLY = 10.0, 0.6, 0.4


def drive_lock_boundary(sb, fn, seed):
    """An event with two orders; the first attempt starts 0.6 s into a second. It sends o-1's email (0.2 s), then
    claims o-2 with 9.8 s left, and o-2's email outlasts the timeout, so it works until Lambda stops it. The event's
    duplicate comes 0.4 s before that, in the second o-2's expiresAt names (whole seconds): a lock sized by rounding
    the remaining time down, or a claim that takes a key whose expiresAt is now, lets it in. A minute later the
    first attempt's retry sends o-2 (or replays it)."""
    orders = make_orders(2, seed)
    for order in orders:
        sb.accept(order)
    sb.sweeper.lag = 60.0  # TTL deletes an expired lock later (typically within days): the claim's condition decides
    sb.faults.add(ProviderFault(Effect.EMAIL, orders[1]["orderId"], extra_seconds=3 * BOUNDARY_TIMEOUT, calls=1))
    event, keys = sb.order_event(orders), [o["orderId"] for o in orders]
    sb.advance(BOUNDARY_START)
    a = fn.start(event, keys=keys)
    sb.advance(BOUNDARY_TIMEOUT - BOUNDARY_EARLY)
    b = fn.start(event, keys=keys, cause=Cause.CONCURRENT_DUPLICATE, prev=a.id)
    sb.run()
    sb.advance(60.0)  # the timed-out attempt's retry (a minute later, as the async queue's first): o-2 is sent
    fn.invoke(event, keys=keys, cause=Cause.retry(1), prev=a.id)
    return [a, b]


#: The orderId of the no-key drill's keyless order: empty, which Powertools takes for no key at all.
NO_KEY = ""


def drive_no_key(sb, fn, seed):
    """o-1 is handled (the handler works); then a producer's bug sends o-2 with an empty orderId, and that event comes
    twice (as Lambda's async queue may deliver one). Nothing owes the keyless order an email: an email for it is work
    done with no key to guard it."""
    order, keyless = make_orders(2, seed)
    sb.accept(order)
    first = fn.invoke(sb.order_event([order]), keys=[order["orderId"]])
    sb.advance(1.0)
    event = sb.order_event([{**keyless, "orderId": NO_KEY}])
    second = fn.invoke(event, keys=[])
    sb.advance(2.0)
    return [first, second, fn.invoke(event, keys=[], cause=Cause.SPONTANEOUS_DUPLICATE, prev=second.id)]


def payload_changed_orders(seed: int) -> tuple[Order, Order]:
    """The payload-changed drill's two orders: o-1, then o-1's id with another amount (the hints read them too)."""
    [order] = make_orders(1, seed)
    return order, {**order, "amount": order["amount"] + 100}


def drive_payload_changed(sb, fn, seed):
    """o-1 is handled; then another event carries o-1's id with another amount (a producer that reuses an id): the
    same key with another payload."""
    order, changed = payload_changed_orders(seed)
    sb.accept(order)
    return _twice_in_a_row(sb, fn, sb.order_event([order]), sb.order_event([changed]), order, Cause.PRODUCER_RESEND)


# -- what each promises -----------------------------------------------------------------------------
def _answers(result: DrillResult) -> list[DrillAnswer]:
    return result.get("answers") or []


def _status(a: DrillAnswer) -> Any:
    response = a.get("response")
    return response.get("statusCode") if isinstance(response, dict) else None


def _failed(a: DrillAnswer) -> str:
    return f"{a['inv']} ended {a['outcome']}: {a.get('error')}"


def expect_replay(result):
    first, second = _answers(result)
    for a in (first, second):
        if a["outcome"] != Outcome.OK:
            return f"the same event, delivered twice in a row: {_failed(a)}"
    if second["response"] != first["response"]:
        return (f"the same event, delivered twice in a row: the first delivery answered {first['response']!r}, "
                f"the duplicate answered {second['response']!r}; a duplicate should get the stored result back")
    return None


def expect_in_progress(result):
    first, second = _answers(result)
    if first["outcome"] != Outcome.OK:
        return f"the first delivery should finish its work: {_failed(first)}"
    if "StillInProgressError" not in second["error_types"]:
        got = f"answered {second['response']!r}" if second["outcome"] == Outcome.OK else _failed(second)
        return (f"a duplicate that arrived while the first delivery was still working {got}; it should raise "
                f"StillInProgressError, so its source delivers it again later")
    return None


def _succeeded(a: DrillAnswer) -> bool:
    status = _status(a)
    return isinstance(status, int) and 200 <= status < 300


def expect_http_replay(result):
    first, second = _answers(result)
    if not _succeeded(first):
        return f"the first request should succeed (a 2xx status), got {first['response'] or _failed(first)!r}"
    if second["response"] != first["response"]:
        return (f"a retried request (same Idempotency-Key) got {second['response'] or _failed(second)!r}; it should "
                f"get the first response again, status and body: {first['response']!r}")
    return None


def expect_http_conflict(result):
    first, second = _answers(result)
    if not _succeeded(first):
        return f"the first request should succeed (a 2xx status), got {first['response'] or _failed(first)!r}"
    headers = {str(k).lower(): v for k, v in ((second.get("response") or {}).get("headers") or {}).items()}
    if _status(second) != 409:
        return (f"a retry that arrived while the first request was still being processed got "
                f"{second['response'] or _failed(second)!r}; it should get 409 Conflict")
    retry_after = headers.get("retry-after")
    if not (isinstance(retry_after, str) and retry_after.isdigit()):
        return ("the 409 should carry a Retry-After header, whole seconds until the client may try again, as a "
                f"string (a proxy response's header values are strings), got {retry_after!r}")
    return None


def lock_left(history: History) -> tuple[str, float] | None:
    """(the retry's invocation, the seconds the first request's lock still had when the retry's claim was refused),
    read from the table calls: the first request's winning claim's ``expiresAt``, and when the retry asked."""
    result = drill_result(history) or {}
    answers = _answers(result)
    if len(answers) < 2:
        return None
    first, second = answers[0]["inv"], answers[1]["inv"]
    epoch = float(history.meta.get("epoch") or 0.0)
    calls = [e for e in history.records(AwsCall) if e.op == "PutItem"]
    won = [e for e in calls if e.inv == first and e.result == AWS_OK]
    asked = [e for e in calls if e.inv == second]
    expires = won[0].detail.get("expiresAt") if won else None
    if not asked or not isinstance(expires, (int, float)):
        return None
    return second, float(expires) - epoch - asked[0].t


#: How far a Retry-After may be from the seconds the lock has left: the lock's end is in whole epoch seconds.
RETRY_AFTER_SLACK = 2


def expect_retry_after_is_lock_left(history: History) -> str | None:
    """The 409's Retry-After is the seconds left on the lock (the task's words), not any whole number."""
    left = lock_left(history)
    answers = _answers(drill_result(history) or {})
    headers = {str(k).lower(): v for k, v in ((answers[1].get("response") or {}).get("headers") or {}).items()}
    value = headers.get("retry-after")
    if left is None or not (isinstance(value, str) and value.isdigit()):
        return None  # judged by expect_http_conflict
    if abs(int(value) - left[1]) <= RETRY_AFTER_SLACK:
        return None
    return (f"the 409 said Retry-After {value!r}, but the first request's lock had {left[1]:.0f} s left when "
            f"{left[0]} asked: a client that waits as told comes back "
            + ("while the first request may still be at work" if int(value) < left[1] else "later than it needs to")
            + "; Retry-After is the seconds left on the lock (KeyInProgressError's retry_after)")


def expect_http_mismatch(result):
    _, second = _answers(result)
    if _status(second) != 422:
        return (f"the same Idempotency-Key with a different body (another order, another amount) got "
                f"{second['response'] or _failed(second)!r}; it should get 422 Unprocessable Content")
    return None


def expect_http_failure(result):
    answers = _answers(result)
    first = answers[0]
    if len(answers) == 1:
        return (f"the first request's email failed, and it was answered {first['response']!r}: the client does not "
                f"retry that, so the order's email is never sent; a failure of the work should fail the invocation "
                f"(API Gateway answers 502) or answer 5xx, so the client retries")
    if not _succeeded(answers[1]):
        return (f"the client retried after the first request's email failed, and its retry got "
                f"{answers[1]['response'] or _failed(answers[1])!r}; the retry should do the work (a 2xx status)")
    return None


def expect_http_missing_key(result):
    [only] = _answers(result)
    if _status(only) != 400:
        return (f"a request without an Idempotency-Key header got {only['response'] or _failed(only)!r}; "
                f"it should get 400")
    return None


def expect_sqs_in_progress(result):
    """The second delivery names its message in batchItemFailures, read as Lambda reads it (``read_partial_response``,
    the SQS source's own rule): a raise, or a response Lambda cannot match to the batch, fails the whole batch
    here as it does in every scenario (the ``partial-batch`` expectation)."""
    first, second = _answers(result)
    message = sqs_message_id(result.get("seed"))
    if second["outcome"] != Outcome.OK:
        return (f"a second delivery of a message whose order was still being processed: {_failed(second)}, so Lambda "
                f"failed the whole batch; name the message in batchItemFailures instead, and the rest of its batch "
                f"is not held back")
    named, bad = read_partial_response(second["response"], [message], "a messageId")
    if bad is not None:
        return f"a second delivery of a message whose order was still being processed: {bad['reason']}"
    if message in named:
        return None
    return (f"a second delivery of a message whose order was still being processed answered {second['response']!r}; "
            f"it should name the message in batchItemFailures, so SQS delivers it again")


def expect_no_key(result):
    first, *keyless = _answers(result)
    if first["outcome"] != Outcome.OK:
        return f"an order with its orderId, delivered once, should be handled: {_failed(first)}"
    for a in keyless:
        if a["outcome"] == Outcome.OK:
            return (f"an order whose orderId is empty was delivered, and {a['inv']} answered {a['response']!r}: a "
                    f"success, so the event is gone; an event with no idempotency key in it must fail (Powertools "
                    f"raises IdempotencyKeyError), so nothing runs unprotected and the event goes to the failure "
                    f"destination")
    return None


def keyless_effects(history: History) -> list[EffectRecord]:
    """The no-key drill's effects for the order with an empty orderId (work with no key to guard it)."""
    return [e for e in history.records(EffectRecord) if EffectStatus(e.status).counted and e.key == NO_KEY]


def expect_no_key_effects(history: History) -> str | None:
    sent = keyless_effects(history)
    if sent:
        return (f"{len(sent)} {sent[0].kind}(s) went out for an order whose orderId is empty: work that had no "
                f"idempotency key, so nothing stopped its duplicate")
    return None


def expect_payload_changed(result):
    first, second = _answers(result)
    if first["outcome"] != Outcome.OK:
        return f"the first delivery of o-1 should do its work: {_failed(first)}"
    if "IdempotencyValidationError" in second["error_types"]:
        return None
    got = f"answered {second['response']!r}" if second["outcome"] == Outcome.OK else _failed(second)
    return (f"an event carrying o-1's id with another amount {got}: the same key with another payload must be refused "
            f"with IdempotencyValidationError (and fail the invocation), not get the first order's result replayed")


def expect_refused(call: str) -> Callable[[DrillResult], str | None]:
    """Each invocation whose ``call`` DynamoDB refused (throttled past the SDK's retries, a transaction conflict,
    a validation error: not the condition) failed: it neither did its work as if nothing happened nor reported
    success, so its source delivers the event again. Only the condition's refusal is the answer's to tolerate, and
    only it means another invocation holds the key: a refused claim that raises StillInProgressError (the table
    held no item for the key) took the error for someone else's claim."""
    def expect(result: DrillResult) -> str | None:
        for a, (_, error) in zip(_answers(result), REFUSALS):
            if a["outcome"] == Outcome.OK:
                return (f"{a['inv']}'s {call} was refused by DynamoDB with {error}, not by its condition, and "
                        f"{a['inv']} still answered {a['response']!r}: a success, so its source never delivers the "
                        f"event again. Only ConditionalCheckFailedException is the answer's to tolerate; any other "
                        f"error must fail the invocation")
            if call.startswith("claim") and "StillInProgressError" in a["error_types"]:
                return (f"{a['inv']}'s {call} was refused by DynamoDB with {error}, not by its condition, and "
                        f"{a['inv']} raised StillInProgressError, though no invocation held the key (the table had "
                        f"no item for it): only ConditionalCheckFailedException means another invocation has the "
                        f"key; any other error must fail the invocation as itself")
        return None
    return expect


def expect_lock_boundary(result):
    first, second = _answers(result)
    if "StillInProgressError" in second["error_types"]:
        return None
    got = f"answered {second['response']!r}" if second["outcome"] == Outcome.OK else _failed(second)
    return (f"{second['inv']} arrived {BOUNDARY_EARLY:g} s before {first['inv']}'s timeout, while {first['inv']}, "
            f"which held o-2's claim, was still working, and {got}: it took o-2's key over instead of raising "
            f"StillInProgressError. A lock must hold until its owner's last moment")


def expect_stale_owner(result):
    answers = _answers(result)
    if not answers or len(answers) % 2:
        return "the drill's invocations did not all end"
    for a in answers[len(answers) // 2:]:
        if "StillInProgressError" in a["error_types"]:
            return (f"{a['inv']}, a duplicate sent after the first attempt's lock had run out (the drill set its "
                    f"expiresAt to the past), found the key taken; a claim must take over a key whose expiresAt has "
                    f"passed")
    return None


def expect_stale_save(result):
    """As ``expect_stale_owner``, and the first attempt (the drill's first answer), whose email went out, ended ok:
    a save refused because another invocation owns the key now is no failure of that attempt's work."""
    wrong = expect_stale_owner(result)
    if wrong is not None:
        return wrong
    saver = _answers(result)[0]
    if saver["outcome"] == Outcome.OK:
        return None
    if refused_save_raised(result):
        return (f"{saver['inv']}'s email went out, then its save was refused (the duplicate had taken the key "
                f"over) and the refusal escaped as ConditionalCheckFailedException, so {saver['inv']} ended with an "
                f"error. A source retries an event whose invocation failed, and once the key is free again (here "
                f"the duplicate's email fails and it deletes its claim) that retry sends a second email")
    return (f"{saver['inv']}'s email went out, yet it ended {saver['outcome']}: {saver.get('error')}; its work is "
            f"done, so it should answer with its result")


def refused_save_raised(result: DrillResult) -> bool:
    """Did the stale drill's first attempt (the one that saves) end with its save's ConditionalCheckFailedException?"""
    answers = _answers(result)
    return bool(answers) and "ConditionalCheckFailedException" in answers[0]["error_types"]


def stale_writes(history: History) -> list[Finding]:
    """The checker's stale writes: it keeps them as notes, since each effect may still have happened once; a
    drill about fencing makes them the failure."""
    return [f for f in check(history).findings if f.kind == FindingKind.STALE_WRITE]


def expect_no_stale_write(history: History) -> str | None:
    stale = stale_writes(history)
    return stale[0].text if stale else None


DRILLS: dict[str, Drill] = {d.name: d for d in (
    Drill("replay", "a duplicate delivered right after the first gets the stored result back",
          drive_replay, expect_replay),
    Drill("in-progress", "a duplicate that arrives while the work is in progress raises StillInProgressError",
          drive_in_progress, expect_in_progress),
    Drill("http-replay", "a retried request gets the first response back, status and body",
          drive_http_replay, expect_http_replay),
    Drill("http-conflict", "a retry while the first request is in progress gets 409 with Retry-After",
          drive_http_conflict, expect_http_conflict, expect_history=expect_retry_after_is_lock_left),
    Drill("http-mismatch", "the same Idempotency-Key with another body gets 422",
          drive_http_mismatch, expect_http_mismatch),
    Drill("http-failure", "a request whose work fails is answered so the client retries it, and the retry does the "
          "work", drive_http_failure, expect_http_failure),
    Drill("http-missing-key", "a request without an Idempotency-Key gets 400", drive_http_missing_key,
          expect_http_missing_key),
    Drill("sqs-in-progress", "a message whose order is in progress elsewhere is reported in batchItemFailures",
          drive_sqs_in_progress, expect_sqs_in_progress),
    Drill("dynamodb-errors", "a claim DynamoDB refuses for a reason other than its condition (throttling, a "
          "transaction conflict, a validation error) fails the invocation", drive_dynamodb_errors,
          expect_refused("claim (PutItem)"), timeout=60.0),
    Drill("replay-while-saving", "duplicates arriving while the first delivery saves get its result or raise "
          "StillInProgressError, never a COMPLETED record without its result", drive_replay_while_saving,
          expect_replay_while_saving),
    Drill("claimed-then-new", "an event carrying an order already handled and then a new one sends the new one",
          drive_claimed_then_new, lambda result: None),
    Drill("no-key", "an order is handled; then an event whose order has an empty orderId, delivered twice, fails "
          "and sends nothing",
          drive_no_key, expect_no_key, expect_history=expect_no_key_effects),
    Drill("payload-changed", "an event with a handled order's id and another amount is refused "
          "(IdempotencyValidationError), not answered with the first order's result", drive_payload_changed,
          expect_payload_changed),
    Drill("lock-boundary", "a duplicate that arrives in the last second its owner can still be working (its "
          "timeout not yet reached) finds the key locked", drive_lock_boundary, expect_lock_boundary,
          timeout=BOUNDARY_TIMEOUT),
    Drill("save-errors", "a save DynamoDB refuses for a reason other than its condition (throttling, a transaction "
          "conflict, a validation error) fails the invocation", drive_save_errors, expect_refused("save (UpdateItem)"),
          timeout=60.0),
    Drill("stale-owner", "a slow attempt whose key a duplicate took over leaves the duplicate's record alone when "
          "it saves (o-1) or deletes (o-2)", drive_stale_owner, expect_stale_save, timeout=60.0,
          expect_history=expect_no_stale_write),
    Drill("stale-release", "a slow attempt whose key a duplicate took over leaves the duplicate's record alone when "
          "its work fails and it deletes its claim", drive_stale_release, expect_stale_owner, timeout=60.0,
          expect_history=expect_no_stale_write),
    Drill("stale-save", "a slow attempt whose key a duplicate took over leaves the duplicate's record alone when "
          "it saves its result, and answers with that result", drive_stale_save, expect_stale_save,
          timeout=60.0, expect_history=expect_no_stale_write),
)}
