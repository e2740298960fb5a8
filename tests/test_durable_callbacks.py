"""Durable callbacks: AWS's SDK waits in ``wait_for_callback`` in a real execution environment, and an external
approver answers through Lambda's SendDurableExecutionCallback* APIs, which the world serves
(sources/durable_callbacks.py)."""
from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandbox import Sandbox
from sandbox.sources.base import run_sources
from sandbox.sources.durable import DurableService
from sandbox.vocab import SourceKind

APPROVAL = f"{Path(__file__).resolve().parent / 'handlers' / 'durable_approval.py'}:handler"
FEW = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _run(approver, *, timeout=0, heartbeat=0, horizon=7200):
    """One execution of the approval handler, and ``approver(sb, lam, next_callback_id)`` as the external system;
    the execution, what the approver saw, the marks the handler printed."""
    seen: list = []
    with Sandbox() as sb:
        sqs = boto3.client("sqs", region_name=sb.region)
        url = sqs.create_queue(QueueName="approvals")["QueueUrl"]
        fn = sb.function(APPROVAL, environment={"APPROVALS_QUEUE_URL": url, "CALLBACK_TIMEOUT": str(timeout),
                                                "HEARTBEAT_TIMEOUT": str(heartbeat)})
        service = DurableService(sb, fn)
        lam = boto3.client("lambda", region_name=sb.region)

        def next_id():
            while True:
                got = sqs.receive_message(QueueUrl=url).get("Messages", [])
                if got:
                    return json.loads(got[0]["Body"])["callbackId"]
                sb.scheduler.sleep(0.001, label="approver polls")

        execution, _ = service.begin(json.dumps({"orderId": "o-1"}), name="order-o-1", source=SourceKind.DURABLE,
                                     keys=["o-1"])
        task = sb.scheduler.spawn(lambda: seen.extend(approver(sb, lam, next_id) or []), name="approver")
        run_sources(sb, service, horizon=horizon, also=lambda: task.done)
    marks = [r["text"].removeprefix("mark: ") for r in sb.history.logs() if r["text"].startswith("mark: ")]
    return execution, seen, marks, sb


def _send(lam, op, callback_id, **kwargs) -> str:
    """What AWS answered: 'ok', or the error's code."""
    try:
        getattr(lam, op)(CallbackId=callback_id, **kwargs)
        return "ok"
    except lam.exceptions.ClientError as exc:
        return exc.response["Error"]["Code"]


@FEW
@given(st.floats(0, 3000), st.sampled_from(["success", "failure"]))
def test_the_first_answer_resumes_the_execution_and_the_approvers_retry_gets_callback_timeout(delay, second):
    """API_SendDurableExecutionCallbackSuccess.html: CallbackTimeoutException, "the callback associated with the
    token has already been closed". The approver's own retry (here another answer) changes nothing."""
    def approver(sb, lam, next_id):
        cid = next_id()
        sb.scheduler.sleep(delay)
        first = _send(lam, "send_durable_execution_callback_success", cid, Result=b'"approved"')
        again = (_send(lam, "send_durable_execution_callback_success", cid, Result=b'"approved"') if second ==
                 "success" else _send(lam, "send_durable_execution_callback_failure", cid,
                                      Error={"ErrorType": "Rejected", "ErrorMessage": "changed my mind"}))
        return [first, again]

    execution, seen, marks, _ = _run(approver)
    assert seen == ["ok", "CallbackTimeoutException"]
    assert execution.status == "SUCCEEDED" and execution.result == {"orderId": "o-1", "approved": True,
                                                                    "answer": '"approved"'}
    assert marks.count("outside") == 2 and len([m for m in marks if m.startswith("asked")]) == 1
    assert len(execution.invocations) == 2


def test_a_failure_answer_raises_in_the_handler_where_it_waits():
    def approver(sb, lam, next_id):
        return [_send(lam, "send_durable_execution_callback_failure", next_id(),
                      Error={"ErrorType": "Rejected", "ErrorMessage": "no stock"})]

    execution, seen, marks, _ = _run(approver)
    assert seen == ["ok"] and execution.result["why"] == "CallbackExternalError"
    assert "no approval (CallbackExternalError: no stock)" in marks


@FEW
@given(st.integers(1, 600), st.floats(0.5, 600))
def test_a_callback_past_its_timeout_is_timed_out_and_a_late_answer_is_refused(timeout, late):
    """API_CallbackOptions.html: TimeoutSeconds; the SDK raises CallbackTimeoutError where the handler waits."""
    def approver(sb, lam, next_id):
        cid = next_id()
        sb.scheduler.sleep(timeout + late)
        return [_send(lam, "send_durable_execution_callback_success", cid, Result=b"{}")]

    execution, seen, marks, _ = _run(approver, timeout=timeout)
    assert seen == ["CallbackTimeoutException"]
    assert execution.result["why"] == "CallbackTimeoutError" and len(execution.invocations) == 2
    assert execution.closed_at - execution.started == pytest.approx(timeout, abs=0.5)
    [callback] = [op for op in execution.operations.values() if op["Type"] == "CALLBACK"]
    assert callback["Status"] == "TIMED_OUT" and callback["CallbackDetails"]["Error"]["ErrorType"] == "Callback.Timeout"


@pytest.mark.parametrize("beats", [0, 5])
def test_heartbeats_keep_a_callback_open_past_its_heartbeat_timeout(beats):
    """API_SendDurableExecutionCallbackHeartbeat.html: a heartbeat keeps the callback from timing out; without one
    within HeartbeatTimeoutSeconds it ends TIMED_OUT (Callback.Heartbeat)."""
    def approver(sb, lam, next_id):
        cid = next_id()
        answers = []
        for _ in range(beats):
            sb.scheduler.sleep(40)
            answers.append(_send(lam, "send_durable_execution_callback_heartbeat", cid))
        sb.scheduler.sleep(40)
        return [*answers, _send(lam, "send_durable_execution_callback_success", cid, Result=b'"late"')]

    execution, seen, _, _ = _run(approver, heartbeat=60, timeout=1000)
    if beats:
        assert seen == ["ok"] * beats + ["ok"] and execution.result["answer"] == '"late"'
    else:
        assert seen == ["ok"] and execution.result["answer"] == '"late"'  # 40 s < 60 s: no beat needed

    def silent(sb, lam, next_id):
        next_id()
        sb.scheduler.sleep(61)
        return [_send(lam, "send_durable_execution_callback_heartbeat", "QUJD")]

    execution, seen, _, _ = _run(silent, heartbeat=60)
    [callback] = [op for op in execution.operations.values() if op["Type"] == "CALLBACK"]
    assert callback["CallbackDetails"]["Error"]["ErrorType"] == "Callback.Heartbeat"
    assert seen == ["ResourceNotFoundException"]  # an id the service never gave


def test_callback_ids_are_read_from_the_path_and_checked_never_decoded():
    """An id outside the API's pattern is refused with InvalidParameterValueException; an id shaped like the
    service's, naming this execution's operation, but never given, is not found (404)."""
    import base64

    def approver(sb, lam, next_id):
        cid = next_id()
        forged = base64.b64encode(base64.b64decode(cid).replace(b"-", b"0")).decode()
        return [_send(lam, "send_durable_execution_callback_success", "not/a valid id!", Result=b"{}"),
                _send(lam, "send_durable_execution_callback_success", forged, Result=b"{}"),
                _send(lam, "send_durable_execution_callback_success", cid, Result=b"x" * 262145),
                _send(lam, "send_durable_execution_callback_success", cid)]

    execution, seen, _, sb = _run(approver)
    assert seen == ["InvalidParameterValueException", "ResourceNotFoundException", "InvalidParameterValueException",
                    "ok"]
    assert execution.result == {"orderId": "o-1", "approved": True, "answer": None}  # no Result: None
    ops = [r["op"] for r in sb.history.of_type("aws") if r["op"].startswith("SendDurable")]
    assert len(ops) == 4
