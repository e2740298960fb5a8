"""The timeline gallery (``sandbox.present.gallery``): a list of names, and the picked run's timeline.

Picks are made through ``.value``, as a learner's pick in the page fires the same callback; a burst of picks
from the browser is made with ``set_state``, as comm messages arrive.
"""
from __future__ import annotations

import asyncio
import base64
import html
import io
import json
import re

import numpy as np
import pytest
from PIL import Image

from sandbox import BadInput, run_scenario, timeline_gallery
from sandbox.present.stage import STALE

from conftest import example

NAIVE = example("naive_email.py")
NAMES = {"SQS": "sqs-batch-failure", "async invoke": "async-retry", "the control": "no-fault"}


@pytest.fixture(scope="module")
def runs():
    return {name: run_scenario(scenario, NAIVE, seed=0) for name, scenario in NAMES.items()}


def _message(gallery):
    feed = gallery.stage.feed.value
    values = json.loads(html.unescape(re.search(r'data-values="([^"]*)"', feed).group(1)))
    return values, re.findall(r'<div data-part="(\w+)">', feed), feed


def _pixels(png):
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))


def test_the_first_name_is_drawn_at_once_and_the_others_only_when_picked(runs):
    gallery = timeline_gallery(runs, label="source")
    assert gallery.picker.options == tuple(NAMES) and gallery.picker.description == "source"
    assert gallery.shown == "SQS" and gallery.drawn == ["SQS"]
    values, parts, feed = _message(gallery)
    assert values == {"pick": "SQS"} and parts == ["timeline"]
    assert feed.count(base64.b64encode(gallery.image.value).decode()) == 1
    gallery.picker.value = "the control"
    assert gallery.shown == "the control" and gallery.drawn == ["SQS", "the control"]
    assert _message(gallery)[0] == {"pick": "the control"} and gallery.stage.sent == 2


def test_a_picked_timeline_is_the_runs_plot_pixel_for_pixel_with_its_title(runs):
    gallery = timeline_gallery(runs, titles={"async invoke": "async invoke · async-retry · 1 extra email"})
    gallery.picker.value = "async invoke"
    shown = _pixels(gallery.image.value)
    plot = runs["async invoke"].plot(width=9.0, title="async invoke · async-retry · 1 extra email")
    plain = _pixels(plot._repr_png_())
    assert shown.shape == plain.shape and (shown == plain).all()
    # Without a title of its own, a timeline keeps the run's (which names the scenario and the handler).
    gallery.picker.value = "SQS"
    assert (_pixels(gallery.image.value) == _pixels(runs["SQS"].plot(width=9.0)._repr_png_())).all()


def test_a_name_picked_again_is_shown_at_once_without_drawing(runs, monkeypatch):
    from sandbox.present import gallery as module

    gallery = timeline_gallery(runs)
    first = gallery.image.value
    gallery.picker.value = "async invoke"
    monkeypatch.setattr(module, "timeline_pixels", lambda *a, **k: pytest.fail("drawn again"))
    gallery.picker.value = "SQS"
    assert gallery.image.value == first and gallery.drawn == ["SQS", "async invoke"]
    assert _message(gallery)[0] == {"pick": "SQS"}  # sent again: the page shows it in the same way


def test_a_burst_of_browser_picks_draws_only_the_last_and_says_so_at_once(runs):
    gallery = timeline_gallery(runs)
    sent = gallery.stage.sent

    async def burst():
        for name in ("async invoke", "the control", "async invoke"):
            gallery.picker.set_state({"index": list(NAMES).index(name)})
        said = (gallery.status.value, gallery.stage.sent, list(gallery.drawn))
        for _ in range(200):
            await asyncio.sleep(0.02)
            if gallery.stage.sent > sent:
                break
        return said

    status, sent_then, drawn_then = asyncio.run(burst())
    assert "drawing async invoke" in status and STALE in status and 'data-dims="all"' in status
    assert sent_then == sent and drawn_then == ["SQS"]  # nothing drawn or sent while the picks came in
    assert gallery.drawn == ["SQS", "async invoke"] and gallery.stage.sent == sent + 1
    assert _message(gallery)[0] == {"pick": "async invoke"}


def test_the_page_can_read_which_name_the_list_shows(runs):
    gallery = timeline_gallery(runs)
    assert "sandbox-setting-pick" in gallery.picker._dom_classes and "sandbox-dashboard" in gallery.widget._dom_classes
    assert 'data-clears="all"' in gallery.stage.feed.value


def test_a_static_export_names_the_timelines_and_shows_the_one_on_show(runs):
    gallery = timeline_gallery(runs)
    gallery.picker.value = "async invoke"
    bundle = gallery._repr_mimebundle_()
    assert bundle["text/plain"].startswith("3 timelines (SQS, async invoke, the control); on show: async invoke")
    assert base64.b64encode(gallery.image.value).decode() in bundle["text/html"]
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_an_empty_gallery_is_refused():
    with pytest.raises(BadInput, match="at least one run"):
        timeline_gallery({})
