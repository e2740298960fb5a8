"""An operator's code inspects and stops durable executions: GetDurableExecution, ListDurableExecutionsByFunction
(its filters and pages) and StopDurableExecution, served from the world's execution records
(sources/durable_admin.py), with AWS's SDK running the executions in real environments."""
from __future__ import annotations

import json
from pathlib import Path

import boto3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandbox import Sandbox
from sandbox.sources.base import run_sources
from sandbox.sources.durable import DurableService
from sandbox.vocab import SourceKind

APPROVAL = f"{Path(__file__).resolve().parent / 'handlers' / 'durable_approval.py'}:handler"
FEW = settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _world(count: int, operator, timeout=600):
    """``count`` executions waiting for an approval (started 1 s apart), and ``operator(sb, lam, fn, executions)``
    run as a task of the world at 30 s; what it returned, and the executions."""
    out: list = []
    with Sandbox() as sb:
        sqs = boto3.client("sqs", region_name=sb.region)
        url = sqs.create_queue(QueueName="approvals")["QueueUrl"]
        fn = sb.function(APPROVAL, environment={"APPROVALS_QUEUE_URL": url, "CALLBACK_TIMEOUT": str(timeout)})
        service = DurableService(sb, fn)
        lam = boto3.client("lambda", region_name=sb.region)
        executions = []
        for i in range(count):
            executions.append(service.begin(json.dumps({"orderId": f"o-{i + 1}"}), name=f"order-o-{i + 1}",
                                            source=SourceKind.DURABLE, keys=[f"o-{i + 1}"])[0])
            sb.scheduler.sleep(1)

        def run():
            sb.scheduler.sleep(30)
            out.append(operator(sb, lam, fn, executions))

        task = sb.scheduler.spawn(run, name="operator")
        run_sources(sb, service, horizon=3600, also=lambda: task.done)
    return out[0], executions


@FEW
@given(st.integers(1, 9), st.integers(1, 4))
def test_an_operator_pages_through_the_executions_of_a_function(count, page):
    """API_ListDurableExecutionsByFunction.html: NextMarker "Present only if there are more results available"."""
    def operator(sb, lam, fn, executions):
        names, marker, pages = [], None, 0
        while True:
            got = lam.list_durable_executions_by_function(FunctionName=fn.config.name, MaxItems=page,
                                                          **({"Marker": marker} if marker else {}))
            names += [e["DurableExecutionName"] for e in got["DurableExecutions"]]
            pages += 1
            marker = got.get("NextMarker")
            if not marker:
                return names, pages, lam.list_durable_executions_by_function(
                    FunctionName=fn.config.name, ReverseOrder=True, Statuses=["RUNNING"])["DurableExecutions"]

    (names, pages, newest_first), executions = _world(count, operator)
    assert names == [f"order-o-{i + 1}" for i in range(count)] and pages == -(-count // page)
    assert [e["DurableExecutionName"] for e in newest_first] == names[::-1]


def test_an_operator_stops_a_waiting_execution_and_its_callback_closes_with_it():
    """API_StopDurableExecution.html: "The execution transitions to STOPPED status and cannot be resumed. Any
    in-progress operations are terminated"."""
    def operator(sb, lam, fn, executions):
        arn = executions[0].arn
        before = lam.get_durable_execution(DurableExecutionArn=arn)
        stopped = lam.stop_durable_execution(DurableExecutionArn=arn, Error={"ErrorMessage": "fraud suspected"})
        after = lam.get_durable_execution(DurableExecutionArn=arn)
        lean = lam.get_durable_execution(DurableExecutionArn=arn, IncludeExecutionData=False)
        errors = []
        for call in (lambda: lam.stop_durable_execution(DurableExecutionArn=arn),
                     lambda: lam.get_durable_execution(DurableExecutionArn=arn + "x")):
            try:
                call()
            except lam.exceptions.ClientError as exc:
                errors.append(exc.response["Error"]["Code"])
        statuses = [e["Status"] for e in lam.list_durable_executions_by_function(
            FunctionName=fn.config.arn, Statuses=["STOPPED"])["DurableExecutions"]]
        return before, stopped, after, lean, errors, statuses

    (before, stopped, after, lean, errors, statuses), executions = _world(2, operator, timeout=120)
    assert before["Status"] == "RUNNING" and json.loads(before["InputPayload"]) == {"orderId": "o-1"}
    assert after["Status"] == "STOPPED" and after["Error"]["ErrorMessage"] == "fraud suspected"
    assert after["EndTimestamp"] == stopped["StopTimestamp"]
    assert not lean["ExecutionDataIncluded"] and "InputPayload" not in lean
    assert errors == ["InvalidParameterValueException", "ResourceNotFoundException"] and statuses == ["STOPPED"]
    [callback] = [op for op in executions[0].operations.values() if op["Type"] == "CALLBACK"]
    assert callback["Status"] == "STOPPED" and len(executions[0].invocations) == 1  # never invoked again
    # the other one ran on: its callback timed out at 120 s, and the SDK's error ended it
    assert executions[1].status == "SUCCEEDED" and executions[1].result["why"] == "CallbackTimeoutError"
