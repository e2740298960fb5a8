"""Widgets for the notebooks: controls built from a scenario's own settings, wired to rerun it.

    explorer = explore_settings("sqs-visibility-timeout", handler, only=["visibility_timeout"])
    explorer            # in Jupyter: the sliders, the verdict and the timeline
    explorer.controls["visibility_timeout"].value = 30   # what a learner's drag does

Each ``Setting`` becomes a control with the setting's range and choices, its help text as
the tooltip: a slider for a narrow numeric range, a number box for a wide one, a dropdown
for choices, a checkbox for a switch. The callbacks are plain methods, so tests drive them
by setting ``.value`` with no browser.
"""
from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import ipywidgets as widgets

from .errors import BadInput
from .settings import Setting

#: Widest integer range still shown as a slider (wider ones get a number box).
SLIDER_INT_SPAN = 1000
#: Widest float range still shown as a slider.
SLIDER_FLOAT_SPAN = 3600.0
#: Steps a float slider is divided into.
FLOAT_STEPS = 200
_STYLE = {"description_width": "initial"}
_LAYOUT = {"width": "420px"}


def control_for(setting: Setting, value: Any = None, span: tuple[float, float, float] | None = None):
    """The ipywidgets control for one setting, showing ``value`` (default: the setting's default).

    ``span`` (min, max, step) narrows a wide range to the part a lesson is about.
    """
    value = setting.default if value is None else value
    common = dict(description=setting.name, tooltip=setting.help, style=_STYLE, layout=_LAYOUT,
                  continuous_update=False)
    if setting.choices is not None:
        return widgets.Dropdown(options=list(setting.choices), value=value, description=setting.name,
                                tooltip=setting.help, style=_STYLE, layout=_LAYOUT)
    if setting.kind is bool:
        return widgets.Checkbox(value=bool(value), description=setting.name, tooltip=setting.help, style=_STYLE,
                                indent=False)
    if setting.kind in (int, float):
        return _numeric(setting, value, span, common)
    return widgets.Text(value=str(value), description=setting.name, tooltip=setting.help, style=_STYLE,
                        layout=_LAYOUT)


def _numeric(setting: Setting, value: Any, span: tuple[float, float, float] | None, common: dict):
    lo = setting.minimum if setting.minimum is not None else -1e9
    hi = setting.maximum if setting.maximum is not None else 1e9
    if span is not None:
        lo, hi = max(lo, span[0]), min(hi, span[1])
    if setting.kind is int:
        step = int(span[2]) if span else 1
        if hi - lo <= SLIDER_INT_SPAN:
            return widgets.IntSlider(value=int(value), min=int(lo), max=int(hi), step=step, **common)
        return widgets.BoundedIntText(value=int(value), min=int(lo), max=int(hi), step=step, **common)
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
                     spans: Mapping[str, tuple[float, float, float]] | None = None) -> dict[str, widgets.Widget]:
    """One control per setting of ``scenario`` (a name or a Scenario), in the scenario's order."""
    from .scenarios import get_scenario

    sc = get_scenario(scenario) if isinstance(scenario, str) else scenario
    known = sc.all_settings()
    names = list(only) if only is not None else list(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise BadInput(f"scenario {sc.name} has no setting {unknown[0]!r}; its settings are: {', '.join(known)}")
    values, spans = dict(values or {}), dict(spans or {})
    return {n: control_for(known[n], values.get(n), spans.get(n)) for n in names}


class SettingsExplorer:
    """Controls for some settings, a verdict and a timeline that follow them: every change reruns the scenario.

    ``run(settings) -> RunResult`` is what a change triggers; by default it runs the
    scenario against ``handler`` with ``seed``. ``extra`` are controls of the caller's own
    (a handler's lock seconds, say) whose values reach ``run`` alongside the settings.
    """

    def __init__(self, scenario: Any, handler: Any = None, *, seed: int = 0, only: Iterable[str] | None = None,
                 fixed: Mapping[str, Any] | None = None, spans: Mapping[str, tuple[float, float, float]] | None = None,
                 extra: Mapping[str, widgets.Widget] | None = None,
                 run: Callable[[dict[str, Any]], Any] | None = None, plot: bool = True, width: float = 9.0):
        from .scenarios import get_scenario, run_scenario

        self.scenario = get_scenario(scenario) if isinstance(scenario, str) else scenario
        self.fixed = dict(fixed or {})
        self.controls = setting_controls(self.scenario, only=only, values=self.fixed, spans=spans)
        self.controls.update(extra or {})
        self._run = run or (lambda values: run_scenario(self.scenario, handler, seed=seed, settings=values))
        self.plot, self.width = plot, width
        self.verdict = widgets.HTML()
        self.image = widgets.Image(format="png", layout={"max_width": "100%"})
        self.output = widgets.Output()  # anything else a rerun says (a bad combination of settings)
        self.result = None
        self.runs = 0
        for control in self.controls.values():
            control.observe(self._changed, names="value")
        self.widget = widgets.VBox([widgets.VBox(list(self.controls.values())), self.verdict, self.image,
                                    self.output])
        self.rerun()

    def values(self) -> dict[str, Any]:
        return {**self.fixed, **{name: c.value for name, c in self.controls.items()}}

    def _changed(self, change: dict) -> None:
        self.rerun()

    def rerun(self):
        """Run with the controls' current values and redraw; returns the RunResult (None if refused)."""
        self.runs += 1
        if self.output.outputs:
            self.output.clear_output()
        try:
            result = self._run(self.values())
        except BadInput as exc:
            self.result = None
            self.verdict.value = f'<span style="color:#b3261e">Not run: {html.escape(str(exc))}</span>'
            return None
        self.result = result
        self.verdict.value = result._repr_html_()
        if self.plot:
            self.image.value = result.plot(width=self.width)._repr_png_()
        return result

    def _repr_mimebundle_(self, **kw: Any):
        return self.widget._repr_mimebundle_(**kw)


def explore_settings(scenario: Any, handler: Any = None, **kw: Any) -> SettingsExplorer:
    """A ``SettingsExplorer``: controls for ``scenario``'s settings that rerun it against ``handler``."""
    return SettingsExplorer(scenario, handler, **kw)
