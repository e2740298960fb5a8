"""The rows of the timeline and what is drawn on them before the layout is frozen.

One row per Lambda invocation, grouped under a header row per delivery source (plus
a "TTL sweeper" row when records were swept). On them: row names and subtitles, the
outcome in words at the right, group separators, the invocation bars, the
idempotency-table windows behind them, pending bands, squeezed-gap bands and the
"history ends" line. All of these are placed in data coordinates; afterwards
:meth:`LaneStage._static_obstacles` registers what labels must keep clear of.
"""
from __future__ import annotations

from dataclasses import dataclass

from matplotlib import patches as mpatches
from matplotlib import transforms as mtransforms
from matplotlib.transforms import Bbox

from .layout import Canvas
from .model import Event, Invocation, Model, Window
from .style import (GAP_COLOR, OI_ORANGE, OUTCOME_COLORS, PENDING_BAND, RUNNING_BAR, TEXT_GREY,
                    WINDOW_STYLE)
from .text import human, lane_sub, outcome_text

SOURCE_LABELS = {
    "sqs": "SQS poller",
    "async": "Async event queue",
    "sync": "Synchronous caller (SDK retries)",
    "stream": "Kinesis stream poller",
    "direct": "Direct invoke (no retries)",
}


@dataclass
class Row:
    """One row of the plot: an invocation's lane, a source's header row, or the TTL sweeper."""

    y: float
    kind: str  # "lane", "heading", "sweeper"
    label: str
    inv: str | None = None
    sub: str | None = None
    source: str | None = None


HEAD_BUSY = 1.3  # height of a header row that shows delivery events


def busy_sources(model: Model) -> set[str]:
    """Sources whose header rows show labelled delivery events (they get taller rows)."""
    return {e.source for e in model.events if e.label} | ({"sync"} if model.attempts else set())


def layout_rows(model: Model) -> list[Row]:
    """The rows top to bottom, with their y in data units (lanes are 1.0 apart)."""
    rows: list[Row] = []
    y = 0.0
    if any(m.style == "sweep" for m in model.marks):
        rows.append(Row(y, "sweeper", "TTL sweeper"))
        y += 1.15
    groups: dict[str, list[Invocation]] = {}
    for rec in model.invs.values():  # history order = start order
        groups.setdefault(rec.source, []).append(rec)
    for e in model.events:  # a source that only did things besides invoking still gets its row
        groups.setdefault(e.source, [])
    if model.attempts:
        groups.setdefault("sync", [])
    busy = busy_sources(model)
    for source, recs in groups.items():
        recs = sorted(recs, key=lambda r: (r.start, r.seq))
        if rows:
            y += 0.35 if source in busy else 0.2  # busy header rows: room for labels above the markers
        rows.append(Row(y, "heading", SOURCE_LABELS.get(source, source), source=source))
        y += HEAD_BUSY if source in busy else 0.9
        for rec in recs:
            label = rec.inv if not rec.cause else f"{rec.inv} · {rec.cause}"
            rows.append(Row(y, "lane", label, rec.inv, lane_sub(rec), source))
            y += 1.0
    return rows


class LaneStage(Canvas):
    """Drawing stage: everything placed in data coordinates, before the layout is frozen."""

    rows: list[Row]

    def _yaxis(self) -> None:
        ax, fs = self.ax, self.fs
        ys = [r.y - (0.13 if (r.sub and not self.compact) else 0.0) for r in self.rows]
        ax.set_yticks(ys, labels=[r.label for r in self.rows])
        ax.tick_params(axis="y", which="both", length=0, pad=8)
        for r, lbl in zip(self.rows, ax.get_yticklabels()):
            lbl.set_parse_math(False)
            if r.kind == "lane":
                lbl.set_fontsize(fs(12))
            else:
                lbl.set_fontsize(fs(13))
                lbl.set_fontweight("bold")
        subs = [r for r in self.rows if r.sub] if not self.compact else []
        if subs:
            ax.set_yticks([r.y + 0.25 for r in subs], labels=[r.sub for r in subs], minor=True)
            for lbl in ax.get_yticklabels(minor=True):
                lbl.set_parse_math(False)
                lbl.set_fontsize(fs(10))
                lbl.set_color(TEXT_GREY)
        # group separators and outcome words on the right
        blend = mtransforms.blended_transform_factory(ax.transAxes, ax.transData)
        right = blend + mtransforms.ScaledTranslation(8 / 72, 0, self.fig.dpi_scale_trans)
        self.separators: list[float] = []
        for r in self.rows:
            if r.kind in ("heading", "sweeper"):
                y = r.y + (0.45 if r.kind == "heading" else 0.55)
                if r.kind == "heading" and r.source in self.busy:
                    y = r.y + HEAD_BUSY / 2
                ax.axhline(y, color="#B5B5B5", lw=1.0, zorder=0.5, gid="separator")
                self.separators.append(y)
            if r.kind == "lane":
                rec = self.model.invs[r.inv]
                text, msg = outcome_text(rec)
                two = msg is not None and not self.compact
                ax.text(1, r.y - (0.13 if two else 0.0), text, transform=right, ha="left", va="center",
                        fontsize=fs(12), parse_math=False, clip_on=False, gid=f"outcome:{rec.inv}")
                if two:
                    ax.text(1, r.y + 0.25, msg, transform=right, ha="left", va="center",
                            fontsize=fs(10), color=TEXT_GREY, parse_math=False, clip_on=False,
                            gid=f"error:{rec.inv}")

    def _end_line(self) -> None:
        self.end_label = None
        if not self.taxis.tail:
            return
        ax = self.ax
        x = self.taxis.x(self.model.t_end)
        ax.axvline(x, color="#6E6E6E", lw=1.3, ls=(0, (1.5, 2)), zorder=2.5, gid="end-of-history")
        trans = mtransforms.blended_transform_factory(ax.transData, ax.transAxes) + \
            mtransforms.ScaledTranslation(4 / 72, 0, self.fig.dpi_scale_trans)
        label = ax.text(x, 0.995, "history ends", transform=trans, ha="left", va="top",
                        fontsize=self.fs(10), color=TEXT_GREY, fontstyle="italic", zorder=2.7)
        label.set_in_layout(False)
        self.end_label = label

    def _gaps(self) -> None:
        ax = self.ax
        trans = mtransforms.blended_transform_factory(ax.transData, ax.transAxes)
        self.gap_labels = []
        for ta, tb, xa, xb in self.taxis.gaps:
            ax.axvspan(xa, xb, facecolor=GAP_COLOR, alpha=0.85, lw=0, zorder=2.6, gid="gap")
            for x in (xa, xb):
                ax.axvline(x, color="#9A9A9A", lw=0.9, ls=(0, (4, 3)), zorder=2.6)
            self.gap_labels.append(ax.text(
                (xa + xb) / 2, 0.012, f"{human(tb - ta)}\nskipped", transform=trans,
                ha="center", va="bottom", fontsize=self.fs(10), color=TEXT_GREY, zorder=2.7,
                linespacing=1.1, gid="gap-label"))

    def _windows(self) -> None:
        ax, tx = self.ax, self.taxis
        x_hi = tx.x_hi
        lane_keys: dict[str, list[str]] = {}
        for w in sorted(self.model.windows, key=lambda w: w.start):
            keys = lane_keys.setdefault(w.inv, [])
            if w.key not in keys:
                keys.append(w.key)
        self.window_boxes: list[tuple[Window, float, float, float, float]] = []  # (w, x0, x1, y0, h)
        # draw "kept" first so a lock on the same lane and key shows on top
        for kind, z in (("kept", 1.0), ("expired", 1.1), ("lock", 1.2)):
            face, edge, hatch, _ = WINDOW_STYLE[kind]
            for w in self.model.windows:
                if w.kind != kind:
                    continue
                y = self.lane_y[w.inv]
                keys = lane_keys[w.inv]
                x0 = tx.x(w.start)
                x1 = x_hi if w.end is None else min(tx.x(w.end), x_hi)
                if x1 <= x0:
                    continue
                if 1 < len(keys) <= 4:  # thin bands above and below the bar, so no key hides another
                    top, bottom = keys[:(len(keys) + 1) // 2], keys[(len(keys) + 1) // 2:]
                    if w.key in top:
                        h = 0.21 / len(top)
                        y0 = y - 0.40 + top.index(w.key) * h
                    else:
                        h = 0.21 / len(bottom)
                        y0 = y + 0.19 + bottom.index(w.key) * h
                    alpha = 1.0
                else:
                    h, y0 = 0.72, y - 0.36
                    alpha = 0.55 if len(keys) > 4 else 1.0
                ax.add_patch(mpatches.Rectangle((x0, y0), x1 - x0, h, facecolor=face, edgecolor=edge, hatch=hatch,
                                                lw=0.7, zorder=z, alpha=alpha, gid=f"{kind}:{w.inv}:{w.key}"))
                self.window_boxes.append((w, x0, x1, y0, h))

    def _bars(self) -> None:
        ax, tx = self.ax, self.taxis
        self.bars: dict[str, mpatches.Rectangle] = {}
        for rec in self.model.invs.values():
            y = self.lane_y[rec.inv]
            x0 = tx.x(rec.start)
            if rec.outcome is None:
                x1 = tx.x(max(self.model.t_end, rec.start))
                rect = mpatches.Rectangle((x0, y - 0.19), max(x1 - x0, 0.0), 0.38, **RUNNING_BAR, zorder=2,
                                          gid=f"bar:{rec.inv}:running")
            else:
                x1 = tx.x(rec.end)
                partial = rec.outcome == "ok" and bool(rec.failed_items)
                rect = mpatches.Rectangle((x0, y - 0.19), max(x1 - x0, 0.0), 0.38,
                                          facecolor=OUTCOME_COLORS[rec.outcome], edgecolor="black",
                                          hatch="\\\\" if partial else None,
                                          hatchcolor=OI_ORANGE if partial else "edge",
                                          lw=0.7, zorder=2, gid=f"bar:{rec.inv}:{rec.outcome}")
            ax.add_patch(rect)
            self.bars[rec.inv] = rect

    def _pending(self) -> None:
        """Orders still waiting in a source when the run stopped: a hatched band on its header row."""
        ax, tx = self.ax, self.taxis
        self.pending_bands: list[tuple[Event, mpatches.Rectangle]] = []
        for e in self.model.events:
            if e.style != "pending" or e.source not in self.head_y:
                continue
            y = self.head_y[e.source]
            x0 = tx.x(e.t0 if e.t0 is not None else e.t)
            x1 = tx.x(self.model.t_end)
            rect = mpatches.Rectangle((x0, y - 0.3), max(x1 - x0, 0.0), 0.6, **PENDING_BAND, zorder=1.5,
                                      gid=f"pending:{e.source}")
            ax.add_patch(rect)
            self.pending_bands.append((e, rect))

    def _static_obstacles(self) -> None:
        axbox = self.ax.get_window_extent(self.renderer)
        for y in self.separators:
            _, py = self._px(0, y)
            self.obs.add(Bbox.from_extents(axbox.x0, py - 1.5, axbox.x1, py + 1.5), "separator")
        for t in self.gap_labels + ([self.end_label] if self.end_label is not None else []):
            self.obs.add(t.get_window_extent(self.renderer), "static")
        if self.end_label is not None:
            px, _ = self._px(self.taxis.x(self.model.t_end), 0)
            self.obs.add(Bbox.from_extents(px - 1, axbox.y0, px + 1, axbox.y1), "endline")
