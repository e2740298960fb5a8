"""apigw-client-retry: API Gateway gives up at 29 s, the function runs on, and the client retries.

API Gateway invokes the function synchronously and never retries
(https://docs.aws.amazon.com/lambda/latest/dg/services-apigateway-errors.html). It waits at
most its integration timeout, 29 s by default
(https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html; Regional and private
REST APIs may raise it, for a lower account throttle quota:
https://aws.amazon.com/about-aws/whats-new/2024/06/amazon-api-gateway-integration-timeout-limit-29-seconds/),
then answers the client 504 while the function keeps running. The client's HTTP library
retries a 5xx: each retry is a new API Gateway request, with a new
``requestContext.requestId``, and a new invocation that does the work again.

With the defaults (an email provider that takes 35 s, a 60 s function timeout, a client that
retries twice after 1 s and then 2 s) every request gets a 504 and every invocation sends the
email: the naive handler sends it three times, and the client still believes the order
failed. The idempotent example keys on the client's ``Idempotency-Key`` header (the same on
every retry); the first retry finds the key IN_PROGRESS and gets a 409 at once, which the
client does not retry. A handler keyed on ``requestContext.requestId`` sees three new keys.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group
from ..sources.apigateway import ApiGatewayConfig, ApiGatewaySource
from ..sources.base import run_sources
from ..world import Sandbox
from .base import RunConfig, Scenario, ScenarioSettings


@dataclass(frozen=True)
class ApiGatewayClientRetrySettings(ScenarioSettings):
    client: ApiGatewayConfig = group(ApiGatewayConfig)
    # The work must outlast the integration timeout but not the function's own timeout.
    run: RunConfig = group(
        RunConfig,
        function_timeout=(60.0, "the function's timeout in seconds (Lambda's default is 3 s; this scenario uses 60 s, "
                                "longer than API Gateway's 29 s, so the function outlives the request)"),
        email_seconds=(35.0, "how long the email provider takes per call (virtual seconds); this scenario makes it "
                             "slower than API Gateway's integration timeout"))


class ApiGatewayClientRetry(Scenario[ApiGatewayClientRetrySettings]):
    name = "apigw-client-retry"
    kind = "duplicate source"
    source = "API Gateway"
    headline = ("API Gateway gives up at 29 s while the function runs on; the client retries, a new request with a "
                "new `requestId`")
    summary = ("A client POSTs an order to /orders through API Gateway. The email provider is slow, so after 29 s "
               "API Gateway answers 504 while the function is still working. The client retries the request: a new "
               "API Gateway request with a new requestId, so a second invocation starts, and then a third. Each "
               "finishes its work, so the naive handler sends the email three times.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: ApiGatewayClientRetrySettings) -> None:
        client = cfg.client
        sb.note(f"API Gateway: integration timeout {client.integration_timeout:g} s; client: up to "
                f"{client.client_retries} retries after a 5xx (backoff {client.client_backoff:g} s, doubling), "
                f"its own timeout {client.client_timeout:g} s, Idempotency-Key header "
                f"{'on' if client.idempotency_key else 'off'}")
        source = ApiGatewaySource(sb, fn, client)
        source.call(make_orders(1, sb.seed)[0])
        run_sources(sb, source)
