"""async-invoke-resend: an async Invoke took effect, its 202 was lost, and the caller's SDK sent it again.

AWS semantics:

- ``Invoke(InvocationType='Event')``: "Lambda places the event in a queue and returns a success
  response without additional information"
  (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html): HTTP 202, no payload
  (``StatusCode`` in https://docs.aws.amazon.com/lambda/latest/dg/API_Invoke.html).
- Invoke takes no idempotency token (API_Invoke.html: its one name-based check,
  ``DurableExecutionName``, is for durable functions only). Lambda cannot tell a retried
  request from a new one, and queues each.
- botocore retries a read timeout in every retry mode; a plain ``boto3.client("lambda")`` is
  in standard mode, 3 attempts in all, with a 60 s read timeout
  (https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html,
  https://botocore.amazonaws.com/v1/documentation/api/latest/reference/config.html).

So when the 202 is lost on its way back (the gateway's ``timeout-applied`` fault on
``lambda.Invoke``), the caller's read times out 60 s later, botocore sends the Invoke again,
and Lambda queues a second event: two events, two invocations, two request ids, one order.
Nothing failed as far as Lambda can tell, so its own retries play no part. A handler keyed on
``aws_request_id`` sends twice; the SDK re-sent the very same payload, so a key the caller put
in it (the order id, or the event's own ``id`` here) catches the copy.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.faults import AwsFault
from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group, param
from ..sources.async_invoke import AsyncConfig, AsyncInvokeCaller, AsyncInvokeSource
from ..sources.base import run_sources
from ..sources.sync_invoke import DOC_INVOKE, CallerConfig
from ..world import Sandbox
from .base import Scenario, ScenarioSettings


@dataclass(frozen=True)
class AsyncInvokeResendSettings(ScenarioSettings):
    lost_answers: int = param(
        1, "how many of the caller's Invoke attempts Lambda queues while the 202 never "
        "reaches the caller (each a read timeout botocore retries while it has attempts left); 0: none",
        DOC_INVOKE, 0, 21)
    caller: CallerConfig = group(CallerConfig)
    async_queue: AsyncConfig = group(AsyncConfig)


class AsyncInvokeResend(Scenario[AsyncInvokeResendSettings]):
    name = "async-invoke-resend"
    kind = "duplicate source"
    source = "async invoke"
    headline = "the caller's SDK re-sends an async Invoke whose 202 was lost: a second queued event, new request id"
    summary = ("An application invokes the order function asynchronously with boto3's Lambda Invoke "
               "(InvocationType='Event'). Lambda queues the event and answers 202, but the answer never reaches the "
               "caller: its SDK waits out the 60 s read timeout and sends the Invoke again. Invoke takes no "
               "idempotency token, so Lambda queues a second event, and the function runs twice under two request "
               "ids.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: AsyncInvokeResendSettings) -> None:
        caller, lost = cfg.caller, cfg.lost_answers
        if lost:
            # Lambda queues the event, then the caller's read times out (after its read_timeout).
            sb.faults.add(AwsFault("timeout-applied", "lambda", "Invoke", target=fn.config.name, times=lost))
        sb.note(f"caller: boto3 Lambda client, Invoke(InvocationType='Event'), retries={caller.retries()}, "
                f"read_timeout={caller.read_timeout:g} s; up to {caller.expected_attempts()} attempts; "
                + ("no 202 is lost" if not lost else "the first attempt's 202 is lost" if lost == 1
                   else f"the first {lost} attempts' 202s are lost"))
        queue = AsyncInvokeSource(sb, fn, cfg.async_queue)
        source = AsyncInvokeCaller(sb, fn, caller, queue=queue)
        source.call(make_orders(1, sb.seed)[0])
        run_sources(sb, source)
