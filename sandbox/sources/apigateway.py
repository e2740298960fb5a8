"""API Gateway in front of a function, and an HTTP client that retries what API Gateway gave up on.

What this model keeps from AWS:

- A REST API's Lambda proxy integration invokes the function synchronously, once for each
  request a client sends, and "API Gateway does not retry any Lambda invocations"
  (https://docs.aws.amazon.com/lambda/latest/dg/services-apigateway-errors.html).
- API Gateway waits for the function for at most the integration timeout: "50 milliseconds - 29
  seconds" by default; Regional and private REST APIs may ask for more
  (https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html). A slower function
  gets the client a 504, the ``INTEGRATION_TIMEOUT`` gateway response
  (https://docs.aws.amazon.com/apigateway/latest/developerguide/supported-gateway-response-types.html).
- Nothing stops the function then: it runs on to its end or to its own timeout. No AWS page
  says so in one sentence; it follows from the two facts above (API Gateway only stops
  waiting), and it is what everyone observes. The sandbox lets it run.
- A function error, or a response not in the proxy format, is a 502 whose body is
  ``{"message": "Internal server error"}`` (services-apigateway-errors.html).
- Every request is a new API Gateway request with its own ``requestContext.requestId``
  (``$context.requestId``, "An ID for the request",
  https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-mapping-template-reference.html;
  the page adds that clients can override it, which this client, like most, does not), so a
  retry by the client reaches the function as a new event with a new id.

The client is an application's HTTP client, not an AWS SDK, so its retry rules are its own
settings: it retries a 5xx answer and its own timeouts, after a backoff that doubles. When
``idempotency_key`` is on, it sends an ``Idempotency-Key`` header, generated once per order
and the same on each retry (the IETF draft "The Idempotency-Key HTTP Header Field"). That
header is the one thing in the event that survives a retry and names the request.

Each request the client sent is in the history as an ``aws`` record (service ``execute-api``,
op ``Invoke``, actor the client) written when the client stopped waiting for it: its
``detail`` holds the request id, when it was sent, the HTTP status the client got, and the
invocation it started.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..events import apigateway_event
from ..settings import Config, param
from ..vocab import AWS_OK, Cause, Outcome, SourceKind
from .base import Source

if TYPE_CHECKING:
    from ..runtime.functions import Invocation, LambdaFunction
    from ..world import Sandbox

DOC_LIMITS = "https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html"
DOC_ERRORS = "https://docs.aws.amazon.com/lambda/latest/dg/services-apigateway-errors.html"
DOC_RETRIES = "https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html"

#: The history's words for the client's requests (the IAM action for calling an API is execute-api:Invoke).
SERVICE, OP, API_NAME = "execute-api", "Invoke", "orders-api"
#: A request the client itself gave up on: the same result a botocore caller's read timeout has.
CLIENT_TIMEOUT = "ReadTimeout"
REASONS = {500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}
#: API Gateway's own answers (supported-gateway-response-types.html, services-apigateway-errors.html).
GATEWAY_TIMEOUT = {"status": 504, "gatewayResponse": "INTEGRATION_TIMEOUT", "message": "Endpoint request timed out"}
BAD_GATEWAY = {"status": 502, "message": "Internal server error"}


@dataclass(frozen=True)
class ApiGatewayConfig(Config):
    """API Gateway's integration timeout, and the retry rules of the client in front of it."""

    integration_timeout: float = param(
        29.0, "seconds API Gateway waits for the function before it answers the client 504 (29 s: the default, and "
        "the most except for Regional and private REST APIs that ask for more)", DOC_LIMITS, 0.05, 900)
    client_retries: int = param(
        2, "how many times the client sends the request again after a 5xx or its own timeout (2: three requests in "
        "all, as the AWS SDKs' standard mode makes; an app's HTTP client chooses its own)", DOC_RETRIES, 0, 10)
    client_backoff: float = param(
        1.0, "seconds the client waits before its first retry; each later retry waits twice as long", None, 0, 3600)
    client_timeout: float = param(
        60.0, "seconds the client waits for an answer before it gives up on a request (longer than the integration "
              "timeout, so it hears API Gateway's 504)", None, 0.05, 900)
    idempotency_key: bool = param(
        True, "the client sends an Idempotency-Key header, generated once per order and the same on every retry",
        None)
    retry_conflict: bool = param(
        False, "the client also retries a 409 (the work is still in progress), hoping for the stored result", None)

    def backoff(self, retry: int) -> float:
        """Seconds before retry number ``retry`` (1, 2, ...)."""
        return float(self.client_backoff) * 2 ** (retry - 1)

    def retryable(self, status: int | None) -> bool:
        """Does the client send the request again after this answer (None: its own timeout)?"""
        return status is None or status >= 500 or (status == 409 and self.retry_conflict)


@dataclass
class ClientRequest:
    """One request the client sent, as API Gateway saw it."""

    order: str
    attempt: int
    request_id: str
    sent: float
    invocation: "Invocation" = field(repr=False)
    status: int | None = None  # what the client got (None: it gave up waiting)
    body: Any = None
    ended: float | None = None


class ApiGatewaySource(Source):
    """An HTTP client that POSTs orders to ``/orders`` through API Gateway, retrying as ``config`` says."""

    kind = SourceKind.APIGATEWAY

    def __init__(self, world: "Sandbox", function: "LambdaFunction", config: ApiGatewayConfig | None = None,
                 **settings: Any):
        super().__init__(world, function)
        self.config = config or ApiGatewayConfig(**settings)
        self.requests: list[ClientRequest] = []
        self._clients: list = []
        self._scheduled = 0

    def call(self, order: dict, at: float = 0.0) -> None:
        """The client sends ``order`` at virtual time ``at`` (and retries it as its settings say)."""
        self._scheduled += 1

        def begin():
            self._scheduled -= 1
            self._clients.append(self.world.scheduler.spawn(self._client, order, name=f"client-{order['orderId']}"))

        self.world.scheduler.call_at(at, begin, name=f"POST /orders {order['orderId']}")

    def idle(self) -> bool:
        """Every client has its last answer, and every invocation has ended (they outlive API Gateway's wait)."""
        return (self._scheduled == 0 and all(t.done for t in self._clients)
                and all(r.invocation.done for r in self.requests))

    # -- the client ----------------------------------------------------------------------------
    def _client(self, order: dict) -> list[ClientRequest]:
        world, cfg = self.world, self.config
        world.accept(order, source=self.kind)
        key = world.new_uuid() if cfg.idempotency_key else None
        mine: list[ClientRequest] = []
        for attempt in range(1, cfg.client_retries + 2):
            request = self._send(order, attempt, key, mine[-1].invocation.id if mine else None)
            mine.append(request)
            if not cfg.retryable(request.status) or attempt > cfg.client_retries:
                break
            world.scheduler.sleep(cfg.backoff(attempt), label=f"client backs off before retry {attempt}")
        world.note(self._describe(order, mine))
        return mine

    def _send(self, order: dict, attempt: int, key: str | None, prev: str | None) -> ClientRequest:
        """One POST /orders: API Gateway invokes the function and waits for it, up to its integration timeout."""
        world, cfg = self.world, self.config
        request_id = world.new_uuid()
        event = apigateway_event(order, request_id=request_id, idempotency_key=key)
        inv = self.function.start(event, source=self.kind, cause=Cause.FIRST_DELIVERY if prev is None
                                  else Cause.CLIENT_RETRY, prev=prev, keys=[str(order["orderId"])])
        request = ClientRequest(str(order["orderId"]), attempt, request_id, world.clock.elapsed(), inv)
        self.requests.append(request)
        world.scheduler.wait_for(inv.task, timeout=min(cfg.integration_timeout, cfg.client_timeout),
                                 label=f"POST /orders {request_id[:8]}")
        request.ended = world.clock.elapsed()
        detail: dict[str, Any] = {"attempt": attempt, "invocation": inv.id, "sent": round(request.sent, 6),
                                  "requestId": request_id, "integration_timeout": cfg.integration_timeout,
                                  "client_timeout": cfg.client_timeout}
        if key is not None:
            detail["idempotencyKey"] = key
        result = self._answer(request, inv, detail)
        world.gateway.record(SERVICE, OP, API_NAME, request.order, result, detail)
        return request

    def _answer(self, request: ClientRequest, inv: "Invocation", detail: dict) -> str:
        """What the client got (status and body, also written into ``detail``); returns the record's result."""
        cfg = self.config
        if inv.outcome is None and cfg.client_timeout < cfg.integration_timeout:
            return CLIENT_TIMEOUT  # the client stopped waiting first: API Gateway's answer went unread
        if inv.outcome is None:
            answer = GATEWAY_TIMEOUT
        elif inv.outcome != Outcome.OK:
            answer = {**BAD_GATEWAY, "function_error": "Unhandled"}
        else:
            status = proxy_status(inv.result)
            if status is None:
                answer = {**BAD_GATEWAY, "malformed": True}  # not a proxy response: API Gateway cannot map it
            else:
                request.status, request.body = status, inv.result.get("body")
                detail.update(status=status, statusCode=status)
                return AWS_OK
        request.status, request.body = answer["status"], {"message": answer["message"]}
        detail.update(answer)
        return f"HTTP {answer['status']}"

    @staticmethod
    def _describe(order: dict, mine: list[ClientRequest]) -> str:
        last = mine[-1]
        tries = f"{len(mine)} request{'s' if len(mine) != 1 else ''} ({', '.join(r.invocation.id for r in mine)})"
        if last.status is None:
            return (f"client for {order['orderId']}: gave up after {tries}, the last one timing out on its side. "
                    f"Every one of those invocations kept running.")
        if last.status >= 500:
            return (f"client for {order['orderId']}: gave up after {tries}; the last answer was {last.status} "
                    f"{REASONS.get(last.status, '')}. The client thinks the order failed, yet API Gateway stopped "
                    f"only its own waiting: the invocations ran on.")
        return f"client for {order['orderId']}: got {last.status} after {tries}."


def proxy_status(result: Any) -> int | None:
    """The HTTP status of a Lambda proxy response, or None if ``result`` is not one API Gateway can map."""
    if not isinstance(result, dict):
        return None
    status = result.get("statusCode")
    if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
        return None
    return status
