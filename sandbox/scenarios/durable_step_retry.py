"""durable-step-retry: a step that fails is retried, and runs again from its start: steps are at least once.

AWS semantics:

- "Steps have at-least-once execution semantics by default—during replay, the SDK returns checkpointed results
  without re-executing completed steps, but your business logic must be idempotent to handle potential retries
  before completion" (https://docs.aws.amazon.com/lambda/latest/dg/durable-execution-idempotency.html).
- "Exception in step with remaining retry attempts: The SDK creates a checkpoint for the retry and suspends the
  function. On the next invocation, the step retries with the configured backoff delay"
  (https://docs.aws.amazon.com/lambda/latest/dg/durable-execution-sdk-retries.html). The Python SDK's default
  strategy (``RetryPresets.default``) makes 6 attempts, 5 s growing to 60 s apart, with jitter drawn from the
  environment's seeded ``random``.

An application invokes the function asynchronously (``Invoke``, ``InvocationType='Event'``) with one event carrying
two orders, naming the execution after the first. The email provider refuses the second order's email once,
sending nothing. ``examples/durable_one_step.py`` does all the work in one step: its retry emails the first order
again. ``examples/durable_steps.py`` gives each order its own step: the first order's step is replayed from its
checkpoint. A plain handler runs as a plain function: Lambda's async queue retries the whole event a minute later.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.faults import ProviderFault
from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group, param
from ..sources.async_invoke import AsyncConfig, AsyncInvokeCaller, AsyncInvokeSource
from ..sources.base import run_sources
from ..sources.durable import DurableConfig
from ..sources.sync_invoke import CallerConfig
from ..vocab import Effect
from ..world import Sandbox
from .base import Scenario, ScenarioSettings, payment_choice, payment_of
from .durable_common import deploy, durable_mode


@dataclass(frozen=True)
class DurableStepRetrySettings(ScenarioSettings):
    orders: int = param(2, "how many orders the one event carries; the last one's email fails", None, 2, 20)
    provider_failures: int = param(
        1, "how many calls for the last order the email provider refuses (nothing "
        "is sent); 6 or more uses up the SDK's default 6 attempts and the execution fails", None, 0, 10)
    payment: str = payment_choice()
    durable: str = durable_mode()
    execution: DurableConfig = group(DurableConfig)
    async_queue: AsyncConfig = group(AsyncConfig)


class DurableStepRetry(Scenario[DurableStepRetrySettings]):
    name = "durable-step-retry"
    kind = "duplicate source"
    source = "durable function"
    headline = "a durable step that fails is retried from its start: the effects it had made run again"
    summary = ("One async Invoke, its execution named, carries two orders. The email provider refuses the second "
               "order's email once. In a durable function the step that was sending it fails, the SDK checkpoints a "
               "retry and suspends, and the next invocation runs the step again from its start: a step that emailed "
               "the first order too emails it again. One step per order replays the first from its checkpoint.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: DurableStepRetrySettings) -> None:
        orders = make_orders(cfg.orders, sb.seed, payment=payment_of(cfg.payment))
        if cfg.provider_failures:
            sb.faults.add(ProviderFault(Effect.EMAIL, orders[-1]["orderId"], fail=cfg.provider_failures))
        service = deploy(sb, fn, cfg.durable, cfg.execution)
        queue = AsyncInvokeSource(sb, fn, cfg.async_queue)
        caller = AsyncInvokeCaller(sb, fn, CallerConfig(), queue=queue,
                                   name_of=lambda order: f"checkout-{order['orderId']}")
        caller.call_many(orders)
        run_sources(sb, caller, *([service] if service is not None else []))
