"""Asynchronous invocation: the event queue's retries, event age, duplicates and on-failure
destination, and the five scenarios built on it.

AWS facts pinned here (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html):
a function error, timeouts included, is retried twice, "with a one-minute wait between the
first two attempts, and two minutes between the second and third"; MaximumRetryAttempts is
0 to 2 and MaximumEventAgeInSeconds 60 to 21600; the queue can deliver an event more than
once even when nothing failed. Discarded events go to the on-failure destination as an
invocation record (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html).
"""
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox import BadInput, CrashPlan, Sandbox, make_orders, orders_in, run_scenario, send_confirmation_email
from sandbox.cli import main
from sandbox.sources.async_invoke import AsyncInvokeSource, run_until_idle

from conftest import example

MINE = ("async-retry", "async-duplicate", "timeout-after-effect", "crash-mid-work", "ttl-lag", "async-late-retry")


class Boom(Exception):
    pass


def failing_handler(event, context):
    time.sleep(0.5)  # virtual: the failure comes half a second into the attempt
    raise Boom("always fails")


def run_failing(seed=0, **source_kw):
    """One event, a handler that always fails; returns (history, source, event)."""
    with Sandbox(seed=seed) as sb:
        fn = sb.function(failing_handler)
        source = AsyncInvokeSource(sb, fn, **source_kw)
        event = sb.order_event(make_orders(2, seed))
        source.invoke(event)
        run_until_idle(sb, source)
        records = source.destination_records()
        return sb.history, source, event, records


def attempts(history):
    return sorted(history.invocations().values(), key=lambda v: v["t"])


# -- the queue itself ------------------------------------------------------------------------
def test_retries_come_one_minute_then_two_minutes_after_each_failure():
    history, source, _, _ = run_failing()
    first, second, third = attempts(history)
    # Each wait counts from the end of the failed attempt, not from its start.
    assert second["t"] == pytest.approx(first["end"] + 60.0, abs=1e-6)
    assert third["t"] == pytest.approx(second["end"] + 120.0, abs=1e-6)
    assert [a["cause"] for a in (first, second, third)] == ["first delivery", "retry 1", "retry 2"]
    assert [a["prev"] for a in (first, second, third)] == [None, first["inv"], second["inv"]]
    # Every retry carries the whole event again.
    assert all(a["keys"] == ["o-1", "o-2"] for a in (first, second, third))


@settings(max_examples=8, deadline=None)
@given(retries=st.integers(0, 2), seed=st.integers(0, 1000))
def test_maximum_retry_attempts_gives_one_more_attempt_than_retries(retries, seed):
    history, source, _, records = run_failing(seed=seed, maximum_retry_attempts=retries)
    assert len(history.invocations()) == retries + 1
    (discarded,) = [e for e in history.of_type("delivery") if e["what"] == "discarded"]
    assert discarded["detail"]["condition"] == "RetriesExhausted"
    assert records[0]["requestContext"]["approximateInvokeCount"] == retries + 1
    # the reason counts the attempts in words a learner reads as written ("all 1 attempt failed" did not)
    failed = "its only attempt failed" if retries == 0 else f"all {retries + 1} attempts failed"
    assert discarded["detail"]["reason"].startswith(f"RetriesExhausted: {failed} (MaximumRetryAttempts {retries})")


@pytest.mark.parametrize("max_age, expected_attempts, discarded_at", [
    (60, 1, 60.0),      # retry 1 would start at 60.5 s, older than 60 s: gone at 60 s
    (150, 2, 150.0),    # retry 1 at 60.5 s runs; retry 2 would be at 181 s
    (21600, 3, 181.5),  # the default 6 h never bites: retries run out first
])
def test_maximum_event_age_discards_an_event_too_old_to_retry(max_age, expected_attempts, discarded_at):
    history, _, _, records = run_failing(maximum_event_age=max_age)
    assert len(history.invocations()) == expected_attempts
    (discarded,) = [e for e in history.of_type("delivery") if e["what"] == "discarded"]
    assert discarded["t"] == pytest.approx(discarded_at)
    condition = "EventAgeExceeded" if expected_attempts < 3 else "RetriesExhausted"
    assert discarded["detail"]["condition"] == condition
    assert records[0]["requestContext"]["condition"] == condition


def test_discarded_event_lands_in_the_on_failure_queue_with_the_original_event():
    history, source, event, records = run_failing()
    (record,) = records
    assert record["requestPayload"] == event
    assert record["version"] == "1.0"
    last = attempts(history)[-1]
    assert record["requestContext"] == {"requestId": last["request_id"],
                                        "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:"
                                                       "orders-handler:$LATEST",
                                        "condition": "RetriesExhausted", "approximateInvokeCount": 3}
    assert record["responseContext"] == {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"}
    payload = record["responsePayload"]
    assert (payload["errorMessage"], payload["errorType"], payload["requestId"]) == ("always fails", "Boom",
                                                                                   last["request_id"])
    assert any("raise Boom" in frame for frame in payload["stackTrace"])
    (discarded,) = [e for e in history.of_type("delivery") if e["what"] == "discarded"]
    assert discarded["keys"] == ["o-1", "o-2"] and "orders-on-failure" in discarded["detail"]["reason"]


def test_without_a_destination_the_discarded_event_is_simply_gone():
    history, _, _, records = run_failing(on_failure=None)
    assert records == []
    (discarded,) = [e for e in history.of_type("delivery") if e["what"] == "discarded"]
    assert "no on-failure destination" in discarded["detail"]["reason"]


def test_events_still_waiting_for_a_retry_are_pending_not_lost():
    with Sandbox(seed=0) as sb:
        source = AsyncInvokeSource(sb, sb.function(failing_handler))
        source.invoke(sb.order_event(make_orders(2, 0)))
        run_until_idle(sb, source, horizon=30.0)  # stop between the failure and retry 1
        pending = [e for e in sb.history.of_type("delivery") if e["what"] == "pending"]
        assert [p["keys"] for p in pending] == [["o-1", "o-2"]]
        assert sb.check().status == "unknown"


def test_spontaneous_duplicates_follow_the_seeded_probability():
    def duplicated(seed):
        with Sandbox(seed=seed) as sb:
            source = AsyncInvokeSource(sb, sb.function(lambda e, c: None), duplicate_probability=0.5,
                                       duplicate_delay=3.0)
            for order in make_orders(10, seed):
                source.invoke(sb.order_event([order]))
            run_until_idle(sb, source)
            return [v["prev"] for v in sb.history.invocations().values() if v["cause"] == "spontaneous duplicate"]

    assert duplicated(4) == duplicated(4)
    assert 0 < len(duplicated(4)) < 10
    with Sandbox(seed=1) as sb:  # off by default
        source = AsyncInvokeSource(sb, sb.function(lambda e, c: None))
        for order in make_orders(10, 1):
            source.invoke(sb.order_event([order]))
        run_until_idle(sb, source)
        assert len(sb.history.invocations()) == 10


@pytest.mark.parametrize("kw, message", [
    (dict(maximum_retry_attempts=3), r"maximum_retry_attempts \(MaximumRetryAttempts\) must be at most 2"),
    (dict(maximum_event_age=59), r"maximum_event_age \(MaximumEventAgeInSeconds\) must be at least 60"),
    (dict(maximum_event_age=21601), r"maximum_event_age \(MaximumEventAgeInSeconds\) must be at most 21600"),
    (dict(duplicate_probability=1.5), "duplicate_probability must be at most 1"),
    (dict(first_retry_delay=-1), "first_retry_delay must be at least 0"),
    (dict(maximum_retry_attempts=1.5), "maximum_retry_attempts .* takes an int"),
])
def test_bad_settings_are_named(kw, message):
    with Sandbox() as sb:
        with pytest.raises(BadInput, match=message):
            AsyncInvokeSource(sb, sb.function(lambda e, c: None), **kw)


# -- the scenarios: exact counts for the naive handler ------------------------------------------
def causes(result):
    return {f["key"]: [result.history.invocations()[i]["cause"] for i in f["invocations"]]
            for f in result.report()["duplicates"]}


def test_async_retry_naive_sends_three_emails_for_two_orders():
    result = run_scenario("async-retry", example("naive_email.py"))
    # Attempt 1 emails o-1, then the provider refuses o-2 (nothing sent) -> function error.
    # Retry 1, 60 s later, carries both orders again: o-1 is emailed again, o-2 for the first time.
    assert result.verdict.effects_per_key == {"o-1": {"email": 2}, "o-2": {"email": 1}}
    assert causes(result) == {"o-1": ["first delivery", "retry 1"]}
    invs = result.history.invocations()
    assert invs["inv-2"]["prev"] == "inv-1" and invs["inv-1"]["outcome"] == "error"


def test_async_duplicate_naive_sends_every_email_twice():
    result = run_scenario("async-duplicate", example("naive_email.py"))
    # Nothing fails; the queue holds each of the 2 events twice (probability 1 in this demo),
    # so each order's email goes out once per copy: 2 x 2.
    assert result.verdict.effects_per_key == {"o-1": {"email": 2}, "o-2": {"email": 2}}
    assert causes(result) == {"o-1": ["first delivery", "spontaneous duplicate"],
                              "o-2": ["first delivery", "spontaneous duplicate"]}
    assert all(v["outcome"] == "ok" for v in result.history.invocations().values())


def test_timeout_after_effect_naive_repeats_the_first_order():
    result = run_scenario("timeout-after-effect", example("naive_email.py"))
    # Attempt 1 emails o-1, then hangs on o-2 until the 3 s timeout; the cut-off call never
    # reached the provider. A timeout is a function error, so retry 1 re-sends o-1 and sends o-2.
    assert result.verdict.effects_per_key == {"o-1": {"email": 2}, "o-2": {"email": 1}}
    invs = result.history.invocations()
    assert invs["inv-1"]["outcome"] == "timeout" and invs["inv-1"]["end"] == pytest.approx(3.0)
    assert invs["inv-2"]["t"] == pytest.approx(63.0) and invs["inv-2"]["cause"] == "retry 1"


def test_crash_mid_work_naive_charges_twice():
    result = run_scenario("crash-mid-work", example("naive_email.py"))
    # Attempt 1 charges o-1 and dies before the email; retry 1 charges again, then emails.
    assert result.verdict.effects_per_key == {"o-1": {"charge": 2, "email": 1}}
    assert causes(result) == {"o-1": ["first delivery", "retry 1"]}


# -- correct and weaker claims -----------------------------------------------------------------
@pytest.mark.parametrize("scenario", MINE)
def test_idempotent_handler_is_valid_for_seeds_0_to_19(scenario):
    for seed in range(20):
        result = run_scenario(scenario, example("idempotent.py"), seed=seed)
        assert result.status == "valid", (seed, result.verdict.explain())


def test_claim_without_expiry_loses_the_crashed_order():
    result = run_scenario("crash-mid-work", example("run_once_no_expiry.py"))
    (lost,) = result.verdict.lost
    assert (lost.key, lost.effect) == ("o-1", "email")
    assert "discarded" in lost.text and "RetriesExhausted" in lost.text
    invs = result.history.invocations()
    assert [v["outcome"] for v in invs.values()] == ["crashed", "error", "error"]
    assert all("StillInProgressError" in invs[i]["error"] for i in ("inv-2", "inv-3"))
    assert result.verdict.effects_per_key == {"o-1": {"charge": 1, "email": 0}}


def test_claim_trusting_ttl_loses_the_order_while_the_expired_lock_lingers():
    result = run_scenario("ttl-lag", example("run_once_ttl_only.py"))
    (lost,) = result.verdict.lost
    assert lost.key == "o-1" and "discarded" in lost.text
    (discarded,) = [e for e in result.history.of_type("delivery") if e["what"] == "discarded"]
    (sweep,) = result.history.of_type("sweep")
    # The lock expired at 3 s, yet TTL removed it only 6 h later, long after the last retry.
    assert sweep["t"] > discarded["t"] + 5 * 3600
    # With a prompt TTL the same code would have worked: the lag is the whole problem.
    assert run_scenario("ttl-lag", example("run_once_ttl_only.py"), settings={"ttl_lag": 0}).verdict.valid


def test_a_retry_before_the_lock_expires_is_refused_then_a_later_one_finishes():
    result = run_scenario("crash-mid-work", example("idempotent.py"), settings={"first_retry_delay": 1})
    invs = result.history.invocations()
    # the improved run_once raises a StillInProgressError that also says how long the lock still runs
    assert invs["inv-2"]["error"].startswith("KeyInProgressError: order-confirmation#o-1 is being processed")
    assert invs["inv-3"]["outcome"] == "ok" and result.verdict.valid


def test_fault_in_the_remaining_window_duplicates_even_the_idempotent_handler():
    result = run_scenario("timeout-after-effect", example("idempotent.py"), settings={"fault_in_window": True})
    (dup,) = result.verdict.duplicates
    assert dup.key == "o-1" and dup.remaining_window and "Remaining window" in dup.text
    assert result.history.invocations()["inv-1"]["outcome"] == "timeout"


def test_indefinite_cut_off_call_counts_as_sent():
    result = run_scenario("timeout-after-effect", example("idempotent.py"), settings={"indefinite": True})
    (dup,) = result.verdict.duplicates
    assert dup.key == "o-2" and dup.remaining_window and "cut off by a deadline" in dup.text


# -- throttling: 429s retried with back off for up to the event's maximum age -----------------------
def ok_handler(event, context):
    for order in orders_in(event):
        send_confirmation_email(order)


def run_throttled(handler=ok_handler, crash=None, **source_kw):
    with Sandbox(seed=0) as sb:
        fn = sb.function(handler)
        source = AsyncInvokeSource(sb, fn, **source_kw)
        source.invoke(sb.order_event(make_orders(1)), crash=crash)
        run_until_idle(sb, source)
        return sb.history, source.destination_records(), list(sb.outbox)


def backoff_tries(window: float, start: float = 0.0) -> list[float]:
    """When the async queue tries an event throttled from ``start`` for ``window`` seconds: 1 s, doubling, <= 5 min."""
    t, delay, tries = start, 1.0, []
    while t < start + window:
        tries.append(t)
        t, delay = t + delay, min(delay * 2, 300.0)
    return tries + [t]


@pytest.mark.parametrize("window", [0.5, 10.0, 1000.0, 7200.0])
def test_a_throttled_event_waits_in_the_queue_with_back_off_from_1_s_to_5_min(window):
    history, _, outbox = run_throttled(throttled_for=window)
    *turned_away, runs_at = backoff_tries(window)
    (record,) = [e for e in history.of_type("delivery") if e["what"] == "throttled"]
    assert record["detail"]["tries"] == len(turned_away) and record["detail"]["status"] == 429
    assert record["detail"]["from"] == 0.0 and record["t"] == pytest.approx(runs_at)
    (inv,) = history.invocations().values()
    assert inv["t"] == pytest.approx(runs_at) and inv["cause"] == "first delivery" and len(outbox) == 1
    gaps = [b - a for a, b in zip(turned_away + [runs_at], (turned_away + [runs_at])[1:])]
    assert max(gaps) <= 300.0


def test_throttles_do_not_use_up_maximum_retry_attempts():
    history, _, outbox = run_throttled(throttled_for=600.0, maximum_retry_attempts=0)
    assert len(history.invocations()) == 1 and len(outbox) == 1


def test_an_event_throttled_past_its_maximum_age_is_discarded_without_ever_running():
    history, records, outbox = run_throttled(throttled_for=7200.0, maximum_event_age=3600)
    assert history.invocations() == {} and outbox == []
    (discarded,) = [e for e in history.of_type("delivery") if e["what"] == "discarded"]
    assert discarded["t"] == pytest.approx(3600.0) and discarded["detail"]["condition"] == "EventAgeExceeded"
    (record,) = records
    assert record["requestContext"]["condition"] == "EventAgeExceeded"
    assert record["requestContext"]["approximateInvokeCount"] == 0 and record["responseContext"]["statusCode"] == 429


def test_a_throttled_retry_keeps_its_cause_and_request_id():
    history, _, outbox = run_throttled(handler=failing_handler, throttled_from=10.0, throttled_for=600.0,
                                       maximum_retry_attempts=1)
    first, retry = sorted(history.invocations().values(), key=lambda v: v["t"])
    assert retry["cause"] == "retry 1" and retry["request_id"] == first["request_id"]
    *_, runs_at = backoff_tries(600.0 - (first["end"] + 60.0 - 10.0), start=first["end"] + 60.0)
    assert retry["t"] == pytest.approx(runs_at)


def test_an_extension_that_holds_the_invoke_phase_times_the_invocation_out_after_its_work():
    history, _, outbox = run_throttled(crash=CrashPlan(hold_after_return=5.0), maximum_retry_attempts=0)
    (inv,) = history.invocations().values()
    assert inv["outcome"] == "timeout" and inv["end"] == pytest.approx(3.0) and len(outbox) == 1


# -- async-late-retry: a retry hours later, and how long run_once keeps its record ------------------
def test_async_late_retry_naive_emails_again_two_hours_later():
    result = run_scenario("async-late-retry", example("naive_email.py"))
    assert result.verdict.effects_per_key == {"o-1": {"email": 2}}
    first, retry = sorted(result.history.invocations().values(), key=lambda v: v["t"])
    assert first["outcome"] == "timeout" and retry["cause"] == "retry 1" and retry["t"] > 2 * 3600
    (dup,) = result.verdict.duplicates
    assert not dup.retention_too_short  # nothing was saved: the naive handler has no retention at all


@pytest.mark.parametrize("keep_for, valid", [(86400, True), (21600, True), (7600, True), (7200, False),
                                             (3600, False)])
def test_run_once_is_safe_only_while_its_record_outlives_the_late_retry(keep_for, valid):
    result = run_scenario("async-late-retry", example("idempotent.py"), settings={"keep_for": keep_for})
    retry_at = max(v["t"] for v in result.history.invocations().values())
    assert (keep_for > retry_at) is valid and result.valid is valid
    if not valid:
        (dup,) = result.verdict.duplicates
        assert dup.retention_too_short
        assert "retention shorter than the redelivery horizon" in dup.text.lower()


def test_the_keep_for_setting_reaches_the_function_as_its_environment_variable():
    result = run_scenario("async-late-retry", example("idempotent.py"), settings={"keep_for": 5000})
    save = next(e for e in result.history.of_type("aws") if e["op"] == "UpdateItem")
    claim = next(e for e in result.history.of_type("aws") if e["op"] == "PutItem")
    assert save["detail"]["expiresAt"] == claim["detail"]["expiresAt"] - 3 + 5000  # claim: now + 3 s lock


# -- determinism, CLI, speed ------------------------------------------------------------------------
def test_same_seed_same_history_even_with_concurrent_duplicates():
    runs = [run_scenario("async-duplicate", example("idempotent.py"), seed=3, settings={"duplicate_delay": 0})
            for _ in range(2)]
    assert runs[0].history.to_json() == runs[1].history.to_json()


def test_cli_exit_codes(capsys):
    assert main(["run", "async-retry", "--handler", example("naive_email.py")]) == 1
    assert main(["run", "async-retry", "--handler", example("idempotent.py")]) == 0
    assert main(["run", "async-retry", "--handler", example("idempotent.py"), "--set", "maximum_retry_attempts=3"]) == 2
    assert "must be at most 2" in capsys.readouterr().err


def test_minutes_of_retries_pass_on_the_virtual_clock():
    """Three minutes of retries are virtual time (how fast they run in real time is the bench's to report)."""
    result = run_scenario("async-retry", example("naive_email.py"), settings={"provider_failures": 2})
    assert result.history.end_time() >= 180.0 and result.wall_seconds < result.history.end_time()
