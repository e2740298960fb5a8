"""cfn-custom-resource-retry: a custom resource's Create is retried, and an unanswered one rolls the stack back.

CloudFormation invokes a custom resource's function asynchronously
(https://docs.aws.amazon.com/lambda/latest/dg/services-cloudformation.html), so Lambda's async queue retries a
function error with the same event: the same ``RequestId``, a minute later
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html). The stack's
``Custom::OrdersImport`` resource imports two orders and emails each customer. On the first attempt the email
provider fails on the second order, after the first order's email went out; the retry runs the whole Create
again. The naive handler emails the first customer twice, and since it never answers CloudFormation, the stack
waits ``ServiceTimeout`` (an hour by default), fails, and rolls back with a Delete that carries the same
properties: the naive handler emails both customers once more, and the unanswered Delete ends the stack in
ROLLBACK_FAILED an hour later (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref.html).
No response ever named a physical id, so the Delete names one CloudFormation made up, and what the Create's
attempts did is orphaned: under no id the stack knows (the ``orphaned`` record, ∅ on the timeline).

The idempotent example keys each order on its id, as everywhere: the retry replays the first order and sends
only the second email; it answers CloudFormation SUCCESS with a physical id of its own making, the same on
every attempt, and answers a Delete without emailing anyone.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.faults import ProviderFault
from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group
from ..sources.async_invoke import AsyncConfig
from ..sources.base import run_sources
from ..sources.cloudformation import CustomResourceConfig, CustomResourceSource
from ..vocab import Effect
from ..world import Sandbox
from .base import Scenario, ScenarioSettings


@dataclass(frozen=True)
class CfnCustomResourceRetrySettings(ScenarioSettings):
    stack: CustomResourceConfig = group(CustomResourceConfig)
    async_queue: AsyncConfig = group(AsyncConfig)


class CfnCustomResourceRetry(Scenario[CfnCustomResourceRetrySettings]):
    name = "cfn-custom-resource-retry"
    kind = "duplicate source"
    source = "CloudFormation"
    headline = ("a custom resource's failed Create is retried whole by Lambda's async queue; a Create never "
                "answered rolls the stack back with a Delete")
    summary = ("A stack's custom resource imports two orders and emails each customer. CloudFormation invokes the "
               "function asynchronously; the email provider fails on the second order after the first email went "
               "out, so the function raises and Lambda retries the whole Create a minute later: the first customer "
               "is emailed again. A handler that never answers CloudFormation leaves the stack waiting an hour, "
               "then the rollback sends a Delete with the same orders.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: CfnCustomResourceRetrySettings) -> None:
        orders = make_orders(2, sb.seed)
        sb.faults.add(ProviderFault(Effect.EMAIL, orders[1]["orderId"], fail=1, calls=1))
        stack = CustomResourceSource(sb, fn, cfg.stack, cfg.async_queue)
        sb.note(f"CloudFormation: creates stack with {stack.function.config.name} behind Custom::OrdersImport; "
                f"ServiceTimeout {stack.config.service_timeout} s")
        stack.create_stack(orders)
        run_sources(sb, stack)
