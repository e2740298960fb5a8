"""The rows of the timeline, top to bottom, and where each sits (y in data units).

One row per Lambda invocation (its lane), grouped under a header row per delivery
source, plus a "TTL sweeper" row on top when records were swept. A lane is 1.0 tall,
taller when it holds idempotency records (a strip per key under its bar) or when
its outcome has an error message of several lines. Header rows that carry labelled
delivery events are taller, so their labels fit above the markers; a header row with
nothing on it is left out where its lanes still read as its source's (``layout_rows``), and is thin where they
would not (it only names the group); an SQS poller's row gets a strip under its markers for the time the messages
it received stayed invisible.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from ...vocab import RecordType, SourceKind
from .model import PRODUCER, Invocation, Model, Window, producer_of
from .text import heading_text, lane_sub, outcome_text

SOURCE_LABELS: dict[str, str] = {
    SourceKind.SQS: "SQS poller",
    SourceKind.ASYNC: "Async event queue",
    SourceKind.SYNC: "Synchronous caller (SDK retries)",
    SourceKind.STREAM: "Kinesis stream poller",
    SourceKind.DIRECT: "Direct invoke (no retries)",
    SourceKind.APIGATEWAY: "HTTP client → API Gateway (client retries)",
    SourceKind.FUNCTION_URL: "HTTP client → function URL (client retries)",
    SourceKind.ALB: "HTTP client → load balancer (client retries)",
    SourceKind.EVENTBRIDGE: "EventBridge rule → Lambda",
    SourceKind.DDB_STREAM: "DynamoDB stream poller",
    SourceKind.SNS: "SNS topic → Lambda",
    SourceKind.S3: "S3 bucket notification → Lambda",
    SourceKind.STEPFUNCTIONS: "Step Functions Task → Lambda (Retry)",
    SourceKind.KAFKA: "Kafka partition poller",
    SourceKind.DURABLE: "Durable execution (replays)",
    SourceKind.CLOUDFORMATION: "CloudFormation stack",
}

#: The row of a producer that re-sent an order, above its source's row: what it sends to.
PRODUCER_LABELS: dict[str, str] = {
    SourceKind.SQS: "Producer → SQS queue",
    SourceKind.STREAM: "Producer → Kinesis stream",
    SourceKind.KAFKA: "Producer → Kafka topic",
    SourceKind.EVENTBRIDGE: "Producer → EventBridge (PutEvents)",
}


#: A producer's row when the row of the source it sends to is left out (nothing is drawn on it): its lanes, right
#: below, read as the end of the producer's chain.
PRODUCER_CHAINS: dict[str, str] = {
    SourceKind.SQS: "Producer → SQS queue\n→ poller → Lambda",
    SourceKind.STREAM: "Producer → Kinesis stream\n→ poller → Lambda",
    SourceKind.KAFKA: "Producer → Kafka topic\n→ poller → Lambda",
    SourceKind.EVENTBRIDGE: "Producer → EventBridge\n→ rule → Lambda",
}


def row_label(source: str) -> str:
    """A header row's name: the source's, or its producer's."""
    if source.startswith(PRODUCER):
        sends_to = source[len(PRODUCER):]
        return PRODUCER_LABELS.get(sends_to, f"Producer → {SOURCE_LABELS.get(sends_to, sends_to)}")
    return SOURCE_LABELS.get(source, source)


# row extents above and below a row's centre, in data units (one plain lane = 0.5 + 0.5)
LANE_HALF = 0.5
SWEEPER = (0.5, 0.55, 0.65)  # the sweeper's row: (above, its separator, below)
HEAD_PLAIN = (0.45, 0.45, 0.4)  # a header row without labelled events ...
HEAD_BUSY = (0.5, 0.65, 0.8)  # ... one that shows labelled delivery events ...
HEAD_EMPTY = (0.3, 0.3, 0.3)  # ... and one with nothing on it (one line of text)
HIDDEN_FROM = 0.24  # an SQS poller's row: the strip for invisible messages starts this far below its centre ...
HIDDEN_H = 0.3  # ... is this tall ...
HIDDEN_PAD = 0.12  # ... and keeps this far from the separator
GROUP_GAP = 0.2  # between a group's last lane and the next header row ...
GROUP_GAP_BUSY = 0.35  # ... or a busy header row, so its labels clear the lane above
BUSY_TOP = 0.55  # extra room above a busy header row at the very top (a label on two lines over its marks)
NOTE_TOP = 0.45  # extra room above a lane at the very top whose duplicate's note may stand over it

# a lane holding idempotency records: one strip per key under its bar
STRIPS_FROM = 0.33  # the first strip starts this far below the lane's centre ...
STRIP_STEP = 0.34  # ... each takes this much (a 10 pt note fits in one) ...
STRIP_H = 0.27  # ... of which the band is this tall
MAX_STRIPS = 5  # more keys than this: full-height bands, see-through
STACK_ROOM = 0.06  # room beyond a row's stacked marks
STRIPS_PAD = 0.1  # below the last strip
# the lines under a lane's outcome (an error's class and message)
MESSAGE_TOP = 0.08  # the first line starts this far below the lane's centre
MESSAGE_LINE = 0.32  # each line takes this much (10 pt at full scale)
MESSAGE_PAD = 0.12


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
    above: float = LANE_HALF  # how far the row reaches above its centre ...
    below: float = LANE_HALF  # ... and below it
    sep: float = 0.0  # a header row's (or the sweeper's) separator line: this far below its centre
    keys: list[str] = field(default_factory=list)  # a lane's keys with a strip each
    strips_from: float = 0.33  # a lane's first strip starts this far below its centre (lower when marks stack)
    hidden_from: float = HIDDEN_FROM  # a poller's strip for invisible messages, likewise


@dataclass
class Rows:
    """All rows in order, and where to find a lane, a header row or the sweeper by name."""

    all: list[Row]
    busy: set[str]  # sources whose header rows show labelled delivery events (taller rows)
    #: the name of the only source, whose header row would have nothing on it: drawn over the lane names instead
    caption: str | None = None
    lane_y: dict[str | None, float] = field(init=False)  # by invocation (every lane has one)
    head_y: dict[str | None, float] = field(init=False)  # by source (every header row has one)
    sweeper_y: float | None = field(init=False)

    def __post_init__(self) -> None:
        self.lane_y = {r.inv: r.y for r in self.all if r.kind == RowKind.LANE}
        self.head_y = {r.source: r.y for r in self.all if r.kind == RowKind.HEADING}
        self.sweeper_y = next((r.y for r in self.all if r.kind == RowKind.SWEEPER), None)
        self.strips = {r.inv: r.keys for r in self.all if r.kind == RowKind.LANE and r.keys}
        self.strips_from = {r.inv: r.strips_from for r in self.all if r.kind == RowKind.LANE}
        self.hidden_from = {r.source: r.hidden_from for r in self.all if r.kind == RowKind.HEADING}

    def head_spans(self) -> dict[str, tuple[float, float]]:
        """Each header row (and the sweeper's), by its name, between its separator and its far edge: where what it
        shows is drawn (a sweeper's row under the lanes has its separator above it)."""
        return {r.label: (r.y - r.above, r.y + r.sep) if r.sep >= 0 else (r.y + r.sep, r.y + r.below)
                for r in self.all if r.kind != RowKind.LANE}

    def lane_spans(self) -> dict[str, tuple[float, float]]:
        """Each lane's row, from its top to its bottom (data y): what a label beside a lane stands on."""
        return {r.inv: (r.y - r.above, r.y + r.below) for r in self.all if r.kind == RowKind.LANE and r.inv}

    @property
    def busy_top(self) -> bool:
        """The first row is a busy header row: it needs room above it."""
        first = self.all[0]
        return first.kind == RowKind.HEADING and first.source in self.busy

    @property
    def top(self) -> float:
        """Data y of the top of the first row (negative: the first row's centre is 0)."""
        return -self.all[0].above - (BUSY_TOP if self.busy_top else 0.0)

    @property
    def bottom(self) -> float:
        last = self.all[-1]
        return last.y + last.below

    @property
    def height(self) -> float:
        """Data units from the top of the first row to the bottom of the last."""
        return self.bottom - self.top

    def strip(self, inv: str, key: str) -> tuple[float, float] | None:
        """(top, height) of ``key``'s strip under ``inv``'s bar, if the lane has strips."""
        keys = self.strips.get(inv)
        if not keys or key not in keys:
            return None
        return self.lane_y[inv] + self.strips_from[inv] + keys.index(key) * STRIP_STEP, STRIP_H

    def hidden_strip(self, source: str) -> tuple[float, float]:
        """(top, height) of the strip under a poller's markers for its invisible messages."""
        return self.head_y[source] + self.hidden_from.get(source, HIDDEN_FROM), HIDDEN_H


def busy_sources(model: Model) -> set[str]:
    """Sources whose header rows show labelled delivery events (they get taller rows)."""
    return {e.source for e in model.events if e.label} | {a.source for a in model.attempts}


#: The async queue's header row when a caller's Event invokes are drawn on it.
ASYNC_WITH_CALLER = "Caller → async event queue (SDK retries)"

#: A source that hands its events to another comes right above it: EventBridge, SNS and S3 feed Lambda's async queue.
UPSTREAM = {SourceKind.EVENTBRIDGE: SourceKind.ASYNC, SourceKind.SNS: SourceKind.ASYNC, SourceKind.S3: SourceKind.ASYNC}


def _groups(model: Model) -> dict[str, list[Invocation]]:
    """Invocations per source, in start order; a source that only did other things gets an empty group."""
    groups: dict[str, list[Invocation]] = {}
    for rec in model.invs.values():  # history order = start order
        groups.setdefault(rec.source, []).append(rec)
    for e in model.events:
        if e.source.startswith(PRODUCER):  # the source a producer sends to keeps its row, under the producer's
            groups.setdefault(e.source[len(PRODUCER):], [])
        groups.setdefault(e.source, [])
    for a in model.attempts:
        groups.setdefault(a.source, [])
    order = list(groups)
    for up, down in UPSTREAM.items():
        if up in order and down in order:
            order.remove(up)
            order.insert(order.index(down), up)
    for producer in [s for s in order if s.startswith(PRODUCER)]:  # right above the source it sends to
        order.remove(producer)
        order.insert(order.index(producer[len(PRODUCER):]), producer)
    return {source: sorted(groups[source], key=_start_order) for source in order}


def _start_order(rec: Invocation) -> tuple[float, int, int]:
    """Lanes run in the order their invocations started; runs that started at one instant, in the order Lambda
    numbered them (inv-3 above inv-4), whichever record the history wrote first."""
    tail = rec.inv.rsplit("-", 1)[-1]
    return rec.start, int(tail) if tail.isdigit() else rec.seq, rec.seq


def _drawn_on(model: Model, source: str) -> bool:
    """Whether a source's header row shows anything of its own (delivery events, a caller's attempts, invisible
    messages), beyond naming its lanes."""
    return (any(e.source == source for e in model.events) or any(a.source == source for a in model.attempts)
            or (source == SourceKind.SQS and bool(model.hidden)))


def lane_keys(windows: list[Window]) -> dict[str, list[str]]:
    """The keys each lane holds windows for, in the order first claimed."""
    keys: dict[str, list[str]] = {}
    for w in sorted(windows, key=lambda w: w.start):
        mine = keys.setdefault(w.inv, [])
        if w.key not in mine:
            mine.append(w.key)
    return keys


def _lane(rec: Invocation, keys: list[str], reach: float = 0.0) -> Row:
    """An invocation's lane, as tall as its stacked marks (``reach`` above and below its centre), its strips and
    the lines under its outcome need."""
    label = rec.inv if not rec.cause else f"{rec.inv} · {rec.cause}"
    # one key or several, each record in a strip of its own under the bar: one way to draw a window in every figure
    strips = keys if len(keys) <= MAX_STRIPS else []
    above = below = max(LANE_HALF, reach + STACK_ROOM)
    strips_from = max(STRIPS_FROM, reach + STACK_ROOM / 2)
    if strips:
        below = max(below, strips_from + len(strips) * STRIP_STEP + STRIPS_PAD)
    lines = len(outcome_text(rec)[1])
    if lines:
        below = max(below, MESSAGE_TOP + lines * MESSAGE_LINE + MESSAGE_PAD)
    return Row(0.0, RowKind.LANE, label, rec.inv, lane_sub(rec), rec.source, above=above, below=below, keys=strips,
               strips_from=strips_from)


def _heading(model: Model, source: str, busy: set[str], reach: float = 0.0) -> Row:
    """A source's header row: taller when busy, thin when nothing is drawn on it."""
    drawn = _drawn_on(model, source)
    callers = source == SourceKind.ASYNC and any(a.source == source for a in model.attempts)
    label = heading_text(ASYNC_WITH_CALLER if callers else row_label(source))
    hidden = source == SourceKind.SQS and bool(model.hidden)
    above, sep, below = HEAD_BUSY if source in busy else HEAD_PLAIN if drawn or hidden or "\n" in label \
        else HEAD_EMPTY
    above, sep, below = max(above, reach + STACK_ROOM), max(sep, reach + STACK_ROOM), max(below, reach + STACK_ROOM)
    hidden_from = max(HIDDEN_FROM, reach + STACK_ROOM / 2)  # under the marks stacked on the row, not behind them
    if hidden:
        room = max(0.0, hidden_from + HIDDEN_H + HIDDEN_PAD - sep)
        sep, below = sep + room, below + room
    return Row(0.0, RowKind.HEADING, label, source=source, above=above, below=below, sep=sep, hidden_from=hidden_from)


def layout_rows(model: Model, reach: dict[str, float] | None = None) -> Rows:
    """The rows top to bottom, with their y in data units; ``reach``: how far a row's stacked marks reach above and
    below its centre (``sizing.stack_reach``), by invocation or ``head:<source>``.

    A source's header row with nothing drawn on it is left out where its lanes still read as that source's: under
    the source that feeds it (EventBridge, SNS or S3 over the async queue; a producer, whose row then names the whole
    chain), or when it is the figure's only row of its kind (its name then stands over the lane names, a caption)."""
    reach = reach or {}
    rows: list[Row] = []
    busy = busy_sources(model)
    keys = lane_keys(model.windows)
    groups = _groups(model)
    caption = None
    for source, recs in groups.items():
        fed = any(down == source and up in groups for up, down in UPSTREAM.items())
        producer = bool(rows) and rows[-1].source == producer_of(source) and source in PRODUCER_CHAINS
        sole = len(groups) == 1
        if not _drawn_on(model, source) and (fed or producer or (sole and recs)):
            if producer:
                rows[-1].label = PRODUCER_CHAINS[source]
            elif sole:
                caption = heading_text(row_label(source))
        else:
            head = _heading(model, source, busy, reach.get(f"head:{source}", 0.0))
            if rows:  # (the sweeper's row, on top, adds its own gap)
                head.above += GROUP_GAP_BUSY if source in busy else GROUP_GAP
            rows.append(head)
        rows += [_lane(rec, keys.get(rec.inv, []), reach.get(rec.inv, 0.0)) for rec in recs]
    if any(m.style == RecordType.SWEEP for m in model.marks):
        above, sep, below = SWEEPER
        if caption:  # on top, the sweeper would stand under the caption as if it were the source's: at the bottom
            rows.append(Row(0.0, RowKind.SWEEPER, "TTL sweeper", above=below + GROUP_GAP, below=above, sep=-below))
        else:
            rows.insert(0, Row(0.0, RowKind.SWEEPER, "TTL sweeper", above=above, below=below, sep=sep))
            if len(rows) > 1:
                rows[1].above += GROUP_GAP_BUSY if rows[1].source in busy else GROUP_GAP
    first = rows[0] if rows else None
    if first and first.kind == RowKind.LANE and any(m.inv == first.inv and m.dup_text for m in model.marks):
        first.above += NOTE_TOP  # its duplicate's note may stand above it, as the others' do, inside the plot
    last = rows[-1] if rows else None
    if last and last.kind == RowKind.LANE and any(m.inv == last.inv and m.dup_text for m in model.marks):
        last.below += NOTE_TOP  # ... and under the last lane: above its marks, it would stand on the lane above
    y = 0.0
    for i, row in enumerate(rows):
        if i:
            y += rows[i - 1].below + row.above
        row.y = y
    return Rows(rows, busy, caption)
