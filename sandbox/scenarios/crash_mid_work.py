"""crash-mid-work: an invocation dies between the charge and the email, holding the claim.

The async retry comes a minute later (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html),
long after a lock sized to the function's remaining time (3 s by default) has run out.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.faults import CrashPlan
from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group, param
from ..sources.async_invoke import AsyncConfig, AsyncInvokeSource, run_until_idle
from ..vocab import Effect
from ..world import Sandbox
from .base import Scenario, ScenarioSettings


@dataclass(frozen=True)
class CrashMidWorkSettings(ScenarioSettings):
    orders: int = param(1, "how many card orders the one event carries (the crash hits the first)", None, 1, 50)
    crash_after: str = param(
        Effect.CHARGE.value,
        "which effect the first invocation dies right after: 'charge' (default), or 'email', which lands in "
        "the remaining window that no claim can close", None,
        choices=(Effect.CHARGE.value, Effect.EMAIL.value))
    async_queue: AsyncConfig = group(AsyncConfig)


class CrashMidWork(Scenario[CrashMidWorkSettings]):
    name = "crash-mid-work"
    kind = "run_once"
    source = "async invoke"
    headline = "a crash between the charge and the email while holding the lock"
    summary = ("An order pays by card, so it is owed a charge and then an email. The first invocation charges the "
               "card and dies before the email, while it holds the idempotency claim. Lambda retries the event a "
               "minute later: the claim must have expired by then so the retry can finish the order, and the charge "
               "must not happen twice.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: CrashMidWorkSettings) -> None:
        source = AsyncInvokeSource(sb, fn, cfg.async_queue)
        orders = make_orders(cfg.orders, sb.seed, payment="card")
        # Only the first attempt crashes; the execution environment is gone, so nothing in the
        # handler gets to clean up its claim.
        source.invoke(sb.order_event(orders),
                      crash=CrashPlan(after_effect=cfg.crash_after))
        run_until_idle(sb, source)
