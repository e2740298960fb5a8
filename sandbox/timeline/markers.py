"""Markers on the rows, placed in display space once the layout is frozen.

Each row (an invocation's lane, a source's header row, the TTL sweeper, a synchronous
caller's attempts) gets its markers in time order, spread so they never overlap and,
on a lane, kept inside the invocation's bar (widened a little if they do not fit).
Then the lines that hang off markers: a redelivery's guide down through the
invocation still running, and a synchronous caller's wait for each attempt.
"""
from __future__ import annotations

from typing import Any

from matplotlib import lines as mlines
from matplotlib.transforms import Bbox

from .layout import Canvas
from .model import Attempt, Event, Mark, attempt_style
from .style import ENVELOPE, MARKERS, WAIT_COLOR


class MarkerStage(Canvas):
    """Drawing stage: markers, redelivery guides and caller waits (after the layout is frozen)."""

    def _set_bar_px(self, rect: Any, left: float, right: float, py: float) -> None:
        """Move a bar's ends to display x ``left`` and ``right``."""
        rect.set_x(self._data(left, py)[0])
        rect.set_width(self._data(right, py)[0] - rect.get_x())

    def _marker_half(self, style: str) -> float:
        """Half a marker's drawn width in display px (glyphs look smaller than their box)."""
        kw = MARKERS[style][0]
        size = kw["ms"] * self.scale * 0.5 * self.pt
        if kw["marker"] is ENVELOPE:
            return size * 1.05
        if isinstance(kw["marker"], str) and kw["marker"].startswith("$"):
            return size * 0.75
        return size * 0.8

    def _markers(self) -> None:
        ax, tx, fig = self.ax, self.taxis, self.fig
        pt = self.pt
        axbox = ax.get_window_extent(self.renderer)
        end_px = self._px(tx.x(self.model.t_end), 0)[0]
        # bars: at least 3 px wide so a 1 ms invocation is still visible
        min_w = 3 * fig.dpi / 100
        for rect in self.bars.values():
            x0, y0 = self._px(rect.get_x(), 0)
            x1, _ = self._px(rect.get_x() + rect.get_width(), 0)
            if x1 - x0 < min_w:
                right = min(x0 + min_w, max(end_px, x1))
                left = right - min_w
                self._set_bar_px(rect, left, right, y0)
        # rows of markers: (owner, y, dy for staggering, items [(t, seq, style, payload)], lo, hi, bar)
        rows: list[tuple[str, float, float, list[tuple[float, int, str, Any]], float, float, Any]] = []
        lanes: dict[str, list[tuple[float, int, str, Any]]] = {}
        sweeps: list[tuple[float, int, str, Any]] = []
        for m in self.model.marks:
            if m.inv is None:
                sweeps.append((m.t, m.seq, m.style, m))
            else:
                lanes.setdefault(m.inv, []).append((m.t, m.seq, m.style, m))
        for inv, items in lanes.items():
            rows.append((f"lane:{inv}", self.lane_y[inv], 0.11, items, 0.0, 0.0, self.bars[inv]))
        top_lo, top_hi = axbox.x0 + 3 * pt, max(end_px - 2 * pt, axbox.x0 + 3 * pt)
        if sweeps and self.sweeper_y is not None:
            rows.append(("sweeper", self.sweeper_y, 0.15, sweeps, top_lo, top_hi, None))
        heads: dict[str, list[tuple[float, int, str, Any]]] = {}
        for e in self.model.events:
            if e.style != "pending" and e.source in self.head_y:
                heads.setdefault(e.source, []).append((e.t, e.seq, e.style, e))
        for source, items in heads.items():
            rows.append((f"head:{source}", self.head_y[source], 0.16, items, top_lo, top_hi, None))
        # the synchronous caller's attempts: one sub-row per caller
        self.attempt_rows: dict[str, float] = {}
        if self.model.attempts and "sync" in self.head_y:
            actors = list(dict.fromkeys(a.actor for a in self.model.attempts))
            offsets = [0.0] if len(actors) == 1 else [-0.22, 0.0, 0.22]
            for i, actor in enumerate(actors):
                y = self.head_y["sync"] + offsets[i % len(offsets)]
                self.attempt_rows[actor] = y
                items = []
                for a in self.model.attempts:
                    if a.actor == actor:
                        items.append((a.sent, a.seq, "call_send", (a, "send")))
                        items.append((a.t, a.seq, attempt_style(a), (a, "end")))
                rows.append((f"caller:{actor}", y, 0.0, sorted(items, key=lambda it: (it[0], it[1])),
                             top_lo, top_hi, None))

        by_style: dict[str, list[tuple[float, float]]] = {}
        self.dup_points: list[tuple[str, float, float, str]] = []  # (inv, x, y, text) display px
        self.sweep_points: list[tuple[float, float, str]] = []
        self.event_points: list[tuple[Event, float, float, float]] = []  # (event, x, y, half) px
        self.attempt_px: dict[tuple[int, str], tuple[float, float]] = {}
        self.lane_left: dict[str, float] = {}  # display x where a lane's first marker begins
        for owner, y, dy, items, lo, hi, bar in rows:
            items = sorted(items, key=lambda it: (it[0], it[1]))
            halves = [self._marker_half(it[2]) for it in items]
            want = [self._px(tx.x(it[0]), y)[0] for it in items]
            if bar is not None:
                lo, _ = self._px(bar.get_x(), y)
                hi, _ = self._px(bar.get_x() + bar.get_width(), y)
                need = sum(halves) * 2 + 2 * pt * (len(items) - 1)
                if need > hi - lo:  # widen the bar by at most one marker, never past the end of history
                    ext = min(need - (hi - lo), 2 * max(halves))
                    r = min(ext, max(0.0, end_px - hi))
                    hi += r
                    lo -= ext - r
                    self._set_bar_px(bar, lo, hi, y)
                squeezed = need * 0.5 - 2 * max(halves)  # staggered up and down, they still need this
                if squeezed > hi - lo:  # too many for the bar: let them overhang it a little
                    extra = squeezed - (hi - lo)
                    r = min(extra / 2, max(0.0, end_px - hi))
                    hi += r
                    lo -= extra - r
            placed, signs = self._row_positions(want, halves, lo, hi)
            if bar is not None and placed:
                self.lane_left[owner[5:]] = placed[0] - halves[0]
            for (t, seq, style, payload), px, sign, half in zip(items, placed, signs, halves):
                yd = y + sign * dy
                py = self._px(0.0, yd)[1]
                xd = self._data(px, py)[0]
                by_style.setdefault(style, []).append((xd, yd))
                size = 2 * half / (1.05 if MARKERS[style][0]["marker"] is ENVELOPE else 0.8)
                mine = f"{owner}:{payload.seq}" if isinstance(payload, Event) else owner
                self.obs.add(Bbox.from_bounds(px - size / 2, py - size / 2, size, size), mine)
                if isinstance(payload, Mark):
                    if payload.dup_text:
                        self.dup_points.append((payload.inv, px, py, payload.dup_text))
                    if payload.label:
                        self.sweep_points.append((px, py, payload.label))
                elif isinstance(payload, Event):
                    if payload.label:
                        self.event_points.append((payload, px, py, half))
                elif isinstance(payload, tuple):
                    self.attempt_px[(id(payload[0]), payload[1])] = (px, py)
        for name in MARKERS:  # fixed order: deterministic z-order
            pts = by_style.get(name)
            if not pts:
                continue
            kw = dict(MARKERS[name][0])
            kw["ms"] = kw["ms"] * self.scale
            line = mlines.Line2D([p[0] for p in pts], [p[1] for p in pts], ls="none", zorder=4,
                                 gid=f"marker:{name}", **kw)
            line.set_in_layout(False)
            ax.add_line(line)
        for inv, rect in self.bars.items():
            self.obs.add(rect.get_window_extent(self.renderer), f"lane:{inv}")

    def _guides(self) -> None:
        """A dotted line from "received again" down through the invocation still working on
        those messages: the visibility timeout ran out while it was busy."""
        ax = self.ax
        for e, px, py, half in self.event_points:
            if not e.running:
                continue
            ys = [self.lane_y[i] for i in e.running if i in self.lane_y]
            if not ys:
                continue
            y0 = self._data(px, py - half - 1 * self.pt)[1]
            y1 = max(ys) + 0.3
            x = self._data(px, py)[0]
            line = mlines.Line2D([x, x], [y0, y1], color="black", lw=1.3, ls=(0, (2, 2)), zorder=3.7,
                                 gid=f"guide:{e.style}")
            line.set_in_layout(False)
            ax.add_line(line)
            top, bottom = self._px(x, y0)[1], self._px(x, y1)[1]
            self.obs.add(Bbox.from_extents(px - 2, bottom, px + 2, top), "guide")

    def _caller_lines(self) -> None:
        """A synchronous caller's wait for each attempt, from send to read timeout or answer."""
        ax = self.ax
        self.caller_points: list[tuple[Attempt, float, float]] = []
        for a in self.model.attempts:
            if a.actor not in self.attempt_rows:
                continue
            sx, sy = self.attempt_px[(id(a), "send")]
            ex, ey = self.attempt_px[(id(a), "end")]
            x0 = self._data(sx, sy)[0]
            x1 = self._data(ex, ey)[0]
            y = self.attempt_rows[a.actor]
            line = mlines.Line2D([x0, x1], [y, y], color=WAIT_COLOR, lw=3 * self.scale, zorder=3,
                                 solid_capstyle="butt", gid=f"caller-wait:{a.inv}")
            line.set_in_layout(False)
            ax.add_line(line)
            self.obs.add(Bbox.from_extents(sx, sy - 2 * self.pt, ex, sy + 2 * self.pt), f"caller:{a.actor}")
            self.caller_points.append((a, sx, ex))
