"""What idempotency costs in DynamoDB: the calls one invocation makes, by outcome.

Three situations, each one invocation of a handler in a fresh world, counted from the
history's ``aws`` records (the gateway records every request, whichever client made it):

- **first run**: an order handled for the first time;
- **duplicate**: the same event again, after the first invocation finished (COMPLETED);
- **work fails**: the email provider refuses the order, so the work raises and the claim is cleaned up.

    from sandbox.analysis.costs import cost_table, measure
    measure("examples/idempotent.py:handler")  # {"first run": ("PutItem", "UpdateItem"), ...}
    print(cost_table())

DynamoDB bills each of these calls as a request
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/on-demand-capacity-mode.html).
"""
from __future__ import annotations

import textwrap
from collections.abc import Iterable
from typing import Any

from ..core.faults import ProviderFault
from ..core.history import History
from ..core.records import AwsCall
from ..events import make_orders
from ..vocab import Effect
from ..world import Sandbox

FIRST_RUN, DUPLICATE, WORK_FAILS = "first run", "duplicate", "work fails"
SITUATIONS = (FIRST_RUN, DUPLICATE, WORK_FAILS)
DYNAMODB = "dynamodb"


def dynamodb_ops(history: History, inv: str) -> tuple[str, ...]:
    """The DynamoDB operations invocation ``inv`` made, in order."""
    return tuple(e.op for e in history.records(AwsCall) if e.inv == inv and e.service == DYNAMODB)


def measure(handler: Any, seed: int = 0) -> dict[str, tuple[str, ...]]:
    """The DynamoDB operations of one invocation in each situation, for ``handler`` (``path/file.py:function``).

    One world, one function (a warm container after the first call, as on Lambda): order A is
    delivered twice in the same EventBridge event, then order B, whose email the provider refuses.
    """
    with Sandbox(seed=seed) as sb:
        fn = sb.function(handler)
        done, failing = make_orders(2, seed)
        sb.faults.add(ProviderFault(Effect.EMAIL, failing["orderId"], fail=1))
        event = sb.order_event([done])
        invocations = {FIRST_RUN: fn.invoke(event), DUPLICATE: fn.invoke(event),
                       WORK_FAILS: fn.invoke(sb.order_event([failing]))}
        history = sb.history
    return {situation: dynamodb_ops(history, inv.id) for situation, inv in invocations.items()}


def cost_rows(strategies: Iterable[str] | None = None, seed: int = 0) -> dict[str, dict[str, tuple[str, ...]]]:
    """``measure`` for each strategy of the campaign (all of them by default), by name."""
    from .campaign import STRATEGIES, strategy_handler

    names = list(STRATEGIES) if strategies is None else list(strategies)
    return {name: measure(strategy_handler(name), seed) for name in names}


def describe(ops: tuple[str, ...]) -> str:
    """``2 (PutItem, UpdateItem)``; ``0`` when there were none."""
    return f"{len(ops)} ({', '.join(ops)})" if ops else "0"


def cost_table(rows: dict[str, dict[str, tuple[str, ...]]] | None = None) -> str:
    """The DynamoDB calls per invocation, a row per strategy and a column per situation, as text."""
    from tabulate import tabulate

    rows = cost_rows() if rows is None else rows
    body = [(name, *(describe(row[s]) for s in SITUATIONS)) for name, row in rows.items()]
    table = tabulate(body, ("strategy", *SITUATIONS), tablefmt="simple", disable_numparse=True)
    return "DynamoDB calls per invocation\n" + textwrap.indent(table, "  ")
