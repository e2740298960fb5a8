"""Lambda durable functions: the world plays the durable execution service.

A durable function runs AWS's own SDK (``aws-durable-execution-sdk-python``, unmodified) inside its execution
environment. Lambda hands each invocation the execution's checkpointed operations; the SDK replays them and
calls the service through its boto3 Lambda client: ``CheckpointDurableExecution`` to save what a step, a wait or
the execution did, ``GetDurableExecutionState`` for operations left on another page. moto has neither, so the
world serves both itself, reading each request as the gateway reads any other (its operation from its method
and path, the execution's ARN from the path, the token and updates from the body or the query string): nothing
an environment says of itself is believed (DESIGN.md, rule 1). It serves the callback APIs an external system
calls the same way (``durable_callbacks``).

What AWS documents, and the sandbox does:

- "Lambda keeps a running log of all durable operations ... When it's time to resume, Lambda invokes your
  function again from the beginning and replays the checkpoint log, substituting stored values for completed
  operations. This means your code runs again" (https://docs.aws.amazon.com/lambda/latest/dg/durable-basic-concepts.html):
  each invocation of an execution gets every operation, and code outside steps runs each time.
- "Steps have at-least-once execution semantics by default"
  (https://docs.aws.amazon.com/lambda/latest/dg/durable-execution-idempotency.html); a step that raises with
  attempts left is checkpointed for a retry, the function suspends, and "On the next invocation, the step retries
  with the configured backoff delay" (https://docs.aws.amazon.com/lambda/latest/dg/durable-execution-sdk-retries.html).
- Execution names: "The execution name acts as an idempotency key, allowing you to safely retry invocation
  requests without creating duplicate executions" (durable-execution-idempotency.html). botocore's model of
  ``Invoke``: "If you invoke a durable function using a name that already exists with the same payload, Lambda
  returns the existing execution instead of creating a duplicate. If the payload differs, Lambda returns a
  ``DurableExecutionAlreadyStartedException`` error" (409).
- "Lambda event source mappings (ESM) don't support idempotency at launch. Therefore, each invocation
  (including retries) starts a new durable execution" (durable-execution-idempotency.html); "Event source
  mappings invoke durable functions synchronously, waiting for the complete durable execution to finish", at
  most 15 minutes (https://docs.aws.amazon.com/lambda/latest/dg/durable-invoking-esm.html).

What AWS does not say, and the sandbox assumes:

- How soon Lambda invokes the function again after an invocation of a running execution failed (a timeout, a
  crash, an error the SDK let through): the retries page names "backend retries for infrastructure failures" but
  gives no figure; here ``reinvoke_delay`` (1 s) later, doubling with each failed invocation up to 5 minutes, until
  the execution's timeout.
- The idempotency page's table for a name whose execution has closed could not be read here; the sandbox
  applies the API reference's rule above (same payload: the existing execution; another: 409) in every state,
  for ``retention_days`` after the execution closed.
- A response that is no durable execution output (a handler not wrapped by ``@durable_execution``) fails the
  execution. The scenarios deploy such a handler as a plain function instead (``is_durable_handler``).
- A checkpoint token stays valid until the next checkpoint or the next invocation; a stale one is refused with
  ``InvalidParameterValueException`` (the testing SDK's service does the same).
- Callbacks (``create_callback``, ``wait_for_callback``) are served: the service gives each its id, and an external
  system ends it through ``SendDurableExecutionCallbackSuccess``, ``...Failure`` or keeps it open with
  ``...Heartbeat``; a second answer gets ``CallbackTimeoutException`` (``durable_callbacks`` says what AWS
  documents and what the sandbox assumes). An answer that comes while an invocation runs is handed to the next
  one, which the service starts as soon as that invocation suspends.
- An operator's GetDurableExecution, ListDurableExecutionsByFunction (filters, MaxItems, Marker/NextMarker) and
  StopDurableExecution are served from the execution records (``durable_admin``, which says what is assumed);
  GetDurableExecutionHistory, Pause/Resume/DeleteDurableExecution are not.
- Chained invokes (``context.invoke``) are not served: a ``CHAINED_INVOKE`` update is refused with
  ``InvalidParameterValueException``. The model gives the shapes (``ChainedInvokeOptions``: the function, a tenant,
  a trace header; ``ChainedInvokeDetails``: result or error) but not how Lambda starts the target (as a durable
  execution under which name, so that a retried START does not start it twice; a plain function how, with what
  retries), nor what times a chained invoke out (there is a ``ChainedInvokeTimedOut`` event, and no timeout
  option): serving it would mean guessing all of that.
- A throttled ``CheckpointDurableExecution`` (an injected ``throttle`` fault) answers 429
  ``TooManyRequestsException``, as the model lists; what follows is botocore's and the SDK's own doing.

The Invoke API of a durable function (``invoke_durable``, at the end):

Lambda's Invoke API for a durable function: execution names, and the caller's retries they absorb.

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

import base64
import inspect
import json
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Required, TypedDict

from botocore.exceptions import ReadTimeoutError

from ..aws import adapter
from ..aws.operations import json_depth, request_body
from ..core.scheduler import current_task
from ..errors import BadInput
from ..runtime.functions import Invocation
from ..settings import Config, param
from ..vocab import AWS_OK, Cause, Delivery, Outcome, SourceKind
from . import durable_admin as admin
from . import durable_callbacks as callbacks
from . import durable_ops as ops
from .base import Source
from .sync_invoke import (
    EVENT_ACCEPTED,
    READ_TIMEOUT,
    SERVICE_ERROR,
    THROTTLED_EVENT,
    EventAttempt,
    SyncInvokeEndpoint,
    _error_response,
    _json_response,
    _keys_of,
)

if TYPE_CHECKING:
    from botocore.awsrequest import AWSPreparedRequest

    from ..runtime.functions import LambdaFunction
    from ..world import Sandbox

DOC_IDEMPOTENCY = "https://docs.aws.amazon.com/lambda/latest/dg/durable-execution-idempotency.html"
DOC_CONCEPTS = "https://docs.aws.amazon.com/lambda/latest/dg/durable-basic-concepts.html"
DOC_RETRIES = "https://docs.aws.amazon.com/lambda/latest/dg/durable-execution-sdk-retries.html"
DOC_ESM = "https://docs.aws.amazon.com/lambda/latest/dg/durable-invoking-esm.html"
DOC_CONFIG = "https://docs.aws.amazon.com/lambda/latest/api/API_DurableConfig.html"
#: The SDK's module: a handler file that imports it is deployed as a durable function.
SDK_MODULE = "aws_durable_execution_sdk_python"
#: The operations the service serves (botocore's Lambda model, ``/2025-12-01/durable-executions/{arn}/...``).
CHECKPOINT, GET_STATE = "CheckpointDurableExecution", "GetDurableExecutionState"
_API_PREFIX = "/2025-12-01/durable-executions/"
#: "the total durable execution duration cannot exceed 15 minutes" when a mapping or a synchronous call starts it.
SYNC_LIMIT = 900.0
#: The longest the service waits before invoking again after failed invocations (an assumption, see above).
MAX_REINVOKE_DELAY = 300.0
#: The names Invoke accepts (botocore's DurableExecutionName shape).
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


@dataclass(frozen=True)
class DurableConfig(Config):
    """The function's DurableConfig, and what the sandbox must assume where AWS gives no figure."""

    execution_timeout: int = param(86400, "ExecutionTimeout: seconds a durable execution may run in all, across its "
                                   "invocations (up to a year); 15 minutes at most when a mapping or a synchronous "
                                   "call starts it", DOC_CONFIG, 1, 31622400, aws="ExecutionTimeout")
    retention_days: int = param(14, "RetentionPeriodInDays: how long a closed execution's name still dedupes an "
                                "Invoke", DOC_CONFIG, 1, 90, aws="RetentionPeriodInDays")
    reinvoke_delay: float = param(1.0, "seconds before Lambda invokes the function again after an invocation of a "
                                  "running execution failed (timeout, crash), doubling after each to at most 300 s; "
                                  "AWS gives no figure", DOC_RETRIES, 0, 300)


@dataclass
class Execution:
    """One durable execution, as the service keeps it."""

    arn: str
    name: str
    payload: str
    keys: list[str]
    source: str
    started: float  # the world's epoch seconds
    limit: float  # seconds it may run in all
    operations: dict[str, dict] = field(default_factory=dict)
    status: str = ops.RUNNING
    closed_at: float | None = None
    payload_out: str | None = None  # the execution's result, as the JSON text the SDK returned
    error: dict | None = None
    token: str = ""
    tokens: int = 0
    invocations: list[Invocation] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)  # operations the service changed since the last invocation
    client_tokens: dict[str, CheckpointAnswer] = field(default_factory=dict)
    task: Any = None  # the service's task that drives it

    # What an event source mapping reads of a finished invocation, read here of the whole execution.
    @property
    def id(self) -> str:
        return self.invocations[0].id

    @property
    def outcome(self) -> str | None:
        if self.status == ops.RUNNING:
            return None
        return Outcome.OK if self.status == ops.SUCCEEDED else Outcome.ERROR

    @property
    def error_text(self) -> str | None:
        if self.error is None:
            return None
        return f"{self.error.get('ErrorType', 'Error')}: {self.error.get('ErrorMessage', '')}".strip()

    @property
    def result(self) -> Any:
        """The execution's result, parsed: what a synchronous caller (an event source mapping) reads."""
        try:
            return json.loads(self.payload_out) if self.payload_out else None
        except ValueError:
            return self.payload_out


class NameTaken(Exception):
    """Invoke named an execution that exists with another payload (DurableExecutionAlreadyStartedException)."""


class DurableService(Source):
    """The durable execution service for one function: its executions, their checkpoints, their invocations.

        service = DurableService(sb, fn)          # fn is now a durable function
        execution, new = service.begin(payload, name="order-o-1", source=SourceKind.DURABLE, keys=["o-1"])
        run_sources(sb, service)                  # until every execution has closed

    ``as_target()`` is an event source mapping's way in: a new execution for every batch, retries included, whose
    outcome the mapping reads once the execution has closed.
    """

    kind = SourceKind.DURABLE
    function: LambdaFunction

    def __init__(self, world: "Sandbox", function: "LambdaFunction", config: DurableConfig | None = None,
                 **settings: Any):
        super().__init__(world, function)
        self.durable_config = config or DurableConfig(**settings)
        self.executions: dict[str, Execution] = {}
        self.by_name: dict[str, Execution] = {}
        self.callbacks: dict[str, callbacks.Callback] = {}
        SyncInvokeEndpoint.of(world).serve_durable(function, self)

    # -- what delivers: Invoke (named or not), an event source mapping --------------------------------
    def begin(self, payload: str, *, name: str | None, source: str, keys: list[str], limit: float | None = None,
              cause: str = Cause.FIRST_DELIVERY, prev: str | None = None) -> tuple[Execution, bool]:
        """The execution ``name`` names, if it exists with this payload (False), else a new one, started (True).
        ``NameTaken`` if the name's execution has another payload."""
        existing = self.by_name.get(name) if name else None
        if existing is not None and not self._expired(existing):
            if existing.payload != payload:
                raise NameTaken(f"An execution named {name} already exists with a different payload")
            return existing, False
        execution = self._new(payload, name, source, keys, limit)
        first = self._invoke(execution, cause, prev)
        execution.task = self.world.scheduler.spawn(self._drive, execution, first, name=f"durable {execution.name}")
        return execution, True

    def as_target(self) -> "MappedDurableFunction":
        """What an event source mapping invokes: the function, each invoke a new execution."""
        return MappedDurableFunction(self)

    def _new(self, payload: str, name: str | None, source: str, keys: list[str], limit: float | None) -> Execution:
        world, cfg = self.world, self.function.config
        ident = world.new_uuid()
        name = name or ident
        arn = f"{cfg.arn}:{cfg.version}/durable-execution/{name}/{ident}"
        timeout = self.durable_config.execution_timeout
        execution = Execution(arn, name, payload, keys, source, world.clock.now(), min(limit or timeout, timeout))
        execution.operations[ident] = ops.execution_operation(ident, payload, world.clock.now())
        self.executions[arn] = execution
        self.by_name[name] = execution
        world.record_delivery(self.kind, Delivery.EXECUTION_STARTED, keys, None, {
            "execution": name, "arn": arn, "named": name != ident})
        return execution

    def _expired(self, execution: Execution) -> bool:
        closed = execution.closed_at
        return closed is not None and self.world.clock.now() >= closed + self.durable_config.retention_days * 86400

    # -- the service's own worker: invoke, read the answer, wait, invoke again -----------------------
    def _drive(self, execution: Execution, inv: Invocation) -> None:
        sched, clock = self.world.scheduler, self.world.clock
        while True:
            sched.wait_for(inv.task, label=f"durable: wait {inv.id}")
            wake = self._after(execution, inv)
            if wake is None:
                return
            deadline = execution.started + execution.limit
            if not execution.updated:  # a callback's answer (``resume``) may come before ``wake``
                sched.wait_signal(self._signal(execution), timeout=max(0.0, min(wake, deadline) - clock.now()),
                                  label=f"durable: suspended {execution.name}")
            if execution.status != ops.RUNNING:  # stopped while it waited (StopDurableExecution)
                return
            if not execution.updated and clock.now() >= deadline - 1e-9:
                self._close(execution, ops.TIMED_OUT, error={
                    "ErrorType": "Execution.TimedOut",
                    "ErrorMessage": f"the execution ran past its {execution.limit:g} s timeout"})
                return
            execution.updated += ops.fire_due(execution.operations, clock.now())
            execution.updated += callbacks.fire_due(self.callbacks, execution, clock.now())
            inv = self._invoke(execution, Cause.REPLAY, inv.id)

    def _signal(self, execution: Execution) -> tuple[str, str]:
        return ("durable execution", execution.arn)

    def resume(self, execution: Execution, op_id: str) -> None:
        """An operation changed outside any invocation (a callback's answer): invoke the function again now, or,
        if an invocation runs, once it ends."""
        execution.updated.append(op_id)
        self.world.scheduler.notify(self._signal(execution))

    def _invoke(self, execution: Execution, cause: str, prev: str | None) -> Invocation:
        execution.tokens += 1
        execution.token = base64.b64encode(f"{execution.arn}#{execution.tokens}".encode()).decode()
        event = {"DurableExecutionArn": execution.arn, "CheckpointToken": execution.token,
                 "InitialExecutionState": {"Operations": [ops.for_invocation(o)
                                                          for o in execution.operations.values()],
                                           "NextMarker": ""},
                 "UpdatedOperationIds": list(execution.updated)}
        execution.updated = []  # from here on: what changes while this invocation runs, or after it
        inv = self.function.start(event, source=execution.source, cause=cause, prev=prev, keys=execution.keys)
        execution.invocations.append(inv)
        return inv

    def _after(self, execution: Execution, inv: Invocation) -> float | None:
        """What the service does once an invocation ended: when to invoke again (None: the execution is settled)."""
        if execution.status != ops.RUNNING:
            return None
        if inv.outcome != Outcome.OK:
            return self._retry_after_failure(execution, inv)
        answer = inv.result if isinstance(inv.result, dict) else {}
        status = answer.get("Status")
        if status == "SUCCEEDED":
            self._close(execution, ops.SUCCEEDED, result=answer.get("Result") or execution.payload_out)
        elif status == "FAILED":
            self._close(execution, ops.FAILED, error=answer.get("Error") or {"ErrorType": "Execution.Failed"})
        elif status == "PENDING":
            return self._suspended(execution, inv)
        else:
            self._close(execution, ops.FAILED, error={
                "ErrorType": "Runtime.InvalidDurableResponse",
                "ErrorMessage": "the function answered no durable execution output (a Status of SUCCEEDED, FAILED "
                                "or PENDING): is its handler wrapped with @durable_execution?"})
        return None

    def _suspended(self, execution: Execution, inv: Invocation) -> float | None:
        if execution.updated:  # a callback answered while the invocation ran: the SDK has yet to see it
            return self.world.clock.now()
        step_or_wait = ops.next_due(execution.operations)
        dues = [t for t in (step_or_wait, callbacks.next_due(self.callbacks, execution)) if t is not None]
        if not dues and callbacks.waiting(self.callbacks, execution):
            return execution.started + execution.limit  # a callback without a timeout: until its answer
        if not dues:  # the SDK suspended on nothing the service resumes: it stays running, untouched
            self.world.note(f"durable execution {execution.name} suspended with nothing the sandbox will resume")
            return None
        due = min(dues)
        what = "a step retry's backoff or a wait" if due == step_or_wait else "a callback's timeout"
        self.world.record_delivery(self.kind, Delivery.RETRY_SCHEDULED, execution.keys, inv.id, {
            "execution": execution.name, "at": round(due - self.world.clock.epoch, 6), "replay": True,
            "why": f"the function suspended ({what}): Lambda invokes it again then, and the SDK replays the "
                   "checkpointed operations"})
        return due

    def _retry_after_failure(self, execution: Execution, inv: Invocation) -> float:
        # Back off (doubling, at most 5 minutes) so a function that always fails does not spin until its timeout.
        failed = sum(1 for i in execution.invocations if i.outcome != Outcome.OK)
        delay = min(self.durable_config.reinvoke_delay * 2 ** (failed - 1), MAX_REINVOKE_DELAY)
        due = self.world.clock.now() + delay
        self.world.record_delivery(self.kind, Delivery.RETRY_SCHEDULED, execution.keys, inv.id, {
            "execution": execution.name, "at": round(due - self.world.clock.epoch, 6), "replay": True,
            "after": inv.outcome, "why": f"the invocation ended with {inv.outcome}: Lambda invokes the function "
                                         "again for the same execution, which replays from its last checkpoint"})
        return due

    def _close(self, execution: Execution, status: str, *, result: str | None = None,
               error: dict | None = None) -> None:
        if execution.status != ops.RUNNING:
            return
        execution.status, execution.closed_at = status, self.world.clock.now()
        execution.payload_out, execution.error = result, error
        execution.token = ""
        # An execution a mapping started fails back to its mapping, which retries the batch: nothing is dropped.
        dropped = status != ops.SUCCEEDED and execution.source == SourceKind.DURABLE
        what = Delivery.EXECUTION_FAILED if dropped else Delivery.EXECUTION_CLOSED
        self.world.record_delivery(self.kind, what, execution.keys, execution.invocations[-1].id, {
            "execution": execution.name, "status": status, "invocations": len(execution.invocations),
            **({"reason": execution.error_text} if error else {})})

    # -- lifecycle ---------------------------------------------------------------------------------
    def idle(self) -> bool:
        return all(e.task is None or e.task.done for e in self.executions.values())

    def finish(self) -> None:
        for execution in self.executions.values():
            if execution.status == ops.RUNNING:
                self.pending(execution.keys, "", execution.invocations[-1].id if execution.invocations else None,
                             execution=execution.name)

    # -- the durable execution APIs the SDK calls ----------------------------------------------------
    def serve(self, op: str, request: AWSPreparedRequest) -> Any:
        """Answer one request of the durable execution APIs, read from the request."""
        if op in callbacks.CALLBACK_OPS:
            return callbacks.serve(self, op, request, _body(request))
        arn, query = _arn_and_query(request.url)
        if op in admin.ADMIN_OPS:
            return admin.serve(self, op, request, arn, _body(request))
        execution = self.executions.get(arn or "")
        if op == CHECKPOINT:
            try:  # what an environment sent: hostile input (a body of brackets nested 100,000 deep, say)
                body = json.loads(_body(request) or b"{}")
            except (ValueError, RecursionError):
                body = None
            if not isinstance(body, dict) or not json_depth(body):
                return self._refuse(op, execution, "SerializationException", "the body is not a JSON object "
                                    "the API reads", request.url)
            params = {**body, "DurableExecutionArn": arn}
        else:
            params = {"DurableExecutionArn": arn, **query}
        problem = _invalid(op, params)
        if problem is None and execution is None:
            problem = f"no durable execution has the ARN {str(arn)[:200]}"
        if problem is None and params.get("CheckpointToken") != execution.token:  # type: ignore[union-attr]
            problem = "Invalid checkpoint token"
        if problem is not None:
            return self._refuse(op, execution, "InvalidParameterValueException", problem, request.url)
        assert execution is not None
        throttled = self._throttled(op, execution, request.url)
        if throttled is not None:
            return throttled
        if op == CHECKPOINT:
            return self._checkpoint(execution, params, request.url)
        return self._state(execution, params, request.url)

    def _throttled(self, op: str, execution: Execution, url: str) -> Any:
        """An injected ``throttle`` (``AwsFault("throttle", "lambda", "CheckpointDurableExecution")``): 429
        TooManyRequestsException, nothing saved. botocore retries it (a throttling error); if every attempt is
        throttled the SDK raises CheckpointError, which it counts retryable (429), the invocation fails, and Lambda
        invokes the function again: a step whose checkpoint was lost runs again."""
        task = current_task()
        inv = task.invocation if task is not None else None
        fault = self.world.faults.aws_fault("lambda", op, self.function.config.name, inv.id if inv else None)
        if fault is None or fault.kind != "throttle":
            return None
        self._record(op, execution, "TooManyRequests", {"fault": fault.kind})
        return _error_response(url, 429, "TooManyRequestsException", "Rate exceeded (injected by the sandbox)")

    def _checkpoint(self, execution: Execution, params: dict, url: str) -> Any:
        client_token = params.get("ClientToken")
        if client_token and client_token in execution.client_tokens:
            return _json_response(url, 200, {}, execution.client_tokens[client_token])
        now, touched = self.world.clock.now(), []
        updates = params.get("Updates") or []
        try:
            for update in updates:
                touched.append(ops.apply_update(execution.operations, update, now))
                if touched[-1]["Type"] == "CALLBACK" and "CallbackDetails" not in touched[-1]:
                    callbacks.give_id(self, execution, touched[-1], update, now)
        except ops.UpdateRefused as exc:
            return self._refuse(CHECKPOINT, execution, "InvalidParameterValueException", str(exc), url)
        self._record(CHECKPOINT, execution, AWS_OK, {"updates": [_update_words(u) for u in updates]})
        self._closed_by(execution, touched)
        answer: CheckpointAnswer = {"NewExecutionState": {"Operations": touched}}
        if execution.status == ops.RUNNING:
            execution.tokens += 1
            execution.token = base64.b64encode(f"{execution.arn}#{execution.tokens}".encode()).decode()
            answer["CheckpointToken"] = execution.token
        if client_token:
            execution.client_tokens[client_token] = answer
        return _json_response(url, 200, {}, answer)

    def _closed_by(self, execution: Execution, touched: list[dict]) -> None:
        """A checkpoint of the EXECUTION operation itself (a result too large for the response) closes it."""
        for op in touched:
            if op["Type"] == "EXECUTION" and op["Status"] == "SUCCEEDED":
                self._close(execution, ops.SUCCEEDED, result=(op.get("ExecutionDetails") or {}).get("Result"))
            elif op["Type"] == "EXECUTION" and op["Status"] == "FAILED":
                self._close(execution, ops.FAILED, error={"ErrorType": "Execution.Failed"})

    def _state(self, execution: Execution, params: dict, url: str) -> Any:
        every = list(execution.operations.values())
        start = int(params.get("Marker") or 0) if str(params.get("Marker") or "0").isdigit() else 0
        size = int(params.get("MaxItems") or 0) or 100
        page = every[start:start + size]
        answer: StateAnswer = {"Operations": page}
        if start + size < len(every):
            answer["NextMarker"] = str(start + size)
        self._record(GET_STATE, execution, AWS_OK, {"operations": len(page)})
        return _json_response(url, 200, {}, answer)

    def serves(self, url: str) -> bool:
        """Is the execution (or the callback) a durable execution API request's path names one of this function's?"""
        cfg = self.function.config
        return ((execution_arn(url) or "") in self.executions or (callbacks.callback_id(url) or "") in self.callbacks
                or admin.function_named(url) in (cfg.name, cfg.arn, f"{cfg.arn}:{cfg.version}"))

    def answer_invoke(self, endpoint: SyncInvokeEndpoint, request: AWSPreparedRequest, event: Any,
                      invocation_type: str) -> Any:
        return invoke_durable(endpoint, self, request, event, invocation_type)

    def _refuse(self, op: str, execution: Execution | None, code: str, message: str, url: str,
                status: int = 400) -> Any:
        self._record(op, execution, code.removesuffix("Exception"), {"why": message[:200]})
        return _error_response(url, status, code, message)

    def stop_execution(self, execution: Execution, error: dict | None) -> None:
        """StopDurableExecution (``durable_admin``): closed STOPPED now; the service's worker, if it waits, ends."""
        self._close(execution, ops.STOPPED, error=error or {"ErrorType": "Execution.Stopped",
                                                            "ErrorMessage": "stopped by StopDurableExecution"})
        self.world.scheduler.notify(self._signal(execution))

    def json_answer(self, url: str, answer: dict) -> Any:
        return _json_response(url, 200, {}, answer)

    def empty_answer(self, url: str) -> Any:
        """200 with no body: what the Send...Callback APIs answer."""
        return _json_response(url, 200, {}, b"")

    def _record(self, op: str, execution: Execution | None, result: str, detail: dict) -> None:
        target = execution.name if execution is not None else None
        key = execution.keys[0] if execution is not None and execution.keys else None
        self.world.gateway.record("lambda", op, target, key, result, detail)


class MappedDurableFunction:
    """A durable function as an event source mapping invokes it: synchronously, a new execution every time."""

    def __init__(self, service: DurableService):
        self.service = service

    def start(self, event: Any, *, source: str = SourceKind.DIRECT, cause: str = Cause.FIRST_DELIVERY,
              prev: str | None = None, keys: list[str] | None = None, **_: Any) -> Execution:
        """No name, so always a new execution; at most 15 minutes (durable-invoking-esm.html)."""
        execution, _new = self.service.begin(json.dumps(event), name=None, source=source, keys=list(keys or []),
                                             limit=SYNC_LIMIT, cause=cause, prev=prev)
        return execution

    def __getattr__(self, name: str) -> Any:
        # The mapping reads the function's own settings too (its timeout, its name).
        return getattr(self.service.function, name)


# -- reading a request -----------------------------------------------------------------------------
def execution_arn(url: str) -> str | None:
    return _arn_and_query(url)[0]


def _arn_and_query(url: str) -> tuple[str | None, dict[str, str]]:
    """The execution's ARN from the path (``/2025-12-01/durable-executions/{arn}/checkpoint``), and the query."""
    parts = urllib.parse.urlsplit(url)
    path = parts.path
    query = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    if not path.startswith(_API_PREFIX):
        return None, query
    label = path[len(_API_PREFIX):].rsplit("/", 1)[0]
    return urllib.parse.unquote(label), query


def _body(request: AWSPreparedRequest) -> bytes:
    """The request's body as the gateway reads every body: decompressed, bounded, a stream read and rewound."""
    return request_body(request, "lambda")


def _invalid(op: str, params: dict) -> str | None:
    """What makes the request no valid input of ``op`` (botocore's own validator, on the model's input shape)."""
    from botocore.validate import ParamValidator

    from ..aws.operations import service_model

    model = service_model("lambda")
    assert model is not None
    shape = model.operation_model(op).input_shape
    if op == GET_STATE and "MaxItems" in params:
        try:
            params["MaxItems"] = int(params["MaxItems"])
        except ValueError:
            return "MaxItems is not a number"
    report = ParamValidator().validate(params, shape)
    return report.generate_report()[:500] if report.has_errors() else None


def _update_words(update: Any) -> str:
    if not isinstance(update, dict):
        return "?"
    return " ".join(str(update.get(k)) for k in ("Type", "Action", "Name") if update.get(k)) or "?"


def valid_name(name: str) -> bool:
    """Is ``name`` a DurableExecutionName (1 to 64 of letters, digits, '-' and '_')?"""
    return 1 <= len(name) <= 64 and set(name) <= _NAME_CHARS


def is_durable_handler(function: "LambdaFunction") -> bool:
    """Is the function's handler a durable function, by its source (its file, or its module's)?

    Lambda runs a function as durable when it was created with a DurableConfig; here that choice is the deployer's,
    made from the handler's file before any environment runs: a file that imports the SDK gets one.
    """
    spec = function.spec
    try:
        if spec is not None:
            source = Path(spec.path).read_text(encoding="utf-8", errors="replace")
        else:
            module = inspect.getmodule(inspect.unwrap(function.handler_spec)) if function.handler_spec else None
            source = inspect.getsource(module) if module is not None else ""
    except (OSError, TypeError):
        return False
    return SDK_MODULE in source


def check_name(name: str) -> None:
    if not valid_name(name):
        raise BadInput(f"a durable execution name is 1 to 64 letters, digits, '-' or '_', got {name!r}")


class ExecutionState(TypedDict):
    Operations: list[dict]  # AWS's Operations, as durable_ops keeps them


class CheckpointAnswer(TypedDict, total=False):
    """CheckpointDurableExecution's answer (https://docs.aws.amazon.com/lambda/latest/api/API_CheckpointDurableExecution.html)."""

    NewExecutionState: Required[ExecutionState]
    CheckpointToken: str  # none once the execution has closed


class StateAnswer(TypedDict, total=False):
    """GetDurableExecutionState's answer: a page of the operations, and where the next starts."""

    Operations: Required[list[dict]]
    NextMarker: str


# -- the Invoke API of a durable function (see the module docstring) -------------------------------------
NAME_HEADER = "X-Amz-Durable-Execution-Name"
ARN_HEADER = "X-Amz-Durable-Execution-Arn"


class DurableInvokeDetail(TypedDict, total=False):
    """The history's detail of one Invoke of a durable function: the attempt, the execution's name (when the caller
    gave one), the execution it started or found, and how it ended for the caller."""

    attempt: int
    invocation_type: str
    sent: float
    name: str
    execution: str
    started: bool  # False: an execution of that name existed, and Lambda returned it
    status: int


def invoke_durable(endpoint: SyncInvokeEndpoint, service: DurableService, request: AWSPreparedRequest, event: Any,
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
    detail: DurableInvokeDetail = {"attempt": attempt, "invocation_type": invocation_type,
                                   "sent": round(record.sent, 6)}
    if name:
        detail["name"] = name
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
    detail["execution"], detail["started"] = execution.name, new
    if invocation_type == "Event":
        return _accepted(endpoint, fn, keys, record, detail, url, execution, fault)
    return _wait_and_answer(endpoint, fn, keys, record, detail, url, execution)


def _begin(service: DurableService, request: AWSPreparedRequest, name: str | None, keys: list[str],
           earlier: tuple[Any, int] | None) -> tuple[Execution, bool]:
    payload = _payload_text(request)
    resent = earlier is not None and name is None  # a retry of the same call, which no name can catch
    prev = earlier[0].id if resent and earlier is not None else None
    return service.begin(payload, name=name, source=SourceKind.DURABLE, keys=keys,
                         cause=Cause.CALLER_RESEND if resent else Cause.FIRST_DELIVERY, prev=prev)


def _tell(sb: "Sandbox", service: DurableService, execution: Execution, new: bool, earlier: tuple[Any, int] | None,
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


def _accepted(endpoint: SyncInvokeEndpoint, fn: "LambdaFunction", keys: list[str], record: EventAttempt,
              detail: DurableInvokeDetail, url: str, execution: Execution, fault: Any) -> Any:
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


def _wait_and_answer(endpoint: SyncInvokeEndpoint, fn: "LambdaFunction", keys: list[str], record: EventAttempt,
                     detail: DurableInvokeDetail, url: str, execution: Execution) -> Any:
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


def _payload_text(request: AWSPreparedRequest) -> str:
    return _body(request).decode("utf-8", "replace")



__all__ = ["ARN_HEADER", "DurableConfig", "DurableService", "Execution", "MappedDurableFunction", "NAME_HEADER",
           "NameTaken", "SDK_MODULE", "check_name", "invoke_durable", "is_durable_handler",
           "valid_name"]
