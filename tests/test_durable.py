"""Lambda durable functions: AWS's SDK runs unmodified in the environments, the world serves the durable execution
APIs it calls, and the three scenarios show the idempotency page's lessons (sources/durable.py)."""
from __future__ import annotations

import contextlib
import io
import json
import sys
import urllib.parse
from pathlib import Path

import boto3
import pytest
from botocore.config import Config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandbox import Sandbox, run_scenario
from sandbox.sources.base import run_sources
from sandbox.sources.durable import ARN_HEADER, DurableService
from sandbox.vocab import Cause, Delivery, SourceKind

from conftest import example

HANDLERS = Path(__file__).resolve().parent / "handlers"
MARKS = f"{HANDLERS / 'durable_marks.py'}:handler"
NAIVE, IMPROVED = example("naive_email.py"), example("idempotent.py")
ONE_STEP, STEPS = example("durable_one_step.py"), example("durable_steps.py")
OUTSIDE, INSIDE = example("durable_email_outside_step.py"), example("durable_email_in_step.py")
DURABLE_IMPROVED = example("durable_idempotent.py")
FEW = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _causes(result) -> list[str]:
    return [inv["cause"] for inv in result.history.invocations().values()]


def _marks(lines) -> list[str]:
    return [line.split(" | ", 1)[-1] for line in lines if "mark: " in line]


def _in_world(handler: str, payload: dict, name: str | None = "order-o-1"):
    """Run one execution of ``handler`` in a world, started as an Invoke would; the world's history and it."""
    with Sandbox() as sb:
        service = DurableService(sb, sb.function(handler))
        execution, _ = service.begin(json.dumps(payload), name=name, source=SourceKind.DURABLE, keys=["o-1"])
        run_sources(sb, service, horizon=3600)
    return sb.history, execution


def test_the_sdk_replays_in_the_sandbox_as_under_awss_testing_runner():
    """The same durable handler under aws-durable-execution-sdk-python-testing's local runner and in a world:
    the same marks in the same order (code outside steps on every invocation; a failed step's second attempt; a
    completed step never again), the same result."""
    from aws_durable_execution_sdk_python_testing import DurableFunctionTestRunner

    sys.path.insert(0, str(HANDLERS))
    try:
        import durable_marks
    finally:
        sys.path.remove(str(HANDLERS))
    printed = io.StringIO()
    with DurableFunctionTestRunner(handler=durable_marks.handler) as runner, contextlib.redirect_stdout(printed):
        local = runner.run(input=json.dumps({"orderId": "o-1"}), execution_timeout=60)
    history, execution = _in_world(MARKS, {"orderId": "o-1"})
    expected = _marks(printed.getvalue().splitlines())
    assert expected == ["mark: outside", "mark: first step", "mark: flaky attempt 1", "mark: outside",
                        "mark: flaky attempt 2", "mark: outside", "mark: after wait"]
    assert _marks(f"{r['inv']} | {r['text']}" for r in history.logs()) == expected
    assert execution.status == "SUCCEEDED" and json.loads(local.result) == execution.result
    assert len(execution.invocations) == 3  # the first, the step retry's, the wait's
    ops = {op.get("Name"): op for op in execution.operations.values()}
    assert ops["flaky"]["StepDetails"]["Attempt"] == 1 and ops["flaky"]["Status"] == "SUCCEEDED"


@FEW
@given(st.integers(0, 10_000))
def test_a_failed_step_runs_again_from_its_start_whatever_the_seed(seed):
    """durable-execution-idempotency.html: "Steps have at-least-once execution semantics by default"."""
    naive = run_scenario("durable-step-retry", ONE_STEP, seed=seed)
    assert naive.verdict.effects_per_key == {"o-1": {"email": 2}, "o-2": {"email": 1}}
    assert _causes(naive) == [Cause.FIRST_DELIVERY, Cause.REPLAY]
    fixed = run_scenario("durable-step-retry", STEPS, seed=seed)
    assert fixed.valid and _causes(fixed) == [Cause.FIRST_DELIVERY, Cause.REPLAY]


def test_a_card_charge_keyed_by_execution_and_step_is_charged_once_by_both_step_layouts():
    one = run_scenario("durable-step-retry", ONE_STEP, settings={"payment": "card"})
    assert one.verdict.effects_per_key["o-1"] == {"charge": 2, "email": 2}
    steps = run_scenario("durable-step-retry", STEPS, settings={"payment": "card"})
    assert steps.valid and steps.verdict.effects_per_key["o-1"] == {"charge": 1, "email": 1}


def test_steps_that_use_up_their_attempts_fail_the_execution_and_async_drops_it():
    result = run_scenario("durable-step-retry", STEPS, settings={"provider_failures": 6})
    closed = [d for d in result.history.of_type("delivery") if d["what"] == Delivery.EXECUTION_FAILED]
    assert len(closed) == 1 and len(result.history.invocations()) == 6
    assert [f.key for f in result.verdict.lost] == ["o-2"]


@FEW
@given(st.integers(61, 3600))
def test_code_outside_steps_runs_on_every_replay_and_a_name_turns_the_retry_away(follow_up):
    """durable-basic-concepts.html: "This means your code runs again"; the name dedupes the caller's retry while
    the execution runs (its wait is longer than the caller's 60 s read timeout)."""
    cfg = {"follow_up": follow_up}
    naive = run_scenario("durable-replay", OUTSIDE, settings=cfg)
    assert naive.verdict.effects_per_key == {"o-1": {"email": 2}}
    assert _causes(naive) == [Cause.FIRST_DELIVERY, Cause.REPLAY]
    fixed = run_scenario("durable-replay", INSIDE, settings=cfg)
    assert fixed.valid
    [dedupe] = [d for d in fixed.history.of_type("delivery") if d["what"] == Delivery.EXECUTION_DEDUPLICATED]
    assert dedupe["detail"]["status"] == "RUNNING" and dedupe["t"] == pytest.approx(60.0, abs=0.1)
    starts = [d for d in fixed.history.of_type("delivery") if d["what"] == Delivery.EXECUTION_STARTED]
    assert len(starts) == 1


def test_without_a_name_the_callers_retry_starts_a_second_execution():
    result = run_scenario("durable-replay", INSIDE, settings={"execution_name": "none"})
    assert result.verdict.effects_per_key == {"o-1": {"email": 2}}
    assert Cause.CALLER_RESEND in _causes(result)
    starts = [d for d in result.history.of_type("delivery") if d["what"] == Delivery.EXECUTION_STARTED]
    assert len(starts) == 2 and not any(d["detail"]["named"] for d in starts)


def test_a_name_with_the_same_payload_returns_the_execution_and_another_payload_gets_409():
    """botocore's Invoke model: same name, same payload: "Lambda returns the existing execution instead of creating
    a duplicate. If the payload differs, Lambda returns a DurableExecutionAlreadyStartedException error"."""
    with Sandbox() as sb:
        fn = sb.function(INSIDE, environment={"FOLLOW_UP_SECONDS": "5"})
        service = DurableService(sb, fn)
        client = boto3.client("lambda", region_name=sb.region, config=Config(retries={"total_max_attempts": 1}))
        order = json.dumps({"orderId": "o-1", "email": "a@example.com"})

        def invoke(payload):
            return client.invoke(FunctionName=fn.config.name, InvocationType="Event", Payload=payload,
                                 DurableExecutionName="order-o-1")

        first = invoke(order)
        again = invoke(order)  # while it runs
        with pytest.raises(client.exceptions.DurableExecutionAlreadyStartedException):
            invoke(order.replace("a@", "b@"))
        run_sources(sb, service, horizon=600)
        after = invoke(order)  # once it has succeeded
        run_sources(sb, service, horizon=600)
    arns = {r["ResponseMetadata"]["HTTPHeaders"][ARN_HEADER.lower()] for r in (first, again, after)}
    assert len(arns) == 1 and len(service.executions) == 1
    assert [r["StatusCode"] for r in (first, again, after)] == [202, 202, 202]


@FEW
@given(st.integers(0, 10_000))
def test_a_mappings_retried_batch_is_a_new_execution_whose_steps_start_afresh(seed):
    """durable-execution-idempotency.html: "each invocation (including retries) starts a new durable execution"."""
    steps = run_scenario("durable-esm-start", STEPS, seed=seed)
    assert steps.verdict.effects_per_key == {"o-1": {"email": 2}, "o-2": {"email": 2}, "o-3": {"email": 1}}
    starts = [d for d in steps.history.of_type("delivery") if d["what"] == Delivery.EXECUTION_STARTED]
    assert len(starts) == 2 and len({d["detail"]["arn"] for d in starts}) == 2
    assert Cause.REDELIVERY in _causes(steps)
    assert run_scenario("durable-esm-start", DURABLE_IMPROVED, seed=seed).valid


@pytest.mark.parametrize("name", ["durable-step-retry", "durable-replay", "durable-esm-start"])
def test_a_plain_handler_runs_as_a_plain_function_and_the_improved_one_holds(name):
    plain = run_scenario(name, IMPROVED)
    assert plain.valid
    assert not plain.history.of_type("delivery") or all(
        d["source"] != SourceKind.DURABLE for d in plain.history.of_type("delivery"))
    assert any("plain function" in n["text"] for n in plain.history.of_type("note"))


def test_a_plain_handler_forced_durable_cannot_read_the_execution_and_it_times_out():
    """Handed the execution's state instead of the event, the naive handler finds no order and raises; Lambda
    invokes it again (backing off) until the execution's timeout."""
    result = run_scenario("durable-step-retry", NAIVE, settings={"durable": "on", "execution_timeout": 120})
    [failed] = [d for d in result.history.of_type("delivery") if d["what"] == Delivery.EXECUTION_FAILED]
    assert "TimedOut" in failed["detail"]["reason"]
    invs = result.history.invocations().values()
    assert all("cannot find orders" in (inv["error"] or "") for inv in invs) and 3 <= len(invs) <= 10
    assert result.status == "invalid" and {f.key for f in result.verdict.lost} == {"o-1", "o-2"}


def test_the_checkpoint_api_believes_only_the_request():
    """A stale token, an unknown ARN, an update of a type the sandbox does not serve: each refused with AWS's
    InvalidParameterValueException; GetDurableExecutionState pages with MaxItems and Marker."""
    with Sandbox() as sb:
        service = DurableService(sb, sb.function(STEPS))
        execution, _ = service.begin(json.dumps({"orderId": "o-1", "email": "a@example.com"}), name="order-o-1",
                                     source=SourceKind.DURABLE, keys=["o-1"])
        run_sources(sb, service, horizon=600)
        client = boto3.client("lambda", region_name=sb.region)
        errors = client.exceptions.InvalidParameterValueException
        with pytest.raises(errors, match="Invalid checkpoint token"):
            client.checkpoint_durable_execution(DurableExecutionArn=execution.arn, CheckpointToken="c3RhbGU=",
                                                Updates=[])
        with pytest.raises(errors, match="no durable execution"):
            client.get_durable_execution_state(DurableExecutionArn=execution.arn + "x", CheckpointToken="c3RhbGU=")
        execution.status, execution.token = "RUNNING", "dG9rZW4="  # reopened, as if an invocation held this token
        with pytest.raises(errors, match="not served"):
            client.checkpoint_durable_execution(DurableExecutionArn=execution.arn, CheckpointToken="dG9rZW4=",
                                                Updates=[{"Id": "c1", "Type": "CHAINED_INVOKE", "Action": "START"}])
        page = client.get_durable_execution_state(DurableExecutionArn=execution.arn, CheckpointToken="dG9rZW4=",
                                                  MaxItems=1)
        rest = client.get_durable_execution_state(DurableExecutionArn=execution.arn, CheckpointToken="dG9rZW4=",
                                                  Marker=page["NextMarker"])
    assert [op["Type"] for op in page["Operations"] + rest["Operations"]] == ["EXECUTION", "STEP"]
    refused = [r for r in sb.history.of_type("aws") if r["result"] == "InvalidParameterValue"]
    assert len(refused) == 3


def test_the_same_seed_gives_the_same_history():
    runs = [run_scenario("durable-step-retry", ONE_STEP, seed=3).history for _ in range(2)]
    assert json.dumps(runs[0].events, default=str) == json.dumps(runs[1].events, default=str)


@pytest.mark.parametrize("name, decorator", [("durable-step-retry", "invalid"), ("durable-replay", "valid"),
                                             ("durable-esm-start", "invalid")])
def test_powertools_in_the_durable_scenarios(name, decorator):
    """Both Powertools handlers run here as plain functions (neither uses the durable SDK). ``idempotent_function``
    keys each order, so every retry and redelivery replays what was done: valid in all three. The ``@idempotent``
    decorator keys the whole event: when o-2's email fails the handler raises, Powertools deletes that one record,
    and the retried event (step-retry) or batch (esm-start) emails o-1 again; in durable-replay nothing fails, and
    the caller's re-sent Invoke finds the event's record."""
    assert run_scenario(name, example("powertools_function.py"), seed=0).status == "valid"
    assert run_scenario(name, example("powertools_decorator.py"), seed=0).status == decorator


def test_lesson_12s_replay_timeline_shows_the_deduplicated_invoke_and_the_replay_arrow():
    from sandbox import plot_timeline
    from sandbox.present.timeline.reading import read_history

    history = run_scenario("durable-replay", OUTSIDE, seed=0).history
    model = read_history(history)
    assert [(i.cause, i.prev) for i in model.invs.values()] == [("first delivery", None), ("durable replay", "inv-1")]
    ax = plot_timeline(history).axes[0]
    texts = [t.get_text().replace("\n", " ") for t in ax.texts] + [t.get_text() for t in ax.get_yticklabels()]
    # "execution deduplicated" on the top row (a label may take two lines where marks stand close), and the arrow
    # into the replay that sends the 2nd email
    assert "execution deduplicated" in texts and "2nd email o-1" in texts
    assert "inv-2 · durable replay" in texts  # the lane the arrow runs into names what delivered it
    assert "arrow:inv-1->inv-2" in {child.get_gid() for child in ax.get_children()}


@pytest.mark.parametrize("body", [b"[" * 100_000 + b"]" * 100_000, b"[1, 2]", b"\xff not json", b"{" * 5000])
def test_a_checkpoint_body_that_is_no_json_object_is_refused_never_a_crash(body):
    """The durable APIs are the world's own endpoint: it reads the body as an environment's hostile input."""
    from botocore.awsrequest import AWSRequest

    with Sandbox() as sb:
        service = DurableService(sb, sb.function(STEPS))
        execution, _ = service.begin(json.dumps({"orderId": "o-1", "email": "a@example.com"}), name="order-o-1",
                                     source=SourceKind.DURABLE, keys=["o-1"])
        path = urllib.parse.quote(execution.arn, safe="")
        request = AWSRequest("POST", f"https://lambda.{sb.region}.amazonaws.com/2025-12-01/durable-executions/"
                                     f"{path}/checkpoint", data=body, headers={"Content-Type": "application/json"})
        answer = service.serve("CheckpointDurableExecution", request.prepare())
        [refused] = [r for r in sb.history.of_type("aws") if r["op"] == "CheckpointDurableExecution"]
    assert answer.status_code == 400 and refused["result"] == "Serialization"


def _drawn(history):
    from sandbox import plot_timeline

    ax = plot_timeline(history).axes[0]
    return [t.get_text().replace("\n", " ") for t in ax.texts], [t.get_text() for t in ax.get_yticklabels()]


def test_lesson_12s_step_retry_timeline_shows_the_replay_sending_o1_again():
    """"One step sends both orders' emails ... the next invocation runs the whole step again"."""
    history = run_scenario("durable-step-retry", ONE_STEP, seed=0).history
    texts, lanes = _drawn(history)
    assert lanes[:3] == ["Durable execution\n(replays)", "inv-1 · first delivery", "inv-2 · durable replay"]
    assert "2nd email o-1" in texts and "execution started" in texts and "execution closed" in texts


def test_the_esm_timeline_shows_a_second_execution_for_the_redelivered_batch():
    """Lesson 06 and 12: the batch comes back after the visibility timeout, and a new execution starts."""
    history = run_scenario("durable-esm-start", STEPS, seed=0).history
    texts, lanes = _drawn(history)
    assert texts.count("execution started") == 2 and lanes[-2] == "inv-7 · redelivery"
    assert "2nd email o-1, o-2" in texts and "redelivery at 5:00.0" in texts


@pytest.mark.parametrize("throttles", [1, 3, 10])
def test_a_throttled_checkpoint_is_retried_by_botocore_and_past_that_the_step_runs_again(throttles):
    """429 TooManyRequestsException on CheckpointDurableExecution (the model lists it): botocore retries it (3
    attempts in all, standard mode); the SDK counts a 429 retryable, so once all three are throttled the invocation
    fails and Lambda invokes again, and the step whose checkpoint never landed emails again."""
    from sandbox import make_orders
    from sandbox.core.faults import AwsFault

    with Sandbox() as sb:
        sb.faults.add(AwsFault("throttle", "lambda", "CheckpointDurableExecution", times=throttles))
        service = DurableService(sb, sb.function(STEPS))
        execution, _ = service.begin(json.dumps(make_orders(1, 0)[0]), name="order-o-1", source=SourceKind.DURABLE,
                                     keys=["o-1"])
        run_sources(sb, service, horizon=3600)
    emails = [e for e in sb.history.of_type("effect") if e["kind"] == "email"]
    assert execution.status == "SUCCEEDED" and len(emails) == len(execution.invocations) == throttles // 3 + 1
    refused = [r for r in sb.history.of_type("aws") if r["result"] == "TooManyRequests"]
    assert len(refused) == throttles
