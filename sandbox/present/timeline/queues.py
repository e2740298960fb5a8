"""What an SQS poller's receives say: how long the messages stayed invisible, and the batching window.

Every ``ReceiveMessage`` that returned messages hides them from other pollers until they
are deleted or the queue's visibility timeout runs out, counted from the receive
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-visibility-timeout.html).
A poller with a batching window keeps what it received, and waits, before it invokes; the
messages' visibility is already running while it waits. Both are read here as plain data
(:class:`~sandbox.present.timeline.model.Hidden`, :class:`~sandbox.present.timeline.model.Batching`).

The visibility timeout comes from the scenario's settings in ``meta`` or, failing that, from
the words of the poller's delivery records ("not deleted within the 5 s visibility timeout").
Which receive fed which invocation is not recorded: each SQS invocation takes the batch its
poller began gathering first (every poller waits out the same window). A poller's
``throttled`` record names the invocation that got through at last (the time before it was
spent on 429s, not on batching) or says the batch was dropped (the poller holds it no more);
a ``quiet-queue wait`` record names the invocation whose poller held its batch past its window.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...core.records import DeliveryRecord, make
from ...vocab import Delivery, RecordType, SourceKind
from . import fields
from .model import Batching, Hidden, Invocation

VISIBILITY_SETTING = "visibility_timeout"  # the SQS scenarios' setting
SAME_TIME = 1e-6  # s: a receive this close to the invoke had no batching window


def _typed(t: float, fields_: Mapping[str, Any]) -> DeliveryRecord:
    """The delivery record a plain mapping of its fields makes (``ValueError``: it makes none)."""
    record = make(RecordType.DELIVERY, 0, t, fields_)
    assert isinstance(record, DeliveryRecord)  # make builds the class of the type it is given
    return record


@dataclass
class _Receive:
    t: float
    seq: int
    actor: str
    ids: list[str]


@dataclass
class QueueReader:
    """Receives, deletes and SQS invocations in history order; :meth:`finish` makes the windows."""

    timeout: float | None = None
    receives: list[_Receive] = field(default_factory=list)
    deletes: list[tuple[float, list[str]]] = field(default_factory=list)
    starts: list[tuple[int, Invocation]] = field(default_factory=list)
    throttled: dict[str, tuple[float, int]] = field(default_factory=dict)  # inv -> (first 429, how many)
    quiet: dict[str, float] = field(default_factory=dict)  # inv -> the batching window its poller outwaited
    drops: list[tuple[int, str]] = field(default_factory=list)  # (seq, poller) of batches dropped after 429s

    @classmethod
    def for_meta(cls, meta: dict) -> QueueReader:
        found = meta.get("settings")
        settings = found if isinstance(found, dict) else {}
        value = fields.number(settings.get(VISIBILITY_SETTING))
        return cls(timeout=value if value is not None and value > 0 else None)

    def receive(self, t: float, seq: int, actor: str, ids: list[str]) -> None:
        self.receives.append(_Receive(t, seq, actor, ids))

    def delivery(self, t: float, r: DeliveryRecord | Mapping[str, Any]) -> None:
        """A delete ends the messages' hiding; a redelivery or a failed batch carries the visibility timeout.

        ``r``: the history's record, or its fields as a plain mapping (a test's), read into the record they make."""
        if not isinstance(r, DeliveryRecord):
            r = _typed(t, r)
        detail = fields.detail(r)
        if r.what == Delivery.DELETED:
            self.deletes.append((t, fields.str_list(detail.get("messageIds"))))
        if self.timeout is None and r.source == SourceKind.SQS:
            value = fields.number(detail.get("visibilityTimeout"))
            self.timeout = value if value is not None and value > 0 else None
        if r.source == SourceKind.SQS:
            self._held(r.what, detail, r.seq, r.inv)

    def _held(self, what: str, detail: dict[str, Any], seq: int, inv: str | None) -> None:
        """What a poller's throttled or quiet-queue-wait record says about how long it held its batch."""
        if what == Delivery.THROTTLED:
            got_through = fields.optional_text(detail.get("invocation"))
            start, tries = fields.number(detail.get("from")), detail.get("tries")
            if got_through is not None and start is not None:
                self.throttled[got_through] = (start, tries if isinstance(tries, int) else 0)
            elif detail.get("dropped") is True and fields.optional_text(detail.get("poller")) is not None:
                self.drops.append((seq, fields.text(detail.get("poller"))))
        elif what == Delivery.QUIET_QUEUE_WAIT and inv is not None:
            window = fields.number(detail.get("batchingWindow"))
            if window is not None:
                self.quiet[inv] = window

    def invoked(self, seq: int, rec: Invocation) -> None:
        if rec.source == SourceKind.SQS:
            self.starts.append((seq, rec))

    def finish(self, t_end: float) -> tuple[list[Hidden], list[Batching]]:
        return [h for r in self.receives if (h := self._hidden(r, t_end)) is not None], self._batching()

    def _hidden(self, r: _Receive, t_end: float) -> Hidden | None:
        """From the receive until its messages were all deleted, received again, or their timeout ran out."""
        ends: list[float] = []
        left = set(r.ids)
        for t, ids in sorted(self.deletes, key=lambda d: d[0]):
            if t >= r.t:
                left -= set(ids)
                if not left:
                    ends.append(t)
                    break
        again = [o.t for o in self.receives if o.seq > r.seq and set(o.ids) & set(r.ids)]
        out = r.t + self.timeout if self.timeout is not None else None
        ran_out = out is not None and out <= t_end and (not ends or ends[0] > out)
        if ran_out and out is not None:
            end = out
        elif ends:
            end = ends[0]
        elif again:
            end = min(again)
        elif out is not None:
            end = t_end  # still hidden when the history ends
        else:
            return None  # nothing says when they came back
        return Hidden(SourceKind.SQS, r.t, end, self.timeout, ran_out) if end > r.t else None

    def _batching(self) -> list[Batching]:
        """Each SQS invocation's batch: gathered by one poller from its first receive on (then, if the function
        was throttled, held through the 429s)."""
        steps: list[tuple[int, _Receive | Invocation | str]] = sorted(
            [*[(r.seq, r) for r in self.receives], *self.starts, *self.drops], key=lambda s: s[0])
        gathering: dict[str, _Receive] = {}  # poller -> the first receive of the batch it holds
        windows = []
        for _, step in steps:
            if isinstance(step, _Receive):
                gathering.setdefault(step.actor, step)
                continue
            if isinstance(step, str):  # this poller dropped its batch: it holds nothing now
                gathering.pop(step, None)
                continue
            if not gathering:
                continue
            actor = min(gathering, key=lambda a: (gathering[a].t, gathering[a].seq))
            first = gathering.pop(actor)
            windows += self._held_windows(step.inv, first.t, step.start)
        return windows

    def _held_windows(self, inv: str, first: float, start: float) -> list[Batching]:
        """From a batch's first receive to its invocation: the window (or the quiet-queue wait), then the 429s."""
        out, end = [], start
        throttled = self.throttled.get(inv)
        if throttled is not None and first - SAME_TIME <= throttled[0] <= start:
            end, tries = throttled
            if start - end > SAME_TIME:
                out.append(Batching(inv, end, start, Delivery.THROTTLED, f"{tries} {'try' if tries == 1 else 'tries'}"))
        if end - first > SAME_TIME:
            window = self.quiet.get(inv)
            out.insert(0, Batching(inv, first, end, *(() if window is None else
                                                      (Delivery.QUIET_QUEUE_WAIT, f"window {window:g} s"))))
        return out
