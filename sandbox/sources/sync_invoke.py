"""Synchronous invokes (RequestResponse), and the retries the *caller's* SDK makes.

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
"""
from __future__ import annotations

import json
import threading
import traceback
import urllib.parse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import boto3
import botocore.handlers
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from botocore.endpoint import DEFAULT_TIMEOUT
from botocore.exceptions import ReadTimeoutError
from moto.core.botocore_stubber import MockRawResponse

from ..errors import BadInput, RealAwsRefused
from ..events import apigateway_event, orders_in
from ..runtime import FunctionConfig
from ..scheduler import current_task

if TYPE_CHECKING:
    from ..runtime import Invocation, LambdaFunction
    from ..world import Sandbox

RETRY_MODES = ("legacy", "standard", "adaptive")
#: Attempts in all when the caller sets no limit (botocore's _retry.json for legacy,
#: retries/standard.py's DEFAULT_MAX_ATTEMPTS for standard and adaptive).
DEFAULT_ATTEMPTS = {"legacy": 5, "standard": 3, "adaptive": 3}

_INVOKE_PATH = "/2015-03-31/functions/"

# -- which read timeout the calling client has ---------------------------------------------
# The prepared request that reaches the endpoint no longer carries the client's config, so a
# ``before-call`` hook notes the caller's read_timeout on the calling thread just before the
# request is built. Every attempt of one API call runs on that same thread.
_calling = threading.local()


def _note_client_timeout(context: dict | None = None, **_: Any) -> None:
    config = (context or {}).get("client_config")
    _calling.read_timeout = getattr(config, "read_timeout", None)


_HOOK = ("before-call.lambda.Invoke", _note_client_timeout)
if _HOOK not in botocore.handlers.BUILTIN_HANDLERS:  # every session created from now on
    botocore.handlers.BUILTIN_HANDLERS.append(_HOOK)


def _client_read_timeout() -> float:
    value = getattr(_calling, "read_timeout", None)
    return float(value) if value is not None else float(DEFAULT_TIMEOUT)


# -- the caller's configuration ----------------------------------------------------------------
@dataclass(frozen=True)
class CallerConfig:
    """The calling client's botocore settings, with botocore's meanings.

    ``retry_mode``          "legacy", "standard" or "adaptive".
    ``max_attempts``        retries after the first attempt (``retries={'max_attempts': N}``);
                            None leaves it to the mode (legacy 4, standard and adaptive 2).
    ``total_max_attempts``  attempts in all, the first included; wins over ``max_attempts``.
    ``read_timeout``        seconds to wait for the response (botocore default 60).
    ``connect_timeout``     seconds to wait for a connection (botocore default 60). The
                            sandbox's endpoint accepts at once, so this one never expires here.
    """

    retry_mode: str = "legacy"
    max_attempts: int | None = None
    total_max_attempts: int | None = None
    read_timeout: float = float(DEFAULT_TIMEOUT)
    connect_timeout: float = float(DEFAULT_TIMEOUT)

    def __post_init__(self) -> None:
        if self.retry_mode not in RETRY_MODES:
            raise BadInput(f"retry_mode must be one of {', '.join(RETRY_MODES)}, got {self.retry_mode!r}")
        if self.max_attempts is not None and (not isinstance(self.max_attempts, int) or self.max_attempts < 0):
            raise BadInput(f"max_attempts counts retries after the first attempt, so it is 0 or more; got {self.max_attempts!r}")
        if self.total_max_attempts is not None and (not isinstance(self.total_max_attempts, int)
                                                    or self.total_max_attempts < 1):
            raise BadInput("total_max_attempts counts every attempt, the first included, so it is at least 1; "
                           f"got {self.total_max_attempts!r}")
        for name in ("read_timeout", "connect_timeout"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value <= 0:
                raise BadInput(f"{name} is a number of seconds greater than 0, got {value!r}")

    def retries(self) -> dict[str, Any]:
        """The ``retries`` dict exactly as a caller would pass it to ``botocore.config.Config``."""
        out: dict[str, Any] = {"mode": self.retry_mode}
        if self.max_attempts is not None:
            out["max_attempts"] = self.max_attempts
        if self.total_max_attempts is not None:
            out["total_max_attempts"] = self.total_max_attempts
        return out

    def botocore_config(self) -> Config:
        return Config(retries=self.retries(), read_timeout=self.read_timeout, connect_timeout=self.connect_timeout)

    def expected_attempts(self) -> int:
        """How many attempts botocore makes when every one of them times out."""
        if self.total_max_attempts is not None:
            return self.total_max_attempts
        if self.max_attempts is not None:
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


def _json_response(url: str, status: int, headers: dict[str, str], payload: Any) -> AWSResponse:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return AWSResponse(url, status, {"Content-Type": "application/json", **headers}, MockRawResponse(body))


def _error_response(url: str, status: int, code: str, message: str) -> AWSResponse:
    # Lambda's REST-JSON errors: the code in x-amzn-ErrorType, "Type" and "Message" in the body.
    return _json_response(url, status, {"x-amzn-ErrorType": code}, {"Type": "User", "Message": message})


def _function_error_payload(inv: "Invocation") -> dict[str, Any]:
    """The payload Lambda returns with ``X-Amz-Function-Error: Unhandled``."""
    rid = inv.request_id
    if inv.outcome == "timeout":
        return {"errorType": "Sandbox.Timedout",
                "errorMessage": f"RequestId: {rid} Error: Task timed out after {inv.function.config.timeout:.2f} seconds"}
    if inv.outcome == "crashed":
        return {"errorType": "Runtime.ExitError",
                "errorMessage": f"RequestId: {rid} Error: Runtime exited without providing a reason"}
    exc = inv.error
    if isinstance(exc, BaseException):
        frames = traceback.extract_tb(exc.__traceback__)
        return {"errorMessage": str(exc), "errorType": type(exc).__name__, "requestId": rid,
                "stackTrace": [f'  File "{f.filename}", line {f.lineno}, in {f.name}\n    {f.line}\n' for f in frames]}
    return {"errorMessage": inv.error_text or "unknown error", "errorType": "Runtime.Unknown", "requestId": rid}


class SyncInvokeEndpoint:
    """The Lambda Invoke API of one world, for synchronous (RequestResponse) calls.

    Installed as ``sb.gateway.routes["lambda"]``, it runs on the calling task's thread. For
    each request it starts the invocation at once, then waits for it for the calling
    client's ``read_timeout``. If the function has not answered by then, the client's read
    times out (``ReadTimeoutError``) and the invocation carries on regardless. Each attempt
    is recorded as an ``aws`` record (service lambda, op Invoke).
    """

    def __init__(self, sb: "Sandbox"):
        self.sb = sb
        self.functions: dict[str, "LambdaFunction"] = {}
        self.attempts: list[InvokeAttempt] = []
        self._last: dict[str, str] = {}  # amz-sdk-invocation-id -> latest invocation of that SDK call

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

    def serve(self, fn: "LambdaFunction") -> None:
        self.functions[fn.config.name] = fn
        self.functions[fn.config.arn] = fn

    # -- one request -------------------------------------------------------------------------
    def __call__(self, op: str, request) -> AWSResponse:
        if op != "Invoke":
            raise RealAwsRefused(f"lambda.{op} has no local endpoint in this sandbox; only Invoke is served")
        url = request.url
        fn = self._function(url)
        if fn is None:
            name = self._function_name(url)
            arn = name if name.startswith("arn:") else f"arn:aws:lambda:{self.sb.region}:{FunctionConfig.account}:function:{name}"
            record_invoke(self.sb, name, [], "ResourceNotFound", {})
            return _error_response(url, 404, "ResourceNotFoundException", f"Function not found: {arn}")
        invocation_type = self._header(request, "X-Amz-Invocation-Type") or "RequestResponse"
        if invocation_type == "DryRun":
            return _json_response(url, 204, {}, b"")
        if invocation_type != "RequestResponse":
            raise RealAwsRefused(f"InvocationType={invocation_type} is not a synchronous invoke; this endpoint "
                                 "serves RequestResponse only (use the async source for Event invokes)")
        try:
            event = json.loads(request.body or b"{}")
        except ValueError as exc:
            record_invoke(self.sb, fn.config.name, [], "InvalidRequestContent", {})
            return _error_response(url, 400, "InvalidRequestContentException",
                                   f"Could not parse request body into json: {exc}")
        try:
            keys = [str(o["orderId"]) for o in orders_in(event)]
        except BadInput:
            keys = []

        attempt, call_id = self._attempt_of(request)
        # Attempt k+1 exists because attempt k timed out, so it points back at attempt k.
        prev = self._last.get(call_id) if call_id else None
        sb = self.sb
        inv = fn.start(event, source="sync", cause="first delivery" if prev is None else "SDK retry",
                       prev=prev, keys=keys)
        if call_id:
            self._last[call_id] = inv.id
        record = InvokeAttempt(attempt, inv.id, sb.clock.elapsed(), caller=current_task())
        self.attempts.append(record)
        read_timeout = _client_read_timeout()
        sb.scheduler.wait_for(inv.task, timeout=read_timeout, label=f"read {inv.id}")
        record.ended = sb.clock.elapsed()
        detail: dict[str, Any] = {"attempt": attempt, "invocation": inv.id, "sent": round(record.sent, 6),
                                  "read_timeout": read_timeout}
        if inv.outcome is None:
            record.result = "ReadTimeout"
            self._record(fn, keys, record.result, detail)
            # What the caller's HTTP layer raises when the socket read times out; botocore's
            # retry handler decides what happens next.
            raise ReadTimeoutError(endpoint_url=url)
        response, function_error, payload = self._response(url, inv)
        record.result = "FunctionError" if function_error else "ok"
        if function_error:
            detail["function_error"] = function_error
        elif isinstance(payload, dict) and "statusCode" in payload:
            detail["statusCode"] = payload["statusCode"]  # the API Gateway proxy result, if that is its shape
        self._record(fn, keys, record.result, detail)
        sb.on_aws_call("lambda", "Invoke", {"FunctionName": fn.config.name}, 200)
        return response

    # -- helpers -------------------------------------------------------------------------------
    @staticmethod
    def _header(request, name: str) -> str | None:
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

    def _attempt_of(self, request) -> tuple[int, str | None]:
        """botocore's attempt number and call id, from the headers it adds to every attempt."""
        attempt = 1
        for part in (self._header(request, "amz-sdk-request") or "").split(";"):
            key, _, value = part.strip().partition("=")
            if key == "attempt" and value.isdigit():
                attempt = int(value)
        return attempt, self._header(request, "amz-sdk-invocation-id")

    def _response(self, url: str, inv: "Invocation") -> tuple[AWSResponse, str | None, Any]:
        headers = {"X-Amz-Executed-Version": inv.function.config.version, "x-amzn-RequestId": inv.request_id}
        if inv.outcome == "ok":
            try:
                return _json_response(url, 200, headers, json.dumps(inv.result).encode()), None, inv.result
            except (TypeError, ValueError) as exc:
                payload = {"errorMessage": f"Unable to marshal response: {exc}", "errorType": "Runtime.MarshalError",
                           "requestId": inv.request_id, "stackTrace": []}
        else:
            payload = _function_error_payload(inv)
        headers["X-Amz-Function-Error"] = "Unhandled"
        return _json_response(url, 200, headers, payload), payload["errorType"], payload

    def _record(self, fn: "LambdaFunction", keys: list[str], result: str, detail: dict) -> None:
        record_invoke(self.sb, fn.config.name, keys, result, detail)


def record_invoke(sb: "Sandbox", function: str, keys: list[str], result: str, detail: dict) -> None:
    """Write one Invoke attempt to the history, shaped like the gateway's ``aws`` records."""
    if getattr(sb.gateway, "_quiet", 0):
        return
    inv = sb.runtime.current_invocation()
    sb.history.append("aws", sb.clock.elapsed(), inv=inv.id if inv is not None else None,
                      actor=sb.runtime.actor_name(), service="lambda", op="Invoke", target=function,
                      key=keys[0] if keys else None, result=result, detail=detail)


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


class SyncInvokeSource:
    """A caller that invokes ``fn`` synchronously with a real boto3 Lambda client.

    ``call(order, at=...)`` schedules a caller task at virtual time ``at``. It records that
    the order was accepted, builds an API Gateway ``POST /orders`` proxy event, and calls
    ``Invoke`` with ``config``'s retry and timeout settings. botocore then does whatever it
    does, retries included.
    """

    def __init__(self, sb: "Sandbox", fn: "LambdaFunction", config: CallerConfig | None = None):
        self.sb, self.fn = sb, fn
        self.config = config or CallerConfig()
        self.endpoint = SyncInvokeEndpoint.of(sb)
        self.endpoint.serve(fn)
        self.outcomes: list[CallOutcome] = []
        # Clients made after this point note their read_timeout even if this module was
        # imported after the world created its boto3 session.
        session = boto3.DEFAULT_SESSION
        if session is not None:
            session.events.register(*_HOOK, unique_id="sandbox-sync-read-timeout")

    def client(self):
        """A boto3 Lambda client with this caller's botocore config (make it inside the world)."""
        return boto3.client("lambda", region_name=self.sb.region, config=self.config.botocore_config())

    def call(self, order: dict, at: float = 0.0) -> None:
        self.sb.scheduler.call_at(at, lambda: self.sb.scheduler.spawn(self._call, order, name=f"caller-{order['orderId']}"),
                                  name=f"call {order['orderId']}")

    def _call(self, order: dict) -> CallOutcome:
        sb = self.sb
        key = str(order["orderId"])
        sb.accept(order, source="sync")
        outcome = CallOutcome(key)
        self.outcomes.append(outcome)
        before = len(self.endpoint.attempts)
        event = apigateway_event(order, request_id=sb.new_uuid())
        client = self.client()
        try:
            response = client.invoke(FunctionName=self.fn.config.name, Payload=json.dumps(event))
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
        sb.note(self._describe(outcome))
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


def caller_config(cfg: dict[str, Any]) -> CallerConfig:
    """A CallerConfig from scenario settings (-1 means 'not set', as botocore has no value for it)."""
    def unset(value):
        return None if value is None or value < 0 else value

    return CallerConfig(retry_mode=cfg.get("retry_mode", "legacy"), max_attempts=unset(cfg.get("max_attempts")),
                        total_max_attempts=unset(cfg.get("total_max_attempts")),
                        read_timeout=float(cfg.get("read_timeout", DEFAULT_TIMEOUT)),
                        connect_timeout=float(cfg.get("connect_timeout", DEFAULT_TIMEOUT)))


__all__ = ["CallOutcome", "CallerConfig", "DEFAULT_ATTEMPTS", "InvokeAttempt", "RETRY_MODES", "SyncInvokeEndpoint",
           "SyncInvokeSource", "caller_config", "record_invoke"]
