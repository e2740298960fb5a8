"""Reading a :class:`~sandbox.history.History` into what the timeline shows: pure data.

:func:`read_history` turns the flat record list into invocations (one lane each),
markers on those lanes, the idempotency-table windows (lock held, result kept,
expired but not yet swept), what each delivery source did besides invoking, and a
synchronous caller's SDK attempts. No matplotlib here. Records are read
defensively: a malformed one is skipped or read with defaults, never trusted.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from .text import keys_text, ordinal, short_key

OUTCOMES = frozenset(("ok", "error", "timeout", "crashed"))
END_MARKER = {"error": "end_error", "timeout": "end_timeout", "crashed": "end_crashed"}
READ_OPS = ("GetItem", "Query", "BatchGetItem", "Scan", "TransactGetItems")


@dataclass
class Invocation:
    inv: str
    seq: int
    start: float
    source: str
    cause: str | None
    container: str | None
    prev: str | None
    keys: list[str] = field(default_factory=list)
    end: float | None = None
    end_seq: int | None = None
    outcome: str | None = None
    error: str | None = None
    running: bool = True
    status_code: Any = None  # HTTP statusCode in a synchronous caller's response payload
    failed_items: list[str] = field(default_factory=list)  # partial batch response
    shard: str | None = None


@dataclass
class Mark:
    inv: str | None  # None: sweeper lane
    t: float
    seq: int
    style: str
    dup_text: str | None = None  # "2nd email o-1" for duplicate effects
    label: str | None = None  # small text next to the marker (sweeps: the key)


@dataclass
class Event:
    """Something a delivery source did besides invoking: drawn on its header row."""

    source: str
    t: float
    seq: int
    style: str
    label: str | None = None
    t0: float | None = None  # "pending": the band starts here
    running: list[str] = field(default_factory=list)  # redelivery: invocations still working on these keys
    labelled: bool = False  # drawing state: its label was already tried


@dataclass
class Attempt:
    """One Invoke request a synchronous caller's SDK sent."""

    actor: str
    attempt: int | None
    sent: float
    t: float  # when the caller stopped waiting (read timeout or response)
    seq: int
    result: str
    inv: str | None
    status: Any = None
    function_error: str | None = None
    final: bool = False


@dataclass
class Window:
    kind: str  # "lock", "kept" or "expired"
    inv: str
    key: str
    start: float
    expires: float | None  # relative seconds, None = no TTL
    end: float | None = None  # when it stopped (replaced/deleted/expired); None = open


@dataclass
class Model:
    meta: dict[str, Any]
    invs: dict[str, Invocation]
    marks: list[Mark] = field(default_factory=list)
    windows: list[Window] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    t_end: float = 0.0


def attempt_style(a: Attempt) -> str:
    """The marker that ends a caller's attempt: read timeout, answer or function error."""
    if a.result == "ReadTimeout":
        return "call_timeout"
    return "call_answer" if a.result == "ok" else "call_error"


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)) and math.isfinite(v):
        return float(v)
    return None


def _text(v: Any) -> str:
    return "" if v is None else str(v)


def _str_list(v: Any) -> list[str]:
    if not isinstance(v, (list, tuple)):
        return []
    return [str(x) for x in v if x is not None]


def _detail(r: dict) -> dict:
    return r.get("detail") if isinstance(r.get("detail"), dict) else {}


def read_history(history: Any) -> Model:
    """Everything the timeline draws, read from ``history`` (its records and ``meta``)."""
    meta = dict(getattr(history, "meta", None) or {})
    table = meta.get("table") or "idempotency"
    epoch = _num(meta.get("epoch")) or 0.0
    records = list(history)
    invs: dict[str, Invocation] = {}
    model = Model(meta=meta, invs=invs)
    times = [_num(r.get("t")) for r in records]
    times = [t for t in times if t is not None]
    model.t_end = max(times) if times else 0.0

    done_count: dict[tuple[str, str], int] = {}
    open_windows: dict[str, list[Window]] = {}
    accepted: dict[str, float] = {}
    deliveries: list[tuple[float, int, dict]] = []
    receives: list[tuple[float, int, list[str]]] = []

    def outlived(w: Window, t: float) -> bool:
        """If ``w`` expired before ``t``: end it then, and add the expired band until ``t``."""
        if w.expires is not None and w.expires < t:
            # the record outlived its expiresAt: it sat in the table until t (now)
            w.end = w.expires
            model.windows.append(Window("expired", w.inv, w.key, w.expires, None, end=t))
            return True
        return False

    def close(key: str, t: float) -> None:
        for w in open_windows.pop(key, []):
            if not outlived(w, t):
                w.end = t

    def open_window(kind: str, inv: str, key: str, t: float, rel: float | None) -> None:
        w = Window(kind, inv, key, t, rel)
        open_windows.setdefault(key, []).append(w)
        model.windows.append(w)

    for i, r in enumerate(records):
        t = _num(r.get("t"))
        if t is None:
            continue
        seq = r.get("seq") if isinstance(r.get("seq"), int) else i
        typ = r.get("type")
        inv = r.get("inv")
        inv = None if inv is None else str(inv)
        if typ == "invoke_start" and inv is not None:
            if inv not in invs:
                invs[inv] = Invocation(inv=inv, seq=seq, start=t, source=_text(r.get("source")) or "direct",
                                       cause=r.get("cause") and str(r.get("cause")),
                                       container=r.get("container") and str(r.get("container")),
                                       prev=r.get("prev") and str(r.get("prev")),
                                       keys=_str_list(r.get("keys")))
        elif typ == "invoke_end" and inv in invs:
            rec = invs[inv]
            if rec.running and t >= rec.start:
                rec.running = False
                rec.end, rec.end_seq = t, seq
                outcome = r.get("outcome")
                rec.outcome = outcome if outcome in OUTCOMES else "error"
                err = r.get("error")
                rec.error = None if err is None else str(err)
        elif typ == "accept":
            key = _text(r.get("key"))
            accepted.setdefault(key, t)
        elif typ == "delivery":
            deliveries.append((t, seq, r))
        elif typ == "aws" and inv is None and r.get("service") == "lambda" and r.get("op") == "Invoke":
            detail = _detail(r)
            target = detail.get("invocation")
            sent = _num(detail.get("sent"))
            if sent is None or sent > t:
                sent = invs[str(target)].start if str(target) in invs else t
            attempt = detail.get("attempt")
            model.attempts.append(Attempt(
                actor=_text(r.get("actor")) or "caller", attempt=attempt if isinstance(attempt, int) else None,
                sent=sent, t=t, seq=seq, result=_text(r.get("result")) or "?",
                inv=None if target is None else str(target), status=detail.get("statusCode"),
                function_error=None if detail.get("function_error") is None else str(detail["function_error"])))
        elif typ == "aws" and inv is None and r.get("service") == "sqs" and r.get("op") == "ReceiveMessage":
            got = _str_list(_detail(r).get("received"))
            if got and r.get("result", "ok") == "ok":
                receives.append((t, seq, got))
        elif typ == "aws" and r.get("target") == table:
            key = _text(r.get("key"))
            op = _text(r.get("op"))
            result = r.get("result")
            detail = _detail(r)
            status = detail.get("status")
            exp = _num(detail.get("expiresAt"))
            rel = None if exp is None else exp - epoch
            style = None
            if op in READ_OPS:
                style = "read" if result == "ok" else "table_error"
            elif op == "PutItem":
                if result == "ok":
                    close(key, t)
                    if status == "COMPLETED":
                        if inv is not None:
                            open_window("kept", inv, key, t, rel)
                    else:
                        style = "claim_won"
                        if inv is not None:
                            open_window("lock", inv, key, t, rel)
                elif result == "ConditionalCheckFailed":
                    style = "claim_lost"
                else:
                    style = "table_error"
            elif op == "UpdateItem":
                if result == "ok":
                    if status == "COMPLETED":
                        close(key, t)
                        if inv is not None:
                            open_window("kept", inv, key, t, rel)
                else:
                    style = "table_error"
            elif op == "DeleteItem":
                if result == "ok":
                    close(key, t)
                else:
                    style = "table_error"
            if style is not None and inv is not None:
                model.marks.append(Mark(inv, t, seq, style))
        elif typ == "effect" and inv is not None:
            kind = _text(r.get("kind"))
            key = _text(r.get("key"))
            status = r.get("status")
            if kind not in ("email", "charge"):
                model.marks.append(Mark(inv, t, seq, "effect_other"))
                continue
            if status == "done":
                n = done_count[(kind, key)] = done_count.get((kind, key), 0) + 1
                if n >= 2:
                    model.marks.append(Mark(inv, t, seq, f"{kind}_dup", f"{ordinal(n)} {kind} {key}"))
                else:
                    model.marks.append(Mark(inv, t, seq, f"{kind}_done"))
            elif status == "deduplicated":
                model.marks.append(Mark(inv, t, seq, f"{kind}_dedup"))
            else:
                model.marks.append(Mark(inv, t, seq, f"{kind}_failed"))
        elif typ == "sweep":
            if r.get("target", table) == table:
                close(_text(r.get("key")), t)
            key = _text(r.get("key"))
            model.marks.append(Mark(None, t, seq, "sweep", label=short_key(key) or None))

    for ws in open_windows.values():
        for w in ws:
            if not outlived(w, model.t_end):  # outlived: expired, and nothing deleted it before the end
                w.end = w.expires  # may be None: never expires
    # windows whose claimer never started (malformed) or which are empty are dropped
    model.windows = [w for w in model.windows if w.inv in invs
                     and (w.end is None or w.end > w.start)]
    model.marks = [m for m in model.marks if m.inv is None or m.inv in invs]
    for rec in invs.values():
        if rec.outcome in END_MARKER and rec.end is not None:
            model.marks.append(Mark(rec.inv, rec.end, rec.end_seq or 0, END_MARKER[rec.outcome]))
    _read_deliveries(model, deliveries, receives, accepted)
    last: dict[str, Attempt] = {}
    for a in model.attempts:
        last[a.actor] = a
        if a.inv in invs and a.status is not None:
            invs[a.inv].status_code = a.status
    for a in last.values():
        a.final = True
    return model


def _last_event(model: Model, style: str, t: float) -> Event | None:
    """The previous labelled event, if it has this style and time: several records, one marker."""
    prev = model.events[-1] if model.events else None
    if prev is not None and prev.style == style and prev.t == t and prev.label:
        return prev
    return None


def _read_deliveries(model: Model, deliveries: list[tuple[float, int, dict]],
                     receives: list[tuple[float, int, list[str]]], accepted: dict[str, float]) -> None:
    invs = model.invs
    redelivered: dict[float, set[str]] = {}
    shards: dict[str, str] = {}  # order key -> shard it was read from
    for t, seq, r in deliveries:
        source = _text(r.get("source")) or "direct"
        what = _text(r.get("what"))
        keys = _str_list(r.get("keys"))
        inv = None if r.get("inv") is None else str(r.get("inv"))
        detail = _detail(r)
        kt = keys_text(keys)
        label: str | None = None
        t0 = None
        if isinstance(detail.get("shard"), str):
            for k in keys:
                shards.setdefault(k, detail["shard"])
        if what == "redelivery":
            style = "redelivery"
            label = f"{kt} received again" if kt else "received again"
            running = [rec.inv for rec in invs.values() if set(rec.keys) & set(keys) and rec.start < t
                       and (rec.end is None or rec.end > t)]
            if running:
                label += f" while {', '.join(running)} still runs"
            redelivered.setdefault(t, set()).update(_str_list(detail.get("messageIds")))
        elif what == "deleted":
            style = "deleted"
        elif what == "batch failed":
            partial = detail.get("partial") is True
            style = "batch_partial" if partial else "batch_failed"
            if partial and inv in invs:
                invs[inv].failed_items += keys or _str_list(detail.get("messageIds"))
        elif what == "retry scheduled":
            style = "retry_scheduled"
            if detail.get("bisect"):  # a failed stream batch split in two: name the halves
                prev_ev = _last_event(model, "retry_scheduled", t)
                if prev_ev is not None and prev_ev.label.startswith("batch split"):
                    prev_ev.label += f" | {kt}"
                    continue
                label = f"batch split: {kt}"
        elif what in ("dead-lettered", "discarded"):
            style = "dropped"
            who = kt or ("an unreadable message" if what == "dead-lettered" else "a batch")
            if what == "dead-lettered":
                prev_ev = _last_event(model, "dropped", t)
                if prev_ev is not None and prev_ev.label.endswith(" → DLQ"):
                    # several messages moved at once: one marker, one label
                    prev_ev.label = prev_ev.label[:-len(" → DLQ")] + f", {who} → DLQ"
                    continue
                label = f"{who} → DLQ"
            else:
                dest = detail.get("destination")
                if not dest:
                    m = re.search(r"on-failure destination (\S+)", _text(detail.get("reason")))
                    dest = m.group(1) if m else None
                label = f"{who} discarded → {dest}" if dest else f"{who} discarded, no destination: event lost"
        elif what == "pending":
            style = "pending"
            where = {"stream": "in the stream", "sqs": "in the queue", "async": "in the queue"}.get(source)
            label = f"{kt or 'orders'} still pending" + (f" ({where})" if where else "")
            starts = [accepted[k] for k in keys if k in accepted]
            starts += [rec.start for rec in invs.values() if set(rec.keys) & set(keys)]
            t0 = min(starts + [t])
        elif what == "producer re-send":
            style = "resend"
            label = f"{kt} sent twice" if kt else "sent twice"
        elif what == "spontaneous duplicate":
            style = "spont_dup"
            label = f"{kt} delivered again" if kt else "delivered again"
        else:
            style = "delivery_other"
            label = what or None
        model.events.append(Event(source, t, seq, style, label, t0))
        if style == "redelivery":
            model.events[-1].running = running
    for t, seq, got in receives:
        if set(got) <= redelivered.get(t, set()):
            continue  # drawn as "received again"
        model.events.append(Event("sqs", t, seq, "receive"))
    model.events.sort(key=lambda e: (e.t, e.seq))
    known = set(shards.values())
    if len(known) > 1:
        for rec in invs.values():
            got = {shards[k] for k in rec.keys if k in shards}
            if len(got) == 1:
                rec.shard = got.pop()
