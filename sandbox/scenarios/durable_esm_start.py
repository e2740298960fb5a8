"""durable-esm-start: an event source mapping starts a new durable execution for every batch, retries included.

AWS semantics:

- "Lambda event source mappings (ESM) don't support idempotency at launch. Therefore, each invocation (including
  retries) starts a new durable execution. To ensure idempotent execution with event source mappings, either
  implement idempotency logic in your function code such as with Powertools for AWS Lambda or use a regular Lambda
  function as proxy (dispatcher) to invoke a durable function with an idempotency key (execution name parameter)"
  (https://docs.aws.amazon.com/lambda/latest/dg/durable-execution-idempotency.html).
- "Event source mappings invoke durable functions synchronously, waiting for the complete durable execution to
  finish before processing the next batch or marking records as processed"; at most 15 minutes
  (https://docs.aws.amazon.com/lambda/latest/dg/durable-invoking-esm.html).
- A failed batch comes back whole after the visibility timeout (``sqs-batch-failure``).

Three orders reach a durable function in one SQS batch. The email provider refuses the last order's email six times,
as many as the Python SDK's default step attempts (``RetryPresets.default``), so its step fails for good, the
handler raises and the execution fails. The mapping's batch fails, and after the visibility timeout (300 s here: the
mapping waits for the whole execution, whose step retries take up to about two minutes) SQS hands it out again: a
new execution, with no checkpoint of the first, so ``examples/durable_steps.py`` (one step per order) emails the
first two orders again. ``examples/durable_idempotent.py`` runs ``run_once`` in each step, keyed by the order, and
holds. A plain handler runs as a plain function: the batch comes back once per failure.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.faults import ProviderFault
from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group, param
from ..sources.base import Source
from ..sources.durable import DurableConfig
from ..sources.sqs import SqsQueue
from ..vocab import Effect
from ..world import Sandbox
from .base import payment_of
from .durable_common import deploy, durable_mode
from .sqs_batch_failure import SqsRun, SqsScenario, SqsSettings, run_sqs


@dataclass(frozen=True)
class DurableEsmStartSettings(SqsSettings, defaults={"visibility_timeout": 300, "max_receive_count": 10}):
    failures: int = param(
        6, "how many calls for the last order's email the provider refuses (nothing is sent); 6 "
        "uses up the SDK's default step attempts (RetryPresets.default: 6 attempts, 5 s growing to 60 s "
        "apart), so the execution fails; fewer, and a step retry succeeds inside the one execution", None,
        0, 20)
    durable: str = durable_mode()
    execution: DurableConfig = group(DurableConfig)


class DurableEsmStart(SqsScenario[DurableEsmStartSettings]):
    name = "durable-esm-start"
    kind = "duplicate source"
    source = "durable function"
    headline = "an SQS mapping starts a new durable execution for every batch, its retries too: steps do not carry over"
    summary = ("Three orders reach a durable function in one SQS batch. The last order's email fails six times, "
               "using up its step's attempts, so the execution fails and the batch comes back after the 300 s "
               "visibility timeout. The mapping starts a second execution, which knows nothing of the first one's "
               "steps: one step per order emails the first two orders again. run_once keyed by the order holds.")

    def deliver(self, sb: Sandbox, fn: LambdaFunction, cfg: DurableEsmStartSettings) -> SqsRun:
        orders = make_orders(cfg.orders, sb.seed, payment=payment_of(cfg.payment))
        if cfg.failures:
            sb.faults.add(ProviderFault(Effect.EMAIL, orders[-1]["orderId"], fail=cfg.failures))
        service = deploy(sb, fn, cfg.durable, cfg.execution)
        # A mapping only starts its target: a durable function takes the plain function's place there.
        target: Any = service.as_target() if service is not None else fn
        extra: Callable[[SqsQueue], list[Source]] | None = (lambda queue: [service]) if service is not None else None
        return run_sqs(sb, target, cfg, [(0.0, order) for order in orders], backlog=len(orders), extra=extra)
