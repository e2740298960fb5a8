"""An Application Load Balancer with a Lambda target, and the HTTP client in front of it.

What this model keeps from AWS:

- "Elastic Load Balancing invokes your Lambda function synchronously with an event that contains the
  request body and metadata" (https://docs.aws.amazon.com/lambda/latest/dg/services-alb.html), once per
  request. AWS says nothing of the load balancer retrying an invocation, and for a synchronous
  invocation "Lambda does not automatically retry" (invocation-retries.html): the client decides.
- "The load balancer waits until your Lambda function responds or times out"
  (https://docs.aws.amazon.com/elasticloadbalancing/latest/application/lambda-functions.html): no cap
  of its own, so the function's timeout decides. (AWS does not say whether the listener's idle timeout,
  60 s by default, applies to a Lambda target; the sandbox applies none.)
- What the client gets (load-balancer-troubleshooting.html): 502 when the target "is a Lambda function
  that did not respond before its configured timeout was reached", and 502 when "the target response
  is malformed". An unhandled exception is logged as ``LambdaUnhandled`` (load-balancer-access-logs.html)
  with no status named; the sandbox answers 502 for it too, as users report. A response must carry a
  ``statusCode``; AWS also asks for ``statusDescription``, ``isBase64Encoded`` and ``headers``, which the
  sandbox does not check.
- The event has no request id (``events.alb_event``): each request's only id is its ``X-Amzn-Trace-Id``
  header, new on every retry.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..aws.event_shapes import AlbEvent
from ..events import Cart, Order, alb_event, trace_header
from ..settings import param
from ..vocab import Outcome, SourceKind
from .http_front import ClientConfig, FrontAnswer, HttpClientSource, status_code

if TYPE_CHECKING:
    from ..runtime.functions import Invocation

DOC_ALB = "https://docs.aws.amazon.com/elasticloadbalancing/latest/application/lambda-functions.html"
DOC_TROUBLESHOOTING = ("https://docs.aws.amazon.com/elasticloadbalancing/latest/application/"
                       "load-balancer-troubleshooting.html")
#: The history's words for the client's requests: the load balancer forwarding one to its Lambda target.
SERVICE, OP, ALB_NAME = "elasticloadbalancing", "Invoke", "orders-alb"
#: What the client gets from the load balancer (load-balancer-troubleshooting.html, load-balancer-access-logs.html).
TIMED_OUT: FrontAnswer = {"status": 502, "message": "Bad Gateway", "reason": "the Lambda function timed out"}
UNHANDLED: FrontAnswer = {"status": 502, "message": "Bad Gateway", "reason": "LambdaUnhandled"}
INVALID: FrontAnswer = {"status": 502, "message": "Bad Gateway", "reason": "LambdaInvalidResponse"}


@dataclass(frozen=True)
class AlbConfig(ClientConfig):
    """The retry rules of the client in front of the load balancer (which waits for the function)."""

    client_timeout: float = param(
        120.0, "seconds the client waits for an answer before it gives up on a request (longer than the function's "
               "timeout, so it hears the load balancer's 502)", DOC_ALB, 0.05, 900)


class AlbSource(HttpClientSource):
    """An HTTP client that POSTs orders (or a cart of them) to ``/checkout`` through a load balancer."""

    kind = SourceKind.ALB
    service, op, target, front, path = SERVICE, OP, ALB_NAME, "the load balancer", "/checkout"
    config: AlbConfig

    def make_config(self, **settings: Any) -> AlbConfig:
        return AlbConfig(**settings)

    def event(self, body: Order | Cart, request_id: str, key: str | None) -> AlbEvent:
        return alb_event(body, trace_header(self.world.clock.now(), request_id), idempotency_key=key, path=self.path)

    def failed(self, inv: "Invocation") -> FrontAnswer:
        return TIMED_OUT if inv.outcome == Outcome.TIMEOUT else UNHANDLED

    def answered(self, result: Any) -> tuple[int, Any] | None:
        status = status_code(result)
        return None if status is None else (status, result.get("body"))

    def malformed(self) -> FrontAnswer:
        return INVALID
