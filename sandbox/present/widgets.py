"""Widgets for the notebooks: controls built from a scenario's own settings, wired to rerun it.

    explorer = explore_settings("sqs-visibility-timeout", handler, only=["visibility_timeout"])
    explorer            # in Jupyter: the sliders, the verdict and the timeline
    explorer.controls["visibility_timeout"].value = 30   # what a learner's drag does

Each ``Setting`` becomes a control with the setting's range and choices, labelled in words
("visibility timeout", or ``labels={name: words}``) with the setting's name and help text as
the tooltip: a slider for a narrow numeric range, a number box for a wide one, a dropdown
for choices, a checkbox for a switch. The callbacks are plain methods, so tests drive them
by setting ``.value`` with no browser, and the rerun happens before the assignment returns.

A move made in the browser answers at once: the pictures are marked stale ("redrawing for
lock seconds 13…") while the scenario reruns, then the verdict and every picture change
together. Moves that arrive while a rerun is under way only leave their value: the rerun
that follows is for the latest value, never for one already left behind.
"""
from __future__ import annotations

import asyncio
import html
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Any

import ipywidgets as widgets

from ..errors import BadInput
from ..settings import Setting
from .quicktext import png_of_pixels, quick_text

#: Widest integer range still shown as a slider (wider ones get a number box).
SLIDER_INT_SPAN = 1000
#: Widest float range still shown as a slider.
SLIDER_FLOAT_SPAN = 3600.0
#: Steps a float slider is divided into.
FLOAT_STEPS = 200
#: Seconds a browser move waits for the moves queued behind it, so that only the latest value is run.
SETTLE_S = 0.02
#: Words for the parts of setting names that are not words themselves.
WORDS = {"ttl": "TTL", "sqs": "SQS", "dlq": "DLQ", "id": "ID", "ms": "ms"}
STALE = "sandbox-stale"
#: How a stale picture looks; the widget carries its own style, as a notebook has no stylesheet of ours.
STALE_CSS = (f"<style>.{STALE} {{opacity: 0.35; transition: opacity 0.08s;}} "
             ".sandbox-redrawing {color: #8a5a00; font-weight: 600;}</style>")
_STYLE = {"description_width": "initial"}
_LAYOUT = {"width": "420px"}


def words_for(name: str) -> str:
    """A setting's name in words: "slow_email_seconds" -> "slow email seconds", "ttl_lag" -> "TTL lag"."""
    return " ".join(WORDS.get(part, part) for part in name.split("_"))


def control_for(setting: Setting, value: Any = None, span: tuple[float, float, float] | None = None,
                label: str | None = None):
    """The ipywidgets control for one setting, showing ``value`` (default: the setting's default).

    ``span`` (min, max, step) narrows a wide range to the part a lesson is about; ``label`` is
    the words it is labelled with (default: the name in words). The tooltip names the setting.
    """
    value = setting.default if value is None else value
    common = dict(description=label or words_for(setting.name), tooltip=f"{setting.name}: {setting.help}",
                  style=_STYLE)
    if setting.choices is not None:
        return widgets.Dropdown(options=list(setting.choices), value=value, layout=_LAYOUT, **common)
    if setting.kind is bool:
        return widgets.Checkbox(value=bool(value), indent=False, **common)
    if setting.kind in (int, float):
        return _numeric(setting, value, span, {**common, "layout": _LAYOUT, "continuous_update": False})
    return widgets.Text(value=str(value), layout=_LAYOUT, **common)


def _numeric(setting: Setting, value: Any, span: tuple[float, float, float] | None, common: dict):
    lo = setting.minimum if setting.minimum is not None else -1e9
    hi = setting.maximum if setting.maximum is not None else 1e9
    if span is not None:
        lo, hi = max(lo, span[0]), min(hi, span[1])
    if setting.kind is int:
        int_step = int(span[2]) if span else 1
        if hi - lo <= SLIDER_INT_SPAN:
            return widgets.IntSlider(value=int(value), min=int(lo), max=int(hi), step=int_step, **common)
        return widgets.BoundedIntText(value=int(value), min=int(lo), max=int(hi), step=int_step, **common)
    step = span[2] if span else _nice_step((hi - lo) / FLOAT_STEPS)
    if hi - lo <= SLIDER_FLOAT_SPAN:
        return widgets.FloatSlider(value=float(value), min=float(lo), max=float(hi), step=step, **common)
    return widgets.BoundedFloatText(value=float(value), min=float(lo), max=float(hi), step=step, **common)


def _nice_step(raw: float) -> float:
    """The 1-2-5 step nearest above ``raw`` (a slider over 0-60 s moves in 0.5 s steps)."""
    if raw <= 0:
        return 0.1
    scale = 10.0 ** int(f"{raw:e}".split("e")[1])
    return next(m * scale for m in (1, 2, 5, 10) if m * scale >= raw)


def setting_controls(scenario: Any, *, only: Iterable[str] | None = None, values: Mapping[str, Any] | None = None,
                     spans: Mapping[str, tuple[float, float, float]] | None = None,
                     labels: Mapping[str, str] | None = None) -> dict[str, widgets.Widget]:
    """One control per setting of ``scenario`` (a name or a Scenario), in the scenario's order."""
    from ..scenarios import get_scenario

    sc = get_scenario(scenario) if isinstance(scenario, str) else scenario
    known = sc.all_settings()
    names = list(only) if only is not None else list(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise BadInput(f"scenario {sc.name} has no setting {unknown[0]!r}; its settings are: {', '.join(known)}")
    values, spans, labels = dict(values or {}), dict(spans or {}), dict(labels or {})
    return {n: control_for(known[n], values.get(n), spans.get(n), labels.get(n)) for n in names}


def timeline_png(result: Any, width: float) -> bytes:
    """The timeline of ``result`` as PNG, pixel for pixel as ``result.plot(width=width)`` shows it."""
    drawn = timeline_pixels(result, width)
    return drawn if isinstance(drawn, bytes) else png_of_pixels(drawn)


def _timeline_style() -> Callable[[], AbstractContextManager[None]] | None:
    try:
        from .timeline.style import matplotlib_style
    except ImportError:  # the timeline styles its own pictures some other way: let it draw
        return None
    return matplotlib_style


def timeline_pixels(result: Any, width: float):
    """The timeline of ``result`` as an RGBA array (or PNG bytes, where the timeline cannot give its pixels)."""
    import numpy as np

    from .timeline.style import matplotlib_style

    with quick_text(), matplotlib_style():  # one style for drawing and saving: the plot's own changes nothing
        fig = result.plot(width=width)
        # Drawn as savefig draws it (the figure is white, as savefig would paint it), without copying its pixels
        # out twice: nothing draws on this figure again.
        fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba())


_encoder: Any = None


def encode_aside(pixels) -> Any:
    """A future of ``pixels`` as PNG, compressed on a thread of its own while the caller draws the rest.

    zlib lets go of the interpreter while it compresses, so this runs beside the map's drawing.
    """
    global _encoder
    from concurrent.futures import Future, ThreadPoolExecutor

    if isinstance(pixels, bytes):
        done: Future = Future()
        done.set_result(pixels)
        return done
    if _encoder is None:
        _encoder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-png")
    return _encoder.submit(png_of_pixels, pixels)


def _browser_loop(change: dict) -> asyncio.AbstractEventLoop | None:
    """The kernel's event loop when ``change`` came from the browser (a comm message), else None."""
    if change["name"] not in getattr(change["owner"], "_property_lock", {}):
        return None  # set from Python: rerun before the assignment returns
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class SettingsExplorer:
    """Controls for some settings, a verdict and a timeline that follow them: every change reruns the scenario.

    ``run(settings) -> RunResult`` is what a change triggers; by default it runs the
    scenario against ``handler`` with ``seed``. ``extra`` are controls of the caller's own
    (a handler's lock seconds, say) whose values reach ``run`` alongside the settings.
    ``labels`` names controls in words ({"slow_email_seconds": "work seconds"}).
    ``followers`` (a verdict map, say) are told of each change: ``stale()`` at once, and
    ``follow(values, result, loop)`` once the run is done, returning what to show, which is
    shown with the verdict and the timeline.
    """

    def __init__(self, scenario: Any, handler: Any = None, *, seed: int = 0, only: Iterable[str] | None = None,
                 fixed: Mapping[str, Any] | None = None, spans: Mapping[str, tuple[float, float, float]] | None = None,
                 extra: Mapping[str, widgets.Widget] | None = None, labels: Mapping[str, str] | None = None,
                 run: Callable[[dict[str, Any]], Any] | None = None, plot: bool = True, width: float = 9.0):
        from ..scenarios import get_scenario, run_scenario

        self.scenario = get_scenario(scenario) if isinstance(scenario, str) else scenario
        self.fixed = dict(fixed or {})
        self.controls = setting_controls(self.scenario, only=only, values=self.fixed, spans=spans, labels=labels)
        self.controls.update(extra or {})
        self._run = run or (lambda values: run_scenario(self.scenario, handler, seed=seed, settings=values))
        self.plot, self.width = plot, width
        self.status = widgets.HTML(layout={"min_height": "1.7em"})  # "redrawing for …" while a move is run
        self.verdict = widgets.HTML()
        self.image = widgets.Image(format="png", layout={"max_width": "100%"})
        self.image.add_class("sandbox-timeline")
        self.output = widgets.Output()  # anything else a rerun says (a bad combination of settings)
        self.result: Any = None  # the last run's result (None: refused, or not run yet)
        self.runs, self.shown = 0, 0
        self.followers: list[Any] = []
        self._asked = 0  # moves so far; a pending rerun for an earlier one is dropped
        for control in self.controls.values():
            control.observe(self._changed, names="value")
        self.controls_box = widgets.VBox([widgets.HTML(STALE_CSS), *self.controls.values(), self.status])
        self.widget = widgets.VBox([self.controls_box, self.verdict, self.image, self.output])
        self.rerun()

    def values(self) -> dict[str, Any]:
        return {**self.fixed, **{name: c.value for name, c in self.controls.items()}}

    def label(self, name: str) -> str:
        control = self.controls.get(name)
        return getattr(control, "description", "") or words_for(name)

    def _changed(self, change: dict) -> None:
        self._asked += 1
        name = next((n for n, c in self.controls.items() if c is change["owner"]), change["name"])
        self.mark_stale(f"redrawing for {self.label(name)} {_shown_value(change['new'])}…")
        loop = _browser_loop(change)
        if loop is None:
            self.rerun()
        else:
            loop.call_later(SETTLE_S, self._settle, self._asked, loop)

    def mark_stale(self, why: str) -> None:
        """Say at once that the pictures are out of date, and dim them until the new ones are shown."""
        self.status.value = f'<span class="sandbox-redrawing">{html.escape(why)}</span>'
        for picture in (self.verdict, self.image):
            picture.add_class(STALE)
        for follower in self.followers:
            follower.stale()

    def _settle(self, asked: int, loop: asyncio.AbstractEventLoop) -> None:
        if asked != self._asked:
            return  # a later move is waiting: run that one only
        with self.output:
            self.rerun(loop)

    def rerun(self, loop: asyncio.AbstractEventLoop | None = None):
        """Run with the controls' current values and redraw; returns the RunResult (None if refused)."""
        self.runs += 1
        values = self.values()
        if self.output.outputs:
            self.output.clear_output()
        try:
            result = self._run(values)
        except BadInput as exc:
            self.result = None
            self._show(f'<span style="color:#b3261e">Not run: {html.escape(str(exc))}</span>', None, values, loop)
            return None
        self.result = result
        png = encode_aside(timeline_pixels(result, self.width)) if self.plot else None
        self._show(result._repr_html_(), png, values, loop)
        return result

    def _show(self, verdict: str | None, png: Any, values: dict[str, Any], loop: Any) -> None:
        """Everything prepared first, then shown in one go: the page never mixes two settings.

        ``png`` is the timeline's future PNG (None: no timeline to show).
        """
        shows = [follower.follow(values, self.result, loop) for follower in self.followers]
        timeline = png.result() if png is not None else None
        self.verdict.value = verdict
        if timeline is not None:
            self.image.value = timeline
        for show in shows:
            show()
        self.status.value = ""
        for picture in (self.verdict, self.image):
            picture.remove_class(STALE)
        self.shown += 1

    def _repr_mimebundle_(self, **kw: Any):
        return self.widget._repr_mimebundle_(**kw)


def _shown_value(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def explore_settings(scenario: Any, handler: Any = None, **kw: Any) -> SettingsExplorer:
    """A ``SettingsExplorer``: controls for ``scenario``'s settings that rerun it against ``handler``."""
    return SettingsExplorer(scenario, handler, **kw)
