"""Every scenario still produces what it produced when its snapshots were taken: golden snapshots, as text.

For every scenario x the naive and the idempotent example handler, ``tests/__snapshots__/test_golden/`` holds
(syrupy snapshots, a file each):

* ``test_run[<scenario>-<handler>-seed<n>][history].txt``, seeds 0 and 1: the whole history, a record per line
  (seq, t, type, then the other fields as sorted JSON), so equal text means an equal history, and a changed run
  shows as the records that changed;
* ``test_run[...][report].txt``, seeds 0 and 1: the verdict's explanation as the CLI prints it, then the
  report's other fields as JSON (a list's items a line each);
* ``test_run[...-seed0][picture].txt``: the timeline (``RunResult.plot()``) by what it draws: size, title, time
  ticks, rows, legend, then every band, marker, line, arrow and label in the order they were added, with their
  colours, and positions in plot units rounded to 0.01 (never PNG bytes, which say nothing readable);
* ``test_other_seeds[<scenario>-<handler>].txt``: a line per seed for seeds 2-9 (the verdict, the record and
  invocation counts, and the SHA-256, first 16 hex digits, of the history's JSON, the report's JSON and the
  picture's text), and the digest of seed 1's picture. Full text for every seed would be five times the size.

``make test-course`` compares seeds 0 and 1 (``test_run``); ``make golden`` (``pytest tests/test_golden.py
--golden-all``) compares all ten. A failure prints the diff of the lines that differ, part by part. When a
change alters runs on purpose, ``make snapshots`` (``pytest tests/test_golden.py --snapshot-update``, which
always takes all ten seeds and deletes the snapshots no test makes any more) rewrites them; ``git diff
tests/__snapshots__`` then shows what changed, and the commit says why.

The snapshots were taken in other processes than the ones comparing them, so this also pins the design's rule
that the same seed gives the same history, byte for byte.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
from typing import Any

import pytest
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.text import Annotation, Text
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode
from syrupy.terminal import disable_color

from sandbox import SCENARIOS, run_scenario
from sandbox.present.timeline import audit
from sandbox.present.timeline.style import matplotlib_style

from conftest import example

HANDLERS = {"naive": "naive_email.py", "idempotent": "idempotent.py"}
FULL_SEEDS = (0, 1)  # history and report in full; make test-course compares these ...
PICTURE_SEED = 0  # ... and this seed's picture (drawing one costs about half a run)
OTHER_SEEDS = range(2, 10)  # a line of digests each, with seed 1's picture; make golden compares these too


def parts(seed: int) -> tuple[str, ...]:
    return ("history", "report", "picture") if seed == PICTURE_SEED else ("history", "report")


class TextSnapshot(SingleFileSnapshotExtension):
    """One snapshot per file, as UTF-8 text, so git and the failure both show a line diff."""

    _write_mode = WriteMode.TEXT
    file_extension = "txt"


@pytest.fixture
def snapshot(snapshot):
    return snapshot.use_extension(TextSnapshot)


def run(scenario: str, handler: str, seed: int):
    return run_scenario(scenario, example(HANDLERS[handler]), seed=seed)


# -- the history and the report, as text ------------------------------------------------------------------------
def history_text(history) -> str:
    """The whole history, a record per line: equal text, equal records (every value is written as JSON)."""
    lines = [f"meta {json.dumps(history.meta, sort_keys=True, ensure_ascii=False)}"]
    for record in history:
        rest = {k: v for k, v in record.items() if k not in ("seq", "t", "type")}
        lines.append(f"{record['seq']:>4} t={json.dumps(record['t']):<8} {record['type']:<12} "
                     f"{json.dumps(rest, sort_keys=True, ensure_ascii=False)}")
    return "\n".join(lines) + "\n"


def report_text(report: dict[str, Any]) -> str:
    """The explanation as a reader sees it, then the report's other fields as JSON, a list's items a line each."""
    lines = [report["explanation"], ""]
    for key, value in sorted(report.items()):
        if key == "explanation":
            continue
        if isinstance(value, list) and value:
            lines.append(f"{key}:")
            lines += [f"  {json.dumps(item, sort_keys=True, ensure_ascii=False)}" for item in value]
        else:
            lines.append(f"{key}: {json.dumps(value, sort_keys=True, ensure_ascii=False)}")
    return "\n".join(lines) + "\n"


# -- the picture, by what it draws ------------------------------------------------------------------------------
def _n(v: float) -> str:
    return f"{round(float(v), 2) + 0.0:.2f}"  # + 0.0: a rounded -0.0 reads 0.00


def _colour(c: Any) -> str:
    if c is None or (isinstance(c, str) and c.lower() == "none"):
        return "none"
    h = to_hex(c, keep_alpha=True)
    return h[:-2] if h.endswith("ff") else h


class Picture:
    """Reads a drawn timeline figure back as lines of text, in plot (data) units of its one axes."""

    def __init__(self, fig: Figure):
        self.fig = fig
        self.ax = fig.axes[0]
        self.renderer = fig.canvas.get_renderer()
        self.to_data = self.ax.transData.inverted()
        self.rows = sorted((float(y), t.get_text()) for y, t in zip(self.ax.get_yticks(), self.ax.get_yticklabels()))

    def point(self, x: float, y: float) -> str:
        return f"({_n(x)}, {_n(y)})"

    def row(self, y: float) -> str:
        """The row whose centre is nearest ``y`` (the picture's rows are its y tick labels)."""
        if not self.rows:
            return ""
        _, label = min(self.rows, key=lambda r: abs(r[0] - y))
        return f" row {json.dumps(label, ensure_ascii=False)}"

    def box(self, display_box) -> tuple[str, float]:
        (x0, y0), (x1, y1) = self.to_data.transform([(display_box.x0, display_box.y0),
                                                     (display_box.x1, display_box.y1)])
        y_lo, y_hi = sorted((y0, y1))
        return f"x {_n(min(x0, x1))}..{_n(max(x0, x1))} y {_n(y_lo)}..{_n(y_hi)}", (y_lo + y_hi) / 2

    def patch(self, p) -> str:
        where, y = self.box(p.get_window_extent(self.renderer))
        hatch = f" hatch {p.get_hatch()}" if p.get_hatch() else ""
        alpha = f" alpha {_n(p.get_alpha())}" if p.get_alpha() is not None else ""
        return (f"{type(p).__name__} {p.get_gid()} {where}{self.row(y)} fill {_colour(p.get_facecolor())} "
                f"edge {_colour(p.get_edgecolor())}{hatch}{alpha}")

    def line(self, ln) -> str:
        pts = self.to_data.transform(ln.get_transform().transform(ln.get_xydata()))
        look = []
        marker = ln.get_marker()
        if not (isinstance(marker, str) and marker in ("None", "none", "", " ")):
            # a glyph ("$\\checkmark$"), a matplotlib marker code, or a path of the timeline's own
            name = json.dumps(marker) if isinstance(marker, str) else "path"
            look.append(f"marker {name} size {_n(ln.get_markersize())} face {_colour(ln.get_markerfacecolor())} "
                        f"edge {_colour(ln.get_markeredgecolor())}")
        if ln.get_linestyle() not in ("None", "none", "", " "):
            look.append(f"line {ln.get_linestyle()} {_colour(ln.get_color())} width {_n(ln.get_linewidth())}")
        return f"Line2D {ln.get_gid()} {', '.join(look)}: " + " ".join(self.point(x, y) for x, y in pts)

    def text(self, t: Text) -> str:
        if isinstance(t, Annotation):
            t.update_positions(self.renderer)
        box = Text.get_window_extent(t, self.renderer)
        where, y = self.box(box)
        points_at = ""
        if isinstance(t, Annotation) and t.arrow_patch is not None:
            points_at = f" points at {self.point(*t.xy)} ({t.xycoords})"
        weight = f" {t.get_fontweight()}" if t.get_fontweight() not in ("normal", 400) else ""
        return (f"{type(t).__name__} {t.get_gid()} {json.dumps(t.get_text(), ensure_ascii=False)} {where}{self.row(y)} "
                f"size {_n(t.get_fontsize())}{weight} {_colour(t.get_color())}{points_at}")

    def lines(self) -> list[str]:
        ax = self.ax
        w, h = self.fig.get_size_inches()
        (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
        ticks = " ".join(f"{_n(x)}={lbl.get_text()}" for x, lbl in zip(ax.get_xticks(), ax.get_xticklabels()))
        out = [f"figure {_n(w)} x {_n(h)} in, dpi {_n(self.fig.dpi)}",
               f"title {json.dumps(ax.get_title(), ensure_ascii=False)}",
               f"x axis {json.dumps(ax.get_xlabel(), ensure_ascii=False)} {_n(x0)}..{_n(x1)}: {ticks}",
               f"y axis {_n(y0)}..{_n(y1)}, rows:"]
        out += [f"  {_n(y)} {json.dumps(label, ensure_ascii=False)}" for y, label in self.rows]
        for legend in self.fig.legends + ([ax.get_legend()] if ax.get_legend() else []):
            out.append("legend:")
            out += [f"  {json.dumps(t.get_text(), ensure_ascii=False)}" for t in legend.get_texts()]
        out += [self.text(t) for t in self.fig.texts]
        for artist in ax.get_children():  # in the order they were added, whatever their kind
            if artist in ax.patches:
                out.append(self.patch(artist))
            elif artist in ax.lines:
                out.append(self.line(artist))
            elif artist in ax.texts:
                out.append(self.text(artist))
            elif artist in ax.collections:
                where, y = self.box(artist.get_window_extent(self.renderer))
                out.append(f"{type(artist).__name__} {artist.get_gid()} {where}{self.row(y)}")
        return out


def picture_text(fig: Figure) -> str:
    text = "\n".join(Picture(fig).lines()) + "\n"
    # Read back, the picture is drawn as shown (the legend takes its place then), and the whole audit measures it:
    # every mark, band end and tick at its record's time, no word on another or on a mark, no line through a mark,
    # no empty header row..., so every scenario's snapshot is also a picture a learner can read.
    with matplotlib_style():
        fig.draw_without_rendering()
        found = audit.faults(fig)
    assert found == [], found
    return text


def texts_of(result, parts: tuple[str, ...]) -> dict[str, str]:
    make = {"history": lambda: history_text(result.history), "report": lambda: report_text(result.report()),
            "picture": lambda: picture_text(result.plot())}
    return {part: make[part]() for part in parts}


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# -- the tests --------------------------------------------------------------------------------------------------
RUNS = [pytest.param(s, h, seed, id=f"{s}-{h}-seed{seed}") for s in SCENARIOS for h in HANDLERS for seed in FULL_SEEDS]


@pytest.mark.slow
@pytest.mark.parametrize(("scenario", "handler", "seed"), RUNS)
def test_run(scenario, handler, seed, snapshot, request):
    got = texts_of(run(scenario, handler, seed), parts(seed))
    differ = []
    for part, text in got.items():  # compare every part, so a changed picture with an unchanged history says so
        stored = snapshot(name=part)
        if not stored == text:
            # syrupy's diff, whole: pytest would cut an assertion's explanation to a few lines of these long ones
            with disable_color() if request.config.option.no_colors else contextlib.nullcontext():
                diff = "\n".join(stored.get_assert_diff())
            differ.append(f"{part}: - snapshot, + this run\n{diff}")
    if differ:
        pytest.fail("\n\n".join(differ), pytrace=False)


@pytest.mark.slow
@pytest.mark.golden_all
@pytest.mark.parametrize(("scenario", "handler"), [pytest.param(s, h, id=f"{s}-{h}") for s in SCENARIOS
                                                   for h in HANDLERS])
def test_other_seeds(scenario, handler, snapshot):
    lines = [f"seed {seed}: picture {digest(picture_text(run(scenario, handler, seed).plot()))} "
             "(its history and report are in full in test_run)" for seed in FULL_SEEDS if seed != PICTURE_SEED]
    for seed in OTHER_SEEDS:
        result = run(scenario, handler, seed)
        history, report = result.history.to_json(), json.dumps(result.report(), sort_keys=True)
        lines.append(f"seed {seed}: {result.status}, {len(result.history)} records, "
                     f"{len(result.history.invocations())} invocations; history {digest(history)}, "
                     f"report {digest(report)}, picture {digest(picture_text(result.plot()))}")
    assert "\n".join(lines) + "\n" == snapshot


def test_every_scenario_and_handler_has_its_snapshots(request):
    """A scenario added without snapshots, or one removed with them, fails here even when the slow tests are left
    out (make test, which leaves test_run to make test-course); --snapshot-update is writing them, so it has
    nothing to compare yet."""
    from pathlib import Path

    if request.config.getoption("--snapshot-update"):
        pytest.skip("--snapshot-update writes the snapshots this test counts")
    folder = Path(request.path).parent / "__snapshots__" / "test_golden"
    names = {p.name for p in folder.glob("*.txt")}
    want = {f"test_run[{s}-{h}-seed{seed}][{part}].txt" for s in SCENARIOS for h in HANDLERS for seed in FULL_SEEDS
            for part in parts(seed)} | {f"test_other_seeds[{s}-{h}].txt" for s in SCENARIOS for h in HANDLERS}
    assert sorted(want - names) == [], "missing: run make snapshots"
    assert sorted(names - want) == [], "made by no test: run make snapshots"
