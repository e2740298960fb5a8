"""sync-sdk-retry: a slow synchronous invoke that the caller's SDK sends again while it still runs.

Lambda does not retry synchronous invokes
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-sync.html,
https://docs.aws.amazon.com/lambda/latest/dg/invocation-retries.html), but the caller's
boto3 client does: when the function is slower than the client's read_timeout, botocore
raises ReadTimeoutError and its retry handler sends the same Invoke again. The first
invocation keeps running, so the attempts overlap.

With the defaults (legacy mode, botocore's 60 s read timeout, an email provider that takes
75 s) every attempt times out and every invocation finishes its work. The naive handler sends
one email per attempt: 5 in legacy mode, 3 in standard and adaptive mode, 1 with
``total_max_attempts=1``. The idempotent handler claims the order in the first invocation.
The second attempt finds the claim IN_PROGRESS and answers 409 at once. To botocore that is a
successful Invoke (HTTP 200, with the 409 inside the payload), so it stops retrying.

What the caller ends up seeing differs too. With the naive handler, the SDK gives up with
ReadTimeoutError after its last attempt. The caller believes the order failed, yet every
attempt sent an email. With the idempotent handler, the caller gets ``statusCode: 409`` about
60 s in, while the first invocation is still finishing. It should read that as "accepted,
still in progress". If it asks again once the work is done, run_once replays the stored result.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group
from ..sources.base import run_sources
from ..sources.sync_invoke import DEFAULT_ATTEMPTS, CallerConfig, SyncInvokeSource
from ..world import Sandbox
from .base import RunConfig, Scenario, ScenarioSettings


@dataclass(frozen=True)
class SyncSdkRetrySettings(ScenarioSettings):
    caller: CallerConfig = group(CallerConfig)
    # The function must be able to finish the slow work, so this scenario raises two of the
    # world's defaults. Lambda's own default timeout (3 s) is named in the help text.
    run: RunConfig = group(
        RunConfig,
        function_timeout=(120.0, "the function's timeout in seconds (Lambda's default is 3 s; this scenario uses "
                                 "120 s so the slow handler can finish)"),
        email_seconds=(75.0, "how long the email provider takes per call (virtual seconds); this scenario makes it "
                             "slower than the caller's read_timeout"))


class SyncSdkRetry(Scenario[SyncSdkRetrySettings]):
    name = "sync-sdk-retry"
    kind = "duplicate source"
    source = "sync invoke (SDK)"
    headline = ("the caller's SDK retries a slow synchronous invoke (botocore's own retry logic: 3 attempts in "
                "standard mode, 5 in legacy)")
    summary = ("A client calls the order function synchronously with boto3's Lambda Invoke, passing an API "
               "Gateway POST /orders event. Lambda never retries a synchronous invoke, but the email provider is "
               "slow, so the client's read timeout expires first and its SDK sends the same request again. The "
               "first invocation is still running when the retry starts.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: SyncSdkRetrySettings) -> None:
        caller = cfg.caller
        sb.note(f"caller: boto3 Lambda client, retries={caller.retries()}, read_timeout={caller.read_timeout:g} s; "
                f"up to {caller.expected_attempts()} attempts if every read times out "
                f"(mode default: {DEFAULT_ATTEMPTS[caller.retry_mode]})")
        source = SyncInvokeSource(sb, fn, caller)
        source.call(make_orders(1, sb.seed)[0])
        run_sources(sb, source)
