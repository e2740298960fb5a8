"""Labels placed without covering anything: notes, event labels, caller results, arrow causes.

Each kind of label has a list of candidate positions around what it names; the
first candidate that overlaps nothing already drawn wins (:meth:`Canvas._place`).
``Drawing`` places them most important first, so a required label (where a lost
order went, a duplicate effect, what a caller finally saw) is never crowded out by
an optional one; optional labels that find no free spot are left out.
"""
from __future__ import annotations

import math

from matplotlib import transforms as mtransforms

from .arrows import along
from .layout import Canvas
from .model import Event
from .style import ARROW_COLOR, DUPLICATE_COLOR, EXPIRED_COLOR, KEPT_COLOR, LOCK_COLOR, TEXT_GREY
from .text import dup_text, note_text, note_what, short_key

REQUIRED_LABELS = ("dropped", "pending")  # where a lost or stuck order went: always labelled


class LabelStage(Canvas):
    """Drawing stage: all labels, after markers and arrows are in place."""

    def _clip_notes(self) -> None:
        """"o-1 kept 24 h →" for windows that outlive the history, in the room after its end."""
        ax, tx = self.ax, self.taxis
        per_lane: dict[str, dict[tuple[str, str], list[str]]] = {}
        for w in self.model.windows:
            if w.kind == "expired" or (w.end is not None and w.end <= tx.t_hi):
                continue
            keys = per_lane.setdefault(w.inv, {}).setdefault((w.kind, note_what(w)), [])
            if w.key not in keys:
                keys.append(w.key)
        blend = mtransforms.blended_transform_factory(ax.transAxes, ax.transData)
        for inv, notes in per_lane.items():
            y = self.lane_y[inv]
            n = len(notes)
            step = 0.62 / n if n > 1 else 0.0
            for i, ((kind, what), keys) in enumerate(notes.items()):
                dy = (i - (n - 1) / 2) * step
                text = note_text(keys, what)
                cands = [(dy, 10 if n < 3 else 8), (dy - 0.3, 9), (dy + 0.3, 9), (dy, 8)]

                def make(c, y=y, text=text, kind=kind):
                    yy, size = c
                    return ax.text(0.995, y + yy, text, transform=blend, ha="right", va="center",
                                   fontsize=self.fs(size), color="#1F1F1F", zorder=5, parse_math=False,
                                   gid=f"clip-note:{kind}",
                                   bbox=dict(boxstyle="round,pad=0.15", ec="none",
                                             fc=KEPT_COLOR if kind == "kept" else LOCK_COLOR))

                self._place(make, cands, required=True)

    def _event_labels(self, *, required: bool, styles: tuple[str, ...] | None = None) -> None:
        """Short labels next to header-row markers: where a lost order went, what came back."""
        ax = self.ax
        todo: list[tuple[Event, float, float, float]] = []
        if required:
            todo = [p for p in self.event_points if p[0].style in REQUIRED_LABELS]
            for e, rect in self.pending_bands:
                if e.label:
                    todo.append((e, -1.0, 0.0, 0.0))
        else:
            todo = [p for p in self.event_points if p[0].style not in REQUIRED_LABELS
                    and (styles is None or p[0].style in styles)
                    and not p[0].labelled]
            if self.compact:
                return
        for e, px, py, half in todo:
            e.labelled = True
            strong = e.style in REQUIRED_LABELS
            kw = dict(fontsize=self.fs(11 if strong else 10), color="black" if strong else "#2A2A2A",
                      fontweight="bold" if strong else "normal", zorder=5.6, parse_math=False,
                      gid=f"event-label:{e.style}",
                      bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="black" if strong else "#BBBBBB",
                                lw=1.0 if strong else 0.6))
            if e.style == "pending":
                rect = next(r for ev, r in self.pending_bands if ev is e)
                x0, y0 = self._px(rect.get_x(), self.head_y[e.source])
                x1, _ = self._px(rect.get_x() + rect.get_width(), self.head_y[e.source])
                off = 6 * self.pt
                top = self._px(0, self.head_y[e.source] - 0.3)[1] + 2 * self.pt
                cands = [(x1 - off, y0, "right", "center"), ((x0 + x1) / 2, y0, "center", "center"),
                         (x0 + off, y0, "left", "center"), (x1 + off, y0, "left", "center"),
                         (x1 - off, top, "right", "bottom"), ((x0 + x1) / 2, top, "center", "bottom"),
                         (x0 + off, top, "left", "bottom")]

                def make(c, e=e, kw=kw):
                    x, y, ha, va = c
                    xd, yd = self._data(x, y)
                    return ax.text(xd, yd, e.label, ha=ha, va=va, **kw)
            else:
                pt = self.pt
                off = half + 5 * pt
                clear = max(half, 7 * pt * self.scale) + 6 * pt
                up, down = clear, -clear
                cands = [(off, 0, "left", "center"), (-off, 0, "right", "center"),
                         (-half, up, "left", "bottom"), (half, up, "right", "bottom"), (0, up, "center", "bottom"),
                         (-half, down, "left", "top"), (half, down, "right", "top"), (0, down, "center", "top")]
                cands += [(off + k * 14 * pt, 0, "left", "center") for k in (1, 2, 3)]
                cands += [(-off - k * 14 * pt, 0, "right", "center") for k in (1, 2, 3)]

                def make(c, e=e, px=px, py=py, kw=kw):
                    dx, dy, ha, va = c
                    xd, yd = self._data(px + dx, py + dy)
                    return ax.text(xd, yd, e.label, ha=ha, va=va, **kw)

            self._place(make, cands, required=required or strong, exclude=(f"head:{e.source}:{e.seq}",))

    def _duplicate_notes(self) -> None:
        ax = self.ax
        pt = self.pt
        # cluster duplicates that sit close together on one lane into one note
        clusters: list[list[tuple[str, float, float, str]]] = []
        for p in self.dup_points:
            if clusters and clusters[-1][-1][0] == p[0] and p[1] - clusters[-1][-1][1] < 70 * pt:
                clusters[-1].append(p)
            else:
                clusters.append([p])
        for cl in clusters:
            text = dup_text([p[3] for p in cl])
            px = (cl[0][1] + cl[-1][1]) / 2
            py = cl[0][2]
            xy = self._data(px, py)
            off = 15 * self.scale
            cands = [((0, off + 4), "center", "bottom"), ((0, -off - 4), "center", "top"),
                     ((off, off), "left", "bottom"), ((off, -off), "left", "top"),
                     ((-off, off), "right", "bottom"), ((-off, -off), "right", "top"),
                     ((off * 1.6, 0), "left", "center"), ((-off * 1.6, 0), "right", "center"),
                     ((2 * off, 1.6 * off), "left", "bottom"), ((2 * off, -1.6 * off), "left", "top"),
                     ((-2 * off, 1.6 * off), "right", "bottom"), ((-2 * off, -1.6 * off), "right", "top"),
                     ((0, 2.4 * off), "center", "bottom"), ((0, -2.4 * off), "center", "top")]

            def make(c, xy=xy, text=text):
                (dx, dy), ha, va = c
                return ax.annotate(text, xy=xy, xytext=(dx, dy), textcoords="offset points",
                                   ha=ha, va=va, fontsize=self.fs(11), fontweight="bold",
                                   color=DUPLICATE_COLOR, zorder=6, annotation_clip=False,
                                   parse_math=False, gid="duplicate-note",
                                   bbox=dict(boxstyle="round,pad=0.25", fc="white", ec=DUPLICATE_COLOR, lw=1.2),
                                   arrowprops=dict(arrowstyle="-", color=DUPLICATE_COLOR, lw=1.4,
                                                   shrinkA=0, shrinkB=9 * self.scale))

            self._place(make, cands, required=True)

    def _caller_labels(self) -> None:
        """What each synchronous caller finally saw: "gave up: ReadTimeoutError", "got 409"."""
        ax = self.ax
        for a, sx, ex in self.caller_points:
            if not a.final:
                continue
            y = self.attempt_rows[a.actor]
            _, py = self._px(0, y)
            if a.result == "ReadTimeout":
                text = "gave up: ReadTimeoutError"
            elif a.result == "ok":
                text = f"got {a.status}" if a.status is not None else "got the response"
            else:
                text = f"got {a.function_error or a.result}"
            pt = self.pt
            off, up = 9 * pt, 9 * pt
            cands = [(ex + off, py, "left", "center"), (ex, py + up, "right", "bottom"),
                     (ex, py - up, "right", "top"), (ex - off, py, "right", "center"),
                     (ex, py + up, "left", "bottom"), (ex, py - up, "left", "top")]

            def make(c, text=text):
                x, yy, ha, va = c
                xd, yd = self._data(x, yy)
                return ax.text(xd, yd, text, ha=ha, va=va, zorder=5.6, parse_math=False, gid="caller-label",
                               fontsize=self.fs(11), fontweight="bold", color="black",
                               bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="black", lw=1.0))

            self._place(make, cands, required=True)

    def _arrow_labels(self) -> None:
        if self.compact:
            return
        ax = self.ax
        for arrow, text, pts, owner, vertical in self.arrows:
            length = sum(math.hypot(x1 - x0, y1 - y0) for (x0, y0), (x1, y1) in zip(pts, pts[1:]))
            if length < 30 * self.fig.dpi / 100:
                continue
            two_lines = text.replace(" at ", "\nat ", 1)
            side = 6 * self.pt
            cands = []
            if not vertical:
                cands += [(f, 0, "center", text) for f in (0.5, 0.4, 0.6, 0.3, 0.7)]
                cands += [(f, 0, "center", two_lines) for f in (0.5, 0.35, 0.65)]
            cands += [(f, dx, ha, label) for f in (0.5, 0.35, 0.65) for label in (text, two_lines)
                      for dx, ha in ((side, "left"), (-side, "right"))]
            if vertical:
                cands += [(f, 0, "center", two_lines) for f in (0.5,)]

            def make(c, pts=pts):
                f, dx, ha, label = c
                px, py = along(pts, f)
                xd, yd = self._data(px + dx, py)
                return ax.text(xd, yd, label, ha=ha, va="center", linespacing=1.05,
                               fontsize=self.fs(10), color=ARROW_COLOR, zorder=5.5, parse_math=False,
                               gid="arrow-label", fontstyle="italic",
                               bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="#BBBBBB", lw=0.6))

            self._place(make, cands, required=False, exclude=(owner,))

    def _expired_labels(self) -> None:
        """Name the expired-but-not-yet-deleted record where its band has room."""
        if self.compact:
            return
        ax = self.ax
        done: set[tuple[str, str]] = set()
        for w, x0, x1, y0, h in self.window_boxes:
            if w.kind != "expired" or (w.inv, w.key) in done:
                continue
            done.add((w.inv, w.key))
            p0 = self._px(x0, y0 + h / 2)
            p1 = self._px(x1, y0 + h / 2)
            y = self.lane_y[w.inv]
            text = f"{short_key(w.key)} expired, still in the table (TTL lag) →"
            off = 6 * self.pt
            bar = self.bars[w.inv]
            bar_end = self._px(bar.get_x() + bar.get_width(), y)[0]
            start = max(p0[0], bar_end) + off
            cands = [(start, y), (start, y - 0.26), (start, y + 0.26)]

            def make(c, text=text, p1=p1):
                x, yy = c
                xd = self._data(x, 0)[0]
                return ax.text(xd, yy, text, ha="left", va="center", fontsize=self.fs(10), color="#5A4600",
                               zorder=5, parse_math=False, gid="expired-label",
                               bbox=dict(boxstyle="round,pad=0.15", fc=EXPIRED_COLOR, ec="none"))

            artist = self._place(make, cands, required=False)
            if artist is not None and self._text_box(artist).x1 > p1[0] + 2:
                artist.remove()  # the band is too short for its label

    def _sweep_labels(self) -> None:
        ax = self.ax
        for px, py, label in self.sweep_points:
            xy = self._data(px, py)
            off = 10 * self.scale
            cands = [((off, 0), "left"), ((-off, 0), "right")]

            def make(c, xy=xy, label=label):
                (dx, dy), ha = c
                return ax.annotate(label, xy=xy, xytext=(dx, dy), textcoords="offset points", ha=ha,
                                   va="center", fontsize=self.fs(10), color=TEXT_GREY, zorder=5,
                                   parse_math=False, annotation_clip=False, gid="sweep-label")

            self._place(make, cands, required=False)
