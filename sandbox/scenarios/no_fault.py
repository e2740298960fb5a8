"""no-fault: the control. Each order is delivered once, nothing fails."""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ..events import Order, make_orders
from ..runtime.functions import LambdaFunction
from ..settings import param
from ..vocab import Effect, SourceKind
from ..world import Sandbox
from .base import Scenario, ScenarioSettings


@dataclass(frozen=True)
class NoFaultSettings(ScenarioSettings):
    orders: int = param(3, "how many orders arrive", None, 1, 100_000)
    interval: float = param(1.0, "virtual seconds between two orders", None, 0, 3600)
    repeat_customer: bool = param(False, "the same customer orders the same thing again and again: every order "
                                  "has the first one's email and amount, and an orderId of its own", None)


class NoFault(Scenario[NoFaultSettings]):
    name = "no-fault"
    kind = "control"
    source = "direct invoke"
    headline = "nothing: the control, every order delivered once"
    summary = ("Orders arrive one by one as EventBridge events and each is delivered exactly once, with no "
               "faults. Any handler that sends one email per order is valid here.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: NoFaultSettings) -> None:
        orders = make_orders(cfg.orders, sb.seed)
        if cfg.repeat_customer:
            orders = [{**order, "email": orders[0]["email"], "amount": orders[0]["amount"]} for order in orders]
        for i, order in enumerate(orders):
            sb.scheduler.call_at(i * cfg.interval, functools.partial(self._deliver, sb, fn, order))
        sb.run()

    @staticmethod
    def _deliver(sb: Sandbox, fn: LambdaFunction, order: Order) -> None:
        sb.accept(order, expects=(Effect.EMAIL,), source=SourceKind.DIRECT)
        fn.start(sb.order_event([order]), source=SourceKind.DIRECT, keys=[order["orderId"]])
