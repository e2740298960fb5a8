"""An application's HTTP client, and the AWS front that turns each of its requests into one invocation.

Three fronts put a function behind HTTP, and all three invoke it synchronously, once for each
request, and retry nothing themselves: API Gateway's Lambda proxy integration ("API Gateway does not
retry any Lambda invocations", https://docs.aws.amazon.com/lambda/latest/dg/services-apigateway-errors.html),
a Lambda function URL, and an Application Load Balancer with a Lambda target. For a synchronous
invocation "Lambda does not automatically retry"; the client decides
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-retries.html). So every duplicate here is
the client's: each retry is a new HTTP request, which the front turns into a new event with a new id.

The client is an application's HTTP client, not an AWS SDK, so its retry rules are its own settings
(``ClientConfig``): it retries a 5xx answer and its own timeouts, after a backoff that doubles. When
``idempotency_key`` is on it sends an ``Idempotency-Key`` header, generated once per request body and
the same on each retry (the IETF draft "The Idempotency-Key HTTP Header Field"): the one thing in the
event that survives a retry and names the request.

The fronts differ in what a subclass says:

- how long the front itself waits (API Gateway: its integration timeout; a function URL or a load
  balancer: as long as the function runs, so the function's timeout decides);
- the event it builds, and what it answers when the function fails, times out or answers in a shape
  it cannot map.

Each request is in the history as an ``aws`` record written when the client stopped waiting for it
(service, op and target are the front's; actor the client): its ``detail`` holds the request's id,
when it was sent, the HTTP status the client got, and the invocation it started.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict, cast

from ..aws.event_shapes import HttpEvent
from ..events import Cart, Order
from ..settings import Config, param
from ..vocab import AWS_OK, Cause, Outcome
from .base import Source

if TYPE_CHECKING:
    from ..runtime.functions import Invocation, LambdaFunction
    from ..world import Sandbox

DOC_RETRIES = "https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html"
#: A request the client itself gave up on: the same result a botocore caller's read timeout has.
CLIENT_TIMEOUT = "ReadTimeout"
REASONS = {500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}


class FrontAnswer(TypedDict, total=False):
    """What a front answers the client on its own, not from the function's response: the status and message the
    client reads, and why (each front's documentation names them); the history's detail keeps them. Every front's
    answer has a status and a message; the others are optional, so a request's detail can take any of them."""

    status: int
    message: str
    gatewayResponse: str  # API Gateway's gateway response type
    reason: str  # the load balancer's error reason
    function_error: str
    malformed: bool  # the function's response could not be mapped


class RequestDetail(FrontAnswer, total=False):
    """The history's detail of one client request: the attempt, its invocation and waits, and what it got (every
    key optional only so that a front's answer can be merged into it as it is)."""

    attempt: int
    invocation: str
    sent: float
    requestId: str
    integration_timeout: float
    client_timeout: float
    idempotencyKey: str
    statusCode: int


@dataclass(frozen=True)
class ClientConfig(Config):
    """The retry rules of an application's HTTP client, declared once for every front. A front's config adds what
    is its own (API Gateway's integration timeout) and declares ``client_timeout`` again with its own default."""

    client_retries: int = param(
        2, "how many times the client sends the request again after a 5xx or its own timeout (2: three requests in "
        "all, as the AWS SDKs' standard mode makes; an app's HTTP client chooses its own)", DOC_RETRIES, 0, 10)
    client_backoff: float = param(
        1.0, "seconds the client waits before its first retry; each later retry waits twice as long", None, 0, 3600)
    client_timeout: float = param(
        60.0, "seconds the client waits for an answer before it gives up on a request", None, 0.05, 900)
    idempotency_key: bool = param(
        True, "the client sends an Idempotency-Key header, generated once per request body (an order, or a cart) "
              "and the same on every retry", None)
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
    """One request the client sent, as the front saw it."""

    order: str  # the order it carries (a cart's orders, comma-separated)
    attempt: int
    request_id: str
    sent: float
    invocation: "Invocation" = field(repr=False)
    status: int | None = None  # what the client got (None: it gave up waiting)
    body: Any = None
    ended: float | None = None


class HttpClientSource(Source, ABC):
    """An HTTP client that POSTs orders to the front's path, retrying as its config says (see the module)."""

    function: LambdaFunction  # it invokes one
    config: Any  # the front's ``ClientConfig``

    #: The history's words for one request: the service and operation (IAM's action), and the front's name.
    service: ClassVar[str] = ""
    op: ClassVar[str] = ""
    target: ClassVar[str] = ""
    #: How the notes name the front ("API Gateway"), and the path the client POSTs to.
    front: ClassVar[str] = ""
    path: ClassVar[str] = "/orders"

    def __init__(self, world: "Sandbox", function: "LambdaFunction", config: Any = None, **settings: Any):
        super().__init__(world, function)
        self.config = config if config is not None else self.make_config(**settings)
        self.requests: list[ClientRequest] = []
        self._clients: list = []
        self._scheduled = 0

    # -- what each front says ----------------------------------------------------------------
    @abstractmethod
    def make_config(self, **settings: Any) -> Any:
        raise NotImplementedError

    @abstractmethod
    def event(self, body: Order | Cart, request_id: str, key: str | None) -> HttpEvent:
        """The event the front builds from one POST carrying ``body``."""
        raise NotImplementedError

    def front_limit(self) -> float | None:
        """Seconds the front waits for the function before answering on its own (None: until it ends)."""
        return None

    def gave_up(self) -> FrontAnswer:
        """What the front answers when it stops waiting (only a front with a ``front_limit``)."""
        raise NotImplementedError

    @abstractmethod
    def failed(self, inv: "Invocation") -> FrontAnswer:
        """What the front answers when the function failed (an error, a crash, a timeout)."""
        raise NotImplementedError

    @abstractmethod
    def answered(self, result: Any) -> tuple[int, Any] | None:
        """(status, body) the function's response maps to, or None if the front cannot map it."""
        raise NotImplementedError

    @abstractmethod
    def malformed(self) -> FrontAnswer:
        """What the front answers for a response it cannot map."""
        raise NotImplementedError

    # -- the client --------------------------------------------------------------------------
    def call(self, orders: Order | list[Order], at: float = 0.0) -> None:
        """The client sends an order (or a cart: a list of orders) at virtual time ``at``, retrying as its
        settings say."""
        self._scheduled += 1
        cart = orders if isinstance(orders, list) else [orders]
        name = ",".join(str(o["orderId"]) for o in cart)

        def begin() -> None:
            self._scheduled -= 1
            self._clients.append(self.world.scheduler.spawn(self._client, cart, isinstance(orders, list),
                                                            name=f"client-{name}"))

        self.world.scheduler.call_at(at, begin, name=f"POST {self.path} {name}")

    def idle(self) -> bool:
        """Every client has its last answer, and every invocation has ended (they outlive the front's wait)."""
        return (self._scheduled == 0 and all(t.done for t in self._clients)
                and all(r.invocation.done for r in self.requests))

    def _client(self, cart: list[Order], is_cart: bool) -> list[ClientRequest]:
        world, cfg = self.world, self.config
        for order in cart:
            world.accept(order, source=self.kind)
        body: Order | Cart = {"orders": cart} if is_cart else cart[0]
        key = world.new_uuid() if cfg.idempotency_key else None
        mine: list[ClientRequest] = []
        for attempt in range(1, cfg.client_retries + 2):
            request = self._send(cart, body, attempt, key, mine[-1].invocation.id if mine else None)
            mine.append(request)
            if not cfg.retryable(request.status) or attempt > cfg.client_retries:
                break
            world.scheduler.sleep(cfg.backoff(attempt), label=f"client backs off before retry {attempt}")
        world.note(self._describe(mine))
        return mine

    def _send(self, cart: list[Order], body: Order | Cart, attempt: int, key: str | None,
              prev: str | None) -> ClientRequest:
        """One POST: the front invokes the function and waits for it, as long as it waits."""
        world, cfg = self.world, self.config
        request_id = world.new_uuid()
        keys = [str(o["orderId"]) for o in cart]
        inv = self.function.start(self.event(body, request_id, key), source=self.kind, keys=keys, prev=prev,
                                  cause=Cause.FIRST_DELIVERY if prev is None else Cause.CLIENT_RETRY)
        request = ClientRequest(",".join(keys), attempt, request_id, world.clock.elapsed(), inv)
        self.requests.append(request)
        limit = self.front_limit()
        wait = cfg.client_timeout if limit is None else min(limit, cfg.client_timeout)
        world.scheduler.wait_for(inv.task, timeout=wait, label=f"POST {self.path} {request_id[:8]}")
        request.ended = world.clock.elapsed()
        detail: RequestDetail = {"attempt": attempt, "invocation": inv.id, "sent": round(request.sent, 6),
                                  "requestId": request_id}
        if limit is not None:
            detail["integration_timeout"] = limit
        detail["client_timeout"] = cfg.client_timeout
        if key is not None:
            detail["idempotencyKey"] = key
        result = self._answer(request, inv, detail)
        world.gateway.record(self.service, self.op, self.target, request.order, result, detail)
        return request

    def _answer(self, request: ClientRequest, inv: "Invocation", detail: RequestDetail) -> str:
        """What the client got (status and body, also written into ``detail``); returns the record's result."""
        limit = self.front_limit()
        if inv.outcome is None and (limit is None or self.config.client_timeout < limit):
            return CLIENT_TIMEOUT  # the client stopped waiting first: whatever the front says goes unread
        if inv.outcome is None:
            answer = self.gave_up()
        elif inv.outcome != Outcome.OK:
            answer = self.failed(inv)
        else:
            mapped = self.answered(inv.result)
            if mapped is None:
                answer = self.malformed()
            else:
                request.status, request.body = mapped
                detail["status"] = mapped[0]
                detail["statusCode"] = mapped[0]
                return AWS_OK
        request.status, request.body = answer["status"], {"message": answer["message"]}
        detail.update(cast(RequestDetail, answer))  # its keys are RequestDetail's base's: merged in their order
        return f"HTTP {answer['status']}"

    def _describe(self, mine: list[ClientRequest]) -> str:
        last = mine[-1]
        what = last.order if "," not in last.order else f"the cart {last.order}"
        tries = f"{len(mine)} request{'s' if len(mine) != 1 else ''} ({', '.join(r.invocation.id for r in mine)})"
        if last.status is None:
            return (f"client for {what}: gave up after {tries}, the last one timing out on its side. "
                    f"Every one of those invocations kept running.")
        if last.status >= 500:
            ran_on = any(r.invocation.outcome in (None, Outcome.OK) for r in mine)  # still running, or done
            return (f"client for {what}: gave up after {tries}; the last answer was {last.status} "
                    f"{REASONS.get(last.status, '')}. The client thinks the order failed"
                    + (f", yet {self.front} stopped only its own waiting: the invocations ran on." if ran_on
                       else "; each request was a new invocation that did the work again."))
        return f"client for {what}: got {last.status} after {tries}."


def status_code(result: Any) -> int | None:
    """The ``statusCode`` of a proxy-style response, or None if ``result`` has none a front could use."""
    if not isinstance(result, dict):
        return None
    status = result.get("statusCode")
    if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
        return None
    return status
