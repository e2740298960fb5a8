"""stream-batch-retry: a Kinesis batch fails on a later order, and Lambda retries all of it.

AWS semantics (https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html,
https://docs.aws.amazon.com/lambda/latest/dg/kinesis-on-failure-destination.html): when the
function returns an error for a stream batch, Lambda retries the same batch, from its first
record, until it succeeds or is discarded, and the shard waits meanwhile. The orders before
the failing one were already handled, so the retry hands them to the function again.
"""
from __future__ import annotations

from ..errors import BadInput
from ..events import make_orders
from ..faults import ProviderFault
from ..settings import Setting
from ..sources.stream import StreamMapping, StreamSource
from ..vocab import Effect
from .base import Scenario


class StreamBatchRetry(Scenario):
    name = "stream-batch-retry"
    kind = "duplicate source"
    summary = ("Several orders reach the function in one Kinesis batch. The email provider fails once for a later "
               "order, so the invocation fails and Lambda retries the whole batch from its first record: the orders "
               "before the failing one are handed to the function a second time.")
    settings = (
        Setting("orders", 4, "how many orders the producer writes to the stream (partition key = orderId)",
                None, 1, 5000),
        Setting("payment", "none", "how orders pay: 'card' adds a charge before each email", None,
                choices=("none", "card")),
        Setting("interval", 0.0, "virtual seconds between two orders (0: all arrive together, in one batch)",
                None, 0, 3600),
        Setting("fail_order", 3, "the position of the order whose email provider fails, sending nothing "
                "(0: no fault); a later order, so earlier ones were already emailed", None, 0, 5000),
        Setting("failures", 1, "how many calls to that order's email provider fail", None, 0, 1000),
        *StreamMapping.settings(),
        Setting("horizon", 600.0, "virtual seconds after which the run stops; records still in the stream "
                "are reported as pending (verdict unknown)", None, 1, 400 * 24 * 3600),
    )

    def drive(self, sb, fn, cfg):
        orders = make_orders(cfg["orders"], sb.seed, payment="card" if cfg["payment"] == "card" else None)
        if cfg["fail_order"] > len(orders):
            raise BadInput(f"fail_order {cfg['fail_order']} is beyond the {len(orders)} orders; "
                           f"pick 1 to {len(orders)}, or 0 for no fault")
        last_arrival = (len(orders) - 1) * cfg["interval"]
        if last_arrival >= cfg["horizon"]:
            raise BadInput(f"the last order arrives at {last_arrival:g} s, not before the horizon "
                           f"{cfg['horizon']:g} s; raise horizon or lower interval")
        if cfg["fail_order"] and cfg["failures"]:
            sb.faults.add(ProviderFault(Effect.EMAIL, orders[cfg["fail_order"] - 1]["orderId"], fail=cfg["failures"]))
        source = StreamSource(sb, fn, StreamMapping.from_settings(cfg))
        # Timers fire before tasks wake at the same instant, so the orders due at t are in the
        # stream before any poll at t: the batches do not depend on the seed.
        for i, order in enumerate(orders):
            sb.scheduler.call_at(i * cfg["interval"], lambda order=order: source.put(order))
        sb.scheduler.call_at(0.0, source.start)
        sb.run(until=cfg["horizon"], stop_when=lambda: source.sent == len(orders) and source.idle())
        source.finish()
