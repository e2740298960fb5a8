"""Many runs' timelines in one place, one on show at a time, each drawn the first time it is picked.

Lesson 06 has a timeline for each of sixteen sources. Drawn one under another they took most of the
lesson's run time and a long scroll, while a learner reads them one at a time, each beside its
paragraph. A gallery draws the first at once and any other when its name is picked from the list (under
a second for most runs; a name picked before shows again at once). The picked timeline reaches the page as a
dashboard's pictures do (``sandbox.present.stage``): in one step, once decoded, and only while the list
still shows the name it was drawn for.

    timelines = timeline_gallery({"SQS": sqs_result, "Kinesis": kinesis_result})
    timelines                      # in Jupyter: the list and the first timeline
    timelines.picker.value = "Kinesis"   # what a learner's pick does
"""
from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets

from ..core.jsonvalues import JsonObject
from ..errors import BadInput
from .stage import ROOT, SETTING, STAGE_CSS, Part, Stage, notice, picture_html
from .widgets import SETTLE_S, _browser_loop, encode_aside, timeline_pixels

#: The list's name on the page (the class ``SETTING + PICK`` lets the page read which name it shows).
PICK = "pick"


class TimelineGallery:
    """A list of names and the timeline of the run picked in it.

    ``runs`` maps each name to a run's result (anything with ``plot``); ``titles`` gives a timeline's title by
    name (else the run's own); ``label`` names the list. ``shown`` is the name on show, ``drawn`` every name drawn
    so far, in order (a name drawn once is not drawn again: its picture is kept).
    """

    def __init__(self, runs: Mapping[str, Any], *, titles: Mapping[str, str] | None = None, label: str = "show",
                 width: float = 9.0):
        if not runs:
            raise BadInput("a timeline gallery needs at least one run")
        self.runs, self.titles, self.width = dict(runs), dict(titles or {}), width
        self.picker = widgets.Dropdown(options=list(self.runs), description=label,
                                       layout={"width": "max-content", "min_width": "22em"})
        self.picker.add_class(SETTING + PICK)
        self.status = widgets.HTML(layout={"min_height": "1.7em"})  # "drawing …" while a pick is drawn
        self.stage = Stage(["timeline"])
        self.image = Part("timeline")
        self.pictures: dict[str, bytes] = {}
        self.drawn: list[str] = []
        self.shown: str | None = None
        self._asked = 0  # picks so far; a pending draw for an earlier one is dropped
        # The page sends a Dropdown's pick as its index: that is the change that says it came from the browser
        self.picker.observe(self._picked, names="index")
        self.widget = widgets.VBox([widgets.HTML(STAGE_CSS), self.picker, self.status, self.stage.slots["timeline"],
                                    self.stage.feed])
        self.widget.add_class(ROOT)
        self.show(self.picker.value)

    def show(self, name: str) -> None:
        """Put ``name``'s timeline on show (drawn now if it never was)."""
        if name not in self.pictures:
            pixels, _ = timeline_pixels(self.runs[name], self.width, legend=True, title=self.titles.get(name))
            self.pictures[name] = encode_aside(pixels).result()
            self.drawn.append(name)
        self.image.value, self.shown = self.pictures[name], name
        self.stage.send({"timeline": self.image.value}, {PICK: name}, ["all"])

    def _picked(self, change: dict) -> None:
        self._asked += 1
        self.status.value = notice(f"drawing {self.picker.value}…")
        loop = _browser_loop(change)
        if loop is None:
            self.show(self.picker.value)
        else:
            loop.call_later(SETTLE_S, self._settle, self._asked)

    def _settle(self, asked: int) -> None:
        if asked == self._asked:  # else a later pick is waiting: draw that one only
            self.show(self.picker.value)

    def _repr_mimebundle_(self, **kw: Any) -> JsonObject:
        """The widget, and for a page without widgets (an export, a notebook opened with no kernel) the names and
        the timeline on show."""
        data = self.widget._repr_mimebundle_(**kw)
        data["text/plain"] = (f"{len(self.runs)} timelines ({', '.join(self.runs)}); on show: {self.shown} "
                              "(picking another needs a running kernel)")
        data["text/html"] = (f"<div><p>{html.escape(str(self.shown))}</p>"
                             f"{picture_html(self.image.value, 'timeline')}</div>")
        return data


def timeline_gallery(runs: Mapping[str, Any], **kw: Any) -> TimelineGallery:
    """A ``TimelineGallery`` of ``runs`` (name -> a run's result)."""
    return TimelineGallery(runs, **kw)

