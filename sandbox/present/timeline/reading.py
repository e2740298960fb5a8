"""Reading a :class:`~sandbox.core.history.History` into what the timeline shows: pure data.

:func:`read_history` turns the flat record list into invocations (one lane each),
markers on those lanes, the idempotency-table windows (``windows.py``), what each
delivery source did besides invoking (``deliveries.py``) and a synchronous caller's
SDK attempts. No matplotlib here.

The records are the history's typed ones (``sandbox.core.records``), read by their fields and without a copy:
their kinds are checked when a history is made or loaded. What may still be malformed is read defensively
(``fields.py``): a record at no finite time is skipped, a ``detail`` (free JSON) read with defaults, never trusted.
"""
from __future__ import annotations

from typing import Any, Protocol

from ...core.records import Accept, AwsCall, DeliveryRecord, EffectRecord, InvokeEnd, InvokeStart, Record, Sweep
from ...vocab import (
    AWS_OK,
    CONDITIONAL_CHECK_FAILED,
    IDEMPOTENCY_TABLE,
    ITEM_READS,
    Effect,
    EffectStatus,
    FindingKind,
    ItemStatus,
    Outcome,
    RecordType,
    SourceKind,
)
from . import fields
from .deliveries import DeliveryReader
from .model import END_MARKER, Attempt, Invocation, Mark, Model, WindowKind
from .ownership import Owners
from .queues import QueueReader
from .text import ordinal, short_key
from .windows import TableWindows

# membership tests for record strings (on Python 3.11, "ok" in Outcome raises TypeError)
KNOWN_OUTCOMES = frozenset(Outcome)
EFFECT_KINDS = frozenset(Effect)
PUT, UPDATE, DELETE = "PutItem", "UpdateItem", "DeleteItem"
LAMBDA, INVOKE = "lambda", "Invoke"  # a synchronous caller's request
#: The (service, op) of records, made outside any invocation, that are a caller's requests, by lane group: an
#: SDK's Lambda Invoke, an HTTP client's request through API Gateway (IAM's execute-api:Invoke), a function URL
#: (lambda:InvokeFunctionUrl) or a load balancer (forwarding to its Lambda target), and a Step
#: Functions Task's attempt through the optimized Lambda integration (arn:aws:states:::lambda:invoke).
#: Looked up with whatever a record holds.
CALLER_SERVICES: dict[tuple[object, object], SourceKind] = {
    (LAMBDA, INVOKE): SourceKind.SYNC, ("execute-api", INVOKE): SourceKind.APIGATEWAY,
    (LAMBDA, "InvokeFunctionUrl"): SourceKind.FUNCTION_URL, ("elasticloadbalancing", INVOKE): SourceKind.ALB,
    ("states", "lambda:invoke"): SourceKind.STEPFUNCTIONS}
#: A Lambda Invoke record's ``invocation_type`` when it was asynchronous: it queued an event (drawn on the
#: async queue's row) and the caller's answer, if it got one, was a bare status (202).
EVENT_INVOKE = "Event"
SQS, RECEIVE = "sqs", "ReceiveMessage"  # an SQS poller's request (the AWS service, not the source kind)


class HistoryLike(Protocol):
    """What the timeline reads of a ``History``: its ``meta`` and its typed records (the timeline imports no more of
    the sandbox than the records' schema, so it draws any history, saved or hand-built)."""

    @property
    def meta(self) -> dict[str, Any]: ...

    def records(self) -> list[Record]: ...


def read_history(history: HistoryLike) -> Model:
    """Everything the timeline draws, read from ``history`` (its records and ``meta``)."""
    meta = dict(history.meta or {})
    records = history.records()
    times = [t for r in records if (t := fields.number(r.t)) is not None]
    reader = HistoryReader(meta, t_end=max(times) if times else 0.0)
    for r in records:
        reader.read(r)
    return reader.finish()


class HistoryReader:
    """One pass over the records in history order, then :meth:`finish` ties the loose ends."""

    def __init__(self, meta: dict[str, Any], t_end: float):
        self.table = meta.get("table") or IDEMPOTENCY_TABLE.name
        self.epoch = fields.number(meta.get("epoch")) or 0.0  # expiresAt is epoch seconds; t is relative
        self.model = Model(meta=meta, invs={}, t_end=t_end)
        self.windows = TableWindows()
        self.owners = Owners()
        self.queues = QueueReader.for_meta(meta)
        self.done_count: dict[tuple[str, str], int] = {}  # (effect kind, key) -> times done so far
        self.accepted: dict[str, float] = {}  # order key -> when it entered the system
        self.owed: dict[str, set[str]] = {}  # order key -> the effect kinds it is owed
        # read once every invocation is known
        self.deliveries: list[tuple[float, DeliveryRecord]] = []
        self.receives: list[tuple[float, int, list[str]]] = []

    def read(self, r: Record) -> None:
        """One record, by its type (a record at no finite time is left out: a saved history may hold one)."""
        t = fields.number(r.t)
        if t is None:
            return
        match r:
            case InvokeStart():
                self.invoke_start(r, t)
            case InvokeEnd():
                self.invoke_end(r, t)
            case Accept():
                self.accept(r, t)
            case DeliveryRecord():
                self.delivery(r, t)
            case AwsCall():
                self.aws(r, t)
            case EffectRecord():
                self.effect(r, t)
            case Sweep():
                self.sweep(r, t)

    def finish(self) -> Model:
        model = self.model
        # windows whose claimer never started (malformed) or which are empty are dropped
        model.windows = [w for w in self.windows.finish(model.t_end) if w.inv in model.invs
                         and (w.end is None or w.end > w.start)]
        model.marks = [m for m in model.marks if m.inv is None or m.inv in model.invs]
        for rec in model.invs.values():
            if rec.outcome in END_MARKER and rec.end is not None:
                model.marks.append(Mark(rec.inv, rec.end, rec.end_seq or 0, END_MARKER[rec.outcome]))
        model.hidden, model.batching = self.queues.finish(model.t_end)  # a redelivery's label reads the batching
        deliveries = DeliveryReader(model, self.accepted)
        for t, d in self.deliveries:
            deliveries.read(t, d)
        for t, seq, got in self.receives:
            deliveries.receive(t, seq, got)
        deliveries.finish()
        last: dict[str, Attempt] = {}
        for a in model.attempts:
            last[a.actor] = a
            if a.inv in model.invs and a.status is not None:
                model.invs[a.inv].status_code = a.status
        for a in last.values():
            a.final = True  # what the caller finally saw
        return model

    # -- one reader per record type: (record, its time)
    def invoke_start(self, r: InvokeStart, t: float) -> None:
        if r.inv in self.model.invs:
            return
        self.model.invs[r.inv] = Invocation(
            inv=r.inv, seq=r.seq, start=t, source=r.source or SourceKind.DIRECT, cause=r.cause,
            container=r.container, prev=r.prev, keys=list(r.keys), cold_start=r.cold_start, restored=r.restored,
            environment=r.environment)
        self.queues.invoked(r.seq, self.model.invs[r.inv])

    def invoke_end(self, r: InvokeEnd, t: float) -> None:
        rec = self.model.invs.get(r.inv)
        if rec is None or not rec.running or t < rec.start:
            return
        rec.running = False
        rec.end, rec.end_seq = t, r.seq
        # a saved history's outcome is not checked against the vocabulary: one the timeline does not know is an error
        rec.outcome = Outcome(r.outcome) if r.outcome in KNOWN_OUTCOMES else Outcome.ERROR
        rec.error = r.error

    def accept(self, r: Accept, t: float) -> None:
        self.accepted.setdefault(r.key, t)
        self.owed.setdefault(r.key, set()).update(r.expects)

    def delivery(self, r: DeliveryRecord, t: float) -> None:
        self.deliveries.append((t, r))
        self.queues.delivery(t, r)

    def aws(self, r: AwsCall, t: float) -> None:
        service, op = r.service, r.op
        if r.inv is None and (service, op) in CALLER_SERVICES:
            self._caller_attempt(r, t, CALLER_SERVICES[(service, op)])
        elif r.inv is None and service == SQS and op == RECEIVE:
            got = fields.str_list(fields.detail(r).get("received"))
            if got and r.result == AWS_OK:
                self.receives.append((t, r.seq, got))
                self.queues.receive(t, r.seq, r.actor, got)
        elif r.target == self.table:
            self._table_request(r, t)

    def effect(self, r: EffectRecord, t: float) -> None:
        if r.inv is None:
            return
        style, dup = self._effect_style(r.kind, r.key, r.status)
        self.model.marks.append(Mark(r.inv, t, r.seq, style, dup))

    def sweep(self, r: Sweep, t: float) -> None:
        if r.target == self.table:
            self.windows.close(r.key, t)
        self.model.marks.append(Mark(None, t, r.seq, RecordType.SWEEP, label=short_key(r.key) or None))

    # -- helpers
    def _caller_attempt(self, r: AwsCall, t: float, source: str) -> None:
        detail = fields.detail(r)
        status = detail.get("statusCode")
        if detail.get("invocation_type") == EVENT_INVOKE:  # it queued an event rather than start an invocation
            source = SourceKind.ASYNC
            status = detail.get("status") if r.result == AWS_OK else None
        target = detail.get("invocation")
        sent = fields.number(detail.get("sent"))
        if sent is None or sent > t:  # not recorded (or nonsense): when the invocation started
            sent = self.model.invs[str(target)].start if str(target) in self.model.invs else t
        attempt = detail.get("attempt")
        self.model.attempts.append(Attempt(
            actor=r.actor or "caller", attempt=attempt if isinstance(attempt, int) else None,
            sent=sent, t=t, seq=r.seq, result=r.result or "?",
            inv=fields.optional_text(target), status=status,
            function_error=fields.optional_text(detail.get("function_error")), source=source,
            http_status=_http_status(detail) if r.result != AWS_OK else None))

    def _table_request(self, r: AwsCall, t: float) -> None:
        """A request to the idempotency table: a marker on the lane, and windows opened or closed."""
        key, op, result, seq, inv = fields.text(r.key), r.op, r.result, r.seq, r.inv
        detail = fields.detail(r)
        op = fields.text(detail.get("as")) or op  # a write inside a transaction or a batch
        if CONDITIONAL_CHECK_FAILED in (detail.get("reasons") or []):
            result = CONDITIONAL_CHECK_FAILED  # a transaction cancelled by the claim's condition
        expires_at = fields.number(detail.get(IDEMPOTENCY_TABLE.ttl_attribute))
        expires = None if expires_at is None else expires_at - self.epoch
        completed = detail.get("status") == ItemStatus.COMPLETED
        style = warning = note = None
        if op in ITEM_READS:
            style = "read" if result == AWS_OK else "table_error"
        elif result != AWS_OK:
            style = _failed_write_style(op, result)
            if style == "write_refused" and inv is not None:
                note = self.owners.refused(inv, key, op)
        elif op in (PUT, UPDATE, DELETE):
            if inv is not None:
                warning = self.owners.write(inv, key, op, detail.get("status"), seq)
            style = self._write(op, inv, key, t, expires, completed, conditional=bool(detail.get("condition")))
            if style == "claim_won":
                self.model.lock_statuses.add(str(detail.get("status") or ItemStatus.IN_PROGRESS))
        if warning is not None:
            style = "stale_write"
        if style is not None and inv is not None:
            self.model.marks.append(Mark(inv, t, seq, style, warning=warning, note=note))

    def _write(self, op: str, inv: str | None, key: str, t: float, expires: float | None,
               completed: bool, conditional: bool) -> str | None:
        """A write that took effect: the windows it opens or closes, and its marker (None: no marker)."""
        if op == PUT and conditional and not completed:  # a claim: it won because its condition held
            self.windows.replace(WindowKind.LOCK, inv, key, t, expires)
            return "claim_won"
        if op == PUT:  # a record written whatever the table held (read-then-write's put): no claim, whatever it says
            self.windows.replace(WindowKind.KEPT, inv, key, t, expires)
            return "write"
        if op == UPDATE and completed:
            self.windows.replace(WindowKind.KEPT, inv, key, t, expires)
        elif op == DELETE:
            self.windows.close(key, t)
            return "record_deleted"  # its band ends here: say why (lesson 10's lock 0 ended at 30.5 s, unexplained)
        return None

    def _effect_style(self, kind: str, key: str, status: Any) -> tuple[str, str | None]:
        """(marker style, duplicate note or None) for an effect; the 2nd ``done`` is a duplicate."""
        if kind not in EFFECT_KINDS:
            return "effect_other", None
        if status == EffectStatus.DONE and key in self.owed and kind not in self.owed[key]:
            # an effect the accepted order is not owed at all (a cancellation nobody asked for)
            return f"{kind}_dup", f"{FindingKind.UNEXPECTED} {kind} {key}"
        if status == EffectStatus.DONE:
            n = self.done_count[(kind, key)] = self.done_count.get((kind, key), 0) + 1
            if n >= 2:
                return f"{kind}_dup", f"{ordinal(n)} {kind} {key}"
            return f"{kind}_done", None
        if status == EffectStatus.DEDUPLICATED:
            return f"{kind}_dedup", None
        return f"{kind}_failed", None


def _http_status(detail: dict) -> int | None:
    """The HTTP status a caller got from API Gateway itself (a 504 or a 502), if the record says."""
    status = detail.get("status")
    return status if isinstance(status, int) and not isinstance(status, bool) else None


def _failed_write_style(op: str, result: Any) -> str | None:
    """A write to the table that did not succeed: a lost claim, a write its condition refused, or a failed call."""
    if result == CONDITIONAL_CHECK_FAILED and op == PUT:
        return "claim_lost"
    if result == CONDITIONAL_CHECK_FAILED and op in (UPDATE, DELETE):
        return "write_refused"
    return "table_error" if op in (PUT, UPDATE, DELETE) else None

