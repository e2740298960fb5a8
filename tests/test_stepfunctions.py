"""Step Functions: a Task state invokes the function synchronously, and its Retry runs the whole function again.

AWS facts pinned here (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html):
a retrier's IntervalSeconds is 1 by default, MaxAttempts 3 (retries after the first attempt; 0: none),
BackoffRate 2.0, MaxDelaySeconds unset (no limit) and JitterStrategy NONE; FULL jitter draws each
interval between 0 and its computed value. States.ALL matches every error, States.TaskFailed every one
but States.Timeout; a Lambda function's error is named by its errorType, and a function timeout or crash
is Lambda.Unknown (https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html).
Without a matching retrier the execution fails at once. The optimized integration invokes synchronously
(https://docs.aws.amazon.com/step-functions/latest/dg/connect-lambda.html); a Task past its TimeoutSeconds
fails with States.Timeout, and a Standard execution fails with States.Timeout after a year
(https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html).
"""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox import BadInput, Sandbox, make_orders, plot_timeline, run_scenario
from sandbox.core.faults import ProviderFault
from sandbox.sources.base import run_sources
from sandbox.sources.stepfunctions import (
    LAMBDA_SERVICE_ERRORS,
    MAX_EXECUTION_SECONDS,
    RESOURCE,
    StepFunctionsSource,
    TaskRetryConfig,
)
from sandbox.vocab import Effect

from conftest import example, no_real_sleep

NAIVE, IDEMPOTENT = example("naive_email.py"), example("idempotent.py")
SCENARIO = "stepfunctions-task-retry"

SENDS_THEN_RAISES = '''
from sandbox import orders_in, send_confirmation_email


class ReceiptStoreDown(Exception):
    """A later step of the handler fails, after the email went out."""


def handler(event, context):
    for order in orders_in(event):
        send_confirmation_email(order)
    raise ReceiptStoreDown("the receipt store did not answer")
'''


def run_task(handler, *, seed=0, orders=2, refusals=1, email_seconds=0.2, timeout=3.0, horizon=None, **retry):
    """One execution whose input carries ``orders``; the provider refuses the last order ``refusals`` times."""
    with Sandbox(seed=seed) as sb:
        sb.services.timings.email = email_seconds
        fn = sb.function(handler, timeout=timeout)
        source = StepFunctionsSource(sb, fn, **retry)
        batch = make_orders(orders, seed)
        if refusals:
            sb.faults.add(ProviderFault(Effect.EMAIL, batch[-1]["orderId"], fail=refusals))
        source.start_execution(sb.order_event(batch))
        run_sources(sb, source, horizon=horizon)
        return sb.history, source.executions[0], list(sb.outbox)


def task_records(history):
    return [e for e in history.of_type("aws") if e["service"] == "states"]


# -- the retrier's fields and their defaults ------------------------------------------------------
def test_the_retrier_has_step_functions_defaults():
    cfg = TaskRetryConfig()
    assert (cfg.errors, cfg.interval_seconds, cfg.max_attempts, cfg.backoff_rate) == (("States.ALL",), 1, 3, 2.0)
    assert cfg.max_delay_seconds == 0 and cfg.jitter_strategy == "NONE" and cfg.timeout_seconds == 0  # not set
    assert cfg.retrier() == {"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1, "MaxAttempts": 3,
                             "BackoffRate": 2.0}
    aws = {s.name: s.aws for s in TaskRetryConfig.settings()}
    assert aws == {"error_equals": "ErrorEquals", "interval_seconds": "IntervalSeconds", "max_attempts": "MaxAttempts",
                   "backoff_rate": "BackoffRate", "max_delay_seconds": "MaxDelaySeconds",
                   "jitter_strategy": "JitterStrategy", "timeout_seconds": "TimeoutSeconds"}


def test_the_definition_is_one_task_on_the_optimized_lambda_integration():
    cfg = TaskRetryConfig(max_delay_seconds=10, jitter_strategy="FULL", timeout_seconds=30)
    definition = cfg.definition("arn:aws:lambda:us-east-1:123456789012:function:orders-handler")
    task = definition["States"][definition["StartAt"]]
    assert task["Type"] == "Task" and task["Resource"] == RESOURCE == "arn:aws:states:::lambda:invoke"
    assert task["Parameters"] == {"FunctionName": "arn:aws:lambda:us-east-1:123456789012:function:orders-handler",
                                  "Payload.$": "$"}  # the state input, whole, as the payload
    assert task["TimeoutSeconds"] == 30 and task["End"] is True
    assert task["Retry"] == [{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1, "MaxAttempts": 3,
                              "BackoffRate": 2.0, "MaxDelaySeconds": 10, "JitterStrategy": "FULL"}]


def test_backoff_follows_the_pages_examples():
    # "This example of a Retry makes 2 retry attempts after waiting for 3 and 4.5 seconds."
    cfg = TaskRetryConfig(interval_seconds=3, max_attempts=2, backoff_rate=1.5)
    assert [cfg.backoff(n) for n in (1, 2)] == [3.0, 4.5]
    # IntervalSeconds 2, BackoffRate 2, MaxAttempts 3: 2, 4 and 8 seconds (the JitterStrategy example)
    assert [TaskRetryConfig(interval_seconds=2).backoff(n) for n in (1, 2, 3)] == [2.0, 4.0, 8.0]
    # MaxDelaySeconds caps the growth; BackoffRate 1.0 keeps the interval
    assert [TaskRetryConfig(max_delay_seconds=3).backoff(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 3.0, 3.0]
    assert [TaskRetryConfig(interval_seconds=5, backoff_rate=1.0).backoff(n) for n in (1, 2, 3)] == [5.0] * 3


def test_error_names_match_as_the_states_language_says():
    everything = TaskRetryConfig()
    assert all(everything.matches(e) for e in ("States.Timeout", "Lambda.Unknown", "EmailProviderError"))
    task_failed = TaskRetryConfig(error_equals="States.TaskFailed")
    assert task_failed.matches("EmailProviderError") and task_failed.matches("Lambda.Unknown")
    assert not task_failed.matches("States.Timeout")  # the one error States.TaskFailed does not match
    service = TaskRetryConfig(error_equals=",".join(LAMBDA_SERVICE_ERRORS))
    assert service.matches("Lambda.ServiceException") and not service.matches("EmailProviderError")
    assert TaskRetryConfig(error_equals="Lambda.Unknown, EmailProviderError").errors == (
        "Lambda.Unknown", "EmailProviderError")


@pytest.mark.parametrize("settings, words", [
    ({"error_equals": "States.ALL,Lambda.Unknown"}, "States.ALL must appear alone"),
    ({"error_equals": ""}, "error names separated by commas"),
    ({"error_equals": "States.ALL,"}, "error names separated by commas"),
    ({"backoff_rate": 0.5}, "backoff_rate .* at least 1"),
    ({"interval_seconds": 0}, "interval_seconds .* at least 1"),
    ({"max_attempts": -1}, "max_attempts .* at least 0"),
    ({"jitter_strategy": "HALF"}, "must be one of NONE, FULL"),
    ({"max_delay_seconds": 31622401}, "max_delay_seconds .* at most 31622400"),
])
def test_a_retrier_aws_would_refuse_is_bad_input(settings, words):
    with pytest.raises(BadInput, match=words):
        TaskRetryConfig(**settings)


# -- the default story --------------------------------------------------------------------------
def test_the_retry_runs_the_whole_input_again_in_a_new_invocation_a_second_later():
    history, execution, outbox = run_task(NAIVE)
    assert [m["orderId"] for m in outbox] == ["o-1", "o-1", "o-2"]  # o-1's email went out on both attempts
    invs = history.invocations()
    first, second = (invs[a.invocation.id] for a in execution.attempts)
    assert (first["cause"], second["cause"]) == ("first delivery", "retry 1") and second["prev"] == first["inv"]
    assert first["outcome"] == "error" and second["outcome"] == "ok"
    assert first["request_id"] != second["request_id"]  # each attempt is a new synchronous invoke
    events = [a.invocation.event for a in execution.attempts]
    assert events[0] == events[1] and events[0]["detail-type"] == "OrderPlaced"  # the same input, byte for byte
    records = task_records(history)
    assert [r["result"] for r in records] == ["EmailProviderError", "ok"]  # the function's errorType names it
    assert [r["detail"]["retryCount"] for r in records] == [0, 1]
    assert records[1]["detail"]["sent"] - records[0]["t"] == pytest.approx(1.0)  # IntervalSeconds after the error
    assert execution.status == "SUCCEEDED"


def test_the_scenario_defaults_double_the_first_email_for_the_naive_handler_only():
    naive = run_scenario(SCENARIO, NAIVE, seed=0)
    assert naive.verdict.effects_per_key == {"o-1": {"email": 2}, "o-2": {"email": 1}}
    (dup,) = naive.verdict.duplicates
    assert "stepfunctions, retry 1" in dup.text
    for seed in range(3):
        assert run_scenario(SCENARIO, IDEMPOTENT, seed=seed).valid


@settings(max_examples=8, deadline=None)
@given(refusals=st.integers(1, 5), interval=st.integers(1, 5), rate=st.sampled_from([1.0, 1.5, 2.0]),
       cap=st.sampled_from([0, 3]))
def test_each_retry_waits_its_backoff_until_max_attempts_then_the_execution_fails(refusals, interval, rate, cap):
    with no_real_sleep() as slept:
        history, execution, outbox = run_task(NAIVE, refusals=refusals, interval_seconds=interval, backoff_rate=rate,
                                              max_delay_seconds=cap)
    assert slept == []  # every wait is on the virtual clock
    cfg = TaskRetryConfig(interval_seconds=interval, backoff_rate=rate, max_delay_seconds=cap)
    attempts = execution.attempts
    assert len(attempts) == min(refusals + 1, 4)  # the first attempt and at most MaxAttempts (3) retries
    for n, (before, after) in enumerate(zip(attempts, attempts[1:]), start=1):
        assert after.sent - before.ended == pytest.approx(cfg.backoff(n))
    assert len([m for m in outbox if m["orderId"] == "o-1"]) == len(attempts)  # every attempt emailed o-1
    if refusals <= 3:
        assert execution.status == "SUCCEEDED" and [m["orderId"] for m in outbox].count("o-2") == 1
    else:
        assert execution.status == "FAILED" and execution.error == "EmailProviderError"
        (failed,) = [d for d in history.of_type("delivery") if d["what"] == "execution failed"]
        assert failed["keys"] == ["o-1", "o-2"] and failed["detail"]["attempts"] == 4
        assert "MaxAttempts (3) were used up" in failed["detail"]["reason"]


def test_full_jitter_draws_each_wait_between_zero_and_its_backoff_the_same_for_a_seed():
    waits = []
    for _ in range(2):
        _, execution, _ = run_task(NAIVE, seed=7, refusals=3, interval_seconds=4, jitter_strategy="FULL")
        a = execution.attempts
        waits.append([after.sent - before.ended for before, after in zip(a, a[1:])])
    assert waits[0] == waits[1] and len(waits[0]) == 3
    assert all(0 <= w <= b for w, b in zip(waits[0], (4.0, 8.0, 16.0)))
    assert waits[0] != [4.0, 8.0, 16.0]


# -- retriers that do not retry the function's error --------------------------------------------
@pytest.mark.parametrize("retry", [{"error_equals": ",".join(LAMBDA_SERVICE_ERRORS)}, {"max_attempts": 0},
                                   {"error_equals": "PaymentError"}])
def test_without_a_matching_retrier_the_execution_fails_at_the_first_error_and_the_rest_is_lost(retry):
    result = run_scenario(SCENARIO, NAIVE, settings=retry)
    assert len(result.history.invocations()) == 1 and result.verdict.duplicates == []
    (lost,) = result.verdict.lost
    assert lost.key == "o-2" and "Its execution failed at 0.4 s (EmailProviderError: " in lost.text
    assert "nothing runs these orders again" in lost.text


def test_a_retrier_may_name_the_functions_own_error_type():
    result = run_scenario(SCENARIO, NAIVE, settings={"error_equals": "EmailProviderError"})
    assert result.verdict.effects_per_key["o-1"] == {"email": 2} and not result.verdict.lost


def test_a_later_step_that_raises_after_the_email_is_retried_too(tmp_path):
    path = tmp_path / "sends_then_raises.py"
    path.write_text(SENDS_THEN_RAISES)
    history, execution, outbox = run_task(f"{path}:handler", orders=1, refusals=0, max_attempts=2)
    assert [a.error for a in execution.attempts] == ["ReceiptStoreDown"] * 3
    assert [m["orderId"] for m in outbox] == ["o-1"] * 3 and execution.status == "FAILED"


# -- timeouts -----------------------------------------------------------------------------------
def test_a_function_timeout_after_the_work_is_lambda_unknown_and_is_retried():
    result = run_scenario(SCENARIO, NAIVE, settings={"failure": "times-out"})
    assert [r["result"] for r in task_records(result.history)] == ["Lambda.Unknown", "ok"]
    assert result.verdict.effects_per_key == {"o-1": {"email": 2}, "o-2": {"email": 2}}
    assert result.history.invocations()["inv-1"]["outcome"] == "timeout"
    # States.TaskFailed matches Lambda.Unknown (it is not States.Timeout)
    task_failed = run_scenario(SCENARIO, NAIVE, settings={"failure": "times-out", "error_equals": "States.TaskFailed"})
    assert len(task_failed.history.invocations()) == 2
    assert run_scenario(SCENARIO, IDEMPOTENT, settings={"failure": "times-out"}).valid


def test_a_task_timeout_stops_only_the_waiting_so_the_retry_overlaps_the_running_function():
    history, execution, outbox = run_task(NAIVE, refusals=0, email_seconds=5.0, timeout=30.0, timeout_seconds=2,
                                          max_attempts=1)
    first, second = execution.attempts
    assert (first.error, second.error) == ("States.Timeout", "States.Timeout")
    assert first.ended - first.sent == pytest.approx(2.0) and second.sent == pytest.approx(first.ended + 1.0)
    invs = history.invocations()
    assert invs[first.invocation.id]["end"] > second.sent  # the first invocation still ran when the retry began
    assert all(invs[a.invocation.id]["outcome"] == "ok" for a in execution.attempts)  # both finished their work
    assert [m["orderId"] for m in outbox] == ["o-1", "o-1", "o-2", "o-2"] and execution.status == "FAILED"


def test_states_task_failed_does_not_retry_a_task_timeout():
    _, execution, outbox = run_task(NAIVE, refusals=0, email_seconds=5.0, timeout=30.0, timeout_seconds=2,
                                    error_equals="States.TaskFailed")
    assert len(execution.attempts) == 1 and execution.error == "States.Timeout"
    assert [m["orderId"] for m in outbox] == ["o-1", "o-2"]  # the function ran on and finished after the Task failed


def test_a_standard_execution_fails_with_states_timeout_after_a_year():
    history, execution, _ = run_task(NAIVE, refusals=3, interval_seconds=20_000_000)
    assert len(execution.attempts) == 2 and execution.error == "States.Timeout"
    (failed,) = [d for d in history.of_type("delivery") if d["what"] == "execution failed"]
    assert failed["t"] == pytest.approx(MAX_EXECUTION_SECONDS) and "one-year limit" in failed["detail"]["reason"]


def test_an_execution_waiting_to_retry_when_the_run_stops_is_pending():
    history, execution, _ = run_task(NAIVE, refusals=1, interval_seconds=600, horizon=60)
    assert execution.status == "RUNNING" and len(execution.attempts) == 1
    (pending,) = [d for d in history.of_type("delivery") if d["what"] == "pending"]
    assert pending["source"] == "stepfunctions" and pending["keys"] == ["o-1", "o-2"]


# -- the timeline -------------------------------------------------------------------------------
def _texts(history):
    fig = plot_timeline(history)
    ax = fig.axes[0]
    return ([t.get_text() for t in ax.texts] + [t.get_text() for t in ax.get_yticklabels()],
            [" ".join(t.get_text().split()) for t in fig.legends[0].get_texts()])  # wrapped lines joined


def test_the_timeline_shows_the_task_its_attempts_and_a_failed_execution():
    texts, legend = _texts(run_scenario(SCENARIO, NAIVE, settings={"provider_failures": 5}).history)
    assert "Step Functions Task → Lambda\n(Retry)" in texts  # a long source name takes two lines
    # what the last attempt got (on two lines where on one it would stand over other marks)
    assert "Task failed: EmailProviderError" in [" ".join(t.split()) for t in texts]
    assert "execution failed (EmailProviderError): o-1, o-2 not run again" in texts
    assert "the Task invokes the function, waits for its result" in legend
    texts, legend = _texts(run_scenario(SCENARIO, NAIVE, settings={"email_seconds": 5.0, "function_timeout": 30.0,
                                                                   "timeout_seconds": 2}).history)
    assert "Task failed: States.Timeout" in [" ".join(t.split()) for t in texts]
    assert "States.Timeout: the Task stopped waiting, the function ran on" in legend
