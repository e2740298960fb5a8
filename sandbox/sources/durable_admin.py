"""What an operator's code asks of a durable function's executions: GetDurableExecution,
ListDurableExecutionsByFunction and StopDurableExecution, served from the service's own execution records.

Each request is read from itself: its operation from its method and path, the execution's ARN or the function's
name from the path, the filters and the page from the query string, a stop's error from the body.

What AWS documents (botocore's Lambda model, the API reference's pages), and the sandbox does:

- GetDurableExecution: the execution's name, status, input, result (``SUCCEEDED`` only), error (``FAILED``,
  ``TIMED_OUT``, ``STOPPED``), start and end; ``IncludeExecutionData=false`` leaves out the input, result and error
  and says so in ``ExecutionDataIncluded``
  (https://docs.aws.amazon.com/lambda/latest/api/API_GetDurableExecution.html). An ARN no execution has:
  ``ResourceNotFoundException`` (404).
- ListDurableExecutionsByFunction: "You can filter the results by execution name, status, and start time range";
  ``MaxItems`` is "1-1000. Default is 100"; ``NextMarker`` is "Present only if there are more results available"
  (https://docs.aws.amazon.com/lambda/latest/api/API_ListDurableExecutionsByFunction.html).
- StopDurableExecution: "The execution transitions to STOPPED status and cannot be resumed. Any in-progress
  operations are terminated" (https://docs.aws.amazon.com/lambda/latest/api/API_StopDurableExecution.html): its
  open operations end ``STOPPED``, its callbacks with them, and the answer carries ``StopTimestamp``.

What AWS does not say, and the sandbox assumes:

- The list's order without ``ReverseOrder``: oldest start first (``ReverseOrder``: newest first); its marker is the
  sandbox's own opaque string (an index), refused if it is no marker the sandbox gave.
- Whether a stop ends an invocation that is running: here it does not; that invocation's code runs on, and its
  next checkpoint is refused (the execution has no token any more), so what it does before that still happens.
- A stop of an execution that has closed: ``InvalidParameterValueException``, the execution unchanged.
- GetDurableExecutionHistory and Pause/Resume/DeleteDurableExecution are not served (a request for one is refused as
  any operation without a local endpoint is).
"""
from __future__ import annotations

import json
import urllib.parse
from datetime import datetime
from typing import Any, TypeAlias, TypedDict

from ..vocab import AWS_OK

# durable imports this module; the package keeps no import cycle (see durable_callbacks).
DurableService: TypeAlias = Any
Execution: TypeAlias = Any

GET, LIST, STOP = "GetDurableExecution", "ListDurableExecutionsByFunction", "StopDurableExecution"
ADMIN_OPS = (GET, LIST, STOP)
_FUNCTIONS = "/2025-12-01/functions/"
_CLOSED_OPS = ("SUCCEEDED", "FAILED", "CANCELLED", "TIMED_OUT", "STOPPED")


def function_named(url: str) -> str | None:
    """The FunctionName of ``/2025-12-01/functions/{FunctionName}/durable-executions`` (a name or an ARN)."""
    path = urllib.parse.urlsplit(url).path
    if not path.startswith(_FUNCTIONS) or not path.endswith("/durable-executions"):
        return None
    return urllib.parse.unquote(path[len(_FUNCTIONS):].rsplit("/", 1)[0])


def serve(service: DurableService, op: str, request: Any, arn: str | None, body: bytes) -> Any:
    """Answer one Get/List/Stop request (see the module docstring)."""
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(request.url).query, keep_blank_values=True)
    if op == LIST:
        return _list(service, request.url, query)
    execution = service.executions.get(arn or "")
    if execution is None:
        return service._refuse(op, None, "ResourceNotFoundException",
                               f"no durable execution has the ARN {str(arn)[:200]}", request.url, 404)
    if op == GET:
        included = (query.get("IncludeExecutionData") or ["true"])[0].lower() != "false"
        service._record(op, execution, AWS_OK, {"status": execution.status})
        return service.json_answer(request.url, describe(service, execution, included))
    return _stop(service, execution, request.url, body)


class ExecutionSummary(TypedDict, total=False):
    """One execution as ListDurableExecutionsByFunction lists it, the start of GetDurableExecution's answer
    (https://docs.aws.amazon.com/lambda/latest/api/API_GetDurableExecution.html)."""

    DurableExecutionArn: str
    DurableExecutionName: str
    FunctionArn: str
    Status: str
    StartTimestamp: float
    EndTimestamp: float


class DurableConfigJson(TypedDict):
    ExecutionTimeout: int
    RetentionPeriodInDays: int


class ExecutionDescription(ExecutionSummary, total=False):
    """GetDurableExecution's answer."""

    Version: str
    ExecutionDataIncluded: bool
    DurableConfig: DurableConfigJson
    ExpectedExecutionTimeoutTimestamp: float
    InputPayload: str
    Result: str
    Error: dict  # the execution's error, as the SDK reported it (ErrorType, ErrorMessage...)


class ExecutionList(TypedDict, total=False):
    """ListDurableExecutionsByFunction's answer."""

    DurableExecutions: list[ExecutionSummary]
    NextMarker: str


def describe(service: DurableService, execution: Execution, included: bool = True) -> ExecutionDescription:
    """GetDurableExecution's answer for ``execution``."""
    cfg = service.function.config
    out: ExecutionDescription = {}
    _summarise(out, service, execution)  # the summary's keys first, as AWS answers
    out["Version"], out["ExecutionDataIncluded"] = cfg.version, included
    out["DurableConfig"] = {"ExecutionTimeout": service.durable_config.execution_timeout,
                            "RetentionPeriodInDays": service.durable_config.retention_days}
    out["ExpectedExecutionTimeoutTimestamp"] = execution.started + execution.limit
    if included:
        out["InputPayload"] = execution.payload
        if execution.status == "SUCCEEDED" and execution.payload_out is not None:
            out["Result"] = execution.payload_out
        if execution.error is not None:
            out["Error"] = execution.error
    return out


def summary(service: DurableService, execution: Execution) -> ExecutionSummary:
    out: ExecutionSummary = {}
    _summarise(out, service, execution)
    return out


def _summarise(out: ExecutionSummary, service: DurableService, execution: Execution) -> None:
    """Write ``execution``'s summary into ``out`` (a summary, or the start of a description), in AWS's order."""
    out["DurableExecutionArn"], out["DurableExecutionName"] = execution.arn, execution.name
    out["FunctionArn"], out["Status"] = service.function.config.arn, execution.status
    out["StartTimestamp"] = execution.started
    if execution.closed_at is not None:
        out["EndTimestamp"] = execution.closed_at


def _list(service: DurableService, url: str, query: dict[str, list[str]]) -> Any:
    cfg, named = service.function.config, function_named(url) or ""
    if named not in (cfg.name, cfg.arn, f"{cfg.arn}:{cfg.version}"):
        return service._refuse(LIST, None, "ResourceNotFoundException", f"Function not found: {named[:200]}", url,
                               404)
    problem, picked = _filtered(service, query)
    if problem is None:
        start, problem = _marker(query, len(picked))
    if problem is not None:
        return service._refuse(LIST, None, "InvalidParameterValueException", problem, url)
    size = int((query.get("MaxItems") or ["0"])[0] or 0) or 100
    page = picked[start:start + size]
    answer: ExecutionList = {"DurableExecutions": [summary(service, e) for e in page]}
    if start + size < len(picked):
        answer["NextMarker"] = str(start + size)
    service._record(LIST, None, AWS_OK, {"executions": len(page)})
    return service.json_answer(url, answer)


def _filtered(service: DurableService, query: dict[str, list[str]]) -> tuple[str | None, list[Execution]]:
    """The executions the query's filters keep, in the order asked for; or what makes the query invalid."""
    try:
        after, before = (_time(query.get(k)) for k in ("StartedAfter", "StartedBefore"))
        size = int((query.get("MaxItems") or ["100"])[0] or 100)
    except ValueError as exc:
        return str(exc)[:200], []
    if not 0 <= size <= 1000:
        return "MaxItems must be 0 to 1000", []
    statuses, name, qualifier = set(query.get("Statuses") or []), _one(query, "DurableExecutionName"), _one(
        query, "Qualifier")
    picked = [e for e in service.executions.values()
              if (not statuses or e.status in statuses) and (name is None or e.name == name)
              and (after is None or e.started >= after) and (before is None or e.started <= before)
              and (qualifier is None or qualifier == service.function.config.version)]
    picked.sort(key=lambda e: e.started, reverse=(query.get("ReverseOrder") or ["false"])[0].lower() == "true")
    return None, picked


def _one(query: dict[str, list[str]], key: str) -> str | None:
    values = query.get(key)
    return values[0] if values else None


def _time(values: list[str] | None) -> float | None:
    """A query string's timestamp (botocore sends ISO 8601) as epoch seconds."""
    if not values:
        return None
    text = values[0]
    return float(text) if text.replace(".", "", 1).isdigit() else datetime.fromisoformat(text).timestamp()


def _marker(query: dict[str, list[str]], count: int) -> tuple[int, str | None]:
    marker = (query.get("Marker") or [""])[0]
    if not marker:
        return 0, None
    if not marker.isdigit() or int(marker) > count:
        return 0, "Marker is not one this API gave"
    return int(marker), None


def _stop(service: DurableService, execution: Execution, url: str, body: bytes) -> Any:
    try:
        error = json.loads(body) if body else None
    except (ValueError, RecursionError):
        error = "?"
    if error is not None and not isinstance(error, dict):
        return service._refuse(STOP, execution, "InvalidParameterValueException", "the body is no ErrorObject", url)
    if execution.status != "RUNNING":
        return service._refuse(STOP, execution, "InvalidParameterValueException",
                               f"the execution is {execution.status}, not running", url)
    now = service.world.clock.now()
    for op in execution.operations.values():
        if op["Type"] != "EXECUTION" and op["Status"] not in _CLOSED_OPS:
            op.update(Status="STOPPED", EndTimestamp=now)
    service.stop_execution(execution, error)
    service._record(STOP, execution, AWS_OK, {"status": execution.status})
    return service.json_answer(url, {"StopTimestamp": now})


__all__ = ["ADMIN_OPS", "GET", "LIST", "STOP", "describe", "function_named", "serve", "summary"]
