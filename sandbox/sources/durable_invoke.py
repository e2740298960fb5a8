"""Lambda's Invoke API for a durable function: execution names, and the caller's retries they absorb.

"You can provide an execution name when invoking a durable function. The execution name acts as an idempotency
key, allowing you to safely retry invocation requests without creating duplicate executions. If you don't provide
a name, Lambda generates a unique execution ID automatically"
(https://docs.aws.amazon.com/lambda/latest/dg/durable-execution-idempotency.html). The name travels in the
``X-Amz-Durable-Execution-Name`` header, and the answer names the execution in ``X-Amz-Durable-Execution-Arn``
(botocore's model of Invoke). Same name and same payload: the existing execution, nothing new starts; same name,
another payload: 409 ``DurableExecutionAlreadyStartedException``.

An ``Event`` invoke answers 202 once the execution is started (or found); a ``RequestResponse`` one waits for the
execution to close, up to the caller's read timeout and 15 minutes ("Synchronous invocations are limited to 15
minutes", https://docs.aws.amazon.com/lambda/latest/dg/durable-invoking.html). Faults on ``lambda.Invoke`` apply
as for any function (``sync_invoke``): a ``5xx`` starts nothing; ``timeout-applied`` starts the execution and
loses the answer, so botocore sends the Invoke again, the very same bytes, and the name catches it.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ReadTimeoutError

from ..aws import adapter
from ..core.scheduler import current_task
from ..errors import BadInput
from ..vocab import AWS_OK, Cause, Delivery, SourceKind
from . import durable_ops as ops
from .durable import SYNC_LIMIT, DurableService, Execution, NameTaken, valid_name
from .sync_invoke import (
    EVENT_ACCEPTED,
    READ_TIMEOUT,
    SERVICE_ERROR,
    THROTTLED_EVENT,
    EventAttempt,
    _error_response,
    _json_response,
    _keys_of,
)

if TYPE_CHECKING:
    from .sync_invoke import SyncInvokeEndpoint

NAME_HEADER = "X-Amz-Durable-Execution-Name"
ARN_HEADER = "X-Amz-Durable-Execution-Arn"


def invoke_durable(endpoint: "SyncInvokeEndpoint", service: DurableService, request, event: Any,
                   invocation_type: str) -> Any:
    """Answer one Invoke of a durable function (see the module docstring)."""
    sb, fn, url = endpoint.world, service.function, request.url
    name = endpoint._header(request, NAME_HEADER)
    keys = _keys_of(event)
    if name is not None and not valid_name(name):
        endpoint._record(fn, keys, "InvalidParameterValue", {"name": name[:80]})
        return _error_response(url, 400, "InvalidParameterValueException",
                               "DurableExecutionName must be 1 to 64 letters, digits, '-' or '_'")
    attempt, call_id = endpoint._attempt_of(request)
    record = EventAttempt(attempt, sb.clock.elapsed(), caller=current_task())
    endpoint.event_attempts.append(record)
    detail: dict[str, Any] = {"attempt": attempt, "invocation_type": invocation_type, "sent": round(record.sent, 6),
                              **({"name": name} if name else {})}
    fault = sb.faults.aws_fault("lambda", "Invoke", fn.config.name, None)
    if fault is not None and fault.kind == "throttle":
        raise BadInput(THROTTLED_EVENT)
    if fault is not None and fault.kind == "5xx":  # Lambda failed the request: nothing starts
        status, code = SERVICE_ERROR
        record.ended, record.result = record.sent, code.removesuffix("Exception")
        endpoint._record(fn, keys, record.result, {**detail, "status": status, "fault": fault.kind})
        return _error_response(url, status, code, "Lambda could not start the execution (injected by the sandbox)")
    earlier = endpoint._last_event.get(call_id) if call_id else None
    try:
        execution, new = _begin(service, request, name, keys, earlier)
    except NameTaken as exc:
        record.ended, record.result = record.sent, "DurableExecutionAlreadyStarted"
        endpoint._record(fn, keys, record.result, {**detail, "status": 409})
        return _error_response(url, 409, "DurableExecutionAlreadyStartedException", str(exc))
    record.event = execution
    if call_id:
        endpoint._last_event[call_id] = (execution, attempt)
    _tell(sb, service, execution, new, earlier, attempt)
    detail.update(execution=execution.name, started=new)
    if invocation_type == "Event":
        return _accepted(endpoint, fn, keys, record, detail, url, execution, fault)
    return _wait_and_answer(endpoint, fn, keys, record, detail, url, execution)


def _begin(service: DurableService, request, name: str | None, keys: list[str],
           earlier: tuple[Any, int] | None) -> tuple[Execution, bool]:
    payload = _payload_text(request)
    resent = earlier is not None and name is None  # a retry of the same call, which no name can catch
    prev = earlier[0].id if resent and earlier is not None else None
    return service.begin(payload, name=name, source=SourceKind.DURABLE, keys=keys,
                         cause=Cause.CALLER_RESEND if resent else Cause.FIRST_DELIVERY, prev=prev)


def _tell(sb, service: DurableService, execution: Execution, new: bool, earlier: tuple[Any, int] | None,
          attempt: int) -> None:
    """Why a second attempt of one SDK call started a second execution, or why it started none."""
    if not new:
        sb.record_delivery(SourceKind.DURABLE, Delivery.EXECUTION_DEDUPLICATED, execution.keys, execution.id, {
            "execution": execution.name, "attempt": attempt, "status": execution.status,
            "why": f"an Invoke named the execution {execution.name}, which exists with the same payload "
                   f"({execution.status}): Lambda returned it and started nothing (execution names)"})
    elif earlier is not None:
        sb.record_delivery(SourceKind.DURABLE, Delivery.CALLER_RESEND, execution.keys, None, {
            "event": execution.name, "repeats": earlier[0].name, "attempt": attempt,
            "why": f"attempt {attempt} of the same SDK call, with no execution name: Lambda had started attempt "
                   f"{earlier[1]}'s execution, but its answer never reached the caller, so botocore sent the Invoke "
                   "again and Lambda started a second execution"})


def _accepted(endpoint, fn, keys, record: EventAttempt, detail: dict, url: str, execution: Execution, fault) -> Any:
    sb = endpoint.world
    detail["status"] = EVENT_ACCEPTED
    if fault is not None:  # timeout-applied: started, but the caller hears nothing until its read times out
        read_timeout = adapter.client_read_timeout()
        sb.scheduler.sleep(read_timeout, label=f"read timeout, Invoke attempt {record.attempt}")
        record.ended, record.result = sb.clock.elapsed(), READ_TIMEOUT
        endpoint._record(fn, keys, READ_TIMEOUT, {**detail, "fault": fault.kind, "read_timeout": read_timeout})
        raise ReadTimeoutError(endpoint_url=url)
    record.ended, record.result = record.sent, AWS_OK
    endpoint._record(fn, keys, AWS_OK, detail)
    return _json_response(url, EVENT_ACCEPTED, {ARN_HEADER: execution.arn}, b"")


def _wait_and_answer(endpoint, fn, keys, record: EventAttempt, detail: dict, url: str, execution: Execution) -> Any:
    """RequestResponse: the caller waits for the whole execution (its read timeout, at most 15 minutes)."""
    sb = endpoint.world
    read_timeout = min(adapter.client_read_timeout(), SYNC_LIMIT)
    if execution.task is not None:
        sb.scheduler.wait_for(execution.task, timeout=read_timeout, label=f"read {execution.name}")
    record.ended = sb.clock.elapsed()
    if execution.status == ops.RUNNING:
        record.result = READ_TIMEOUT
        endpoint._record(fn, keys, READ_TIMEOUT, {**detail, "read_timeout": read_timeout})
        raise ReadTimeoutError(endpoint_url=url)
    headers = {ARN_HEADER: execution.arn, "X-Amz-Executed-Version": fn.config.version}
    if execution.status == ops.SUCCEEDED:
        record.result = AWS_OK
        endpoint._record(fn, keys, AWS_OK, detail)
        return _json_response(url, 200, headers, (execution.payload_out or "null").encode())
    record.result = "FunctionError"
    endpoint._record(fn, keys, record.result, {**detail, "function_error": execution.error_text})
    error = execution.error or {}
    payload = {"errorType": error.get("ErrorType", "Execution.Failed"), "errorMessage": error.get("ErrorMessage", "")}
    return _json_response(url, 200, {**headers, "X-Amz-Function-Error": "Unhandled"}, json.dumps(payload).encode())


def _payload_text(request) -> str:
    body = request.body
    if hasattr(body, "read"):
        at = body.tell()
        data = body.read()
        body.seek(at)
        body = data
    raw = body.encode() if isinstance(body, str) else bytes(body or b"")
    return raw.decode("utf-8", "replace")


__all__ = ["ARN_HEADER", "NAME_HEADER", "invoke_durable"]
