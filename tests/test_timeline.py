"""Tests for sandbox.present.timeline: the swim-lane plot of a History."""
from __future__ import annotations

import ast
import functools
import warnings
from pathlib import Path

import matplotlib
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from matplotlib.colors import to_hex

from sandbox.core.history import History
from sandbox.present.timeline import DUPLICATE_COLOR, MARKERS, OUTCOME_COLORS, audit, plot_timeline, save_timeline
from sandbox.present.timeline.style import matplotlib_style
from sandbox.scenarios import SCENARIOS, run_scenario
from sandbox.vocab import EffectStatus

EPOCH = 1_700_000_000
TABLE = "idempotency"


def _claim(h, t, inv, key, won, lock_s=30):
    h.append("aws", t, inv=inv, actor="handler", service="dynamodb", op="PutItem", target=TABLE, key=key,
             result="ok" if won else "ConditionalCheckFailed",
             detail={"status": "IN_PROGRESS", "expiresAt": EPOCH + int(t) + lock_s,
                     "condition": "attribute_not_exists(pk) OR expiresAt < :now"})


def _complete(h, t, inv, key, keep_s=86400):
    h.append("aws", t, inv=inv, actor="handler", service="dynamodb", op="UpdateItem", target=TABLE, key=key,
             result="ok", detail={"status": "COMPLETED", "expiresAt": EPOCH + int(t) + keep_s})


def _start(h, t, inv, source="sqs", cause="first delivery", prev=None, container="c-1", keys=("o-1",)):
    h.append("invoke_start", t, inv=inv, source=source, cause=cause, container=container,
             request_id=f"r-{inv}", keys=list(keys), prev=prev)


def sqs_batch_naive() -> History:
    """inv-1 emails o-1, o-2 then fails on o-3; the redelivery emails all three again."""
    h = History({"seed": 7, "scenario": "sqs-batch", "epoch": EPOCH, "table": TABLE})
    _start(h, 0.01, "inv-1")
    h.append("effect", 0.03, inv="inv-1", kind="email", key="o-1", status="done", detail={})
    h.append("effect", 0.05, inv="inv-1", kind="email", key="o-2", status="done", detail={})
    h.append("invoke_end", 0.07, inv="inv-1", outcome="error", error="TemplateError: no template for o-3")
    _start(h, 30.07, "inv-2", cause="redelivery", prev="inv-1")
    h.append("effect", 30.09, inv="inv-2", kind="email", key="o-1", status="done", detail={})
    h.append("effect", 30.11, inv="inv-2", kind="email", key="o-2", status="done", detail={})
    h.append("effect", 30.13, inv="inv-2", kind="email", key="o-3", status="done", detail={})
    h.append("invoke_end", 30.14, inv="inv-2", outcome="ok", error=None)
    return h


def idempotent() -> History:
    h = History({"seed": 8, "scenario": "sqs-batch-idempotent", "epoch": EPOCH, "table": TABLE})
    _start(h, 0.0, "inv-1")
    _claim(h, 1.0, "inv-1", "o-1", True, lock_s=5)  # lock from t=1 until expiresAt = epoch + 6
    h.append("invoke_end", 2.0, inv="inv-1", outcome="crashed", error="container lost")
    _start(h, 10.0, "inv-2", cause="redelivery", prev="inv-1")
    _claim(h, 10.5, "inv-2", "o-1", True, lock_s=5)
    h.append("effect", 11.0, inv="inv-2", kind="email", key="o-1", status="done", detail={})
    _complete(h, 12.0, "inv-2", "o-1")
    h.append("invoke_end", 12.5, inv="inv-2", outcome="ok", error=None)
    _start(h, 13.0, "inv-3", cause="redelivery", prev="inv-2")
    _claim(h, 13.2, "inv-3", "o-1", False)
    h.append("aws", 13.3, inv="inv-3", actor="handler", service="dynamodb", op="GetItem", target=TABLE,
             key="o-1", result="ok", detail={})
    h.append("effect", 13.4, inv="inv-3", kind="email", key="o-1", status="deduplicated", detail={})
    h.append("invoke_end", 13.5, inv="inv-3", outcome="ok", error=None)
    return h


def _ax(fig):
    return fig.axes[0]


def _patches(fig, prefix):
    return [p for p in _ax(fig).patches if (p.get_gid() or "").startswith(prefix)]


def _texts(fig):
    return [t.get_text() for t in _ax(fig).texts]


# --------------------------------------------------------------------------- determinism
def test_same_history_gives_byte_identical_png(tmp_path):
    a = save_timeline(sqs_batch_naive(), tmp_path / "a.png")
    b = save_timeline(sqs_batch_naive(), tmp_path / "b.png")
    assert a.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert a.read_bytes() == b.read_bytes()


def test_json_round_trip_gives_same_png(tmp_path):
    h = idempotent()
    h2 = History.from_json(h.to_json())
    a = save_timeline(h, tmp_path / "a.png")
    b = save_timeline(h2, tmp_path / "b.png")
    assert a.read_bytes() == b.read_bytes()


def test_callers_matplotlib_style_does_not_change_the_png(tmp_path):
    a = save_timeline(idempotent(), tmp_path / "a.png")
    with matplotlib.rc_context({"font.size": 22, "axes.facecolor": "black", "lines.markersize": 30}):
        b = save_timeline(idempotent(), tmp_path / "b.png")
    assert a.read_bytes() == b.read_bytes()


def test_png_has_no_software_or_time_metadata(tmp_path):
    data = save_timeline(sqs_batch_naive(), tmp_path / "a.png").read_bytes()
    assert b"matplotlib" not in data.lower()
    assert b"tIME" not in data


# --------------------------------------------------------------------------- lanes
def test_lanes_grouped_by_source_and_labelled():
    h = History({"seed": 1, "scenario": "mixed", "epoch": EPOCH})
    _start(h, 0.0, "inv-1", source="sqs")
    _start(h, 0.1, "inv-2", source="async", container="c-9")
    h.append("invoke_end", 0.2, inv="inv-1", outcome="error", error="boom")
    h.append("invoke_end", 0.3, inv="inv-2", outcome="ok", error=None)
    _start(h, 0.4, "inv-3", source="sqs", cause="redelivery", prev="inv-1")
    _start(h, 0.5, "inv-4", source="sync", cause="SDK retry", prev=None)
    fig = plot_timeline(h)
    labels = [t.get_text() for t in _ax(fig).get_yticklabels()]
    assert labels == [
        "SQS poller", "inv-1 · first delivery", "inv-3 · redelivery",
        "Async event queue", "inv-2 · first delivery",
        "Synchronous caller\n(SDK retries)", "inv-4 · SDK retry",  # a long source name takes two lines
    ]
    minor = [t.get_text() for t in _ax(fig).get_yticklabels(minor=True)]
    assert "container c-9 · o-1" in minor
    # lanes run top to bottom in start order (the y axis is inverted)
    ticks = list(_ax(fig).get_yticks())
    assert ticks == sorted(ticks)
    assert _ax(fig).yaxis_inverted()


def test_outcome_colours_differ_and_in_flight_is_hatched():
    h = History({"seed": 1, "scenario": "outcomes", "epoch": EPOCH})
    for i, outcome in enumerate(["ok", "error", "timeout", "crashed"]):
        _start(h, i, f"inv-{i}")
        h.append("invoke_end", i + 0.5, inv=f"inv-{i}", outcome=outcome, error=None if outcome == "ok" else "x")
    _start(h, 5.0, "inv-9")  # never ends
    h.append("note", 6.0, text="end")
    fig = plot_timeline(h, gaps=False)
    colours = {}
    for p in _patches(fig, "bar:"):
        _, _inv, outcome = p.get_gid().split(":")
        colours[outcome] = to_hex(p.get_facecolor())
    assert set(colours) == {"ok", "error", "timeout", "crashed", "running"}
    assert len(set(colours.values())) == 5
    for outcome in ("ok", "error", "timeout", "crashed"):
        assert colours[outcome] == to_hex(OUTCOME_COLORS[outcome])
    (running,) = _patches(fig, "bar:inv-9:")
    assert running.get_hatch()
    # the in-flight bar reaches the end of the history
    assert running.get_x() == pytest.approx(5.0)
    assert running.get_x() + running.get_width() == pytest.approx(6.0)
    outcome_words = [t for t in _texts(fig) if "still running" in t or "timed out" in t]
    assert len(outcome_words) == 2


def test_duplicate_effect_is_highlighted_and_annotated():
    fig = plot_timeline(sqs_batch_naive())
    notes = [t for t in _ax(fig).texts if t.get_gid() == "duplicate-note"]
    assert len(notes) == 1
    assert "2nd email o-1" in notes[0].get_text() and "o-2" in notes[0].get_text()
    assert "o-3" not in notes[0].get_text()  # o-3's first email is not a duplicate
    (dups,) = [ln for ln in _ax(fig).lines if ln.get_gid() == "marker:email_dup"]
    assert len(dups.get_xdata()) == 2
    assert to_hex(dups.get_markerfacecolor()) == to_hex(DUPLICATE_COLOR)
    (sent,) = [ln for ln in _ax(fig).lines if ln.get_gid() == "marker:email_done"]
    assert len(sent.get_xdata()) == 3


def test_third_delivery_is_called_3rd():
    h = sqs_batch_naive()
    _start(h, 60.0, "inv-3", cause="redelivery", prev="inv-2")
    h.append("effect", 60.1, inv="inv-3", kind="email", key="o-1", status="done", detail={})
    h.append("invoke_end", 60.2, inv="inv-3", outcome="ok", error=None)
    assert any("3rd email o-1" in t for t in _texts(plot_timeline(h)))


def test_lock_and_retention_windows_are_shaded():
    fig = plot_timeline(idempotent(), gaps=False)  # linear axis: x is virtual seconds
    locks = {p.get_gid(): p for p in _patches(fig, "lock:")}
    assert set(locks) == {"lock:inv-1:o-1", "lock:inv-2:o-1"}
    crashed = locks["lock:inv-1:o-1"]  # held after the crash until it expired at t=6
    assert crashed.get_x() == pytest.approx(1.0)
    assert crashed.get_x() + crashed.get_width() == pytest.approx(6.0)
    done = locks["lock:inv-2:o-1"]  # ended when the record was marked COMPLETED
    assert done.get_x() + done.get_width() == pytest.approx(12.0)
    (kept,) = _patches(fig, "kept:inv-2:o-1")
    assert kept.get_x() == pytest.approx(12.0)
    assert kept.get_x() + kept.get_width() == pytest.approx(_ax(fig).get_xlim()[1])  # clipped
    assert any("kept 24 h →" in t for t in _texts(fig))
    # claim markers: two won, one lost; a read
    gids = {ln.get_gid(): len(ln.get_xdata()) for ln in _ax(fig).lines}
    assert gids["marker:claim_won"] == 2
    assert gids["marker:claim_lost"] == 1
    assert gids["marker:read"] == 1
    assert gids["marker:email_dedup"] == 1
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "lock held (IN_PROGRESS record)" in legend
    assert "result kept (COMPLETED, until TTL)" in legend


def test_arrows_link_repeats_with_cause():
    fig = plot_timeline(sqs_batch_naive(), gaps=False)  # (with a break, this short arrow crosses it: no label fits)
    arrows = _patches(fig, "arrow:")
    assert [a.get_gid() for a in arrows] == ["arrow:inv-1->inv-2"]
    assert "redelivery at 30.1 s" in [t.replace("\n", " ") for t in _texts(fig)]  # when it started, not a delay


def test_long_gap_is_squeezed_but_ticks_show_true_time():
    fig = plot_timeline(sqs_batch_naive())
    assert any(t.startswith("30 s") and "skipped" in t for t in _texts(fig))
    ticks = [t.get_text() for t in _ax(fig).get_xticklabels()]
    assert float(ticks[0]) < 0.1  # the first stretch is read from its start ...
    assert any(t.startswith("30.1") for t in ticks)  # ... and the one after the break at its own time
    with matplotlib_style():
        fig.draw_without_rendering()
        assert audit.ticks_off_time(audit.Drawn(fig)) == audit.scale_bent(audit.Drawn(fig)) == []
    linear = plot_timeline(sqs_batch_naive(), gaps=False)
    assert not [t for t in _texts(linear) if "skipped" in t]


def test_sweeps_get_their_own_lane():
    h = idempotent()
    h.append("sweep", 20.0, target=TABLE, key="o-1", detail={})
    fig = plot_timeline(h)
    rows = [lbl.get_text() for lbl in _ax(fig).get_yticklabels()]
    # on top, over the header rows; under the lanes where the only source's name stands over them as a caption
    # (on top, the sweeper would read as that source's)
    caption = [t for t in _ax(fig).texts if t.get_gid() == "source-caption"]
    assert rows.index("TTL sweeper") == (len(rows) - 1 if caption else 0)
    assert [ln for ln in _ax(fig).lines if ln.get_gid() == "marker:sweep"]


# --------------------------------------------------------------------------- time axis
def test_unit_switches_to_minutes_for_five_minute_history():
    h = History({"seed": 2, "scenario": "async", "epoch": EPOCH})
    _start(h, 0.0, "inv-1", source="async")
    h.append("invoke_end", 1.0, inv="inv-1", outcome="error", error="boom")
    _start(h, 61.0, "inv-2", source="async", cause="retry 1", prev="inv-1")
    h.append("invoke_end", 62.0, inv="inv-2", outcome="error", error="boom")
    _start(h, 182.0, "inv-3", source="async", cause="retry 2", prev="inv-2")
    h.append("invoke_end", 300.0, inv="inv-3", outcome="ok", error=None)
    for gaps in ("auto", False):
        fig = plot_timeline(h, gaps=gaps)
        assert "min" in _ax(fig).get_xlabel()
        assert all(":" in t.get_text() for t in _ax(fig).get_xticklabels())
    assert _ax(plot_timeline(h, unit="s")).get_xlabel() == "virtual time (s)"
    assert _ax(plot_timeline(sqs_batch_naive())).get_xlabel() == "virtual time (s)"


def test_bad_unit_is_rejected():
    with pytest.raises(ValueError):
        plot_timeline(sqs_batch_naive(), unit="hours")


# --------------------------------------------------------------------------- edge cases
def test_empty_history_renders_friendly_figure(tmp_path):
    fig = plot_timeline(History())
    assert any("No invocations" in t for t in _texts(fig))
    assert fig.axes[0].get_title() == "timeline"
    p = save_timeline(History({"scenario": "nothing", "seed": 4}), tmp_path / "empty.png")
    assert p.stat().st_size > 0


def test_default_and_custom_title():
    assert _ax(plot_timeline(sqs_batch_naive())).get_title() == "sqs-batch · seed 7"
    assert _ax(plot_timeline(sqs_batch_naive(), title="Lesson 2")).get_title() == "Lesson 2"


def test_many_invocations_still_render(tmp_path):
    h = History({"seed": 3, "scenario": "load", "epoch": EPOCH})
    for i in range(80):
        _start(h, i * 0.5, f"inv-{i}", source=["sqs", "async", "stream"][i % 3],
               prev=f"inv-{i - 3}" if i >= 3 else None, cause="retry 1" if i >= 3 else "first delivery")
        h.append("effect", i * 0.5 + 0.1, inv=f"inv-{i}", kind="charge", key=f"o-{i % 5}", status="done", detail={})
        h.append("invoke_end", i * 0.5 + 0.2, inv=f"inv-{i}", outcome="ok", error=None)
    fig = plot_timeline(h)
    _w, ht = fig.get_size_inches()
    assert ht <= 50
    assert min(t.get_fontsize() for t in _ax(fig).get_yticklabels()) >= 6
    save_timeline(h, tmp_path / "many.png", dpi=60)


def test_figure_does_not_touch_pyplot_and_displays_in_jupyter():
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    fig = plot_timeline(sqs_batch_naive())
    assert plt.get_fignums() == before
    png = fig._repr_png_()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_text_from_history_is_not_parsed_as_mathtext(tmp_path):
    # every string has paired dollars, so mathtext would take it (and choke on \frac{a)
    # a saved history, loaded as it is (its cause is no word of the vocabulary)
    h = History({"seed": 1, "scenario": "price $x^2$", "epoch": EPOCH}, [
        {"seq": 0, "t": 0.0, "type": "invoke_start", "inv": "inv-$1$", "source": "sqs", "cause": "first $delivery$",
         "container": "c-$a_1$", "request_id": "r-1", "keys": ["o-1"], "prev": None},
        {"seq": 1, "t": 0.1, "type": "invoke_end", "inv": "inv-$1$", "outcome": "error",
         "error": "cost $\\frac{a$ is $b$"}])
    fig = plot_timeline(h)
    ax = _ax(fig)
    shown = [ax.title, *ax.texts, *ax.get_yticklabels(), *ax.get_yticklabels(minor=True)]
    with_dollars = {t.get_text(): t for t in shown if "$" in t.get_text()}
    assert set(with_dollars) == {"price $x^2$ · seed 1", "inv-$1$ · first $delivery$", "container c-$a_1$ · o-1",
                                 "cost $\\frac{a$ is $b$"}
    for text, artist in with_dollars.items():
        assert artist.get_parse_math() is False, text
    fig.canvas.draw()  # as mathtext, \frac{a would raise here
    assert save_timeline(h, tmp_path / "math.png", dpi=50).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_end_of_history_after_last_activity_with_lock_that_never_expires():
    # regression: the "history ends" line used to land far outside the axes
    h = History()
    _start(h, 0.0, "inv-1")
    h.append("invoke_end", 0.0, inv="inv-1", outcome="ok", error=None)
    _start(h, 1.0, "inv-2")
    h.append("aws", 1.0, inv="inv-2", actor="h", service="dynamodb", op="PutItem", target=TABLE, key="o-1",
             result="ok", detail={"status": "IN_PROGRESS", "condition": "attribute_not_exists(pk)"})
    h.append("invoke_end", 1.0, inv="inv-2", outcome="ok", error=None)
    h.append("note", 2.0, text="hello")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        fig = plot_timeline(h)
    ax = _ax(fig)
    (end,) = [ln for ln in ax.lines if ln.get_gid() == "end-of-history"]
    lo, hi = ax.get_xlim()
    assert lo < end.get_xdata()[0] < hi
    assert any("locked, no expiry" in t for t in _texts(fig))


# --------------------------------------------------------------------------- what the sources did
M1, M2, M3 = "m-1", "m-2", "m-3"
KEYS3 = ("o-1", "o-2", "o-3")


def _email(h, t, inv, key, status="done"):
    h.append("effect", t, inv=inv, kind="email", key=key, status=status, detail={})


def _delivery(h, t, source, what, keys, inv=None, **detail):
    h.append("delivery", t, source=source, what=what, keys=list(keys), inv=inv, detail=detail)


def _receive(h, t, ids):
    h.append("aws", t, inv=None, actor="sqs-poller-1", service="sqs", op="ReceiveMessage", target="orders",
             key=None, result="ok", detail={"received": list(ids)})


def sqs_visibility() -> History:
    """Received at 0, invoked after a 4 s batching window; received AGAIN at 5 s while inv-1 still sends."""
    h = History({"seed": 0, "scenario": "sqs-visibility-timeout", "epoch": EPOCH, "table": TABLE})
    _receive(h, 0.0, [M1, M2, M3])
    _receive(h, 0.0, [])  # another poller found nothing
    _start(h, 4.0, "inv-1", keys=KEYS3)
    _email(h, 4.6, "inv-1", "o-1")
    _receive(h, 5.001, [M1, M2, M3])
    _delivery(h, 5.001, "sqs", "redelivery", KEYS3, "inv-1", messageIds=[M1, M2, M3], receiveCounts=[2, 2, 2])
    _email(h, 5.2, "inv-1", "o-2")
    _email(h, 5.8, "inv-1", "o-3")
    h.append("invoke_end", 5.8, inv="inv-1", outcome="ok", error=None)
    _delivery(h, 5.8, "sqs", "deleted", KEYS3, "inv-1", messageIds=[M1, M2, M3])
    _start(h, 9.001, "inv-2", cause="redelivery", prev="inv-1", keys=KEYS3)
    for i, k in enumerate(KEYS3):
        _email(h, 9.6 + 0.6 * i, "inv-2", k)
    h.append("invoke_end", 10.801, inv="inv-2", outcome="ok", error=None)
    _delivery(h, 10.801, "sqs", "deleted", KEYS3, "inv-2", messageIds=[M1, M2, M3])
    return h


def sqs_dead_letter() -> History:
    """Fails twice; the poison message and o-3 end in the DLQ: the lost orders must show where they went."""
    h = History({"seed": 0, "scenario": "sqs-dlq", "epoch": EPOCH, "table": TABLE})
    _receive(h, 0.0, [M1, M2])
    _start(h, 0.0, "inv-1", keys=["o-3"])
    h.append("invoke_end", 0.2, inv="inv-1", outcome="error", error="boom")
    _delivery(h, 0.2, "sqs", "batch failed", ["o-3"], "inv-1", messageIds=[M1, M2], partial=False, reason="boom")
    _receive(h, 30.0, [M1, M2])
    _delivery(h, 30.0, "sqs", "redelivery", ["o-3"], "inv-1", messageIds=[M1, M2], receiveCounts=[2, 2])
    _start(h, 30.0, "inv-2", cause="redelivery", prev="inv-1", keys=["o-3"])
    h.append("invoke_end", 30.2, inv="inv-2", outcome="error", error="boom")
    _delivery(h, 30.2, "sqs", "batch failed", ["o-3"], "inv-2", messageIds=[M1, M2], partial=False, reason="boom")
    _delivery(h, 60.2, "sqs", "dead-lettered", ["o-3"], "inv-2", messageId=M1, queue="orders-dlq", reason="x")
    _delivery(h, 60.2, "sqs", "dead-lettered", [], "inv-2", messageId=M2, queue="orders-dlq", reason="not JSON")
    return h


def async_lost(destination="orders-on-failure") -> History:
    h = History({"seed": 0, "scenario": "async-retry", "epoch": EPOCH, "table": TABLE})
    prev = None
    for i, t in enumerate((0.0, 60.4, 180.8)):
        inv = f"inv-{i + 1}"
        _start(h, t, inv, source="async", cause="first delivery" if i == 0 else f"retry {i}", prev=prev,
               keys=["o-1", "o-2"])
        _email(h, t + 0.2, inv, "o-1")
        _email(h, t + 0.4, inv, "o-2", status="failed")
        h.append("invoke_end", t + 0.4, inv=inv, outcome="error", error="EmailProviderError: o-2")
        if i < 2:
            _delivery(h, t + 0.4, "async", "retry scheduled", ["o-1", "o-2"], inv, attempt=i + 2, delay=60.0 * (i + 1))
        prev = inv
    _delivery(h, 181.2, "async", "discarded", ["o-1", "o-2"], "inv-3", destination=destination,
              condition="RetriesExhausted", reason="RetriesExhausted: all 3 attempts failed")
    return h


def sync_caller(status_code=None) -> History:
    """The caller's reads time out at 60 s; the SDK retries; finally it gives up or gets an answer."""
    h = History({"seed": 0, "scenario": "sync-sdk-retry", "epoch": EPOCH, "table": TABLE})
    _start(h, 0.0, "inv-1", source="sync", container="orders-handler/c1")
    h.append("aws", 60.0, inv=None, actor="caller-o-1", service="lambda", op="Invoke", target="fn", key="o-1",
             result="ReadTimeout", detail={"attempt": 1, "invocation": "inv-1", "read_timeout": 60.0, "sent": 0.0})
    _start(h, 60.05, "inv-2", source="sync", cause="SDK retry", prev="inv-1", container="orders-handler/c2")
    if status_code is None:
        _email(h, 75.0, "inv-1", "o-1")
        h.append("invoke_end", 75.0, inv="inv-1", outcome="ok", error=None)
        h.append("aws", 120.05, inv=None, actor="caller-o-1", service="lambda", op="Invoke", target="fn", key="o-1",
                 result="ReadTimeout", detail={"attempt": 2, "invocation": "inv-2", "read_timeout": 60.0,
                                               "sent": 60.05})
        _email(h, 135.05, "inv-2", "o-1")
        h.append("invoke_end", 135.05, inv="inv-2", outcome="ok", error=None)
    else:
        _claim(h, 60.05, "inv-2", "o-1", False)
        h.append("invoke_end", 60.05, inv="inv-2", outcome="ok", error=None)
        h.append("aws", 60.05, inv=None, actor="caller-o-1", service="lambda", op="Invoke", target="fn", key="o-1",
                 result="ok", detail={"attempt": 2, "invocation": "inv-2", "read_timeout": 60.0, "sent": 60.05,
                                      "statusCode": status_code})
        _email(h, 75.0, "inv-1", "o-1")
        h.append("invoke_end", 75.0, inv="inv-1", outcome="ok", error=None)
    return h


def ttl_lag(sweep: bool = True) -> History:
    """The claim expires at 3 s, but TTL deletes it only 6 h later; the retries find it still there."""
    h = History({"seed": 0, "scenario": "ttl-lag", "epoch": EPOCH, "table": TABLE})
    _start(h, 0.0, "inv-1", source="async")
    _claim(h, 0.0, "inv-1", "order#o-1", True, lock_s=3)
    h.append("invoke_end", 3.0, inv="inv-1", outcome="timeout", error="Task timed out after 3.00 seconds")
    _delivery(h, 3.0, "async", "retry scheduled", ["o-1"], "inv-1", delay=60.0)
    _start(h, 63.0, "inv-2", source="async", cause="retry 1", prev="inv-1")
    _claim(h, 63.0, "inv-2", "order#o-1", False)
    h.append("invoke_end", 63.0, inv="inv-2", outcome="error", error="StillInProgressError")
    if sweep:
        h.append("sweep", 21603.0, target=TABLE, key="order#o-1", detail={"expiresAt": EPOCH + 3, "lag": 21600.0})
    return h


def two_keys_one_lane() -> History:
    """inv-1 completes o-1 (kept 24 h), then claims o-2 and fails: o-2's lock overlaps o-1's kept record."""
    h = History({"seed": 0, "scenario": "async-retry", "epoch": EPOCH, "table": TABLE})
    _start(h, 0.0, "inv-1", source="async", keys=["o-1", "o-2"])
    _claim(h, 0.0, "inv-1", "o-1", True)
    _email(h, 0.2, "inv-1", "o-1")
    _complete(h, 0.2, "inv-1", "o-1")
    _claim(h, 0.2, "inv-1", "o-2", True)
    h.append("invoke_end", 0.4, inv="inv-1", outcome="error", error="boom")
    return h


def _display_boxes(fig, gids):
    r = fig.canvas.get_renderer()
    out = []
    for t in _ax(fig).texts:
        if (t.get_gid() or "").startswith(gids):
            if isinstance(t, matplotlib.text.Annotation):  # a note with a leader line: where it sits on the page
                t.update_positions(r)
            box = matplotlib.text.Text.get_window_extent(t, r)
            out.append((t.get_text(), box))
    return out


def _marker_points(fig):
    ax = _ax(fig)
    pts = []
    for ln in ax.lines:
        if (ln.get_gid() or "").startswith("marker:"):
            for x, y in ax.transData.transform(ln.get_xydata()):
                pts.append((ln.get_gid(), float(x), float(y)))
    return pts


def _markers_by_gid(fig):
    return {ln.get_gid(): ln for ln in _ax(fig).lines if (ln.get_gid() or "").startswith("marker:")}


LABELS = ("duplicate-note", "clip-note", "event-label", "caller-label", "arrow-label", "sweep-label", "expired-label",
          "warning-note", "refused-note", "strip-label", "queue-label")


def _layout_problems(fig):
    """Labels covering a marker's centre or each other, markers after the "history ends" line."""
    problems = []
    labels = _display_boxes(fig, LABELS)
    marks = _marker_points(fig)
    for text, box in labels:
        problems += [f"{text!r} covers {g}" for g, x, y in marks if box.x0 < x < box.x1 and box.y0 < y < box.y1]
    for i, (t1, b1) in enumerate(labels):
        problems += [f"{t1!r} overlaps {t2!r}" for t2, b2 in labels[i + 1:] if b1.overlaps(b2)]
    end = [ln for ln in _ax(fig).lines if ln.get_gid() == "end-of-history"]
    if end:
        x_end = _ax(fig).transData.transform((end[0].get_xdata()[0], 0))[0]
        problems += [f"{g} after the end of history" for g, x, y in marks if x > x_end + 1]
    return problems


def test_delivery_records_are_drawn_on_the_source_header_row():
    fig = plot_timeline(sqs_visibility())
    ax = _ax(fig)
    heading_y = ax.get_yticks()[0]  # "SQS poller"
    markers = _markers_by_gid(fig)
    for gid in ("marker:receive", "marker:redelivery", "marker:deleted"):  # on its row (stacked where they crowd)
        assert all(abs(y - heading_y) < 0.5 for y in markers[gid].get_ydata()), gid
    assert len(markers["marker:receive"].get_xdata()) == 1  # the empty ReceiveMessage draws nothing
    # inv-1 deletes after the messages were received again: too late, they run again; inv-2's delete is done
    assert len(markers["marker:deleted"].get_xdata()) == len(markers["marker:deleted_late"].get_xdata()) == 1
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    for name in ("receive", "redelivery", "deleted", "deleted_late"):
        assert MARKERS[name][1] in legend


def test_redelivery_while_the_first_invocation_still_runs_is_visible():
    fig = plot_timeline(sqs_visibility(), gaps=False)
    # said once, by the label that must be there: why inv-1's delete did not stop the redelivery
    labels = [t for t in _ax(fig).texts if t.get_gid() in ("event-label:redelivery", "event-label:deleted_late")]
    assert [t.get_text() for t in labels] == ["deleted too late: o-1, o-2, o-3 already received again"]
    (guide,) = [ln for ln in _ax(fig).lines if (ln.get_gid() or "").startswith("guide:")]
    x = guide.get_xdata()[0]
    assert 4.8 < x < 5.2  # at the second receive, 5 s ...
    (bar,) = _patches(fig, "bar:inv-1:")
    assert bar.get_x() < x < bar.get_x() + bar.get_width()  # ... through inv-1's bar
    assert max(guide.get_ydata()) > bar.get_y()


def test_lost_orders_show_where_they_went():
    fig = plot_timeline(sqs_dead_letter())
    markers = _markers_by_gid(fig)
    assert len(markers["marker:dropped"].get_xdata()) == 1  # two messages moved at once: one marker
    assert len(markers["marker:batch_failed"].get_xdata()) == 2
    (label,) = [t for t in _ax(fig).texts if t.get_gid() == "event-label:dropped"]
    # a label may wrap: on one line over its mark it crossed an axis break (async_lost's also stood over the retry
    #   clocks of other times), so it stands under its mark on three (labels.py, _label_event)
    assert label.get_text().replace("\n", " ") == "o-3, an unreadable message → DLQ"
    assert label.get_fontweight() == "bold"

    fig = plot_timeline(async_lost())
    # the event is discarded, whatever of its orders' work was done: its label says so (o-1 was emailed)
    assert "event of o-1, o-2 discarded → orders-on-failure" in [t.replace("\n", " ") for t in _texts(fig)]
    assert len(_markers_by_gid(fig)["marker:retry_scheduled"].get_xdata()) == 2
    assert "event of o-1, o-2 discarded, no destination: event lost" in _texts(
        plot_timeline(async_lost(destination=None)))


def test_pending_orders_get_a_hatched_band_until_the_end():
    h = History({"seed": 0, "scenario": "stream", "epoch": EPOCH, "table": TABLE})
    for k in ("o-1", "o-2"):
        h.append("accept", 0.0, key=k, expects=["email"], source="stream")
    _start(h, 0.0, "inv-1", source="stream", keys=["o-1", "o-2"])
    h.append("invoke_end", 0.6, inv="inv-1", outcome="error", error="boom")
    _delivery(h, 0.6, "stream", "batch failed", ["o-1", "o-2"], "inv-1", shard="shardId-000000000000")
    _delivery(h, 0.6, "stream", "retry scheduled", ["o-1", "o-2"], "inv-1", shard="shardId-000000000000", at=1.6)
    _delivery(h, 10.0, "stream", "pending", ["o-1", "o-2"], None, shard="shardId-000000000000", records=2)
    fig = plot_timeline(h, gaps=False)
    (band,) = _patches(fig, "pending:stream")
    assert band.get_hatch()
    assert band.get_x() == pytest.approx(0.0)
    assert band.get_x() + band.get_width() == pytest.approx(10.0)
    assert "o-1, o-2 still pending (in the stream)" in _texts(fig)
    assert "still pending when the run stopped" in [t.get_text() for t in fig.legends[0].get_texts()]


def test_sync_caller_attempts_and_what_it_finally_saw():
    fig = plot_timeline(sync_caller())
    waits = [ln for ln in _ax(fig).lines if (ln.get_gid() or "").startswith("caller-wait:")]
    assert [w.get_gid() for w in waits] == ["caller-wait:inv-1", "caller-wait:inv-2"]
    markers = _markers_by_gid(fig)
    assert len(markers["marker:call_send"].get_xdata()) == 2
    assert len(markers["marker:call_timeout"].get_xdata()) == 2
    heading_y = _ax(fig).get_yticks()[0]
    assert all(abs(y - heading_y) < 0.5 for y in markers["marker:call_timeout"].get_ydata())
    assert "gave up: ReadTimeoutError" in _texts(fig)

    fig = plot_timeline(sync_caller(status_code=409))
    assert "got 409" in _texts(fig)
    assert "marker:call_answer" in _markers_by_gid(fig)
    (outcome,) = [t for t in _ax(fig).texts if t.get_gid() == "outcome:inv-2"]
    assert outcome.get_text() == "✓ ok · 409 after 0 s"


def test_lane_label_names_container_and_orders():
    h = History({"seed": 0, "scenario": "keys", "epoch": EPOCH})
    _start(h, 0.0, "inv-1", container="orders-handler/c1", keys=KEYS3)
    _start(h, 0.0, "inv-2", container="orders-handler/c2", keys=[f"o-{i}" for i in range(1, 9)])
    _start(h, 0.0, "inv-3", source="stream", container="orders-handler/c1", keys=["o-1"])
    _start(h, 0.0, "inv-4", source="stream", container="orders-handler/c2", keys=["o-2"])
    _delivery(h, 0.5, "stream", "retry scheduled", ["o-1"], "inv-3", shard="shardId-000000000000")
    _delivery(h, 0.5, "stream", "retry scheduled", ["o-2"], "inv-4", shard="shardId-000000000001")
    minor = [t.get_text() for t in _ax(plot_timeline(h)).get_yticklabels(minor=True)]
    assert minor == ["container c1 · o-1, o-2, o-3", "container c2 · o-1, o-2 … o-8 (8)",
                     "container c1 · shard 0 · o-1", "container c2 · shard 1 · o-2"]


def test_partial_batch_failure_is_marked():
    h = History({"seed": 0, "scenario": "partial", "epoch": EPOCH, "table": TABLE})
    _start(h, 0.0, "inv-1", keys=KEYS3)
    h.append("invoke_end", 0.6, inv="inv-1", outcome="ok", error=None)
    _delivery(h, 0.6, "sqs", "deleted", ["o-1", "o-2"], "inv-1", messageIds=[M1, M2])
    _delivery(h, 0.6, "sqs", "batch failed", ["o-3"], "inv-1", messageIds=[M3], partial=True,
              reason="reported in batchItemFailures")
    fig = plot_timeline(h)
    (outcome,) = [t for t in _ax(fig).texts if t.get_gid() == "outcome:inv-1"]
    assert outcome.get_text() == "✓ ok after 0.6 s"
    # the lines under it: o-3's message was reported (by its messageId), not the order's id
    assert "batchItemFailures:\no-3's message" in _texts(fig)
    (bar,) = _patches(fig, "bar:inv-1:ok")
    assert bar.get_hatch()  # green, hatched: not a plain ok
    assert "marker:batch_partial" in _markers_by_gid(fig)
    assert "ok, but reported failed batch items" in [t.get_text() for t in fig.legends[0].get_texts()]


def test_expired_record_left_in_the_table_until_the_ttl_sweep():
    fig = plot_timeline(ttl_lag(), gaps=False)
    (lock,) = _patches(fig, "lock:inv-1:")
    assert lock.get_x() + lock.get_width() == pytest.approx(3.0)
    (expired,) = _patches(fig, "expired:inv-1:order#o-1")
    assert expired.get_x() == pytest.approx(3.0)
    assert expired.get_x() + expired.get_width() == pytest.approx(21603.0)  # until the sweeper deleted it
    assert expired.get_hatch() and to_hex(expired.get_facecolor()) != to_hex(lock.get_facecolor())
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "expired, still in the table (TTL lag)" in legend
    # a new claim that replaces the expired record ends it there
    h = ttl_lag(sweep=False)
    _start(h, 183.0, "inv-3", source="async", cause="retry 2", prev="inv-2")
    h.append("aws", 183.0, inv="inv-3", actor="handler", service="dynamodb", op="PutItem", target=TABLE,
             key="order#o-1", result="ok", detail={"status": "IN_PROGRESS", "expiresAt": EPOCH + 186})
    (expired,) = _patches(plot_timeline(h, gaps=False), "expired:inv-1:")
    assert expired.get_x() + expired.get_width() == pytest.approx(183.0)


def test_hours_read_as_hours():
    fig = plot_timeline(ttl_lag())
    ax = _ax(fig)
    assert ax.get_xlabel() == "virtual time (h:mm:ss)"
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert not any(t.startswith("360:") for t in ticks)
    assert any(t.startswith("6:00:") for t in ticks)
    assert "retry 1 at 0:01:03" in _texts(fig)
    assert _patches(fig, "expired:inv-1:")  # (its words do not fit its strip between the arrow and the break)
    assert any(t.startswith("6 h") and "skipped" in t for t in _texts(fig))  # the squeezed gap


def test_two_keys_on_one_lane_both_stay_visible():
    fig = plot_timeline(two_keys_one_lane(), gaps=False)
    (kept,) = _patches(fig, "kept:inv-1:o-1")
    (lock,) = _patches(fig, "lock:inv-1:o-2")
    assert lock.get_x() < kept.get_x() + kept.get_width()  # they overlap in time ...
    k0, k1 = kept.get_y(), kept.get_y() + kept.get_height()
    l0, l1 = lock.get_y(), lock.get_y() + lock.get_height()
    assert k1 <= l0 or l1 <= k0  # ... but not on the page
    (bar,) = _patches(fig, "bar:inv-1:")
    for band in (kept, lock):  # and the bar does not hide either
        above = band.get_y() + band.get_height() <= bar.get_y() + 1e-9
        below = band.get_y() >= bar.get_y() + bar.get_height() - 1e-9
        assert above or below


def test_markers_stand_at_their_time_and_before_the_end_of_history():
    fig = plot_timeline(idempotent(), gaps=False)
    ax = _ax(fig)
    # inv-3 ends at the very end of the history: its marks stand at their times, not pushed along its bar
    (email,) = _markers_by_gid(fig)["marker:email_dedup"].get_xydata()
    assert ax.transData.transform((email[0], 0))[0] == pytest.approx(ax.transData.transform((13.4, 0))[0], abs=1.0)
    assert not _layout_problems(fig)


def test_short_invocations_keep_their_length_and_their_markers_stack_at_their_times():
    """Four emails in 0.6 s of a 60 s axis: each at its own time (the axis is linear: plot x is seconds), the
    bar as long as the run, and the envelopes, which would cover each other side by side, stacked up and down in
    time order (the earliest on top: data y grows downwards); spread along the bar they would read as later."""
    h = History({"seed": 0, "scenario": "linear", "epoch": EPOCH, "table": TABLE})
    _start(h, 0.0, "inv-1")
    for i in range(4):
        _email(h, 0.1 + 0.1 * i, "inv-1", f"o-{i}")
    h.append("invoke_end", 0.6, inv="inv-1", outcome="ok", error=None)
    _start(h, 60.0, "inv-2", prev="inv-1", cause="redelivery")
    h.append("invoke_end", 60.6, inv="inv-2", outcome="ok", error=None)
    fig = plot_timeline(h, gaps=False)
    (bar,) = _patches(fig, "bar:inv-1:")
    px_per_s = _ax(fig).transData.transform((1, 0))[0] - _ax(fig).transData.transform((0, 0))[0]
    assert bar.get_x() == pytest.approx(0.0)
    assert bar.get_width() * px_per_s <= max(0.6 * px_per_s, 3 * fig.dpi / 100) + 1e-6  # the run's own length
    assert not _patches(fig, "spill:")
    emails = _markers_by_gid(fig)["marker:email_done"].get_xydata()
    assert list(emails[:, 0]) == pytest.approx([0.1, 0.2, 0.3, 0.4])
    assert list(emails[:, 1]) == sorted(emails[:, 1]) and len(set(emails[:, 1])) > 1
    assert not [p for p in _layout_problems(fig) if "covers" in p]


def test_arrows_avoid_lanes_in_between():
    """Both copies start at once (duplicate_delay 0): retries must not cut through the other order's lanes."""
    h = History({"seed": 0, "scenario": "async-duplicate", "epoch": EPOCH, "table": TABLE})
    for k, t0, a, b in (("o-1", 0.0, "inv-1", "inv-2"), ("o-2", 5.0, "inv-3", "inv-4")):
        _start(h, t0, a, source="async", keys=[k])
        _start(h, t0, b, source="async", cause="spontaneous duplicate", prev=a, keys=[k])
        _email(h, t0 + 0.2, a, k)
        h.append("invoke_end", t0 + 0.2, inv=a, outcome="ok", error=None)
        h.append("invoke_end", t0 + 0.01, inv=b, outcome="error", error="StillInProgress")
    _start(h, 60.01, "inv-5", source="async", cause="retry 1", prev="inv-2", keys=["o-1"])
    h.append("invoke_end", 60.02, inv="inv-5", outcome="ok", error=None)
    _start(h, 65.01, "inv-6", source="async", cause="retry 1", prev="inv-4", keys=["o-2"])
    h.append("invoke_end", 65.02, inv="inv-6", outcome="ok", error=None)
    fig = plot_timeline(h)
    ax = _ax(fig)
    fig.canvas.draw()
    bars = {p.get_gid().split(":")[1]: p.get_window_extent() for p in _patches(fig, "bar:")}
    for arrow in _patches(fig, "arrow:"):
        src, dst = arrow.get_gid()[len("arrow:"):].split("->")
        path = arrow.get_path().transformed(ax.transData).interpolated(40).vertices
        for inv, box in bars.items():
            if inv in (src, dst):
                continue
            inside = (path[:, 0] > box.x0) & (path[:, 0] < box.x1) & (path[:, 1] > box.y0) & (path[:, 1] < box.y1)
            assert not inside.any(), f"{arrow.get_gid()} crosses {inv}"
    texts = [t.replace("\n", " ") for t in _texts(fig)]  # a label may wrap to keep off inv-5's row, which
    #   the second arrow only passes
    assert "retry 1 at 60.0 s" in texts and "retry 1 at 65.0 s" in texts  # on their arrows, as every label is: the
    #   short ones from a run to its concurrent copy go without, rather than stand another way
    with matplotlib_style():
        assert audit.labels_uneven(audit.Drawn(fig)) == []
    assert not _layout_problems(fig)


def test_notes_never_cover_markers_and_stay_out_of_the_header():
    """A 2nd email right under a group header, and long retention notes near the end."""
    h = History({"seed": 0, "scenario": "timeout-after-effect", "epoch": EPOCH, "table": TABLE})
    _start(h, 0.0, "inv-1", source="async", keys=["o-1", "o-2"])
    _claim(h, 0.0, "inv-1", "o-1", True, lock_s=3)
    _email(h, 2.9, "inv-1", "o-1")
    h.append("invoke_end", 3.0, inv="inv-1", outcome="timeout", error="Task timed out")
    _delivery(h, 3.0, "async", "retry scheduled", ["o-1", "o-2"], "inv-1")
    _start(h, 63.0, "inv-2", source="async", cause="retry 1", prev="inv-1", keys=["o-1", "o-2"])
    for i, k in enumerate(("o-1", "o-2")):
        _claim(h, 63.0 + 0.2 * i, "inv-2", k, True)
        _email(h, 63.1 + 0.2 * i, "inv-2", k)
        _complete(h, 63.2 + 0.2 * i, "inv-2", k)
    h.append("invoke_end", 63.44, inv="inv-2", outcome="ok", error=None)
    for gaps in ("auto", False):
        fig = plot_timeline(h, gaps=gaps)
        assert not _layout_problems(fig)
        assert any("kept 24 h" in t for t in _texts(fig))
        (note,) = _display_boxes(fig, ("duplicate-note",))
        ax = _ax(fig)
        separators = [ln for ln in ax.lines if ln.get_gid() == "separator"]
        for sep in separators:
            y = ax.transData.transform((0, sep.get_ydata()[0]))[1]
            assert not (note[1].y0 < y < note[1].y1), "the note crosses a group's header line"


def test_rich_history_is_byte_identical(tmp_path):
    h = sqs_dead_letter()
    for e in sync_caller(409):
        e = dict(e)
        e.pop("seq")
        t = e.pop("t") + 100
        typ = e.pop("type")
        if e.get("inv"):
            e["inv"] = "s" + e["inv"]
        if typ == "invoke_start" and e.get("prev"):
            e["prev"] = "s" + e["prev"]
        if typ == "aws" and e.get("service") == "lambda":
            e["detail"] = {**e["detail"], "invocation": "s" + e["detail"]["invocation"]}
        h.append(typ, t, **e)
    a = save_timeline(h, tmp_path / "a.png", dpi=80)
    b = save_timeline(History.from_json(h.to_json()), tmp_path / "b.png", dpi=80)
    assert a.read_bytes() == b.read_bytes()


@pytest.mark.parametrize("handler", ["naive_email", "idempotent"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_scenario_reads_cleanly(scenario, handler):
    result = run_scenario(scenario, f"examples/{handler}.py:handler", seed=0)
    fig = plot_timeline(result.history)
    assert not _layout_problems(fig)
    minor = [t.get_text() for t in _ax(fig).get_yticklabels(minor=True)]
    assert all("container" in m and "o-" in m for m in minor)  # every lane names its orders


# --------------------------------------------------------------------------- at notebook width (issue 11)
NOTEBOOK_PX = 900  # the width a notebook shows a timeline at


@functools.cache
def _scenario_history(scenario, handler):
    return run_scenario(scenario, f"examples/{handler}.py:handler", seed=0).history


def three_orders_one_lane() -> History:
    """One SQS batch of three orders in one invocation: o-1 and o-2 sent and kept, o-3's claim deleted on failure."""
    h = History({"seed": 0, "scenario": "sqs-batch-failure", "epoch": EPOCH, "table": TABLE})
    _start(h, 0.0, "inv-1", keys=KEYS3)
    for i, k in enumerate(KEYS3):
        _claim(h, 0.01 + 0.2 * i, "inv-1", k, True)
        if k != "o-3":
            _email(h, 0.1 + 0.2 * i, "inv-1", k)
            _complete(h, 0.15 + 0.2 * i, "inv-1", k)
    h.append("aws", 0.55, inv="inv-1", actor="handler", service="dynamodb", op="DeleteItem", target=TABLE, key="o-3",
             result="ok", detail={})
    h.append("invoke_end", 0.6, inv="inv-1", outcome="ok", error=None)
    return h


def test_each_order_on_a_lane_with_several_gets_its_own_labelled_band():
    fig = plot_timeline(three_orders_one_lane())
    ax, r = _ax(fig), fig.canvas.get_renderer()
    (bar,) = _patches(fig, "bar:inv-1:")
    labels = {t.get_text(): t for t in ax.texts if t.get_gid() == "strip-label"}
    assert set(labels) == set(KEYS3)
    spans = {}
    for key in KEYS3:
        bands = [p for p in ax.patches if (p.get_gid() or "").endswith(f":inv-1:{key}")]
        assert bands, key
        tops = {round(b.get_y(), 9) for b in bands}
        assert len(tops) == 1, f"{key}'s lock and kept record sit in one strip"
        top, h = bands[0].get_y(), bands[0].get_height()
        spans[key] = (top, top + h)
        assert top >= bar.get_y() + bar.get_height() - 1e-9  # under the bar, not behind it
        assert top < labels[key].get_position()[1] < top + h  # its label sits level with it
        lbl = labels[key].get_window_extent(r)
        band_px = [ax.transData.transform((0, y))[1] for y in (top, top + h)]
        assert min(band_px) - 2 <= (lbl.y0 + lbl.y1) / 2 <= max(band_px) + 2
    ordered = sorted(spans.values())
    assert all(a[1] <= b[0] + 1e-9 for a, b in zip(ordered, ordered[1:]))  # no strip covers another
    assert not _layout_problems(fig)


def _marker_boxes(fig):
    """(gid, display box) of every marker drawn, from the marker's own path, size and edge."""
    from matplotlib.markers import MarkerStyle
    from matplotlib.transforms import Bbox

    ax, px_per_pt = _ax(fig), fig.dpi / 72
    out = []
    for ln in _markers_by_gid(fig).values():
        m = MarkerStyle(ln.get_marker())
        ext = m.get_path().transformed(m.get_transform()).get_extents()
        w = (ext.width * ln.get_markersize() + ln.get_markeredgewidth()) * px_per_pt
        h = (ext.height * ln.get_markersize() + ln.get_markeredgewidth()) * px_per_pt
        for x, y in ax.transData.transform(ln.get_xydata()):
            out.append((ln.get_gid(), Bbox.from_bounds(x - w / 2, y - h / 2, w, h)))
    return out


def test_glyphs_of_a_short_invocation_do_not_pile_up():
    """A 12 ms invocation that reads, loses its claim and fails; another that claims twice in 2 ms."""
    h = History({"seed": 0, "scenario": "concurrent-claims", "epoch": EPOCH, "table": TABLE})
    _start(h, 0.0, "inv-1", source="async", keys=["o-1", "o-2"])
    _claim(h, 0.008, "inv-1", "o-1", True)
    _email(h, 0.2, "inv-1", "o-1")
    _complete(h, 0.21, "inv-1", "o-1")
    h.append("invoke_end", 0.21, inv="inv-1", outcome="ok", error=None)
    _start(h, 0.0, "inv-2", source="async", cause="concurrent duplicate", prev="inv-1", container="c-2",
           keys=["o-1", "o-2"])
    h.append("aws", 0.002, inv="inv-2", actor="handler", service="dynamodb", op="GetItem", target=TABLE, key="o-1",
             result="ok", detail={})
    _claim(h, 0.010, "inv-2", "o-1", False)
    _claim(h, 0.011, "inv-2", "o-2", True)
    h.append("invoke_end", 0.012, inv="inv-2", outcome="error",
             error="StillInProgressError: order-confirmation#o-1 is being processed by another invocation")
    for gaps in ("auto", False):
        fig = plot_timeline(h, gaps=gaps)
        boxes = _marker_boxes(fig)
        assert {"marker:read", "marker:claim_lost", "marker:claim_won", "marker:end_error"} <= {g for g, _ in boxes}
        for i, (g1, b1) in enumerate(boxes):
            for g2, b2 in boxes[i + 1:]:
                assert not b1.overlaps(b2), f"{g1} and {g2} overlap"


def test_error_text_is_shown_whole_and_inside_the_figure():
    h = History({"seed": 0, "scenario": "async", "epoch": EPOCH, "table": TABLE})
    _start(h, 0.0, "inv-1", source="async", keys=["order-c"])
    error = "StillInProgressError: order-confirmation#order-c is being processed by another invocation"
    h.append("invoke_end", 0.01, inv="inv-1", outcome="error", error=error)
    fig = plot_timeline(h)
    (text,) = [t for t in _ax(fig).texts if t.get_gid() == "error:inv-1"]
    lines = text.get_text().split("\n")
    assert lines[0] == "StillInProgressError:"  # the class on a line of its own ...
    assert " ".join(lines[1:]) == "order-c is being processed by another invocation"  # ... then all of the message
    box = text.get_window_extent(fig.canvas.get_renderer())
    assert 0 <= box.x0 and box.x1 <= fig.bbox.width  # nothing cut off at the figure's edge
    assert fig.bbox.width == pytest.approx(NOTEBOOK_PX)


def test_sqs_visibility_timeout_draws_the_visibility_timeout_and_the_batching_window():
    history = _scenario_history("sqs-visibility-timeout", "naive_email")
    settings_ = history.meta["settings"]
    timeout, window = settings_["visibility_timeout"], settings_["batching_window"]
    fig = plot_timeline(history, gaps=False)
    hidden = _patches(fig, "hidden:sqs")
    first = min(hidden, key=lambda p: p.get_x())
    assert first.get_width() == pytest.approx(timeout, abs=0.05)  # received, invisible until the timeout ran out
    (batching,) = _patches(fig, "batching:inv-1")
    assert batching.get_width() == pytest.approx(window, abs=0.05)
    (bar,) = _patches(fig, "bar:inv-1:")
    assert batching.get_x() + batching.get_width() == pytest.approx(bar.get_x(), abs=0.05)  # then it invoked
    labels = [t.get_text() for t in _ax(fig).texts if t.get_gid() == "queue-label"]
    assert f"invisible: {timeout} s visibility timeout" in labels
    assert f"batching window {window} s" in labels
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "invisible until its visibility timeout" in legend
    assert "poller waits out its batching window" in legend
    assert not _layout_problems(fig)


def test_legend_text_is_full_size_at_notebook_width():
    from sandbox.present.timeline.style import LEGEND_PT

    many = History({"seed": 0, "scenario": "many", "epoch": EPOCH, "table": TABLE})
    for i in range(40):  # so many lanes that lane text shrinks: the legend does not
        _start(many, i * 1.0, f"inv-{i}", cause="retry 1" if i else "first delivery",
               prev=f"inv-{i - 1}" if i else None)
        _claim(many, i * 1.0 + 0.1, f"inv-{i}", "o-1", i == 0)
        many.append("invoke_end", i * 1.0 + 0.5, inv=f"inv-{i}", outcome="ok", error=None)
    for h in (sqs_dead_letter(), many, _scenario_history("lock-shorter-than-work", "idempotent")):
        fig = plot_timeline(h)
        assert fig.bbox.width == pytest.approx(NOTEBOOK_PX)
        texts = fig.legends[0].get_texts()
        assert texts and all(t.get_fontsize() == LEGEND_PT for t in texts)
        assert LEGEND_PT * fig.dpi / 72 >= 13  # px: 10 pt, the least size on a projector, not 7 px
        box = fig.legends[0].get_window_extent(fig.canvas.get_renderer())
        assert 0 <= box.x0 and box.x1 <= fig.bbox.width and box.y0 >= 0  # and all of it on the figure


def _lane_pitch_and_header(fig):
    ax = _ax(fig)
    ys = ax.get_yticks()  # the rows' centres, top to bottom
    (sep,) = [ln.get_ydata()[0] for ln in ax.lines if ln.get_gid() == "separator"][:1]
    top = ax.get_ylim()[1]
    return ys[2] - ys[1], sep - top


def test_a_source_row_with_nothing_on_it_is_not_drawn_or_thin():
    """The only source's row with nothing on it is not drawn (its name stands over the lane names); where two
    sources each have lanes and nothing else, each keeps a thin row naming its group (one line of text)."""
    empty = History({"seed": 0, "scenario": "concurrent-claims", "epoch": EPOCH, "table": TABLE})
    for i, inv in enumerate(("inv-1", "inv-2")):
        _start(empty, 0.0, inv, source="async", container=f"c-{i}")
        _email(empty, 0.2, inv, "o-1")
        empty.append("invoke_end", 0.2, inv=inv, outcome="ok", error=None)
    ax = _ax(plot_timeline(empty))
    assert [lbl.get_text().split(" ")[0] for lbl in ax.get_yticklabels()] == ["inv-1", "inv-2"]
    assert [t.get_text() for t in ax.texts if t.get_gid() == "source-caption"] == ["Async event queue"]
    assert not [ln for ln in ax.lines if ln.get_gid() == "separator"]
    _start(empty, 0.3, "inv-3", source="direct", container="c-3")
    empty.append("invoke_end", 0.4, inv="inv-3", outcome="ok", error=None)
    pitch, header = _lane_pitch_and_header(plot_timeline(empty))
    assert header < 0.65 * pitch  # one line of text, not a lane's height
    busy_pitch, busy_header = _lane_pitch_and_header(plot_timeline(sqs_visibility(), gaps=False))
    assert busy_header > 1.5 * header  # a row with markers and labels on it keeps its room


def _seconds(label):
    """A tick label in seconds: "30.2", "3:00", "2:04:30"."""
    parts = [float(p) for p in label.replace("−", "-").split(":")]
    value = 0.0
    for p in parts:
        value = value * 60 + p
    return value


NICE = {k * 10 ** e for e in range(-3, 6) for k in (1, 2, 5)} | {15, 30, 60, 120, 300, 600, 900, 1800, 3600}


def _tick_runs(fig):
    """The tick labels of each stretch of the axis between squeezed gaps."""
    ax = _ax(fig)
    gaps = [(p.get_x(), p.get_x() + p.get_width()) for p in ax.patches if p.get_gid() == "gap"]
    runs, last = [], None
    for x, lbl in zip(ax.get_xticks(), ax.get_xticklabels()):
        if last is None or any(last < a and b < x for a, b in gaps):
            runs.append([])
        runs[-1].append(lbl.get_text())
        last = x
    return runs


def test_ticks_are_round_numbers_a_learner_reads_at_a_glance():
    odd = History({"seed": 0, "scenario": "async", "epoch": EPOCH, "table": TABLE})  # the 0:00.2 ... 1:00.4
    for i, t0 in enumerate((0.2, 60.4, 240.0)):
        _start(odd, t0, f"inv-{i}", source="async", cause="retry 1" if i else "first delivery",
               prev=f"inv-{i - 1}" if i else None)
        odd.append("invoke_end", t0 + 0.4, inv=f"inv-{i}", outcome="error" if i < 2 else "ok", error="boom")
    histories = [odd, sqs_batch_naive(), sqs_visibility(), _scenario_history("async-late-retry", "idempotent"),
                 _scenario_history("async-duplicate", "idempotent")]
    for h in histories:
        for gaps in ("auto", False):
            fig = plot_timeline(h, gaps=gaps)
            clock = ":" in _ax(fig).get_xlabel()
            runs = _tick_runs(fig)
            for run in runs:
                values = [_seconds(t) for t in run]
                steps = {round(b - a, 6) for a, b in zip(values, values[1:])}
                assert len(steps) <= 1, run  # evenly spaced ...
                for step in steps:
                    assert step in NICE, run  # ... by a round step ...
                    assert all(abs(v / step - round(v / step)) < 1e-6 for v in values), run  # ... on round values
                if clock and len(run) > 1:
                    assert not any("." in t for t in run), run  # min:s and h:mm:ss in whole seconds
                assert len(run) > 1 or len(runs) > 1, runs  # a lone tick only in a stretch between gaps
            # every label with the decimals of the others, and none that no tick needs: "2", not "2.00"
            decimals = [t.rpartition(".")[2] for run in runs for t in run if "." in t]
            assert not decimals or any(d.strip("0") for d in decimals), runs
    labels = [t.get_text() for t in _ax(plot_timeline(odd)).get_xticklabels()]
    assert not any(t.startswith("0:00.2") or t.startswith("1:00.4") for t in labels), labels


def test_a_stale_write_and_a_refused_write_are_named_on_the_figure():
    """lock-shorter-than-work: the article's handler deletes a record inv-2 took over (the checker's stale write);
    the improved handler's fenced delete is refused."""
    from sandbox.present.timeline.style import OI_BLUE

    stale = plot_timeline(_scenario_history("lock-shorter-than-work", "article"))
    (note,) = [t for t in _ax(stale).texts if t.get_gid() == "warning-note"]
    assert note.get_text() == "stale write:\ndeleted inv-2's o-1 record"
    assert to_hex(note.get_color()) == to_hex(DUPLICATE_COLOR)
    (mark,) = _markers_by_gid(stale)["marker:stale_write"].get_xydata()
    assert abs(mark[1] - _ax(stale).get_yticks()[1]) < 0.3  # on inv-1's lane (row 0 is the source)
    assert "STALE write (another invocation's record)" in [
        t.get_text().replace("\n", " ") for t in stale.legends[0].get_texts()]
    fenced = plot_timeline(_scenario_history("lock-shorter-than-work", "idempotent"))
    (note,) = [t for t in _ax(fenced).texts if t.get_gid() == "refused-note"]
    assert note.get_text() == "delete refused:\ninv-2 holds o-1"
    assert to_hex(note.get_color()) == to_hex(OI_BLUE)
    assert "marker:stale_write" not in _markers_by_gid(fenced)
    assert MARKERS["write_refused"][1] in [t.get_text() for t in fenced.legends[0].get_texts()]
    for fig in (stale, fenced):
        assert not _layout_problems(fig)
        box = [t for t in _ax(fig).texts if t.get_gid() in ("warning-note", "refused-note")][0]
        b = box.get_window_extent(fig.canvas.get_renderer())
        assert 0 <= b.x0 and b.x1 <= fig.bbox.width


# --------------------------------------------------------------------------- property test
SOURCES = ["sqs", "async", "sync", "stream", "direct", "weird"]
CAUSES = ["first delivery", "retry 1", "redelivery", "SDK retry", "concurrent duplicate", None]
DELIVERIES = ["retry scheduled", "redelivery", "deleted", "dead-lettered", "discarded", "batch failed",
              "producer re-send", "spontaneous duplicate", "pending", "something new"]


@st.composite
def histories(draw):
    n_inv = draw(st.integers(0, 6))
    meta = draw(st.fixed_dictionaries({}, optional={
        "seed": st.integers(0, 9), "scenario": st.sampled_from(["s", "demo"]),
        "epoch": st.just(EPOCH), "table": st.just(TABLE)}))
    times = st.floats(0, 400, allow_nan=False, allow_infinity=False)
    recs = []  # (t, order, type, fields)
    keys = st.sampled_from(["o-1", "o-2", "o-3"])
    for i in range(n_inv):
        inv = f"inv-{i + 1}"
        start = draw(times)
        prev = draw(st.sampled_from([None] + [f"inv-{j + 1}" for j in range(i)] + ["inv-404"]))
        recs.append((start, len(recs), "invoke_start", {
            "inv": inv, "source": draw(st.sampled_from(SOURCES)), "cause": draw(st.sampled_from(CAUSES)),
            "container": draw(st.sampled_from([None, "c-1", "c-2"])), "request_id": "r", "keys": [], "prev": prev}))
        dur = draw(st.one_of(st.none(), st.floats(0, 40, allow_nan=False)))
        end = start + (dur if dur is not None else 40)
        for _ in range(draw(st.integers(0, 4))):
            t = draw(st.floats(start, end, allow_nan=False))
            kind = draw(st.sampled_from(["claim", "lost", "read", "complete", "delete", "effect", "throttle"]))
            key = draw(keys)
            exp = draw(st.one_of(st.none(), st.integers(-10, 90000)))
            detail = {} if exp is None else {"expiresAt": EPOCH + int(t) + exp}
            if kind in ("claim", "lost", "throttle"):
                detail["status"] = "IN_PROGRESS"
                result = {"claim": "ok", "lost": "ConditionalCheckFailed", "throttle": "ThrottlingException"}[kind]
                recs.append((t, len(recs), "aws", {"inv": inv, "actor": "h", "service": "dynamodb", "op": "PutItem",
                                                   "target": TABLE, "key": key, "result": result, "detail": detail}))
            elif kind == "complete":
                detail["status"] = "COMPLETED"
                recs.append((t, len(recs), "aws", {"inv": inv, "actor": "h", "service": "dynamodb", "op": "UpdateItem",
                                                       "target": TABLE, "key": key, "result": "ok", "detail": detail}))
            elif kind in ("read", "delete"):
                recs.append((t, len(recs), "aws", {"inv": inv, "actor": "h", "service": "dynamodb",
                                                       "op": "GetItem" if kind == "read" else "DeleteItem",
                                                       "target": TABLE, "key": key, "result": "ok", "detail": {}}))
            else:
                recs.append((t, len(recs), "effect", {
                    "inv": inv, "kind": draw(st.sampled_from(["email", "charge", "sms"])), "key": key,
                    "status": draw(st.sampled_from(["done", "done", "deduplicated", "failed", "indefinite"])),
                    "detail": {}}))
        if dur is not None:
            recs.append((end, len(recs), "invoke_end", {
                "inv": inv, "outcome": draw(st.sampled_from(["ok", "error", "timeout", "crashed"])),
                "error": draw(st.sampled_from([None, "boom", "a very long error message " * 4]))}))
        for _ in range(draw(st.integers(0, 2))):  # what the delivery source did around it
            detail = draw(st.sampled_from([{}, {"partial": True}, {"partial": False}, {"bisect": "half 1"},
                                           {"shard": "shardId-000000000001"}, {"destination": "dlq"},
                                           {"messageIds": ["m-1"]}, {"at": 1.0}]))
            recs.append((draw(st.floats(start, end + 5, allow_nan=False)), len(recs), "delivery", {
                "source": draw(st.sampled_from(SOURCES)), "what": draw(st.sampled_from(DELIVERIES)),
                "keys": draw(st.lists(keys, max_size=3)), "inv": draw(st.sampled_from([inv, None, "inv-404"])),
                "detail": detail}))
        if draw(st.booleans()):  # a synchronous caller's attempt, or a poller's receive
            result = draw(st.sampled_from(["ok", "ReadTimeout", "FunctionError"]))
            recs.append((end, len(recs), "aws", {
                "inv": None, "actor": draw(st.sampled_from(["caller-o-1", "caller-o-2"])), "service": "lambda",
                "op": "Invoke",
                "target": "fn", "key": "o-1", "result": result,
                "detail": {"attempt": 1, "invocation": inv, "sent": draw(st.sampled_from([start, None, end + 1])),
                        **({"statusCode": 409} if result == "ok" else {})}}))
        if draw(st.booleans()):
            recs.append((start, len(recs), "aws", {
                "inv": None, "actor": "sqs-poller-1", "service": "sqs", "op": "ReceiveMessage", "target": "orders",
                "key": None,
                "result": "ok", "detail": {"received": draw(st.sampled_from([[], ["m-1"], ["m-1", "m-2"]]))}}))
    for _ in range(draw(st.integers(0, 2))):
        recs.append((draw(times), len(recs), "sweep", {"target": TABLE, "key": draw(keys), "detail": {}}))
    if draw(st.booleans()):
        recs.append((draw(times), len(recs), "note", {"text": "hello"}))
    recs.sort(key=lambda r: (r[0], r[1]))
    # Loaded, not appended: a saved history may hold words the vocabulary does not know,
    # and the timeline must draw it all the same.
    return History(meta, [{"seq": i, "t": round(t, 6), "type": typ, **fields}
                          for i, (t, _, typ, fields) in enumerate(recs)])


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.sampled_from(["auto", "s", "min", "h"]), st.sampled_from(["auto", False]))
def test_random_histories_render_deterministically(tmp_path_factory, h, unit, gaps):
    d = tmp_path_factory.mktemp("prop")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # e.g. "constrained_layout not applied"
        a = save_timeline(h, d / "a.png", dpi=40, unit=unit, gaps=gaps)
    b = save_timeline(History.from_json(h.to_json()), d / "b.png", dpi=40, unit=unit, gaps=gaps)
    assert a.read_bytes() == b.read_bytes()


# --------------------------------------------------------------------------- package structure
PACKAGE = Path(__file__).resolve().parent.parent / "sandbox" / "present" / "timeline"
MAX_FUNCTION_LINES = 50


def _package_trees():
    return {p.stem: ast.parse(p.read_text(encoding="utf-8"), filename=str(p)) for p in sorted(PACKAGE.glob("*.py"))}


def test_no_function_in_the_timeline_is_over_50_lines():
    trees = _package_trees()
    assert len(trees) > 10  # the walk found the package
    long = [f"{module}.py:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for module, tree in trees.items() for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long


def _imports(tree, modules):
    """(modules of this package, modules of the rest of ``sandbox``) a module imports, TYPE_CHECKING ones too."""
    inside, outside = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                inside.add(node.module.split(".")[0])
            else:  # from . import fields
                inside.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom) and node.level >= 2:
            outside.add(node.module or ", ".join(a.name for a in node.names))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sandbox"):
            outside.add(node.module.split(".", 2)[1] if "." in node.module else node.module)
        elif isinstance(node, ast.Import):
            outside.update(a.name.split(".")[1] for a in node.names if a.name.startswith("sandbox."))
    return inside, outside


def test_no_import_cycle_in_the_timeline_and_only_vocab_from_the_sandbox():
    """The timeline draws any history, saved or hand-built: from the sandbox it reads only the record schema
    (vocab, and core/records, the typed records, which itself reads only vocab) and the ownership rule it shares
    with the checker, which itself reads only vocab, and it registers itself with the views registry (core/views),
    which reads nothing of the sandbox."""
    allowed = {"vocab", "verdict.ownership", "core.views", "core.records"}
    ownership = ast.parse((PACKAGE.parent.parent / "verdict" / "ownership.py").read_text(encoding="utf-8"))
    assert {n.module for n in ast.walk(ownership) if isinstance(n, ast.ImportFrom) and n.level} == {"vocab"}
    records = ast.parse((PACKAGE.parent.parent / "core" / "records.py").read_text(encoding="utf-8"))
    assert {n.module for n in ast.walk(records) if isinstance(n, ast.ImportFrom) and n.level} == {"vocab"}
    views = ast.parse((PACKAGE.parent.parent / "core" / "views.py").read_text(encoding="utf-8"))
    assert not [n for n in ast.walk(views) if isinstance(n, ast.ImportFrom) and n.level]
    trees = _package_trees()
    graph = {}
    for module, tree in trees.items():
        inside, outside = _imports(tree, set(trees))
        assert outside <= allowed, f"{module}.py imports {outside - allowed} from the sandbox"
        assert inside <= set(trees), f"{module}.py imports unknown modules {inside - set(trees)}"
        graph[module] = inside
    assert graph["text"] and graph["reading"]  # the walk sees imports

    def cycle_from(module, path):
        if module in path:
            return path[path.index(module):] + [module]
        for nxt in sorted(graph[module]):
            found = cycle_from(nxt, path + [module])
            if found:
                return found
        return None

    for module in graph:
        cycle = cycle_from(module, [])
        assert cycle is None, " -> ".join(cycle)


def test_every_drawing_stage_reads_only_what_an_earlier_stage_adds():
    from sandbox.present.timeline.drawing import PIPELINE

    available = {"legend", "details"}  # what open_canvas provides
    for stage in PIPELINE:
        assert set(stage.reads) <= available, f"{stage.name} reads {set(stage.reads) - available}"
        assert stage.adds is None or stage.adds not in available, f"{stage.name} adds {stage.adds} again"
        available.add(stage.adds)
    names = [stage.name for stage in PIPELINE]
    assert len(names) == len(set(names))
    # labels, most important first: required ones before the optional ones
    assert names.index("label_required_events") < names.index("label_redeliveries") < names.index("label_arrows")
    assert names.index("freeze") < names.index("place_markers")


def test_the_visibility_timeout_is_read_from_its_field_never_from_words():
    """A FIFO send deduplicated "within the 300 s deduplication interval" says nothing of the visibility timeout."""
    from sandbox.present.timeline.queues import QueueReader
    from sandbox.vocab import Delivery, SourceKind

    reader = QueueReader()
    reader.delivery(1.0, {"source": SourceKind.SQS, "what": Delivery.SEND_DEDUPLICATED,
                          "detail": {"why": "re-sent within the 300 s deduplication interval: SQS accepted it"}})
    assert reader.timeout is None
    reader.delivery(2.0, {"source": SourceKind.SQS, "what": Delivery.REDELIVERY,
                          "detail": {"messageIds": ["m-1"], "visibilityTimeout": 30,
                                     "why": "not deleted within the 30 s visibility timeout"}})
    assert reader.timeout == 30


def test_the_lock_legend_says_the_status_the_claims_wrote():
    """claim_only.py writes CLAIMED, the article's run_once IN_PROGRESS: the legend names the record the plot shows."""
    from conftest import example

    def lock_entry(handler):
        fig = run_scenario("concurrent-claims", handler, settings={"copies": 2}).plot()
        return [t.get_text() for t in fig.legends[0].get_texts() if t.get_text().startswith("lock held")]

    assert lock_entry(example("claim_only.py")) == ["lock held (CLAIMED record)"]
    assert lock_entry(example("article.py")) == ["lock held (IN_PROGRESS record)"]


_WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-:,0123456789", min_size=1, max_size=14)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(_WORDS, min_size=1, max_size=6).map(" ".join), min_size=1, max_size=5).map(" · ".join),
       st.floats(2.0, 9.0))
def test_a_title_never_starts_or_ends_a_line_with_a_separator(title, width):
    """However a long title is broken (at a " · ", at another break, or word by word), no line starts or ends with
    the "·" that joined its parts, and nothing else is lost."""
    from sandbox.present.timeline.sizing import fit_title

    lines = fit_title(title, width, 15).split("\n")
    assert all(line == line.strip() and line for line in lines)
    assert not [line for line in lines if line.startswith("·") or line.endswith("·")]
    assert " ".join(lines).replace(" · ", " ").split() == title.replace(" · ", " ").split()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(_WORDS, min_size=1, max_size=6).map(" ".join), min_size=2, max_size=3), st.floats(2.0, 9.0))
def test_a_title_in_the_callers_own_lines_keeps_them(lines, width):
    """A title given in lines of its own (lesson 10's "scenario · handler" over "lock 10 s · ...") keeps each break,
    each line fitted alone; measured whole, its line break was a glyph the font lacks, and matplotlib warned."""
    from sandbox.present.timeline.sizing import fit_title

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fitted = fit_title("\n".join(lines), width, 15)
    assert fitted.split("\n")[0] == fit_title(lines[0], width, 15).split("\n")[0]
    assert fitted.count("\n") >= len(lines) - 1
    assert fitted.replace("\n", " ").split() == " ".join(lines).split()


_SPAN = st.tuples(st.floats(0, 3000, allow_nan=False), st.floats(0, 40, allow_nan=False)).map(lambda p: (p[0],
                                                                                                         sum(p)))


@settings(max_examples=200, deadline=None)
@given(st.lists(_SPAN, min_size=1, max_size=12), st.booleans())
def test_only_a_long_quiet_gap_that_is_much_of_the_run_becomes_a_break(spans, from_zero):
    """Whatever is drawn when: each break lies in an idle gap that is at least BREAK_MIN_S long and at least
    BREAK_MIN_SHARE of the run, and leaves out about half of that gap or more; a gap of a few seconds, or a small
    share of the run, is kept at the axis' scale."""
    from sandbox.present.timeline import axis

    if from_zero:
        spans = [(0.0, 0.0), *spans]
    lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
    run = max(hi - min(lo, 0.0), axis.MIN_SPAN)
    segs = axis._busy(spans, lo, hi, run)
    if segs is None:
        return
    segments = axis._widened(segs)
    for (_, ta), (tb, _) in zip(segments, segments[1:]):
        assert ta < tb
        before = max(b for a, b in spans if a <= ta)  # the idle gap the break lies in
        after = min(a for a, b in spans if a >= tb)
        assert not [s for s in spans if s[0] < tb and s[1] > ta], "a break hides activity"
        assert after - before >= axis.BREAK_MIN_S and after - before >= axis.BREAK_MIN_SHARE * run
        assert tb - ta >= 0.45 * (after - before)


def test_a_run_too_short_to_see_keeps_its_length_and_gets_a_cap_centred_on_it():
    """Exercise 07 (and lesson 08): a run that errors in 14 ms, on an axis of 150 s, was a 3 px sliver drawn from its
    start (its end 3 px late), under its ✖: hard to find on a projector. It is drawn at its true length now, with a
    wider cap in its colour centred on it, so both its ends stay at their times."""
    from sandbox.present.timeline.lanes import MIN_BAR_PX

    h = History({"seed": 1, "scenario": "short", "epoch": EPOCH, "table": TABLE})
    for i, t in enumerate((0.0, 30.0, 60.0, 90.0, 120.0)):
        _start(h, t, f"inv-{i + 1}", cause="redelivery" if i else "first delivery", prev=f"inv-{i}" if i else None)
        h.append("invoke_end", t + 0.014, inv=f"inv-{i + 1}", outcome="error", error="ValueError: no")
    fig = plot_timeline(h, width=9.0, gaps=False)  # as exercise 07's axis: 150 s at one scale
    with matplotlib_style():
        fig.draw_without_rendering()
        d = audit.Drawn(fig)
        assert audit.bars_unseen(d) == [] and audit.bands_off_time(d) == []
    r = fig.canvas.get_renderer()
    patches = {p.get_gid(): p.get_window_extent(r) for p in fig.axes[0].patches}
    bar, cap = patches["bar:inv-3:error"], patches["cap:inv-3"]
    assert bar.width < 1.0  # 14 ms of a 150 s axis
    assert cap.width >= MIN_BAR_PX - 1 and abs((cap.x0 + cap.x1) / 2 - (bar.x0 + bar.x1) / 2) <= 1.0
    assert audit.SEEN_PX == MIN_BAR_PX


def test_the_audit_finds_a_bar_too_short_to_see():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    fig = Figure(figsize=(4, 2), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0.1, 0.1, 0.8, 0.8))
    ax.set(xlim=(0, 100), ylim=(0, 10))
    ax.add_patch(Rectangle((10, 4), 0.1, 2, gid="bar:inv-1:error"))
    fig.draw_without_rendering()
    assert audit.bars_unseen(audit.Drawn(fig)) == [
        "bar:inv-1:error is 0.3 px wide, with nothing that shows where it is"]
    ax.add_patch(Rectangle((8.8, 3.8), 2.5, 2.4, gid="cap:inv-1"))
    assert audit.bars_unseen(audit.Drawn(fig)) == []


@given(st.floats(min_value=0.0, max_value=10_000.0, allow_nan=False))
def test_a_labels_time_rounds_honestly(t):
    """A learner read "duplicate at 0.03 s" for a duplicate at 25 ms: a label's time, read back, is within 50 ms and
    within 5% of the true time (under a second it says milliseconds: "25 ms")."""
    from sandbox.present.timeline.timefmt import clock
    said = clock(t, "s")
    number, unit = said.split(" ")
    back = float(number) / (1000 if unit == "ms" else 1)
    assert abs(back - t) <= 0.05 + 1e-9 and abs(back - t) <= 0.05 * t + 1e-9, said  # half the last digit, at most
    assert clock(0.025, "s") == "25 ms"


@given(st.floats(min_value=0.0, max_value=100_000.0, allow_nan=False))
def test_a_labels_time_on_an_hours_axis_keeps_its_tenths(t):
    """Lesson 02 cell 20 (a new learner): "retry 1 at 0:01:00" rounded away the 60.4 s the lesson prints. On an
    axis in h:mm:ss a label's time, read back, is within 0.05 s of the true time."""
    from sandbox.present.timeline.timefmt import clock
    h, m, s = clock(t, "h").split(":")
    assert abs(int(h) * 3600 + int(m) * 60 + float(s) - t) <= 0.05 + 1e-6
    assert clock(60.4, "h") == "0:01:00.4" and clock(7474.0, "h") == "2:04:34"


@given(st.floats(min_value=1.0, max_value=119.94, allow_nan=False))
def test_a_duration_under_two_minutes_keeps_its_tenths(sec):
    """Lesson 10 (a new learner): inv-1 read "✗ error after 31 s" (30 s on the dashboard's picture) where the lesson
    and the checker say it ended at 30.5 s, the half second its valid and invalid locks turn on. Under two minutes a
    duration, read back, is within 0.05 s of the true one."""
    from sandbox.present.timeline.timefmt import duration
    number, unit = duration(sec).split(" ")
    assert unit == "s" and abs(float(number) - sec) <= 0.05 + 1e-9, duration(sec)
    assert (duration(30.522), duration(30.0), duration(120.0)) == ("30.5 s", "30 s", "2 min")


@pytest.mark.parametrize("scenario", ["ttl-lag", "timeout-after-effect", "alb-client-retry"])
def test_an_email_cut_off_unanswered_by_the_deadline_is_marked_at_the_deadline(scenario):
    """A provider that hangs keeps the call out until Lambda stops the function: nothing was sent, yet the handler
    made the call (a learner saw inv-1 of ttl-lag time out with no mark on its bar, and could not tell why)."""
    result = run_scenario(scenario, "examples/naive_email.py:handler")
    [cut] = [e for e in result.history.of_type("effect") if e["status"] == EffectStatus.UNANSWERED]
    end = result.history.invocations()[cut["inv"]]
    assert cut["t"] == pytest.approx(end["end"]) and end["outcome"] == "timeout"
    assert not EffectStatus(cut["status"]).counted  # no email went out: the verdict counts none
    fig = plot_timeline(result.history, gaps=False)
    xs = [x for x, _ in _markers_by_gid(fig)["marker:email_failed"].get_xydata()]
    assert any(x == pytest.approx(cut["t"]) for x in xs)


def test_a_callouts_caret_is_hollow_and_reads_as_no_mark_of_its_own():
    """A filled ▼ under "o-1 delivered again" read as a TTL deletion (the sweep's mark is a filled grey ▼): the
    caret that ties a callout to its mark is hollow, as the box it hangs from."""
    from sandbox.present.timeline.audit import CALLOUT_CARET

    result = run_scenario("ttl-lag", "examples/article.py:handler", seed=0,
                          settings={"duplicate_probability": 1.0, "duplicate_delay": 1.0})
    fig = plot_timeline(result.history)
    with matplotlib_style():
        fig.draw_without_rendering()
    carets = [ln for ax in fig.axes for ln in ax.lines if (ln.get_gid() or "").startswith(CALLOUT_CARET)]
    assert carets and all(to_hex(ln.get_markerfacecolor()) == "#ffffff" for ln in carets)
    sweep_face = MARKERS["sweep"][0]["mfc"]
    assert all(to_hex(ln.get_markerfacecolor()) != to_hex(sweep_face) for ln in carets)


def test_a_ttl_lag_band_that_ends_at_the_sweep_says_no_arrow():
    """Lesson 10's TTL slider at 600 s: the band ends at the sweeper's ▼ inside the plot, and its label's "→" read
    as a record still in the table past the picture."""
    result = run_scenario("ttl-lag", "examples/run_once_ttl_only.py:handler", settings={"ttl_lag": 600})
    assert any(e["type"] == "sweep" for e in result.history)
    fig = result.plot()
    with matplotlib_style():
        fig.draw_without_rendering()
    [label] = [t.get_text() for ax in fig.axes for t in ax.texts if t.get_gid() == "expired-label"]
    assert label == "o-1 expired, still in the table (TTL lag)"


def test_the_guide_from_a_redelivery_down_through_the_busy_run_is_in_the_legend():
    """Lesson 10's visibility widget: a dotted line drops from ↻ into inv-1's bar, and the legend did not say what it
    was (the messages were received again while inv-1 still worked on them)."""
    fig = run_scenario("sqs-visibility-timeout", "examples/article.py:handler").plot()
    with matplotlib_style():
        fig.draw_without_rendering()
    assert any((ln.get_gid() or "").startswith("guide:") for ax in fig.axes for ln in ax.lines)
    texts = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert "received again while a run works on them" in texts


def _text_pixels(x: float, y: float, angle: float = 0.0, quick: bool = False):
    """The pixels of one label drawn at display (x, y) on a timeline's canvas (``render.SharedRenderer``)."""
    import contextlib

    import numpy as np

    from sandbox.present.quicktext import quick_text
    from sandbox.present.timeline.figure import drop_layout_engine, new_figure

    with quick_text() if quick else contextlib.nullcontext(), matplotlib_style():
        fig = new_figure(2.0, 1.0, 100)
        drop_layout_engine(fig)
        fig.text(x / 200, y / 100, "2nd email o-1", fontsize=10, rotation=angle, parse_math=False)
        fig.canvas.draw()
        return np.asarray(fig.canvas.buffer_rgba()).copy()


def _shifted(a, b) -> tuple[int, int] | None:
    """The whole-pixel shift (rows, columns) that makes picture ``b`` of ``a`` (None: none of at most one does)."""
    import numpy as np

    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            if (np.roll(a, (dy, dx), axis=(0, 1))[2:-2, 2:-2] == b[2:-2, 2:-2]).all():
                return dy, dx
    return None


@settings(max_examples=25, deadline=None)
@given(fx=st.floats(-0.49, 0.49), fy=st.floats(-0.49, 0.49), angle=st.sampled_from([0.0, 90.0]),
       quick=st.booleans())
def test_a_label_starts_at_a_whole_pixel_wherever_it_was_placed(fx, fy, angle, quick):
    """A string placed a fraction of a pixel away draws the same pixels, moved by whole pixels: its glyphs fall on
    the same fractions wherever it stands, so a widget's redraw renders each once (``render.SharedRenderer``). The
    widget's fast drawing and matplotlib's own draw it alike."""
    at = _text_pixels(60.0, 40.0, angle, quick)
    assert (at[..., :3] < 128).any()  # something was drawn
    moved = _text_pixels(60.0 + fx, 40.0 + fy, angle, quick)
    assert _shifted(at, moved) is not None
    assert (_text_pixels(60.0 + fx, 40.0 + fy, angle, not quick) == moved).all()


def test_a_moved_label_renders_no_glyph_again():
    """The glyphs of a label drawn at a fraction of a pixel elsewhere are found, not rendered again (a slider move
    moved every label by fractions, and 70% of its glyphs were rendered anew)."""
    from sandbox.present import quicktext

    _text_pixels(60.0, 40.0, quick=True)
    known = len(quicktext._glyphs)
    for k in range(1, 8):
        _text_pixels(60.0 + k / 8, 40.0 - k / 9, quick=True)
    assert len(quicktext._glyphs) == known


def test_a_band_ending_after_the_history_can_be_read_off_the_axis():
    """Lesson 02: o-1's record, kept an hour, ends at 3:04:34, in the room after the history; the axis ticked only up
    to 2:00:00, and a learner could not read the band's end. Ticks now reach the latest band end there, and no
    further (the room holds notes, not events)."""
    late = run_scenario("async-late-retry", "examples/idempotent.py:handler", seed=0, settings={"keep_for": 3600})
    fig = late.plot()
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels == ["0:00:00", "1:00:00", "2:00:00", "3:00:00"], labels
