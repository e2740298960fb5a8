"""Tests for sandbox.timeline: the swim-lane plot of a History."""
from __future__ import annotations

import warnings

import matplotlib
import pytest
from hypothesis import given, settings, HealthCheck
from hypothesis import strategies as st
from matplotlib.colors import to_hex

from sandbox.history import History
from sandbox.timeline import OUTCOME_COLORS, DUPLICATE_COLOR, plot_timeline, save_timeline

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


def _start(h, t, inv, source="sqs", cause="first delivery", prev=None, container="c-1"):
    h.append("invoke_start", t, inv=inv, source=source, cause=cause, container=container,
             request_id=f"r-{inv}", keys=["o-1"], prev=prev)


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
        "Synchronous caller (SDK retries)", "inv-4 · SDK retry",
    ]
    minor = [t.get_text() for t in _ax(fig).get_yticklabels(minor=True)]
    assert "container c-9" in minor
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
        _, inv, outcome = p.get_gid().split(":")
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
    fig = plot_timeline(sqs_batch_naive())
    arrows = _patches(fig, "arrow:")
    assert [a.get_gid() for a in arrows] == ["arrow:inv-1->inv-2"]
    assert "redelivery after 30 s" in _texts(fig)


def test_long_gap_is_squeezed_but_ticks_show_true_time():
    fig = plot_timeline(sqs_batch_naive())
    assert any(t.startswith("30 s") and "skipped" in t for t in _texts(fig))
    ticks = [t.get_text() for t in _ax(fig).get_xticklabels()]
    assert "0.00" in ticks or "0.0" in ticks
    assert any(t.startswith("30.1") for t in ticks)
    linear = plot_timeline(sqs_batch_naive(), gaps=False)
    assert not [t for t in _texts(linear) if "skipped" in t]


def test_sweeps_get_their_own_lane():
    h = idempotent()
    h.append("sweep", 20.0, target=TABLE, key="o-1", detail={})
    fig = plot_timeline(h)
    assert [t.get_text() for t in _ax(fig).get_yticklabels()][0] == "TTL sweeper"
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
    w, ht = fig.get_size_inches()
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
    h = History({"seed": 1, "scenario": "price $5 $x^2$", "epoch": EPOCH})
    _start(h, 0.0, "inv-$1$", cause="first $delivery")
    h.append("invoke_end", 0.1, inv="inv-$1$", outcome="error", error="cost $ is $\\frac{a$")
    save_timeline(h, tmp_path / "math.png", dpi=50)


def test_end_of_history_after_last_activity_with_lock_that_never_expires():
    # regression: the "history ends" line used to land far outside the axes
    h = History()
    _start(h, 0.0, "inv-1")
    h.append("invoke_end", 0.0, inv="inv-1", outcome="ok", error=None)
    _start(h, 1.0, "inv-2")
    h.append("aws", 1.0, inv="inv-2", actor="h", service="dynamodb", op="PutItem", target=TABLE, key="o-1",
             result="ok", detail={"status": "IN_PROGRESS"})
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


# --------------------------------------------------------------------------- property test
SOURCES = ["sqs", "async", "sync", "stream", "direct", "weird"]
CAUSES = ["first delivery", "retry 1", "redelivery", "SDK retry", "concurrent duplicate", None]


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
        recs.append((start, len(recs), "invoke_start", dict(
            inv=inv, source=draw(st.sampled_from(SOURCES)), cause=draw(st.sampled_from(CAUSES)),
            container=draw(st.sampled_from([None, "c-1", "c-2"])), request_id="r", keys=[], prev=prev)))
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
                recs.append((t, len(recs), "aws", dict(inv=inv, actor="h", service="dynamodb", op="PutItem",
                                                       target=TABLE, key=key, result=result, detail=detail)))
            elif kind == "complete":
                detail["status"] = "COMPLETED"
                recs.append((t, len(recs), "aws", dict(inv=inv, actor="h", service="dynamodb", op="UpdateItem",
                                                       target=TABLE, key=key, result="ok", detail=detail)))
            elif kind in ("read", "delete"):
                recs.append((t, len(recs), "aws", dict(inv=inv, actor="h", service="dynamodb",
                                                       op="GetItem" if kind == "read" else "DeleteItem",
                                                       target=TABLE, key=key, result="ok", detail={})))
            else:
                recs.append((t, len(recs), "effect", dict(
                    inv=inv, kind=draw(st.sampled_from(["email", "charge", "sms"])), key=key,
                    status=draw(st.sampled_from(["done", "done", "deduplicated", "failed", "indefinite"])),
                    detail={})))
        if dur is not None:
            recs.append((end, len(recs), "invoke_end", dict(
                inv=inv, outcome=draw(st.sampled_from(["ok", "error", "timeout", "crashed"])),
                error=draw(st.sampled_from([None, "boom", "a very long error message " * 4])))))
    for _ in range(draw(st.integers(0, 2))):
        recs.append((draw(times), len(recs), "sweep", dict(target=TABLE, key=draw(keys), detail={})))
    if draw(st.booleans()):
        recs.append((draw(times), len(recs), "note", dict(text="hello")))
    recs.sort(key=lambda r: (r[0], r[1]))
    h = History(meta)
    for t, _, typ, fields in recs:
        h.append(typ, t, **fields)
    return h


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.sampled_from(["auto", "s", "min"]), st.sampled_from(["auto", False]))
def test_random_histories_render_deterministically(tmp_path_factory, h, unit, gaps):
    d = tmp_path_factory.mktemp("prop")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # e.g. "constrained_layout not applied"
        a = save_timeline(h, d / "a.png", dpi=40, unit=unit, gaps=gaps)
    b = save_timeline(History.from_json(h.to_json()), d / "b.png", dpi=40, unit=unit, gaps=gaps)
    assert a.read_bytes() == b.read_bytes()
