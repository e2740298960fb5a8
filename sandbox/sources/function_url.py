"""A Lambda function URL, and the HTTP client that calls it.

What this model keeps from AWS:

- Lambda maps each request to an event, runs the function, and maps its response back to the client
  (https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html): a synchronous invocation per
  request, and for a synchronous invocation "Lambda does not automatically retry"
  (https://docs.aws.amazon.com/lambda/latest/dg/invocation-retries.html).
- There is no cap like API Gateway's 29 s: the function may run to its own timeout, up to 900 s
  (https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html). AWS's operator guide
  warns that "synchronous callers may have shorter timeouts"; so may the client. Its HTTP library's
  read timeout is what usually gives up first, and the invocation runs on: AWS says so outright for a
  streamed response ("streamed responses are not interrupted or stopped when the invoking client
  connection is broken", configuration-response-streaming.html; response streaming needs a Node.js
  managed runtime or a custom one, so a Python handler here answers buffered), and gives no sentence
  for a buffered one, where the sandbox lets it run on too.
- The event is API Gateway's payload format version 2.0, with a new ``requestContext.requestId`` for
  every request (``events.function_url_event``).
- A function error or timeout reaches the client as a 5xx: AWS's metrics page counts "function errors
  and timeouts" in ``Url5xxCount`` (urls-monitoring.html) and names no status. The sandbox answers 502
  Bad Gateway, as users report; the body is its own.
- A response with no ``statusCode`` is valid: "If your function returns valid JSON and doesn't return a
  statusCode, Lambda assumes" status 200 with the response as body (urls-invocation.html). A
  ``statusCode`` that is no HTTP status is a response Lambda cannot map: a 502 too.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..aws.event_shapes import FunctionUrlEvent
from ..events import Cart, Order, function_url_event
from ..settings import param
from ..vocab import SourceKind
from .http_front import ClientConfig, FrontAnswer, HttpClientSource, status_code

if TYPE_CHECKING:
    from ..runtime.functions import Invocation

DOC_URLS = "https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html"
DOC_MONITORING = "https://docs.aws.amazon.com/lambda/latest/dg/urls-monitoring.html"
#: The history's words for the client's requests (the IAM action for calling a function URL).
SERVICE, OP, URL_NAME = "lambda", "InvokeFunctionUrl", "orders-handler URL"
#: What the client gets when the function failed or timed out: a 5xx (urls-monitoring.html names no status).
FUNCTION_FAILED: FrontAnswer = {"status": 502, "message": "Internal Server Error"}


@dataclass(frozen=True)
class FunctionUrlConfig(ClientConfig):
    """The retry rules of the client that calls the function URL (the URL itself waits for the function)."""

    client_timeout: float = param(
        30.0, "seconds the client's HTTP library waits for an answer before it gives up on a request (its read "
              "timeout; the function URL itself waits as long as the function runs)", DOC_URLS, 0.05, 900)


class FunctionUrlSource(HttpClientSource):
    """An HTTP client that POSTs orders to the function's URL, retrying as ``config`` says."""

    kind = SourceKind.FUNCTION_URL
    service, op, target, front = SERVICE, OP, URL_NAME, "the function URL"
    config: FunctionUrlConfig

    def make_config(self, **settings: Any) -> FunctionUrlConfig:
        return FunctionUrlConfig(**settings)

    def event(self, body: Order | Cart, request_id: str, key: str | None) -> FunctionUrlEvent:
        return function_url_event(body, request_id, int(self.world.clock.now() * 1000), idempotency_key=key,
                                  path=self.path)

    def failed(self, inv: "Invocation") -> FrontAnswer:
        return {**FUNCTION_FAILED, "function_error": "Unhandled"}

    def answered(self, result: Any) -> tuple[int, Any] | None:
        if not isinstance(result, dict) or "statusCode" not in result:
            return 200, result  # valid JSON without a statusCode: Lambda infers 200, the response as body
        status = status_code(result)
        return None if status is None else (status, result.get("body"))

    def malformed(self) -> FrontAnswer:
        return {**FUNCTION_FAILED, "malformed": True}
