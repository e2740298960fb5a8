"""The rows of the timeline, top to bottom, and where each sits (y in data units).

One row per Lambda invocation (its lane), grouped under a header row per delivery
source, plus a "TTL sweeper" row on top when records were swept. Lanes are 1.0
apart; header rows that carry labelled delivery events are taller, so their labels
fit above the markers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from ..vocab import RecordType, SourceKind
from .model import Invocation, Model
from .text import lane_sub

SOURCE_LABELS = {
    SourceKind.SQS: "SQS poller",
    SourceKind.ASYNC: "Async event queue",
    SourceKind.SYNC: "Synchronous caller (SDK retries)",
    SourceKind.STREAM: "Kinesis stream poller",
    SourceKind.DIRECT: "Direct invoke (no retries)",
    SourceKind.APIGATEWAY: "HTTP client → API Gateway (client retries)",
    SourceKind.EVENTBRIDGE: "EventBridge rule → Lambda",
    SourceKind.DDB_STREAM: "DynamoDB stream poller",
}

# row heights and spacing, in data units (one lane = 1.0)
LANE_H = 1.0
SWEEPER_H = 1.15
HEAD_H = 0.9  # a header row without labelled events
HEAD_BUSY = 1.3  # a header row that shows labelled delivery events
GROUP_GAP = 0.2  # between a group's last lane and the next header row ...
GROUP_GAP_BUSY = 0.35  # ... or a busy header row, so its labels clear the lane above
BUSY_TOP = 0.3  # extra room above a busy header row at the very top


class RowKind(StrEnum):
    LANE = "lane"  # one invocation
    HEADING = "heading"  # a delivery source: what it did besides invoking
    SWEEPER = "sweeper"  # the TTL sweeper's deletions


@dataclass
class Row:
    """One row of the plot: an invocation's lane, a source's header row, or the TTL sweeper."""

    y: float
    kind: RowKind
    label: str
    inv: str | None = None
    sub: str | None = None
    source: str | None = None


@dataclass
class Rows:
    """All rows in order, and where to find a lane, a header row or the sweeper by name."""

    all: list[Row]
    busy: set[str]  # sources whose header rows show labelled delivery events (taller rows)
    lane_y: dict[str, float] = field(init=False)
    head_y: dict[str, float] = field(init=False)
    sweeper_y: float | None = field(init=False)

    def __post_init__(self) -> None:
        self.lane_y = {r.inv: r.y for r in self.all if r.kind == RowKind.LANE}
        self.head_y = {r.source: r.y for r in self.all if r.kind == RowKind.HEADING}
        self.sweeper_y = next((r.y for r in self.all if r.kind == RowKind.SWEEPER), None)

    @property
    def busy_top(self) -> bool:
        """The first row is a busy header row: it needs room above it."""
        first = self.all[0]
        return first.kind == RowKind.HEADING and first.source in self.busy

    @property
    def height(self) -> float:
        """Data units from the top of the first row to the bottom of the last."""
        return self.all[-1].y + LANE_H + (BUSY_TOP if self.all[0].source in self.busy else 0.0)


def busy_sources(model: Model) -> set[str]:
    """Sources whose header rows show labelled delivery events (they get taller rows)."""
    return {e.source for e in model.events if e.label} | {a.source for a in model.attempts}


#: A source that hands its events to another comes right above it: EventBridge feeds Lambda's async queue.
UPSTREAM = {SourceKind.EVENTBRIDGE: SourceKind.ASYNC}


def _groups(model: Model) -> dict[str, list[Invocation]]:
    """Invocations per source, in start order; a source that only did other things gets an empty group."""
    groups: dict[str, list[Invocation]] = {}
    for rec in model.invs.values():  # history order = start order
        groups.setdefault(rec.source, []).append(rec)
    for e in model.events:
        groups.setdefault(e.source, [])
    for a in model.attempts:
        groups.setdefault(a.source, [])
    order = list(groups)
    for up, down in UPSTREAM.items():
        if up in order and down in order:
            order.remove(up)
            order.insert(order.index(down), up)
    return {source: sorted(groups[source], key=lambda r: (r.start, r.seq)) for source in order}


def layout_rows(model: Model) -> Rows:
    """The rows top to bottom, with their y in data units."""
    rows: list[Row] = []
    y = 0.0
    if any(m.style == RecordType.SWEEP for m in model.marks):
        rows.append(Row(y, RowKind.SWEEPER, "TTL sweeper"))
        y += SWEEPER_H
    busy = busy_sources(model)
    for source, recs in _groups(model).items():
        if rows:
            y += GROUP_GAP_BUSY if source in busy else GROUP_GAP
        rows.append(Row(y, RowKind.HEADING, SOURCE_LABELS.get(source, source), source=source))
        y += HEAD_BUSY if source in busy else HEAD_H
        for rec in recs:
            label = rec.inv if not rec.cause else f"{rec.inv} · {rec.cause}"
            rows.append(Row(y, RowKind.LANE, label, rec.inv, lane_sub(rec), source))
            y += LANE_H
    return Rows(rows, busy)
