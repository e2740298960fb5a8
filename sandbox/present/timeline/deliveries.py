"""What each delivery source did besides invoking: ``delivery`` records read into header-row events.

Each ``what`` has its own reader, which returns the :class:`Event` to draw (marker
style and label) or None when the record only adds to the event before it: several
messages dead-lettered at once, or the two halves of a bisected stream batch, make
one marker with one label.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ...core.records import DeliveryRecord
from ...vocab import Delivery, SourceKind
from . import fields
from .model import Event, Invocation, Model, producer_of
from .text import keys_text
from .timefmt import duration

HANDOFF_OK = "handoff_ok"  # the marker of a hand-off Lambda accepted after refusing it
DELETED_LATE = "deleted_late"  # messages deleted after they were received again: their copies run again

#: Sources that discard a batch of records rather than one event.
BATCH_SOURCES = (SourceKind.STREAM, SourceKind.DDB_STREAM, SourceKind.KAFKA)
SPLIT_PREFIX = "batch split"  # the label of a bisected stream batch; its halves join it
DLQ_SUFFIX = " → DLQ"  # the label of dead-lettered messages; messages moved at once join it
REDRIVE_SUFFIX = " redriven"  # the label of redriven messages; messages moved at once join it
WHERE_PENDING: dict[str, str] = {
    SourceKind.STREAM: "in the stream", SourceKind.SQS: "in the queue", SourceKind.ASYNC: "in the queue",
    SourceKind.EVENTBRIDGE: "EventBridge still retrying", SourceKind.DDB_STREAM: "in the stream",
    SourceKind.SNS: "SNS still retrying", SourceKind.S3: "S3 not yet delivered",
    SourceKind.STEPFUNCTIONS: "the execution still running", SourceKind.KAFKA: "in the topic",
    SourceKind.DURABLE: "the durable execution still running"}


@dataclass
class DrawnDelivery:
    """One ``delivery`` record as the timeline draws it: its fields, its source named (a record with none is a
    direct call's), and its ``detail`` in its JSON form."""

    t: float
    seq: int
    source: str
    what: str
    keys: list[str]
    inv: str | None
    detail: dict[str, Any]

    @classmethod
    def read(cls, t: float, r: DeliveryRecord) -> DrawnDelivery:
        return cls(t, r.seq, r.source or SourceKind.DIRECT, r.what, list(r.keys), r.inv, fields.detail(r))

    @property
    def keys_text(self) -> str:
        return keys_text(self.keys)

    def event(self, style: str, label: str | None = None, *, t0: float | None = None,
              running: list[str] | None = None) -> Event:
        return Event(self.source, self.t, self.seq, style, label, t0=t0, running=running or [])


class DeliveryReader:
    """Turns delivery records (and the SQS poller's receives) into the model's events."""

    def __init__(self, model: Model, accepted: dict[str, float]):
        self.model = model
        self.accepted = accepted  # order key -> when it entered the system
        self.redelivered: dict[float, set[str]] = {}  # time -> message ids received again then
        self.shards: dict[str, str] = {}  # order key -> shard it was read from
        self.refused: dict[str, list[Event]] = {}  # event id -> the hand-offs Lambda refused so far
        self.next_try: dict[str, tuple[float, DrawnDelivery]] = {}  # event id -> when its refused hand-off is tried
        #   again, and the refusal (an event whose try is not refused again was accepted then)
        self.received_again: list[tuple[float, set[str]]] = []  # (when, message ids) of each redelivery

    def read(self, t: float, r: DeliveryRecord) -> None:
        d = DrawnDelivery.read(t, r)
        if isinstance(d.detail.get("shard"), str):
            for k in d.keys:
                self.shards.setdefault(k, d.detail["shard"])
        event = _READERS.get(d.what, DeliveryReader.other)(self, d)
        if event is not None:
            self.model.events.append(event)

    def receive(self, t: float, seq: int, got: list[str]) -> None:
        """An SQS poller received messages; those received again are already drawn as "received again"."""
        if set(got) <= self.redelivered.get(t, set()):
            return
        self.model.events.append(Event(SourceKind.SQS, t, seq, "receive"))

    def finish(self) -> None:
        """Mark the hand-offs accepted after refusals, put the events in time order, and name a lane's shard when
        the stream has several."""
        for t, d in self.next_try.values():
            if t <= self.model.t_end:  # the try after the last refusal: accepted (a refusal would be recorded)
                who = f"{d.keys_text} " if d.keys_text else ""
                self.model.events.append(Event(d.source, t, d.seq, HANDOFF_OK, f"{who}handed off (202)"))
        self.model.events.sort(key=lambda e: (e.t, e.seq))
        if len(set(self.shards.values())) <= 1:
            return
        for rec in self.model.invs.values():
            got = {self.shards[k] for k in rec.keys if k in self.shards}
            if len(got) == 1:
                rec.shard = got.pop()

    def _last_event(self, style: str, t: float) -> Event | None:
        """The previous labelled event, if it has this style and time: several records, one marker."""
        prev = self.model.events[-1] if self.model.events else None
        if prev is not None and prev.style == style and prev.t == t and prev.label:
            return prev
        return None

    def _working_on(self, keys: list[str]) -> list[Invocation]:
        """The invocations whose event carried any of ``keys``."""
        return [rec for rec in self.model.invs.values() if set(rec.keys) & set(keys)]

    # -- one reader per ``what``
    def redelivery(self, d: DrawnDelivery) -> Event:
        kt = d.keys_text
        label = f"{kt} received again" if kt else "received again"
        running = [rec.inv for rec in self._working_on(d.keys)
                   if rec.start < d.t and (rec.end is None or rec.end > d.t)]
        if running:
            label += f" while {', '.join(running)} still runs"
        elif any(b.start < d.t < b.end and set(self.model.invs[b.inv].keys) & set(d.keys)
                 for b in self.model.batching if b.inv in self.model.invs):
            label += " while a poller still holds it"  # received, not yet invoked: its visibility ran out first
        ids = set(fields.str_list(d.detail.get("messageIds")))
        self.redelivered.setdefault(d.t, set()).update(ids)
        self.received_again.append((d.t, ids))
        return d.event(Delivery.REDELIVERY, label, running=running)

    def deleted(self, d: DrawnDelivery) -> Event:
        """Messages deleted; by a run that began before they were received again, too late: the copies already
        received run again (the picture must say why a redelivery follows a ✓)."""
        ids = set(fields.str_list(d.detail.get("messageIds")))
        rec = self.model.invs.get(d.inv) if d.inv else None
        again = [t for t, got in self.received_again if ids & got and rec is not None and rec.start < t < d.t]
        if not again:
            return d.event(Delivery.DELETED)
        return d.event(DELETED_LATE, f"deleted too late: {d.keys_text or 'they were'} already received again")

    def batch_failed(self, d: DrawnDelivery) -> Event:
        partial = d.detail.get("partial") is True
        if partial and d.inv in self.model.invs:
            self.model.invs[d.inv].failed_items += d.keys or fields.str_list(d.detail.get("messageIds"))
        if partial and isinstance(d.detail.get("checkpoint"), str):
            # a stream: Lambda retries from the lowest failed record, every record after it too
            how = "bisected" if d.detail.get("bisected") is True else "checkpoint"
            again = keys_text(fields.str_list(d.detail.get("retried"))) or "the rest"
            return d.event("batch_checkpoint", f"{how} at {d.keys_text or 'a failed record'}: {again} come again")
        return d.event("batch_partial" if partial else "batch_failed")

    def retry_scheduled(self, d: DrawnDelivery) -> Event | None:
        if not d.detail.get("bisect"):
            return d.event("retry_scheduled")
        # a failed stream batch split in two: name the halves
        prev = self._last_event("retry_scheduled", d.t)
        if prev is not None and prev.label is not None and prev.label.startswith(SPLIT_PREFIX):
            prev.label += f" | {d.keys_text}"
            return None
        return d.event("retry_scheduled", f"{SPLIT_PREFIX}: {d.keys_text}")

    def dead_lettered(self, d: DrawnDelivery) -> Event | None:
        return self._moved(d, "dropped", d.keys_text or "an unreadable message", DLQ_SUFFIX)

    def _moved(self, d: DrawnDelivery, kind: str, who: str, suffix: str) -> Event | None:
        """Messages moved between queues: several at one moment share one marker and one label."""
        prev = self._last_event(kind, d.t)
        if prev is not None and prev.label is not None and prev.label.endswith(suffix):
            prev.label = prev.label[:-len(suffix)] + f", {who}{suffix}"
            return None
        return d.event(kind, f"{who}{suffix}")

    def discarded(self, d: DrawnDelivery) -> Event:
        """What is discarded is the event (or a stream's batch) that carried the orders: some of them may have had
        their work done before (an order emailed before the attempt failed), so the label names the unit first."""
        unit = "batch" if d.source in BATCH_SOURCES else "event"
        who = f"{unit} of {d.keys_text}" if d.keys_text else f"a {unit}"
        dest = d.detail.get("destination")
        if not dest:
            m = re.search(r"on-failure destination (\S+)", fields.text(d.detail.get("reason")))
            dest = m.group(1) if m else None
        label = f"{who} discarded → {dest}" if dest else f"{who} discarded, no destination: {unit} lost"
        return d.event("dropped", label)

    def execution_failed(self, d: DrawnDelivery) -> Event:
        """A Step Functions execution failed: no retrier was left for its Task's error, so nothing runs its orders
        again (those an attempt finished are done; the others are lost)."""
        error = fields.optional_text(d.detail.get("error"))
        return d.event("dropped", f"execution failed{f' ({error})' if error else ''}: "
                                  f"{d.keys_text or 'its orders'} not run again")

    def pending(self, d: DrawnDelivery) -> Event:
        where = WHERE_PENDING.get(d.source)
        label = f"{d.keys_text or 'orders'} still pending" + (f" ({where})" if where else "")
        starts = [self.accepted[k] for k in d.keys if k in self.accepted]
        starts += [rec.start for rec in self._working_on(d.keys)]
        return d.event(Delivery.PENDING, label, t0=min(starts + [d.t]))

    def producer_resend(self, d: DrawnDelivery) -> Event:
        """The producer sent an order again: drawn on the producer's own row above its source's (on the SQS
        poller's row, a learner read the poller as the one that sent it)."""
        kt = d.keys_text
        after = fields.number(d.detail.get("secondsAfterFirst"))
        if after is not None:  # a re-send from the producer's own job, long after the first
            label = f"{kt or 'an order'} sent again {_seconds(after)} later"
        elif "sequenceNumbers" in d.detail:  # a stream: two records, each with its own sequence number
            label = f"{kt or 'a record'} written twice (new sequence number)"
        else:
            label = f"{kt} sent twice" if kt else "sent twice"
            if fields.str_list(d.detail.get("eventIds")):
                label += " (a new event, new id)"
        return replace(d.event("resend", label), source=producer_of(d.source))

    def producer_gave_up(self, d: DrawnDelivery) -> Event:
        """The producer's SDK gave up sending an order: on the producer's row, as its re-sends are (lesson 05 with
        one attempt: no row said so, only a note in the history)."""
        tries = fields.number(d.detail.get("attempts"))
        after = f": {tries:g} attempt{'' if tries == 1 else 's'}" if tries is not None else ""
        label = f"gave up on {d.keys_text or 'an order'}{after}"  # short: it stands by the last tick on the row
        return replace(d.event("gave_up", label), source=producer_of(d.source))

    def caller_resend(self, d: DrawnDelivery) -> Event:
        """The caller's SDK sent an async Invoke again that Lambda had already queued: a second event."""
        what = "queued again (Invoke re-sent)"
        return d.event("caller_resend", f"{d.keys_text} {what}" if d.keys_text else what)

    def spontaneous_duplicate(self, d: DrawnDelivery) -> Event:
        kt = d.keys_text
        # an SQS poller's receive of the copies: this marker says it, the receive marker need not
        self.redelivered.setdefault(d.t, set()).update(fields.str_list(d.detail.get("messageIds")))
        return d.event("spont_dup", f"{kt} delivered again" if kt else "delivered again")

    def stale_copy(self, d: DrawnDelivery) -> Event:
        kt = d.keys_text or "a message"
        return d.event("stale_copy", f"a copy of {kt} survived the delete")

    def send_deduplicated(self, d: DrawnDelivery) -> Event:
        label = f"{d.keys_text} re-send deduplicated" if d.keys_text else "re-send deduplicated"
        after = fields.number(d.detail.get("secondsSinceFirst"))
        if after is not None:
            label += f" ({_seconds(after)} after the first)"
        return d.event("send_dedup", label)

    def redriven(self, d: DrawnDelivery) -> Event | None:
        return self._moved(d, "moved_back", d.keys_text or "a message", REDRIVE_SUFFIX)

    def throttled(self, d: DrawnDelivery) -> Event:
        """Lambda turned an event away (429) for a while: a band from the first try to the end of the stretch."""
        tries = d.detail.get("tries")
        start = fields.number(d.detail.get("from"))
        label = "throttled (429)" + (f": {tries} {'try' if tries == 1 else 'tries'} over {duration(d.t - start)}"
                                     if isinstance(tries, int) and start is not None and d.t > start else "")
        if d.detail.get("dropped") is True:
            label += ", batch dropped"  # an SQS poller gave up at the visibility timeout: no invocation
        elif d.detail.get("invocation") in self.model.invs:
            return d.event(Delivery.THROTTLED, label)  # the 429s are drawn on that invocation's lane, not here
        return d.event(Delivery.THROTTLED, label, t0=start if start is not None and start <= d.t else None)

    def quiet_queue_wait(self, d: DrawnDelivery) -> None:
        """Drawn on the invocation's lane, where its poller held the batch (``queues.py``)."""
        return None

    def delivery_failed(self, d: DrawnDelivery) -> Event:
        """A source's hand-off to Lambda failed, and it retries (EventBridge's target retries). Only the
        latest failure of an event is labelled, with how many there were so far."""
        earlier = self.refused.setdefault(fields.text(d.detail.get("event")), [])
        for e in earlier:
            e.label = None
        status = d.detail.get("status")
        what = f"hand-off failed ({status})" if isinstance(status, int) else "hand-off failed"
        how = "retried at once" if d.detail.get("retry_in") == 0 else "retried with back off"  # SNS's first retries
        event = d.event(Delivery.DELIVERY_FAILED, f"{what} {len(earlier) + 1}×, {how}" if earlier else f"{what}, {how}")
        earlier.append(event)
        retry_in = fields.number(d.detail.get("retry_in"))
        if retry_in is not None:
            self.next_try[fields.text(d.detail.get("event"))] = (d.t + retry_in, d)
        return event

    def answer_lost(self, d: DrawnDelivery) -> Event:
        """Lambda accepted a hand-off, but the service (SNS) never heard so: it delivers the event again."""
        waited = fields.number(d.detail.get("waited"))
        wait = f"no answer in {duration(waited)}" if waited is not None else "no answer"
        return d.event("answer_lost", f"{d.keys_text or 'message'} accepted, {wait} → delivered again")

    def user_delete(self, d: DrawnDelivery) -> Event:
        return d.event("user_delete", f"{d.keys_text or 'an item'} deleted by the customer")

    def stack_status(self, d: DrawnDelivery) -> Event:
        """A CloudFormation stack's new status: it waited for its custom resource, failed, or rolled back."""
        return d.event(Delivery.STACK_STATUS, f"stack {fields.text(d.detail.get('status')) or '?'}")

    def orphaned(self, d: DrawnDelivery) -> Event:
        """The Create's work that no physical id of the stack names: the rollback's Delete could not find it."""
        creates = d.detail.get("creates")
        ran = [fields.text(c) for c in creates] if isinstance(creates, list) else []
        who = " and ".join([", ".join(ran[:-1]), ran[-1]] if len(ran) > 1 else ran)
        return d.event(Delivery.ORPHANED, f"orphan: the work of {who}" if who else "orphan")

    def other(self, d: DrawnDelivery) -> Event:
        return d.event("delivery_other", d.what or None)


def _seconds(sec: float) -> str:
    """Seconds as seconds up to 10 minutes, so a time near the 5-minute FIFO interval reads exactly."""
    return f"{sec:.0f} s" if sec < 600 else duration(sec)


_READERS: dict[str, Callable[[DeliveryReader, DrawnDelivery], Event | None]] = {
    Delivery.REDELIVERY: DeliveryReader.redelivery,
    Delivery.DELETED: DeliveryReader.deleted,
    Delivery.BATCH_FAILED: DeliveryReader.batch_failed,
    Delivery.RETRY_SCHEDULED: DeliveryReader.retry_scheduled,
    Delivery.DEAD_LETTERED: DeliveryReader.dead_lettered,
    Delivery.DISCARDED: DeliveryReader.discarded,
    Delivery.PENDING: DeliveryReader.pending,
    Delivery.PRODUCER_RESEND: DeliveryReader.producer_resend,
    Delivery.PRODUCER_GAVE_UP: DeliveryReader.producer_gave_up,
    Delivery.SPONTANEOUS_DUPLICATE: DeliveryReader.spontaneous_duplicate,
    Delivery.STALE_COPY: DeliveryReader.stale_copy,
    Delivery.SEND_DEDUPLICATED: DeliveryReader.send_deduplicated,
    Delivery.REDRIVEN: DeliveryReader.redriven,
    Delivery.THROTTLED: DeliveryReader.throttled,
    Delivery.DELIVERY_FAILED: DeliveryReader.delivery_failed,
    Delivery.USER_DELETE: DeliveryReader.user_delete,
    Delivery.ANSWER_LOST: DeliveryReader.answer_lost,
    Delivery.QUIET_QUEUE_WAIT: DeliveryReader.quiet_queue_wait,
    Delivery.EXECUTION_FAILED: DeliveryReader.execution_failed,
    Delivery.CALLER_RESEND: DeliveryReader.caller_resend,
    Delivery.STACK_STATUS: DeliveryReader.stack_status,
    Delivery.ORPHANED: DeliveryReader.orphaned,
}
