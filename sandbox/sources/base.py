"""What every delivery source is: one lifecycle, one configuration style.

A source turns events into invocations of one function, the way an AWS service does
(Lambda's async queue, an SQS or stream event source mapping, a synchronous caller). Each
is built from its world, its function and a frozen ``Config`` dataclass (see
``sandbox.settings``), and then:

    source.start()      start its own tasks (pollers, queue workers); idempotent
    source.idle()       True once nothing is in flight or still to come
    source.stop()       take no new work; work in hand is finished
    source.finish()     at the end of a run, record what is left as "pending"

``run_sources`` drives one or more of them until all are idle (or a horizon passes).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..vocab import Delivery

if TYPE_CHECKING:
    from ..runtime.functions import LambdaFunction
    from ..world import Sandbox


class Source(ABC):
    """A delivery source (see the module docstring)."""

    #: The ``SourceKind`` written in the history for its invocations.
    kind: str = ""

    def __init__(self, world: "Sandbox", function: "LambdaFunction"):
        self.world, self.function = world, function

    def start(self) -> "Source":
        return self

    @abstractmethod
    def idle(self) -> bool:
        """Nothing is in flight and nothing more is due."""

    def stop(self) -> None:  # noqa: B027 (most sources have nothing to stop)
        """Take no new work (pollers stop polling); what is in hand is finished."""

    def finish(self) -> None:  # noqa: B027 (a source with nothing in flight records nothing)
        """Record every order still in flight as pending (called once, at the end of a run)."""

    def pending(self, keys: Iterable[str], reason: str, inv: str | None = None, **detail: Any) -> None:
        """One "pending" delivery record for ``keys`` (none if there are none)."""
        keys = list(dict.fromkeys(keys))
        if keys:
            self.world.record_delivery(self.kind, Delivery.PENDING, keys, inv, {**detail, "reason": reason}
                                       if reason else detail)


def run_sources(world: "Sandbox", *sources: Source, horizon: float | None = None,
                also: Callable[[], bool] | None = None) -> None:
    """Start every source, run until all are idle (and ``also()``, if given) or ``horizon``, then finish them."""
    for source in sources:
        source.start()
    world.run(until=horizon, stop_when=lambda: all(s.idle() for s in sources) and (also is None or also()))
    for source in sources:
        source.stop()
    for source in sources:
        source.finish()
