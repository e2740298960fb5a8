"""concurrent-claims: N identical deliveries arrive at the same instant, in separate containers."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TypeVar

from ..events import Order, make_orders
from ..runtime.functions import LambdaFunction
from ..settings import param
from ..vocab import Cause, SourceKind
from ..world import Sandbox
from .base import Scenario, ScenarioSettings


@dataclass(frozen=True)
class ConcurrentClaimsSettings(ScenarioSettings):
    copies: int = param(2, "how many identical deliveries arrive at once", None, 1, 16)
    orders: int = param(1, "how many distinct orders (each delivered `copies` times)", None, 1, 100_000)
    interval: float = param(5.0, "virtual seconds between two distinct orders", None, 0, 3600)
    stagger: float = param(0.0, "virtual seconds between two copies of the same order (0 = all at once; a copy "
                           "that arrives after the previous one finished reuses its warm container)", None, 0, 3600)


C = TypeVar("C", bound=ConcurrentClaimsSettings)


class Claims(Scenario[C]):
    """Identical deliveries side by side: this scenario, and those that add to its settings."""

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: C) -> None:
        for i, order in enumerate(make_orders(cfg.orders, sb.seed)):
            sb.scheduler.call_at(i * cfg.interval, functools.partial(self._deliver, sb, fn, order, cfg))
        sb.run()

    @staticmethod
    def _deliver(sb: Sandbox, fn: LambdaFunction, order: Order, cfg: ConcurrentClaimsSettings) -> None:
        sb.accept(order, source=SourceKind.ASYNC)
        event = sb.order_event([order])
        first: list[str] = []

        def copy(n: int) -> None:
            inv = fn.start(event, source=SourceKind.ASYNC,
                           cause=Cause.FIRST_DELIVERY if n == 0 else Cause.CONCURRENT_DUPLICATE,
                           prev=first[0] if first else None, keys=[order["orderId"]])
            first.append(inv.id)

        for n in range(cfg.copies):
            if cfg.stagger:
                sb.scheduler.call_later(n * cfg.stagger, functools.partial(copy, n))
            else:
                copy(n)


class ConcurrentClaims(Claims[ConcurrentClaimsSettings]):
    name = "concurrent-claims"
    kind = "duplicate source"
    source = "async invoke"
    headline = "identical deliveries run side by side in separate containers"
    summary = ("The same order event is delivered N times at the same moment (an async duplicate, a second "
               "SQS poller, a client retry), so N invocations run side by side in N containers. Only a "
               "claim that is one atomic conditional write lets exactly one of them send the email.")
