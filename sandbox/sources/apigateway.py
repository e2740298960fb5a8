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

The client in front of it, and the record of each request, are ``http_front``'s.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..aws.event_shapes import ApiGatewayProxyEvent
from ..events import Cart, Order, apigateway_event
from ..settings import param
from ..vocab import SourceKind
from .http_front import ClientConfig, FrontAnswer, HttpClientSource, status_code

if TYPE_CHECKING:
    from ..runtime.functions import Invocation

DOC_LIMITS = "https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html"
DOC_ERRORS = "https://docs.aws.amazon.com/lambda/latest/dg/services-apigateway-errors.html"

#: The history's words for the client's requests (the IAM action for calling an API is execute-api:Invoke).
SERVICE, OP, API_NAME = "execute-api", "Invoke", "orders-api"
#: API Gateway's own answers (supported-gateway-response-types.html, services-apigateway-errors.html).
GATEWAY_TIMEOUT: FrontAnswer = {"status": 504, "gatewayResponse": "INTEGRATION_TIMEOUT",
                                   "message": "Endpoint request timed out"}
BAD_GATEWAY: FrontAnswer = {"status": 502, "message": "Internal server error"}


@dataclass(frozen=True)
class ApiGatewayConfig(ClientConfig):
    """API Gateway's integration timeout, and the retry rules of the client in front of it."""

    integration_timeout: float = param(
        29.0, "seconds API Gateway waits for the function before it answers the client 504 (29 s: the default, and "
        "the most except for Regional and private REST APIs that ask for more)", DOC_LIMITS, 0.05, 900)
    client_timeout: float = param(
        60.0, "seconds the client waits for an answer before it gives up on a request (longer than the integration "
              "timeout, so it hears API Gateway's 504)", None, 0.05, 900)


class ApiGatewaySource(HttpClientSource):
    """An HTTP client that POSTs orders to ``/orders`` through API Gateway, retrying as ``config`` says."""

    kind = SourceKind.APIGATEWAY
    service, op, target, front = SERVICE, OP, API_NAME, "API Gateway"
    config: ApiGatewayConfig

    def make_config(self, **settings: Any) -> ApiGatewayConfig:
        return ApiGatewayConfig(**settings)

    def event(self, body: Order | Cart, request_id: str, key: str | None) -> ApiGatewayProxyEvent:
        return apigateway_event(body, request_id=request_id, idempotency_key=key)

    def front_limit(self) -> float:
        return float(self.config.integration_timeout)

    def gave_up(self) -> FrontAnswer:
        return GATEWAY_TIMEOUT

    def failed(self, inv: "Invocation") -> FrontAnswer:
        return {**BAD_GATEWAY, "function_error": "Unhandled"}

    def answered(self, result: Any) -> tuple[int, Any] | None:
        status = status_code(result)
        return None if status is None else (status, result.get("body"))

    def malformed(self) -> FrontAnswer:
        return {**BAD_GATEWAY, "malformed": True}  # not a proxy response: API Gateway cannot map it

