"""Widgets for the notebooks: controls built from a scenario's own settings, wired to rerun it.

    explorer = explore_settings("sqs-visibility-timeout", handler, only=["visibility_timeout"])
    explorer            # in Jupyter: the sliders, the verdict and the timeline
    explorer.controls["visibility_timeout"].value = 30   # what a learner's drag does

Each ``Setting`` becomes a control with the setting's range and choices, labelled in words
("visibility timeout", or ``labels={name: words}``) with the setting's name and help text as
the tooltip: a slider for a narrow numeric range, a number box for a wide one, a dropdown
for choices, a checkbox for a switch. The callbacks are plain methods, so tests drive them
by setting ``.value`` with no browser, and the rerun happens before the assignment returns.

A move made in the browser answers at once: the pictures are dimmed and a notice says so ("redrawing
for lock seconds 13…") while the scenario reruns. Moves that arrive while a rerun is under way only
leave their value: the rerun that follows is for the latest value, never for one already left behind.
What a rerun shows reaches the page in one message (``Stage``), and the page swaps the verdict and
every picture in one step, once the new pictures are decoded, and only if the controls still show
the values they were drawn for.
"""
from __future__ import annotations

import asyncio
import html
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import ipywidgets as widgets

from ..core.jsonvalues import JsonObject
from ..errors import BadInput
from ..settings import Setting, SettingValue
from .quicktext import png_of_pixels, quick_text
from .stage import ROOT, SETTING, STAGE_CSS, TOP, Part, Stage, live_value, notice, picture_html

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
#: The controls whose value the page can read back (a slider's handle, a number or text box, a choice, a switch).
READABLE = (widgets.IntSlider, widgets.FloatSlider, widgets.IntText, widgets.FloatText, widgets.BoundedIntText,
            widgets.BoundedFloatText, widgets.Dropdown, widgets.Checkbox, widgets.Text)
_STYLE = {"description_width": "initial"}
_LAYOUT = {"width": "420px"}
#: A notice line's layout: as tall empty as with its notice in it (an ipywidgets line box), so that nothing under it
#: moves when "redrawing for …" comes and goes.
NOTICE_LAYOUT = {"min_height": "var(--jp-widgets-inline-height, 28px)"}
#: The controls and the verdict side by side, the verdict under them only where the row has no room for both: a
#: learner pressing keys sees the verdict change beside the slider, and the timeline starts a verdict's height higher
#: (lesson 10 at 1280x800 with the file browser open showed only the timeline's title under the map).
TOP_LAYOUT = {"flex_flow": "row wrap", "align_items": "flex-start"}
VERDICT_BESIDE = {"flex": "1 1 320px", "max_width": "100%"}
#: The class of a dashboard's notice line.
NOTICES = "sandbox-notices"


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
    whole = all(float(v).is_integer() for v in (lo, hi, step, value)) and (value - lo) % step == 0
    if hi - lo <= SLIDER_FLOAT_SPAN and whole:
        # Whole seconds on a float slider came out of the browser as 59.99999999999999, and its aria-valuetext read
        # so to a screen reader; in whole numbers it counts exactly (the run parses the value back to a float). A
        # value between two steps stays a float slider's, which keeps it (``on_step``).
        return widgets.IntSlider(value=int(value), min=int(lo), max=int(hi), step=int(step), **common)
    if hi - lo <= SLIDER_FLOAT_SPAN:
        # The readout shows as many decimals as the step has: a slider in whole seconds reads "30", not "30.00".
        return widgets.FloatSlider(value=float(value), min=float(lo), max=float(hi), step=step,
                                   readout_format=f".{_decimals(step)}f", **common)
    return widgets.BoundedFloatText(value=float(value), min=float(lo), max=float(hi), step=step, **common)


def _decimals(step: float) -> int:
    """The decimals a multiple of ``step`` needs (1 -> 0, 0.5 -> 1, 0.25 -> 2), at most 3."""
    for places in range(4):
        if abs(round(step, places) - step) < 1e-9:
            return places
    return 3


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


def align_descriptions(controls: Iterable[widgets.Widget]) -> None:
    """One description width for a dashboard's controls, the longest's: their sliders and boxes then start at one x
    (each its own width, they started wherever its words ended)."""
    described = [c for c in controls if getattr(c, "description", "") and hasattr(c.style, "description_width")]
    if described:
        longest = max(len(c.description) for c in described)
        for control in described:
            control.style.description_width = f"{0.62 * longest + 0.6:.1f}em"  # about a character's width each


def timeline_png(result: Any, width: float, legend: bool = True) -> bytes:
    """The timeline of ``result`` as PNG, pixel for pixel as ``result.plot(width=width, legend=legend)`` shows it."""
    return png_of_pixels(timeline_pixels(result, width, legend)[0])


def timeline_pixels(result: Any, width: float, legend: bool = True, title: str | None = None) -> tuple[Any, Any]:
    """The timeline of ``result`` (titled ``title``, else as ``result.plot`` titles it) as an RGBA array, and the
    legend it would show (a ``LegendPlan``; None for a history without invocations)."""
    import numpy as np

    from .timeline.style import matplotlib_style

    with quick_text(), matplotlib_style():  # one style for drawing and saving: the plot's own changes nothing
        fig = result.plot(width=width, legend=legend, title=title)
        # Drawn as savefig draws it (the figure is white, as savefig would paint it), without copying its pixels
        # out twice: nothing draws on this figure again.
        fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba()), fig.legend_plan


def legend_png(plan: Any, width: float) -> bytes:
    """The legend of ``plan`` as a picture of its own, ``width`` inches wide (see ``legend_figure``)."""
    import numpy as np

    from .timeline import SCREEN_DPI, legend_figure
    from .timeline.style import matplotlib_style

    with quick_text(), matplotlib_style():
        fig = legend_figure(plan, width, SCREEN_DPI)
        fig.canvas.draw()
    return png_of_pixels(np.asarray(fig.canvas.buffer_rgba()))


#: Legend pictures a dashboard keeps, by what they show: a slider's values bring back a few legends over and over.
LEGENDS_KEPT = 16
_encoder: Any = None


def aside(fn: Callable[..., Any], *args: Any) -> Any:
    """A future of ``fn(*args)``, run on the widgets' one thread of their own while the caller goes on."""
    global _encoder
    from concurrent.futures import ThreadPoolExecutor

    if _encoder is None:
        _encoder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-png")
    return _encoder.submit(fn, *args)


def encode_aside(pixels) -> Any:
    """A future of ``pixels`` as PNG, compressed on a thread of its own while the caller draws the rest.

    zlib lets go of the interpreter while it compresses, so this runs beside the map's drawing.
    """
    return aside(png_of_pixels, pixels)


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
    ``labels`` names controls in words ({"slow_email_seconds": "work seconds"}). ``title`` titles the timeline: a
    string, or a function of the run's result (to name the settings it ran with), else ``result.plot``'s title.
    ``followers`` (a verdict map, say) are told of each change: ``stale()`` at once, and
    ``follow(values, result, loop)`` once the run is done, to draw what they show with it; ``parts()`` is
    what they show, sent with the verdict and the timeline ({"map": PNG}; empty while it is still to come,
    and then the follower calls ``publish("map")`` when it is ready). A follower's ``ahead(values)``, where it
    has one, is what it can prepare without the run's result (the map's mark moved): it runs on a thread of
    its own while the scenario runs, since the run mostly waits on its execution environments, and ends before
    anything here draws (matplotlib draws one figure at a time).

    ``verdict``, ``image`` (the timeline) and ``legend`` hold what was last sent to the page (``Part``); the
    page shows them through ``stage`` (see ``sandbox.present.stage``). The timeline's legend is a picture of
    its own under it, drawn again only when a rerun brings other entries: at most moves it is the same, and a
    move need not draw or send it.
    """

    def __init__(self, scenario: Any, handler: Any = None, *, seed: int = 0, only: Iterable[str] | None = None,
                 fixed: Mapping[str, Any] | None = None, spans: Mapping[str, tuple[float, float, float]] | None = None,
                 extra: Mapping[str, widgets.Widget] | None = None, labels: Mapping[str, str] | None = None,
                 run: Callable[[dict[str, SettingValue]], Any] | None = None, plot: bool = True, width: float = 9.0,
                 title: str | Callable[[Any], str] | None = None):
        from ..scenarios import get_scenario, run_scenario

        self.scenario = get_scenario(scenario) if isinstance(scenario, str) else scenario
        self.fixed = dict(fixed or {})
        self.controls = setting_controls(self.scenario, only=only, values=self.fixed, spans=spans, labels=labels)
        self.controls.update(extra or {})
        self._run = run or (lambda values: run_scenario(self.scenario, handler, seed=seed, settings=values))
        self.plot, self.width, self.title = plot, width, title
        self.status = widgets.HTML(layout=NOTICE_LAYOUT)  # "redrawing for …" while a move is run
        self.status.add_class(NOTICES)
        self.verdict, self.image, self.legend = Part("verdict", ""), Part("timeline"), Part("legend")
        self.stage = Stage(["verdict", "timeline", "legend", "findings"])
        self._legend_key: Any = None  # what the legend picture shows: its entries and columns
        self._legends: dict[Any, bytes] = {}  # legend pictures drawn, by what they show (at most LEGENDS_KEPT)
        self.output = widgets.Output()  # anything else a rerun says (a bad combination of settings)
        self.result: Any = None  # the last run's result (None: refused, or not run yet)
        self.runs, self.shown = 0, 0
        self._drawn_for: dict[str, SettingValue] = {}  # the values the parts on show were drawn for
        self.followers: list[Any] = []
        self._asked = 0  # moves so far; a pending rerun for an earlier one is dropped
        align_descriptions(self.controls.values())
        for name, control in self.controls.items():
            if isinstance(control, READABLE):  # the page reads what it shows (stage.SWAP_JS); others hold nothing back
                control.add_class(SETTING + name)
            control.observe(self._changed, names="value")
        self.controls_box = widgets.VBox([widgets.HTML(STAGE_CSS), *self.controls.values(), self.status])
        verdict = self.stage.slots["verdict"]
        verdict.layout = widgets.Layout(**VERDICT_BESIDE)
        self.top = widgets.HBox([self.controls_box, verdict], layout=TOP_LAYOUT)
        self.top.add_class(TOP)
        self.widget = widgets.VBox([self.top, *self.shows(), self.output, self.stage.feed])
        self.widget.add_class(ROOT)
        self.rerun()

    def shows(self) -> list[widgets.Widget]:
        """The places shown under the controls and the verdict (``top``), in order: the timeline, its legend and the
        verdict's findings, the findings under the pictures, so that in a laptop's window the verdict's line, the
        pictures and the controls are all in sight."""
        return [self.stage.slots[name] for name in ("timeline", "legend", "findings")]

    def values(self) -> dict[str, SettingValue]:
        return {**self.fixed, **{name: on_step(c) for name, c in self.controls.items()}}

    def label(self, name: str) -> str:
        control = self.controls.get(name)
        return getattr(control, "description", "") or words_for(name)

    def _changed(self, change: dict) -> None:
        self._asked += 1
        name = next((n for n, c in self.controls.items() if c is change["owner"]), change["name"])
        self.mark_stale(f"redrawing for {self.label(name)} ", live_value(name, shown_value(change["new"])) + "…")
        loop = _browser_loop(change)
        if loop is None:
            self.rerun()
        else:
            loop.call_later(SETTLE_S, self._settle, self._asked, loop)

    def mark_stale(self, why: str, then: str = "") -> None:
        """Say at once that the pictures are out of date: the page dims them until it shows the new ones, and it
        takes the notice away itself then (so the kernel never does it before the page can). ``then`` as
        ``notice``'s."""
        self.status.value = notice(why, then=then)
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
        early = [follower.ahead for follower in self.followers if hasattr(follower, "ahead")]
        prepared = aside(lambda: [ahead(values) for ahead in early]) if early else None
        refused: BadInput | None = None
        try:
            result = self._run(values)
        except BadInput as exc:
            result, refused = None, exc
        finally:
            if prepared is not None:
                prepared.result()  # done before anything here draws (and what went wrong there is raised here)
        self.result = result
        if result is None:
            self._show(f'<span style="color:#b3261e">Not run: {html.escape(str(refused))}</span>', None, values, loop,
                       (None, b"") if self._legend_key is not None else None)
            return None
        png, legend = None, None
        if self.plot:
            title = self.title(result) if callable(self.title) else self.title
            pixels, plan = timeline_pixels(result, self.width, legend=False, title=title)
            png = encode_aside(pixels)
            legend = self._new_legend(plan)
        self._show(result._repr_html_() or "", png, values, loop, legend)
        return result

    def _new_legend(self, plan: Any) -> tuple[Any, bytes] | None:
        """(key, PNG) of the legend ``plan`` shows when it is not the one on show (None: it is; empty PNG: none)."""
        key = (plan.texts, plan.ncols) if plan is not None and plan.items else None
        if key == self._legend_key:
            return None
        if key is None:
            return key, b""
        if key not in self._legends:  # a slider moved back and forth brings back a legend shown before
            if len(self._legends) >= LEGENDS_KEPT:
                self._legends.pop(next(iter(self._legends)))
            self._legends[key] = legend_png(plan, self.width)
        return key, self._legends[key]

    def _show(self, verdict: str, png: Any, values: dict[str, SettingValue], loop: Any,
              legend: tuple[Any, bytes] | None = None) -> None:
        """Everything prepared first, then sent in one message: the page never mixes two settings.

        ``png`` is the timeline's future PNG (None: no timeline; a refused run shows none); ``legend`` a new
        legend (None: the same).
        """
        for follower in self.followers:
            follower.follow(values, self.result, loop)
        self.verdict.value = verdict
        if self.plot:
            self.image.value = png.result() if png is not None else b""
        if legend is not None:
            self._legend_key, self.legend.value = legend
        self._drawn_for = values
        self.publish("all")
        self.shown += 1

    def publish(self, *answers: str) -> None:
        """Send the page everything on show now, in one message, for the values last run; the page takes away the
        notices of the kinds ``answers`` when it shows it.

        Every message is whole (a page drawn again shows the latest one alone), and holds each picture once;
        a follower's parts still to come are left out (the page keeps what it has, dimmed, under their notice).
        """
        summary, findings = split_verdict(self.verdict.value)
        parts: dict[str, str | bytes] = {"verdict": summary, "findings": findings}
        if self.plot:
            parts.update(timeline=self.image.value, legend=self.legend.value)
        for follower in self.followers:
            parts.update(follower.parts())
        answered = {*answers, *(["map"] if "map" in parts else [])}
        controls = {name: value for name, value in self._drawn_for.items() if name in self.controls}
        self.stage.send(parts, controls, sorted(answered))

    def _repr_mimebundle_(self, **kw: Any):
        return self.static_bundle(self.widget, **kw)

    def static_bundle(self, widget: widgets.Widget, *pictures: Part, **kw: Any) -> JsonObject:
        """``widget``'s bundle, with what a page without the widgets shows (an nbconvert export, a notebook
        opened with no kernel): ipywidgets' own text is its repr, "VBox(children=(HTML(value='<style>…", which
        says nothing. Instead a line saying what was run and what came of it, and as HTML the verdict and the
        last pictures (``pictures``: more of them, a verdict map's)."""
        data = widget._repr_mimebundle_(**kw)
        drawn = ", ".join(f"{self.label(name)} {shown_value(value)}" for name, value in self._drawn_for.items()
                          if name in self.controls)
        came = f"verdict {self.result.status}" if self.result is not None else "not run"
        data["text/plain"] = f"{self.scenario.name} with {drawn or 'its settings'}: {came} (the controls need a " \
                             "running kernel)"
        shown = [self.verdict, self.image, self.legend, *pictures]
        data["text/html"] = "<div>" + "".join(
            part.value if isinstance(part.value, str) else picture_html(part.value, part.name) for part in shown
        ) + "</div>"
        return data


def split_verdict(whole: str) -> tuple[str, str]:
    """A run's HTML (``result_html``) as its line (the run, the verdict's badge and its count of findings) and the
    rest (the findings' table, the effects per order), each a whole piece of HTML; all as the line when it has no
    table or details."""
    cut = min((i for i in (whole.find("<table"), whole.find("<details")) if i >= 0), default=-1)
    if cut < 0 or not whole.startswith("<div>") or whole.count("<div>") < 2:
        return whole, ""
    return whole[:cut] + "</div></div>", "<div><div>" + whole[cut:]


def on_step(control: widgets.Widget) -> Any:
    """A control's value, a float slider's without the browser's rounding noise: its slider works in fractions of
    the track and may send 59.99999999999999 for 60 (a learner heard it so from a screen reader), and a run would
    hold that. A value off the step's round numbers by more than noise (a default between two steps) stays."""
    value = control.value
    if isinstance(control, widgets.FloatSlider) and isinstance(value, float):
        near = round(value, max(_decimals(control.step), _decimals(control.min)))
        if abs(value - near) <= NOISE * max(1.0, abs(value)):
            return near
    return value


#: The share of a value a float slider's rounding may move it by (``on_step``).
NOISE = 1e-9


def shown_value(value: Any) -> str:
    """A setting's value as the controls' stale notice and the verdict map's title say it: 60.0 as "60"."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def explore_settings(scenario: Any, handler: Any = None, **kw: Any) -> SettingsExplorer:
    """A ``SettingsExplorer``: controls for ``scenario``'s settings that rerun it against ``handler``."""
    return SettingsExplorer(scenario, handler, **kw)
