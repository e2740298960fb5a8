"""stream-batch-retry: a Kinesis batch fails on a later order, and Lambda retries all of it.

AWS semantics (https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html,
https://docs.aws.amazon.com/lambda/latest/dg/kinesis-on-failure-destination.html): when the
function returns an error for a stream batch, Lambda retries the same batch, from its first
record, until it succeeds or is discarded, and the shard waits meanwhile. The orders before
the failing one were already handled, so the retry hands them to the function again.

This module also holds what the stream scenarios (Kinesis and DynamoDB Streams) share: their
settings and their run.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.faults import ProviderFault
from ..errors import BadInput
from ..events import Order, make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group, param
from ..sources.shards import ShardMapping, ShardSource
from ..sources.stream import StreamMapping, StreamSource
from ..vocab import Effect
from ..world import Sandbox
from .base import Scenario, ScenarioSettings, payment_choice, payment_of


@dataclass(frozen=True)
class StreamSettings(ScenarioSettings):
    """The workload, fault and mapping settings every stream scenario offers; each redeclares ``mapping`` with
    its own mapping's type.

    The mapping is deployed with ReportBatchItemFailures unless a scenario says otherwise: AWS leaves
    it off until asked, but a handler that handles records one by one returns batchItemFailures, and
    with the setting off Lambda ignores them and deletes (or checkpoints past) the whole batch. A
    handler that raises fails the whole batch either way.
    """

    orders: int = param(4, "how many orders the producer writes to the stream (partition key = orderId)", None, 1,
                        5000)
    payment: str = payment_choice()
    interval: float = param(0.0, "virtual seconds between two orders (0: all arrive together, in one batch)",
                            None, 0, 3600)
    fail_order: int = param(3, "the position of the order whose email provider fails, sending nothing "
                            "(0: no fault); a later order, so earlier ones were already emailed", None, 0, 5000)
    failures: int = param(1, "how many calls to that order's email provider fail", None, 0, 1000)
    mapping: ShardMapping = group(StreamMapping, report_batch_item_failures=True)
    horizon: float = param(600.0, "virtual seconds after which the run stops; records still in the stream "
                           "are reported as pending (verdict unknown)", None, 1, 400 * 24 * 3600)


def stream_orders(sb: Sandbox, cfg: StreamSettings) -> list[Order]:
    """The scenario's orders, with the email fault ``fail_order`` and ``failures`` ask for."""
    orders = make_orders(cfg.orders, sb.seed, payment=payment_of(cfg.payment))
    if cfg.fail_order > len(orders):
        raise BadInput(f"fail_order {cfg.fail_order} is beyond the {len(orders)} orders; "
                       f"pick 1 to {len(orders)}, or 0 for no fault")
    last_arrival = (len(orders) - 1) * cfg.interval
    if last_arrival >= cfg.horizon:
        raise BadInput(f"the last order arrives at {last_arrival:g} s, not before the horizon "
                       f"{cfg.horizon:g} s; raise horizon or lower interval")
    if cfg.fail_order and cfg.failures:
        sb.faults.add(ProviderFault(Effect.EMAIL, orders[cfg.fail_order - 1]["orderId"], fail=cfg.failures))
    return orders


def run_stream(sb: Sandbox, source: ShardSource, orders: list[Order], put: Callable[[Order], Any], *,
               horizon: float, interval: float = 0.0, records: int | None = None) -> None:
    """Write ``orders`` with ``put``, ``interval`` apart, let the mapping read them, then finish.

    The run stops once the stream holds ``records`` records (one per order unless said) and
    every one is handled or discarded, or at the horizon.
    """
    expected = len(orders) if records is None else records
    # Timers fire before tasks wake at the same instant, so the orders due at t are in the
    # stream before any poll at t: the batches do not depend on the seed.
    for i, order in enumerate(orders):
        sb.scheduler.call_at(i * interval, functools.partial(put, order))
    sb.scheduler.call_at(0.0, source.start)
    sb.run(until=horizon,
           stop_when=lambda: sum(source.record_counts().values()) >= expected and source.idle())
    source.finish()


@dataclass(frozen=True)
class StreamBatchRetrySettings(StreamSettings):
    mapping: StreamMapping = group(StreamMapping, report_batch_item_failures=True)


class StreamBatchRetry(Scenario[StreamBatchRetrySettings]):
    name = "stream-batch-retry"
    kind = "duplicate source"
    source = "Kinesis"
    headline = "a failed Kinesis batch is retried from its first record"
    summary = ("Several orders reach the function in one Kinesis batch. The email provider fails once for a later "
               "order, so the invocation fails and Lambda retries the whole batch from its first record: the orders "
               "before the failing one are handed to the function a second time.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: StreamBatchRetrySettings) -> None:
        orders = stream_orders(sb, cfg)
        source = StreamSource(sb, fn, cfg.mapping)
        run_stream(sb, source, orders, source.put, horizon=cfg.horizon, interval=cfg.interval)
