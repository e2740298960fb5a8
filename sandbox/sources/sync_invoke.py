"""Synchronous invokes (RequestResponse), and the retries the *caller's* SDK makes.

(The same endpoint also takes asynchronous invokes, ``InvocationType='Event'``, for a function
whose async queue it was given: see the end of this docstring.)

Lambda never retries a synchronous invoke: it runs the function once and hands the result,
or the error, back to whoever called
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-sync.html,
https://docs.aws.amazon.com/lambda/latest/dg/invocation-retries.html). The caller's SDK is
another matter. A boto3 client that stops hearing from Lambda for ``read_timeout`` seconds
raises ``ReadTimeoutError``, and botocore's retry handler sends the same Invoke again. Lambda
does not know that the first caller gave up, so the first invocation keeps running while the
second one starts.

The caller here is a real ``boto3.client("lambda")``. botocore's own retry code decides
whether to retry and how long to back off, in every mode (legacy, standard, adaptive:
https://boto3.amazonaws.com/v1/documentation/api/latest/guide/retries.html,
https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html), and it sleeps
through ``time.sleep``, which is virtual inside a world. The world seeds the ``random``
module, so botocore's jitter repeats for a given seed. The sandbox plays only Lambda's part:
``SyncInvokeEndpoint`` answers the Invoke API. It starts the invocation, waits for it for up
to the client's ``read_timeout``, and then either replies with Lambda's response or lets the
read time out. ``read_timeout`` and ``connect_timeout`` mean what botocore says they mean,
and both default to 60 s
(https://botocore.amazonaws.com/v1/documentation/api/latest/reference/config.html).

An asynchronous Invoke (``InvocationType='Event'``) is answered differently: "Lambda places
the event in a queue and returns a success response without additional information"
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html), HTTP 202 with no
payload (``StatusCode`` in https://docs.aws.amazon.com/lambda/latest/dg/API_Invoke.html). The
endpoint puts the event on the function's ``AsyncInvokeSource`` and answers 202 at once.
Invoke takes no idempotency token (its one name-based check, ``DurableExecutionName``, is for
durable functions only), so Lambda cannot tell a retried request from a new one: when the
202 is lost (the ``timeout-applied`` fault, ``AwsFault("timeout-applied", "lambda",
"Invoke")``) the caller's read times out after ``read_timeout``, botocore sends the Invoke
again, and Lambda queues a second event, which runs under its own request id. The endpoint
knows the attempts of one SDK call by botocore's ``amz-sdk-invocation-id`` header, so it
records that second event as a "caller re-send" of the first (``Cause.CALLER_RESEND``). A
``5xx`` fault fails the request before anything is queued (500 ``ServiceException``).
"""
from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

import boto3
from botocore.config import Config as BotocoreConfig
from botocore.exceptions import ReadTimeoutError

from ..aws import adapter
from ..core.scheduler import current_task
from ..errors import BadInput, RealAwsRefused
from ..events import Order, apigateway_event, orders_in
from ..runtime.environment.wire import ErrorPayload
from ..runtime.functions import ACCOUNT, function_error_payload
from ..settings import Config, param
from ..vocab import AWS_OK, Cause, Delivery, Outcome, SourceKind
from .base import Source

if TYPE_CHECKING:
    from botocore.awsrequest import AWSPreparedRequest, AWSResponse

    from ..runtime.functions import Invocation, LambdaFunction
    from ..world import Sandbox



class DurableEndpoint(Protocol):
    """What answers for a durable function (``durable.DurableService`` is one; named here, not imported, as
    durable.py imports this module): its Invokes, and the durable execution APIs of its executions."""

    def answer_invoke(self, endpoint: SyncInvokeEndpoint, request: AWSPreparedRequest, event: Any,
                      invocation_type: str) -> Any: ...

    def serves(self, url: str) -> bool: ...

    def serve(self, op: str, request: AWSPreparedRequest) -> Any: ...


class EventQueue(Protocol):
    """Where the endpoint puts Event invokes (``async_invoke.AsyncInvokeSource`` is one): ``invoke`` queues an
    event and returns its entry, which a caller's re-sent attempt ``repeats``."""

    def invoke(self, event: Any, *, keys: list[str] | None = None, accept: bool = True, cause: str = ...,
               repeats: Any = None) -> Any: ...


DOC_RETRIES = "https://boto3.amazonaws.com/v1/documentation/api/latest/guide/retries.html"
DOC_CONFIG = "https://botocore.amazonaws.com/v1/documentation/api/latest/reference/config.html"
DOC_INVOKE = "https://docs.aws.amazon.com/lambda/latest/dg/API_Invoke.html"
#: "For synchronous invocations, the maximum payload size is 6 MB. For asynchronous invocations, the maximum
#: payload size is 1 MB" (DOC_INVOKE); past it, Invoke answers 413 RequestTooLargeException.
SYNC_PAYLOAD_LIMIT = 6 * 1024 * 1024
ASYNC_PAYLOAD_LIMIT = 1024 * 1024
RETRY_MODES = ("legacy", "standard", "adaptive")
#: Attempts in all when the caller sets no limit (botocore's _retry.json for legacy,
#: retries/standard.py's DEFAULT_MAX_ATTEMPTS for standard and adaptive).
DEFAULT_ATTEMPTS = {"legacy": 5, "standard": 3, "adaptive": 3}
#: botocore's connect and read timeouts (botocore.endpoint.DEFAULT_TIMEOUT), seconds.
DEFAULT_TIMEOUT = 60.0

_INVOKE_PATH = "/2015-03-31/functions/"
#: The durable execution APIs a durable function's SDK calls (served by sources/durable.py).
DURABLE_OPS = ("CheckpointDurableExecution", "GetDurableExecutionState", "SendDurableExecutionCallbackSuccess",
               "SendDurableExecutionCallbackFailure", "SendDurableExecutionCallbackHeartbeat", "GetDurableExecution",
               "ListDurableExecutionsByFunction", "StopDurableExecution")
#: What Lambda answers an Event invoke it has queued: 202, no payload (API_Invoke.html, StatusCode).
EVENT_ACCEPTED = 202
#: The result of an Invoke whose answer never reached the caller (its read timed out).
READ_TIMEOUT = "ReadTimeout"
#: What Lambda's service answers a request it failed: a system error, before anything is queued.
SERVICE_ERROR = (500, "ServiceException")
#: Why a throttle fault on an Event invoke is bad input.
THROTTLED_EVENT = ("a throttle fault on an Event invoke is not modelled: Lambda queues an asynchronous request even "
                    "while the function is throttled, and its queue retries it (the async queue's throttled_for); "
                    "inject 'timeout-applied' or '5xx' on lambda.Invoke instead")


# -- the caller's configuration ----------------------------------------------------------------
class Retries(TypedDict, total=False):
    """botocore's ``retries`` configuration (https://boto3.amazonaws.com/v1/documentation/api/latest/guide/retries.html)."""

    mode: str
    max_attempts: int
    total_max_attempts: int


class InvokeDetail(TypedDict, total=False):
    """The history's detail of one Invoke attempt: which attempt, its invocation (or the event it queued), the
    caller's read timeout, and what it got."""

    attempt: int
    invocation: str
    invocation_type: str
    sent: float
    read_timeout: float
    function_error: str
    statusCode: object  # what the handler's response held there (an API Gateway proxy result's status)
    status: int
    error: str
    fault: str
    event: str

@dataclass(frozen=True)
class CallerConfig(Config):
    """The calling client's botocore settings, with botocore's meanings (-1: not set)."""

    retry_mode: str = param(
        "standard", "the client's botocore retry mode: standard or adaptive (3 attempts in all; botocore gives "
        "DynamoDB 4), or legacy (5). "
        "Unset, botocore 1.44 as pinned here uses standard (boto/botocore#3513), while boto3's retries guide "
        "still names legacy", DOC_RETRIES, choices=RETRY_MODES)
    max_attempts: int = param(
        -1, "retries after the first attempt, as in Config(retries={'max_attempts': N}); -1 leaves it unset so the "
        "mode's default applies", DOC_RETRIES, -1, 20)
    total_max_attempts: int = param(
        -1, "attempts in all, the first included (Config(retries={'total_max_attempts': N})); wins over "
        "max_attempts; -1 leaves it unset", DOC_RETRIES, -1, 21)
    read_timeout: float = param(
        DEFAULT_TIMEOUT, "seconds the client waits for a response before botocore raises ReadTimeoutError "
        "(botocore's default is 60 s)", DOC_CONFIG, 0.01, 900)
    connect_timeout: float = param(
        DEFAULT_TIMEOUT, "seconds the client waits for a connection (botocore's default is 60 s); the sandbox "
        "accepts at once, so it never expires here", DOC_CONFIG, 0.01, 900)

    def check(self) -> None:
        if self.total_max_attempts == 0:
            raise BadInput("setting total_max_attempts counts every attempt, the first included, so it is at least 1 "
                           "(or -1 to leave it unset)")

    def retries(self) -> Retries:
        """The ``retries`` dict exactly as a caller would pass it to ``botocore.config.Config``."""
        out: Retries = {"mode": self.retry_mode}
        if self.max_attempts >= 0:
            out["max_attempts"] = self.max_attempts
        if self.total_max_attempts >= 0:
            out["total_max_attempts"] = self.total_max_attempts
        return out

    def botocore_config(self) -> BotocoreConfig:
        return BotocoreConfig(retries=self.retries(), read_timeout=self.read_timeout,
                              connect_timeout=self.connect_timeout)

    def expected_attempts(self) -> int:
        """How many attempts botocore makes when every one of them times out."""
        if self.total_max_attempts >= 0:
            return self.total_max_attempts
        if self.max_attempts >= 0:
            return self.max_attempts + 1
        return DEFAULT_ATTEMPTS[self.retry_mode]


# -- Lambda's side: the Invoke API ------------------------------------------------------------
@dataclass
class InvokeAttempt:
    """One Invoke request as the endpoint saw it."""

    attempt: int  # botocore's attempt number, from the amz-sdk-request header
    inv: str  # the invocation it started
    sent: float  # virtual seconds
    ended: float | None = None
    result: str | None = None  # "ok", "ReadTimeout" or "FunctionError"
    caller: Any = field(default=None, repr=False, compare=False)  # the task that sent it
    invocation: Any = field(default=None, repr=False, compare=False)


@dataclass
class EventAttempt:
    """One ``InvocationType='Event'`` Invoke request as the endpoint saw it."""

    attempt: int  # botocore's attempt number, from the amz-sdk-request header
    sent: float  # virtual seconds
    event: Any = field(default=None, repr=False)  # the event it queued (None: nothing)
    ended: float | None = None  # when the caller got the answer, or its read timed out
    result: str | None = None  # "ok" (202 received), "ReadTimeout" (queued, 202 lost) or a short error code
    caller: Any = field(default=None, repr=False, compare=False)  # the task that sent it


def _json_response(url: str, status: int, headers: dict[str, str], payload: Any) -> AWSResponse:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return adapter.response(url, status, {"Content-Type": "application/json", **headers}, body)


def _error_response(url: str, status: int, code: str, message: str) -> AWSResponse:
    # Lambda's REST-JSON errors: the code in x-amzn-ErrorType, "Type" and "Message" in the body.
    return _json_response(url, status, {"x-amzn-ErrorType": code}, {"Type": "User", "Message": message})


class SyncInvokeEndpoint:
    """The Lambda Invoke API of one world: synchronous (RequestResponse) calls, and Event calls
    for a function served with its async queue.

    Installed as ``sb.gateway.routes["lambda"]``, it runs on the calling task's thread. For
    each synchronous request it starts the invocation at once, then waits for it for the
    calling client's ``read_timeout``. If the function has not answered by then, the client's
    read times out (``ReadTimeoutError``) and the invocation carries on regardless. An Event
    request puts the event on the function's queue and is answered 202 (see the module
    docstring). Each attempt is recorded as an ``aws`` record (service lambda, op Invoke).
    """

    def __init__(self, sb: "Sandbox"):
        self.world = sb
        self.functions: dict[str, "LambdaFunction"] = {}
        self.queues: dict[str, "EventQueue"] = {}  # function name -> the async queue Event invokes go to
        #: function name -> the durable execution service of a durable function (sources/durable.py)
        self.durable: dict[str, DurableEndpoint] = {}
        self.attempts: list[InvokeAttempt] = []
        self.event_attempts: list[EventAttempt] = []
        self._last: dict[str, str] = {}  # amz-sdk-invocation-id -> latest invocation of that SDK call
        # amz-sdk-invocation-id -> (the latest event that SDK call had queued, the attempt that queued it)
        self._last_event: dict[str, tuple[Any, int]] = {}

    @classmethod
    def of(cls, sb: "Sandbox") -> "SyncInvokeEndpoint":
        """The world's endpoint, installed on first use."""
        route = sb.gateway.routes.get("lambda")
        if isinstance(route, cls):
            return route
        if route is not None:
            raise BadInput("this world already serves Lambda requests with another endpoint")
        endpoint = cls(sb)
        sb.gateway.routes["lambda"] = endpoint
        return endpoint

    def serve(self, fn: "LambdaFunction", queue: "EventQueue | None" = None) -> None:
        """Answer Invoke requests for ``fn``; with ``queue``, Event requests too (they go on that queue)."""
        self.functions[fn.config.name] = fn
        self.functions[fn.config.arn] = fn
        if queue is not None:
            self.queues[fn.config.name] = queue

    def serve_durable(self, fn: "LambdaFunction", service: DurableEndpoint) -> None:
        """Answer Invoke requests for ``fn`` as a durable function, and the durable execution APIs for its
        executions, through ``service`` (a ``durable.DurableService``)."""
        self.serve(fn)
        self.durable[fn.config.name] = service

    # -- one request -------------------------------------------------------------------------
    def __call__(self, op: str, request: AWSPreparedRequest) -> AWSResponse:
        if op in DURABLE_OPS and self.durable:
            return self._durable_service(request).serve(op, request)
        if op != "Invoke":
            raise RealAwsRefused(f"lambda.{op} has no local endpoint in this sandbox; only Invoke (and the durable "
                                 "execution APIs, for a durable function) is served")
        url = request.url
        fn = self._function(url)
        if fn is None:
            name = self._function_name(url)
            arn = name if name.startswith("arn:") else f"arn:aws:lambda:{self.world.region}:{ACCOUNT}:function:{name}"
            record_invoke(self.world, name, [], "ResourceNotFound", {})
            return _error_response(url, 404, "ResourceNotFoundException", f"Function not found: {arn}")
        invocation_type = self._header(request, "X-Amz-Invocation-Type") or "RequestResponse"
        if invocation_type == "DryRun":
            return _json_response(url, 204, {}, b"")
        if invocation_type not in ("RequestResponse", "Event"):
            raise RealAwsRefused(f"InvocationType={invocation_type} is not served here; this endpoint serves "
                                 "RequestResponse, Event (for a function with an async queue) and DryRun")
        queue = self.queues.get(fn.config.name)
        if invocation_type == "Event" and queue is None and fn.config.name not in self.durable:
            raise RealAwsRefused(f"InvocationType=Event: {fn.config.name} has no async queue in this world; an "
                                 "AsyncInvokeCaller (sandbox.sources.async_invoke) serves its Event invokes")
        limit = ASYNC_PAYLOAD_LIMIT if invocation_type == "Event" else SYNC_PAYLOAD_LIMIT
        if len(request.body or b"") > limit:
            record_invoke(self.world, fn.config.name, [], "RequestTooLarge", {"bytes": len(request.body)})
            return _error_response(url, 413, "RequestTooLargeException",
                                   f"Request must be smaller than {limit} bytes for the Invoke operation")
        try:
            event = json.loads(request.body or b"{}")
        except ValueError as exc:
            record_invoke(self.world, fn.config.name, [], "InvalidRequestContent", {})
            return _error_response(url, 400, "InvalidRequestContentException",
                                   f"Could not parse request body into json: {exc}")
        if fn.config.name in self.durable:
            return self.durable[fn.config.name].answer_invoke(self, request, event, invocation_type)
        if invocation_type == "Event":
            assert queue is not None  # refused above
            return self._queue(fn, queue, event, request)
        return self._invoke(fn, event, request)

    def _durable_service(self, request: AWSPreparedRequest) -> DurableEndpoint:
        """The service whose executions include the one the request's path names (else any: it refuses it)."""
        for service in self.durable.values():
            if service.serves(request.url):
                return service
        return next(iter(self.durable.values()))

    def _invoke(self, fn: "LambdaFunction", event: Any, request: AWSPreparedRequest) -> AWSResponse:
        """Start the invocation, wait for it up to the caller's read timeout, answer or time out."""
        keys = _keys_of(event)
        attempt, call_id = self._attempt_of(request)
        # Attempt k+1 exists because attempt k timed out, so it points back at attempt k.
        prev = self._last.get(call_id) if call_id else None
        sb = self.world
        inv = fn.start(event, source=SourceKind.SYNC, cause=Cause.FIRST_DELIVERY if prev is None else Cause.SDK_RETRY,
                       prev=prev, keys=keys)
        if call_id:
            self._last[call_id] = inv.id
        record = InvokeAttempt(attempt, inv.id, sb.clock.elapsed(), caller=current_task(), invocation=inv)
        self.attempts.append(record)
        read_timeout = adapter.client_read_timeout()
        sb.scheduler.wait_for(inv.task, timeout=read_timeout, label=f"read {inv.id}")
        record.ended = sb.clock.elapsed()
        detail: InvokeDetail = {"attempt": attempt, "invocation": inv.id, "sent": round(record.sent, 6),
                                  "read_timeout": read_timeout}
        if inv.outcome is None:
            record.result = READ_TIMEOUT
            self._record(fn, keys, record.result, detail)
            # What the caller's HTTP layer raises when the socket read times out; botocore's
            # retry handler decides what happens next.
            raise ReadTimeoutError(endpoint_url=request.url)
        response, function_error, payload = self._response(request.url, inv)
        record.result = "FunctionError" if function_error else AWS_OK
        if function_error:
            detail["function_error"] = function_error
        elif isinstance(payload, dict) and "statusCode" in payload:
            detail["statusCode"] = payload["statusCode"]  # the API Gateway proxy result, if that is its shape
        self._record(fn, keys, record.result, detail)
        sb.gateway.notify("lambda", "Invoke", {"FunctionName": fn.config.name}, 200)
        return response

    def _queue(self, fn: "LambdaFunction", queue: "EventQueue", event: Any, request: AWSPreparedRequest) -> AWSResponse:
        """Event: queue the event and answer 202 at once; or fail (5xx), or queue it and lose the 202."""
        sb, keys = self.world, _keys_of(event)
        attempt, call_id = self._attempt_of(request)
        record = EventAttempt(attempt, sb.clock.elapsed(), caller=current_task())
        self.event_attempts.append(record)
        detail: InvokeDetail = {"attempt": attempt, "invocation_type": "Event", "sent": round(record.sent, 6)}
        fault = sb.faults.aws_fault("lambda", "Invoke", fn.config.name, None)
        if fault is not None and fault.kind == "throttle":
            raise BadInput(THROTTLED_EVENT)
        if fault is not None and fault.kind == "5xx":  # Lambda failed the request: nothing is queued
            status, code = SERVICE_ERROR
            record.ended, record.result = record.sent, code.removesuffix("Exception")  # the history's short code
            detail["status"], detail["error"], detail["fault"] = status, code, fault.kind
            self._record(fn, keys, record.result, detail)
            sb.gateway.notify("lambda", "Invoke", {"FunctionName": fn.config.name, "InvocationType": "Event"}, status)
            return _error_response(request.url, status, code,
                                   "Lambda could not queue the event (injected by the sandbox)")
        earlier = self._last_event.get(call_id) if call_id else None
        entry = queue.invoke(event, keys=keys, accept=False, repeats=earlier[0] if earlier else None,
                             cause=Cause.FIRST_DELIVERY if earlier is None else Cause.CALLER_RESEND)
        record.event = entry
        if call_id:
            self._last_event[call_id] = (entry, attempt)
        if earlier is not None:
            sb.record_delivery(SourceKind.ASYNC, Delivery.CALLER_RESEND, keys, None, {
                "event": entry.id, "repeats": earlier[0].id, "attempt": attempt,
                "why": f"attempt {attempt} of the same SDK call: Lambda had already queued attempt {earlier[1]}'s "
                       f"event, but its {EVENT_ACCEPTED} never reached the caller, so botocore sent the Invoke again; "
                       "Invoke takes no idempotency token, so Lambda queued a second event"})
        detail["event"], detail["status"] = entry.id, EVENT_ACCEPTED
        if fault is not None:  # timeout-applied: queued, but the caller hears nothing until its read times out
            read_timeout = adapter.client_read_timeout()
            sb.scheduler.sleep(read_timeout, label=f"read timeout, Event invoke attempt {attempt}")
            record.ended, record.result = sb.clock.elapsed(), READ_TIMEOUT
            detail["fault"], detail["read_timeout"] = fault.kind, read_timeout
            self._record(fn, keys, READ_TIMEOUT, detail)
            raise ReadTimeoutError(endpoint_url=request.url)
        record.ended, record.result = record.sent, AWS_OK
        self._record(fn, keys, AWS_OK, detail)
        sb.gateway.notify("lambda", "Invoke", {"FunctionName": fn.config.name, "InvocationType": "Event"},
                          EVENT_ACCEPTED)
        return _json_response(request.url, EVENT_ACCEPTED, {}, b"")

    # -- helpers -------------------------------------------------------------------------------
    @staticmethod
    def _header(request: AWSPreparedRequest, name: str) -> str | None:
        value = request.headers.get(name)
        if isinstance(value, bytes):
            value = value.decode()
        return value

    @staticmethod
    def _function_name(url: str) -> str:
        path = urllib.parse.urlsplit(url).path
        if not path.startswith(_INVOKE_PATH) or not path.endswith("/invocations"):
            raise RealAwsRefused(f"{path} is not the Lambda Invoke path ({_INVOKE_PATH}<name>/invocations)")
        return urllib.parse.unquote(path[len(_INVOKE_PATH):-len("/invocations")])

    def _function(self, url: str) -> "LambdaFunction | None":
        name = self._function_name(url)
        if name in self.functions:
            return self.functions[name]
        # a partial ARN ("123456789012:function:name") or one with a qualifier (":$LATEST")
        return self.functions.get(name.rsplit("function:", 1)[-1].split(":")[0])

    def _attempt_of(self, request: AWSPreparedRequest) -> tuple[int, str | None]:
        """botocore's attempt number and call id, from the headers it adds to every attempt."""
        attempt = 1
        for part in (self._header(request, "amz-sdk-request") or "").split(";"):
            key, _, value = part.strip().partition("=")
            if key == "attempt" and value.isdigit():
                attempt = int(value)
        return attempt, self._header(request, "amz-sdk-invocation-id")

    def _response(self, url: str, inv: "Invocation") -> tuple[Any, str | None, Any]:
        headers = {"X-Amz-Executed-Version": inv.function.config.version, "x-amzn-RequestId": inv.request_id}
        if inv.outcome == Outcome.OK:
            try:
                return _json_response(url, 200, headers, json.dumps(inv.result).encode()), None, inv.result
            except (TypeError, ValueError) as exc:
                payload: ErrorPayload = {"errorMessage": f"Unable to marshal response: {exc}",
                                           "errorType": "Runtime.MarshalError",
                                           "requestId": inv.request_id, "stackTrace": []}
        else:
            payload = function_error_payload(inv)
        headers["X-Amz-Function-Error"] = "Unhandled"
        return _json_response(url, 200, headers, payload), payload["errorType"], payload

    def _record(self, fn: "LambdaFunction", keys: list[str], result: str, detail: Mapping[str, object]) -> None:
        record_invoke(self.world, fn.config.name, keys, result, detail)


def _keys_of(event: Any) -> list[str]:
    """The orderIds an event carries (none if it carries no orders: the function still gets it)."""
    try:
        return [str(o["orderId"]) for o in orders_in(event)]
    except BadInput:
        return []


def record_invoke(sb: "Sandbox", function: str, keys: list[str], result: str, detail: Mapping[str, object]) -> None:
    """Write one Invoke attempt to the history, shaped like the gateway's ``aws`` records."""
    sb.gateway.record("lambda", "Invoke", function, keys[0] if keys else None, result, detail)


# -- the caller ---------------------------------------------------------------------------------
@dataclass
class CallOutcome:
    """What one caller saw in the end."""

    order: str
    attempts: int = 0  # Invoke requests botocore sent for this call
    error: str | None = None  # the exception the SDK finally raised, if any
    function_error: str | None = None  # the X-Amz-Function-Error header, if any
    payload: Any = None  # the decoded response payload
    invocations: list[str] = field(default_factory=list)

    @property
    def status_code(self) -> int | None:
        """The API Gateway proxy status inside the payload, when the handler returned one."""
        return self.payload.get("statusCode") if isinstance(self.payload, dict) else None


class SyncInvokeSource(Source):
    """A caller that invokes a function synchronously with a real boto3 Lambda client.

    ``call(order, at=...)`` schedules a caller task at virtual time ``at``. It records that
    the order was accepted, builds an API Gateway ``POST /orders`` proxy event, and calls
    ``Invoke`` with ``config``'s retry and timeout settings. botocore then does whatever it
    does, retries included.
    """

    function: LambdaFunction  # it invokes one

    kind = SourceKind.SYNC

    def __init__(self, world: "Sandbox", function: "LambdaFunction", config: CallerConfig | None = None,
                 **settings: Any):
        super().__init__(world, function)
        self.config = config or CallerConfig(**settings)
        self.endpoint = SyncInvokeEndpoint.of(world)
        self.endpoint.serve(function)
        self.outcomes: list[CallOutcome] = []
        self._callers: list = []
        self._scheduled = 0

    def client(self) -> Any:
        """A boto3 Lambda client with this caller's botocore config (make it inside the world)."""
        return boto3.client("lambda", region_name=self.world.region, config=self.config.botocore_config())

    def call(self, order: Order, at: float = 0.0) -> None:
        """A caller sends ``order`` at virtual time ``at``."""
        self._scheduled += 1

        def begin() -> None:
            self._scheduled -= 1
            self._callers.append(self.world.scheduler.spawn(self._call, order, name=f"caller-{order['orderId']}"))

        self.world.scheduler.call_at(at, begin, name=f"call {order['orderId']}")

    def idle(self) -> bool:
        """Every caller has its answer and every invocation it started has ended (they outlive their caller)."""
        return (self._scheduled == 0 and all(t.done for t in self._callers)
                and all(a.invocation.done for a in self.endpoint.attempts if a.invocation is not None))

    def _call(self, order: Order) -> CallOutcome:
        world = self.world
        key = str(order["orderId"])
        world.accept(order, source=self.kind)
        outcome = CallOutcome(key)
        self.outcomes.append(outcome)
        before = len(self.endpoint.attempts)
        event = apigateway_event(order, request_id=world.new_uuid())
        client = self.client()
        try:
            response = client.invoke(FunctionName=self.function.config.name, Payload=json.dumps(event))
        except ReadTimeoutError as exc:
            outcome.error = type(exc).__name__
        else:
            outcome.function_error = response.get("FunctionError")
            raw = response["Payload"].read()
            try:
                outcome.payload = json.loads(raw) if raw else None
            except ValueError:
                outcome.payload = raw.decode(errors="replace")
        me = current_task()
        mine = [a for a in self.endpoint.attempts[before:] if a.caller is me]
        outcome.attempts = len(mine)
        outcome.invocations = [a.inv for a in mine]
        world.note(self._describe(outcome))
        return outcome

    @staticmethod
    def _describe(o: CallOutcome) -> str:
        tries = f"{o.attempts} attempt{'s' if o.attempts != 1 else ''} ({', '.join(o.invocations)})"
        if o.error:
            return (f"caller for {o.order}: the SDK gave up with {o.error} after {tries}. The caller thinks the "
                    f"order failed, yet every one of those invocations kept running.")
        if o.function_error:
            return f"caller for {o.order}: Invoke answered after {tries} with a function error ({o.function_error})."
        status = f", statusCode {o.status_code} in the payload" if o.status_code is not None else ""
        return f"caller for {o.order}: Invoke answered after {tries}: HTTP 200{status}."


__all__ = ["CallOutcome", "CallerConfig", "DEFAULT_ATTEMPTS", "EventAttempt", "InvokeAttempt", "RETRY_MODES",
           "SyncInvokeEndpoint", "SyncInvokeSource", "record_invoke"]
