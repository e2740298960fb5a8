"""function-url-client-retry: no 29 s cap behind a function URL, but the client's own timeout still gives up.

A function URL waits for the function as long as it runs, up to the function's timeout
(https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html): the cap that made API Gateway
answer 504 at 29 s is gone. What remains is the client: an HTTP library's read timeout, here 30 s,
is shorter than a 35 s email. The client gives up and sends the request again; Lambda retries
nothing itself (https://docs.aws.amazon.com/lambda/latest/dg/invocation-retries.html), but a new
request is a new invocation with a new ``requestContext.requestId``, and the first one runs on.

With the defaults the naive handler sends the email three times and the client still believes the
order failed. The idempotent example keys on the ``Idempotency-Key`` header, the same on every
retry: the first retry finds the key in progress and gets a 409, which the client does not retry.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group
from ..sources.base import run_sources
from ..sources.function_url import FunctionUrlConfig, FunctionUrlSource
from ..world import Sandbox
from .base import RunConfig, Scenario, ScenarioSettings


@dataclass(frozen=True)
class FunctionUrlClientRetrySettings(ScenarioSettings):
    client: FunctionUrlConfig = group(FunctionUrlConfig)
    run: RunConfig = group(
        RunConfig,
        function_timeout=(60.0, "the function's timeout in seconds (Lambda's default is 3 s; this scenario uses 60 s, "
                                "longer than the client waits, so the function outlives the request)"),
        email_seconds=(35.0, "how long the email provider takes per call (virtual seconds); this scenario makes it "
                             "slower than the client's read timeout"))


class FunctionUrlClientRetry(Scenario[FunctionUrlClientRetrySettings]):
    name = "function-url-client-retry"
    kind = "duplicate source"
    source = "function URL"
    headline = ("a function URL has no 29 s cap, but the client's own read timeout gives up first and it retries: "
                "a new invocation while the first runs on")
    summary = ("A client POSTs an order to the function's URL. The email provider takes 35 s, and the function's "
               "timeout is 60 s, so the URL would wait; but the client's HTTP library gives up after 30 s and sends "
               "the request again, a new invocation with a new requestId. The first invocation runs on, and so does "
               "each retry: the naive handler sends the email three times.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: FunctionUrlClientRetrySettings) -> None:
        client = cfg.client
        sb.note(f"function URL: waits as long as the function runs (its timeout: {cfg.run.function_timeout:g} s); "
                f"client: read timeout {client.client_timeout:g} s, up to {client.client_retries} retries after a 5xx "
                f"or its own timeout (backoff {client.client_backoff:g} s, doubling), Idempotency-Key header "
                f"{'on' if client.idempotency_key else 'off'}")
        source = FunctionUrlSource(sb, fn, client)
        source.call(make_orders(1, sb.seed)[0])
        run_sources(sb, source)
