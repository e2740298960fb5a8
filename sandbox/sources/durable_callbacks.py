"""A durable execution's callbacks: the service gives each an id, and the external system ends it.

``context.create_callback`` (and ``wait_for_callback``, which makes one and runs a submitter step) checkpoints a
``CALLBACK`` operation's ``START``; the service answers with the operation and its ``CallbackDetails.CallbackId``,
and the execution suspends until an external system calls ``SendDurableExecutionCallbackSuccess`` or
``SendDurableExecutionCallbackFailure`` with that id; "When the external system calls back with the ID, the backend
starts a new invocation to resume your function from where it suspended"
(https://aws.github.io/aws-durable-execution-docs/sdk-reference/operations/callback). The world reads each of those
requests as it reads any (the operation from its method and path, the id from the path, the result from the body)
and finds the callback in its own records: the id is never decoded, so an id the service did not give is not found.

What AWS documents, and the sandbox does:

- A second Success or Failure for the same callback (the external system's own retry): the API reference's
  ``CallbackTimeoutException`` (400), "The callback ID token has either expired or the callback associated with the
  token has already been closed" (https://docs.aws.amazon.com/lambda/latest/api/API_SendDurableExecutionCallbackSuccess.html).
  The first answer stands: a retry that carries another result (approve, then reject) changes nothing, and the
  external system learns so only from that error.
- ``CallbackOptions``: "TimeoutSeconds ... If not specified or set to 0, the callback has no timeout";
  "HeartbeatTimeoutSeconds ... If not specified or set to 0, heartbeat timeout is disabled"
  (https://docs.aws.amazon.com/lambda/latest/api/API_CallbackOptions.html). A callback that times out ends
  ``TIMED_OUT``, the function is invoked again, and the SDK raises ``CallbackTimeoutError`` where it waits.
- ``SendDurableExecutionCallbackHeartbeat`` "Sends a heartbeat signal for a long-running callback operation to
  prevent timeout" (https://docs.aws.amazon.com/lambda/latest/api/API_SendDurableExecutionCallbackHeartbeat.html).
- The result is at most 256 KB (262,144 bytes, the Success page); an id matches ``[A-Za-z0-9+/]+={0,2}``, 1 to
  1,024 characters; an id no callback has: ``ResourceNotFoundException`` (404, listed on the same pages).

What AWS does not say, and the sandbox assumes (docs/fidelity.md):

- Whether a heartbeat moves the callback's own timeout too: here it restarts only the heartbeat clock, and
  ``TimeoutSeconds`` still ends the callback (AWS's testing SDK, ``executor._reset_callback_heartbeat_timeout``,
  does the same). A heartbeat for a callback without a heartbeat timeout is accepted and changes nothing.
- The error a timed-out callback carries: ``Callback.Timeout`` or ``Callback.Heartbeat`` as ``ErrorType`` (the
  SDK's ``CallbackTimeoutType`` values, which its testing service writes).
- A callback of an execution that has closed (succeeded, failed, timed out, stopped) is closed too: its Success or
  Failure gets ``CallbackTimeoutException``.
"""
from __future__ import annotations

import base64
import json
import re
import urllib.parse
from dataclasses import dataclass
from typing import Any, TypeAlias

from ..core.jsonvalues import JsonObject
from ..vocab import AWS_OK

# The service and its executions (durable.DurableService, durable.Execution) are typed Any here: durable imports
# this module, and the package keeps no import cycle, not even one for the type checker.
DurableService: TypeAlias = Any
Execution: TypeAlias = Any

DOC_CALLBACK = "https://aws.github.io/aws-durable-execution-docs/sdk-reference/operations/callback"
DOC_SUCCESS = "https://docs.aws.amazon.com/lambda/latest/api/API_SendDurableExecutionCallbackSuccess.html"
DOC_OPTIONS = "https://docs.aws.amazon.com/lambda/latest/api/API_CallbackOptions.html"
SUCCEED, FAIL, HEARTBEAT = ("SendDurableExecutionCallbackSuccess", "SendDurableExecutionCallbackFailure",
                            "SendDurableExecutionCallbackHeartbeat")
CALLBACK_OPS = (SUCCEED, FAIL, HEARTBEAT)
_PREFIX = "/2025-12-01/durable-execution-callbacks/"
_ID = re.compile(r"[A-Za-z0-9+/]+={0,2}")
#: The largest result Success takes (the API reference: "Maximum size is 256 KB").
MAX_RESULT = 262144
#: The error types a timed-out callback carries (the SDK's CallbackTimeoutType).
TIMEOUT_TYPE, HEARTBEAT_TYPE = "Callback.Timeout", "Callback.Heartbeat"


@dataclass
class Callback:
    """One callback the service gave an id: its execution, its operation, and when it times out."""

    id: str
    execution: Execution
    op_id: str
    timeout_at: float | None  # TimeoutSeconds after its START; None: no timeout
    heartbeat: float  # HeartbeatTimeoutSeconds; 0: none
    heartbeat_at: float | None  # when the heartbeat clock runs out

    @property
    def op(self) -> JsonObject:  # AWS's Operation (durable_ops)
        return self.execution.operations[self.op_id]

    def open(self) -> bool:
        return self.op["Status"] == "STARTED" and self.execution.status == "RUNNING"

    def due(self) -> tuple[float, str] | None:
        """When it times out, and why (None: it waits for ever, or has closed)."""
        if not self.open():
            return None
        times = [(t, kind) for t, kind in ((self.timeout_at, TIMEOUT_TYPE), (self.heartbeat_at, HEARTBEAT_TYPE))
                 if t is not None]
        return min(times) if times else None


def give_id(service: DurableService, execution: Execution, op: dict, update: dict, now: float) -> None:
    """A CALLBACK's START: its CallbackId (base64, the pattern the API takes), and its clocks from CallbackOptions."""
    options = update.get("CallbackOptions") or {}
    timeout, heartbeat = int(options.get("TimeoutSeconds") or 0), int(options.get("HeartbeatTimeoutSeconds") or 0)
    ident = base64.b64encode(f"{service.world.new_uuid()}:{op['Id']}".encode()).decode()
    op["CallbackDetails"] = {"CallbackId": ident}
    service.callbacks[ident] = Callback(ident, execution, op["Id"], now + timeout if timeout > 0 else None,
                                        float(heartbeat), now + heartbeat if heartbeat > 0 else None)


def next_due(callbacks: dict[str, Callback], execution: Execution) -> float | None:
    times = [due[0] for cb in callbacks.values() if cb.execution is execution and (due := cb.due()) is not None]
    return min(times) if times else None


def waiting(callbacks: dict[str, Callback], execution: Execution) -> bool:
    """Is the execution waiting on a callback (one open, timeout or not)?"""
    return any(cb.execution is execution and cb.open() for cb in callbacks.values())


def fire_due(callbacks: dict[str, Callback], execution: Execution, now: float) -> list[str]:
    """End every callback of the execution whose clock ran out, ``TIMED_OUT``; their operations' ids."""
    fired = []
    for cb in callbacks.values():
        due = cb.due() if cb.execution is execution else None
        if due is None or due[0] > now + 1e-9:
            continue
        what = "Callback timed out" if due[1] == TIMEOUT_TYPE else "Callback timed out on heartbeat"
        cb.op.update(Status="TIMED_OUT", EndTimestamp=now)
        cb.op["CallbackDetails"]["Error"] = {"ErrorType": due[1], "ErrorMessage": what}
        fired.append(cb.op_id)
    return fired


def callback_id(url: str) -> str | None:
    """The CallbackId the path names (``/2025-12-01/durable-execution-callbacks/{CallbackId}/succeed``)."""
    path = urllib.parse.urlsplit(url).path
    if not path.startswith(_PREFIX):
        return None
    return urllib.parse.unquote(path[len(_PREFIX):].rsplit("/", 1)[0])


def serve(service: DurableService, op: str, request: Any, body: bytes) -> Any:
    """Answer one Send...Callback request (see the module docstring)."""
    ident, url = callback_id(request.url) or "", request.url
    problem = _problem(op, ident, body)
    if problem is not None:
        return service._refuse(op, None, "InvalidParameterValueException", problem, url)
    cb = service.callbacks.get(ident)
    if cb is None:
        return service._refuse(op, None, "ResourceNotFoundException", "no callback has this id", url, 404)
    if not cb.open():
        return service._refuse(op, cb.execution, "CallbackTimeoutException", "The callback ID token has either "
                               "expired or the callback associated with the token has already been closed", url)
    now = service.world.clock.now()
    if op == HEARTBEAT:
        cb.heartbeat_at = now + cb.heartbeat if cb.heartbeat else None
    else:
        _close(cb, op, body, now)
        service.resume(cb.execution, cb.op_id)
    service._record(op, cb.execution, AWS_OK, {"callback": cb.op.get("Name") or cb.op_id,
                                             **({"status": cb.op["Status"]} if op != HEARTBEAT else {})})
    return service.empty_answer(url)


def _problem(op: str, ident: str, body: bytes) -> str | None:
    if not 1 <= len(ident) <= 1024 or not _ID.fullmatch(ident):
        return "CallbackId must be 1 to 1024 characters matching [A-Za-z0-9+/]+={0,2}"
    if op == SUCCEED and len(body) > MAX_RESULT:
        return f"Result must be at most {MAX_RESULT} bytes"
    if op == FAIL and body:
        try:
            error = json.loads(body)
        except (ValueError, RecursionError):
            return "the body is no ErrorObject"
        if not isinstance(error, dict) or not all(isinstance(error.get(k, ""), str) for k in
                                                  ("ErrorMessage", "ErrorType", "ErrorData")):
            return "the body is no ErrorObject"
    return None


def _close(cb: Callback, op: str, body: bytes, now: float) -> None:
    details = cb.op["CallbackDetails"]
    if op == SUCCEED:
        cb.op.update(Status="SUCCEEDED", EndTimestamp=now)
        if body:  # no body: no Result, and the SDK's callback.result() is None
            details["Result"] = body.decode("utf-8", "replace")
    else:
        error = json.loads(body) if body else {}
        cb.op.update(Status="FAILED", EndTimestamp=now)
        details["Error"] = {k: error[k] for k in ("ErrorMessage", "ErrorType", "ErrorData", "StackTrace")
                            if k in error}


__all__ = ["CALLBACK_OPS", "Callback", "DOC_CALLBACK", "FAIL", "HEARTBEAT", "SUCCEED", "callback_id", "fire_due",
           "give_id", "next_due", "serve", "waiting"]
