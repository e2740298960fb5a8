"""alb-client-retry: behind a load balancer the function's timeout decides, and the client retries the 502.

An Application Load Balancer "waits until your Lambda function responds or times out"
(https://docs.aws.amazon.com/elasticloadbalancing/latest/application/lambda-functions.html), and a
function that "did not respond before its configured timeout was reached" gets the client a 502
(load-balancer-troubleshooting.html). The client retries a 5xx; the load balancer retries nothing,
so each retry is a new request and a new invocation, with a new ``X-Amzn-Trace-Id`` and no request
id in the event at all.

The client checks out a cart of two orders. The first order's email goes out; the email provider
then hangs on the second (on its first call only), and the function is stopped at its 30 s timeout.
The client gets 502 and sends the cart again: the naive handler emails the first customer twice. The
idempotent example does a cart order by order, each under its own key, so the retry replays the
first order and sends only the second order's email.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.faults import ProviderFault
from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group
from ..sources.alb import AlbConfig, AlbSource
from ..sources.base import run_sources
from ..vocab import Effect
from ..world import Sandbox
from .base import RunConfig, Scenario, ScenarioSettings


@dataclass(frozen=True)
class AlbClientRetrySettings(ScenarioSettings):
    client: AlbConfig = group(AlbConfig)
    run: RunConfig = group(
        RunConfig,
        function_timeout=(30.0, "the function's timeout in seconds (Lambda's default is 3 s; the load balancer waits "
                                "this long and no longer)"),
        email_seconds=(2.0, "how long the email provider takes per call (virtual seconds); 2 s here, so each email "
                            "stands apart from its request's start on the timeline"))


class AlbClientRetry(Scenario[AlbClientRetrySettings]):
    name = "alb-client-retry"
    kind = "duplicate source"
    source = "load balancer"
    headline = ("behind a load balancer the function's timeout decides: a timeout after the first email is a 502, "
                "and the client sends the whole cart again")
    summary = ("A client checks out a cart of two orders through an Application Load Balancer. The first order's "
               "email goes out, then the email provider hangs on the second, and Lambda stops the function at its "
               "30 s timeout. The load balancer answers 502; the client retries the request, a new invocation, and "
               "the naive handler emails the first customer a second time.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: AlbClientRetrySettings) -> None:
        client = cfg.client
        sb.note(f"load balancer: waits until the function answers or times out ({cfg.run.function_timeout:g} s), then "
                f"502; client: up to {client.client_retries} retries after a 5xx or its own timeout "
                f"({client.client_timeout:g} s; backoff {client.client_backoff:g} s, doubling), Idempotency-Key "
                f"header {'on' if client.idempotency_key else 'off'}")
        cart = make_orders(2, sb.seed)
        sb.faults.add(ProviderFault(Effect.EMAIL, cart[1]["orderId"], hang=True, calls=1))
        source = AlbSource(sb, fn, client)
        source.call(cart)
        run_sources(sb, source)
