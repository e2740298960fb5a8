"""ddb-stream-ttl-remove: DynamoDB's TTL deletes expired orders, and each deletion is a REMOVE in the stream.

AWS semantics: TTL deletes an expired item "typically within two days of expiration"
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/howitworks-ttl.html), and
the deletion is a stream record like any other REMOVE; only its ``userIdentity`` differs:
"Items that are deleted by the Time to Live process after expiration have the following
fields: Records[].userIdentity.type "Service" Records[].userIdentity.principalId
"dynamodb.amazonaws.com"" (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_streams_Record.html).
A customer's own cancellation (a DeleteItem) is a REMOVE without it.

So a stream handler sees every order again when it expires. One that reads every record as
an order (``orders_in`` gives a REMOVE's old image) emails it again; one that treats every
REMOVE as the customer's cancellation (``examples/cancel_on_remove.py``) sends a
cancellation nobody asked for. ``examples/cancel_unless_ttl.py`` checks ``userIdentity``
(``sandbox.removed_by_ttl``). With ``cancel_order`` the customer cancels one order before it
expires: that REMOVE *is* owed a cancellation email.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ..aws.ttl import DOC_TTL
from ..errors import BadInput
from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group, param
from ..sources.ddb_stream import DOC_TTL_STREAMS, DdbStreamMapping, DdbStreamSource
from ..world import Sandbox
from .base import RunConfig, Scenario, ScenarioSettings, payment_choice, payment_of
from .stream_batch_retry import run_stream


@dataclass(frozen=True)
class DdbStreamTtlRemoveSettings(ScenarioSettings):
    orders: int = param(3, "how many orders are written to the orders table (PutItem), all at once", None, 1, 5000)
    payment: str = payment_choice()
    expires_after: float = param(60.0, "seconds after it is written that an order's expiresAt (the table's TTL "
                                 "attribute) falls; TTL deletes it up to ttl_lag later", DOC_TTL, 1, 7 * 24 * 3600)
    cancel_order: int = param(
        0, "the position of an order the customer cancels (a DeleteItem: a REMOVE without "
        "userIdentity, owed a cancellation email) before it expires (0: none)", DOC_TTL_STREAMS, 0, 5000)
    cancel_at: float = param(30.0, "when the customer cancels it (virtual seconds)", None, 0, 7 * 24 * 3600)
    mapping: DdbStreamMapping = group(DdbStreamMapping, report_batch_item_failures=True)
    horizon: float = param(600.0, "virtual seconds after which the run stops; records still in the stream "
                           "are reported as pending (verdict unknown)", None, 1, 400 * 24 * 3600)
    # The deletions must fall inside the run, and together, so the three REMOVE records arrive as one
    # batch: one lag for all, a minute, where AWS says typically within two days.
    run: RunConfig = group(
        RunConfig,
        ttl_lag=(60.0, "seconds between an order's expiresAt and its deletion by TTL: a minute here, "
                       "the same for every order, so the REMOVE records come inside the run and together "
                       "(on AWS, typically within two days)"),
        ttl_exact=(True, "delete every expired order exactly ttl_lag seconds after its expiresAt (this "
                         "scenario shows the deletions, not their timing)"))


class DdbStreamTtlRemove(Scenario[DdbStreamTtlRemoveSettings]):
    name = "ddb-stream-ttl-remove"
    kind = "duplicate source"
    source = "DynamoDB Streams"
    headline = "TTL deletions arrive as REMOVE records, which a handler may take for a customer's delete"
    summary = ("Three orders are written to a DynamoDB table whose stream triggers the function, each with an "
               "expiresAt a minute later. When it passes, DynamoDB's TTL deletes them, and each deletion reaches the "
               "function as a REMOVE record (userIdentity: the DynamoDB service). A handler that takes every record "
               "for an order emails each order again; one that takes every REMOVE for a customer's cancellation "
               "sends cancellations nobody asked for.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: DdbStreamTtlRemoveSettings) -> None:
        orders = make_orders(cfg.orders, sb.seed, payment=payment_of(cfg.payment))
        self._check(cfg, len(orders))
        source = DdbStreamSource(sb, fn, cfg.mapping)
        expires_at = sb.clock.now() + cfg.expires_after
        if cfg.cancel_order:
            cancelled = orders[cfg.cancel_order - 1]
            sb.scheduler.call_at(cfg.cancel_at, lambda: source.cancel(cancelled))
        # Every order is written (INSERT) and then removed (REMOVE), by its TTL or by its customer.
        run_stream(sb, source, orders, functools.partial(source.put, expires_at=expires_at), horizon=cfg.horizon,
                   records=2 * len(orders))

    @staticmethod
    def _check(cfg: DdbStreamTtlRemoveSettings, n: int) -> None:
        if cfg.cancel_order > n:
            raise BadInput(f"cancel_order {cfg.cancel_order} is beyond the {n} orders; pick 1 to {n}, or 0 for none")
        if cfg.cancel_order and cfg.cancel_at >= cfg.expires_after:
            raise BadInput(f"cancel_at {cfg.cancel_at:g} s is not before the order expires "
                           f"({cfg.expires_after:g} s); lower cancel_at or raise expires_after")
        swept = cfg.expires_after + cfg.run.ttl_lag
        if swept >= cfg.horizon:
            raise BadInput(f"the orders expire and may be deleted as late as {swept:g} s (expires_after + ttl_lag), "
                           f"not before the horizon {cfg.horizon:g} s; raise horizon")
