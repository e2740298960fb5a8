"""History round-trips, and the checker judges hand-built histories."""
import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox import History, check

KINDS = ("email", "charge")


def _run(history, inv, t, cause="first delivery", source="sqs", prev=None, keys=(), outcome="ok"):
    history.append("invoke_start", t, inv=inv, source=source, cause=cause, container="c1", request_id=inv,
                   keys=list(keys), prev=prev)
    return lambda t_end, outcome=outcome, error=None: history.append("invoke_end", t_end, inv=inv, outcome=outcome,
                                                                     error=error)


def clean_history():
    h = History({"seed": 1, "scenario": "hand-built", "table": "idempotency", "epoch": 0})
    for k in ("o-1", "o-2"):
        h.append("accept", 0, key=k, expects=["email"], source="sqs")
    end = _run(h, "inv-1", 0.0, keys=["o-1", "o-2"])
    h.append("effect", 0.2, inv="inv-1", kind="email", key="o-1", status="done", detail={})
    h.append("effect", 0.4, inv="inv-1", kind="email", key="o-2", status="done", detail={})
    end(0.5)
    return h


def test_clean_run_is_valid():
    v = check(clean_history())
    assert v.status == "valid" and v.findings == []
    assert v.effects_per_key == {"o-1": {"email": 1}, "o-2": {"email": 1}}
    assert "each exactly once" in v.explain()


def test_duplicate_is_invalid_and_explained_with_causes_and_window():
    h = clean_history()
    end = _run(h, "inv-2", 30.0, cause="redelivery", prev="inv-1", keys=["o-1", "o-2"])
    h.append("effect", 30.2, inv="inv-2", kind="email", key="o-1", status="done", detail={})
    end(30.3)
    v = check(h)
    assert v.status == "invalid"
    (dup,) = v.duplicates
    assert dup.key == "o-1" and dup.invocations == ["inv-1", "inv-2"] and dup.window == (0.2, 30.2)
    assert "inv-1 (sqs, first delivery) at 0.2 s" in dup.text and "inv-2 (sqs, redelivery) at 30.2 s" in dup.text
    assert not dup.remaining_window


def test_lost_order_is_invalid_and_names_its_invocations():
    h = History({"table": "idempotency"})
    h.append("accept", 0, key="o-7", expects=["email"], source="async")
    end = _run(h, "inv-1", 0, source="async", keys=["o-7"])
    end(3.0, "timeout", "Task timed out after 3.00 seconds")
    h.append("delivery", 3.0, source="async", what="discarded", keys=["o-7"], inv="inv-1",
             detail={"reason": "retries exhausted"})
    v = check(h)
    assert v.status == "invalid"
    (lost,) = v.lost
    assert "o-7: accepted but no email was ever sent" in lost.text
    assert "discarded" in lost.text and "retries exhausted" in lost.text
    assert "inv-1 (async, first delivery) -> timeout" in lost.text


def test_pending_order_is_unknown_not_lost():
    h = History()
    h.append("accept", 0, key="o-1", expects=["email"], source="sqs")
    h.append("delivery", 10, source="sqs", what="pending", keys=["o-1"], inv=None, detail={})
    v = check(h)
    assert v.status == "unknown" and v.lost == []


def test_effect_nobody_owed_is_invalid():
    h = History()
    h.append("effect", 1, inv=None, kind="email", key="o-99", status="done", detail={})
    assert check(h).status == "invalid"


def test_deduplicated_and_failed_effects_do_not_count():
    h = History()
    h.append("accept", 0, key="o-1", expects=["charge"], source="sync")
    h.append("effect", 1, inv="inv-1", kind="charge", key="o-1", status="done", detail={})
    h.append("effect", 2, inv="inv-2", kind="charge", key="o-1", status="deduplicated", detail={})
    h.append("effect", 3, inv="inv-3", kind="charge", key="o-1", status="failed", detail={})
    assert check(h).status == "valid"


def test_indefinite_effect_counts_as_performed():
    h = History()
    h.append("accept", 0, key="o-1", expects=["email"], source="sqs")
    h.append("effect", 1, inv="inv-1", kind="email", key="o-1", status="indefinite", detail={})
    h.append("effect", 9, inv="inv-2", kind="email", key="o-1", status="done", detail={})
    (dup,) = check(h).duplicates
    assert "cut off by a deadline" in dup.text


def test_remaining_window_is_named():
    h = History({"table": "idempotency"})
    h.append("accept", 0, key="o-1", expects=["email"], source="sqs")
    end = _run(h, "inv-1", 0, keys=["o-1"])
    h.append("aws", 0.1, inv="inv-1", actor="inv-1", service="dynamodb", op="PutItem", target="idempotency",
             key="order#o-1", result="ok", detail={"status": "IN_PROGRESS", "expiresAt": 3})
    h.append("effect", 0.3, inv="inv-1", kind="email", key="o-1", status="done", detail={})
    end(0.4, "crashed", "crashed before dynamodb.UpdateItem (injected)")
    end2 = _run(h, "inv-2", 30, cause="redelivery", prev="inv-1", keys=["o-1"])
    h.append("effect", 30.3, inv="inv-2", kind="email", key="o-1", status="done", detail={})
    end2(30.4)
    (dup,) = check(h).duplicates
    assert dup.remaining_window and "Remaining window" in dup.text


def late_retry_history(retry_at: float, keep_for: float = 3600, epoch: float = 1_700_000_000) -> History:
    """inv-1 claims, emails, saves COMPLETED (kept ``keep_for`` s), then times out; Lambda's retry comes at
    ``retry_at``, claims again (the record expired, or not) and emails again."""
    h = History({"table": "idempotency", "epoch": epoch})
    h.append("accept", 0, key="o-1", expects=["email"], source="async")
    end = _run(h, "inv-1", 0, source="async", keys=["o-1"])
    h.append("aws", 0.1, inv="inv-1", actor="inv-1", service="dynamodb", op="PutItem", target="idempotency",
             key="order-confirmation#o-1", result="ok", detail={"status": "IN_PROGRESS", "expiresAt": epoch + 3})
    h.append("effect", 0.3, inv="inv-1", kind="email", key="o-1", status="done", detail={})
    h.append("aws", 0.4, inv="inv-1", actor="inv-1", service="dynamodb", op="UpdateItem", target="idempotency",
             key="order-confirmation#o-1", result="ok", detail={"status": "COMPLETED", "expiresAt": epoch + keep_for})
    end(3.0, "timeout", "Task timed out after 3.00 seconds")
    end2 = _run(h, "inv-2", retry_at, cause="retry 1", source="async", prev="inv-1", keys=["o-1"])
    h.append("aws", retry_at + 0.1, inv="inv-2", actor="inv-2", service="dynamodb", op="PutItem",
             target="idempotency", key="order-confirmation#o-1", result="ok",
             detail={"status": "IN_PROGRESS", "expiresAt": epoch + retry_at + 3})
    h.append("effect", retry_at + 0.3, inv="inv-2", kind="email", key="o-1", status="done", detail={})
    end2(retry_at + 0.4)
    return h


@pytest.mark.parametrize("keep_for, retry_at, late", [
    (3600, 7474.0, True),     # kept an hour, retried two hours later: the record had expired
    (3600, 3600.0, True),     # retried the very second it expired
    (86400, 7474.0, False),   # kept a day: the duplicate has another cause (a claim that wrongly won)
    (3600, 120.0, False),
])
def test_a_repeat_after_the_saved_record_expired_names_the_retention(keep_for, retry_at, late):
    (dup,) = check(late_retry_history(retry_at, keep_for)).duplicates
    assert dup.retention_too_short is late
    assert ("retention shorter than the redelivery horizon" in dup.text.lower()) is late
    assert dup.to_dict()["retention_too_short"] is late
    assert not dup.remaining_window  # the result was saved: this is not the remaining window
    if late:
        assert "kept until 1 h 0 min" in dup.text and "inv-2 started at" in dup.text


def test_an_unsaved_first_invocation_is_not_a_retention_finding():
    h = late_retry_history(7474.0)
    events = [e for e in h.events if not (e["type"] == "aws" and e["op"] == "UpdateItem")]
    (dup,) = check(History(h.meta, events)).duplicates
    assert not dup.retention_too_short and dup.remaining_window


record = st.fixed_dictionaries({
    "type": st.sampled_from(["accept", "effect", "note", "delivery"]),
    "key": st.sampled_from(["o-1", "o-2", "o-3"]),
    "kind": st.sampled_from(KINDS),
    "status": st.sampled_from(["done", "failed", "deduplicated", "indefinite"]),
    "dt": st.floats(0, 100, allow_nan=False),
})


def _build(records):
    h = History({"seed": 0})
    t = 0.0
    for r in records:
        t += r["dt"]
        if r["type"] == "accept":
            h.append("accept", t, key=r["key"], expects=[r["kind"]], source="sqs")
        elif r["type"] == "effect":
            h.append("effect", t, inv="inv-1", kind=r["kind"], key=r["key"], status=r["status"], detail={})
        elif r["type"] == "delivery":
            h.append("delivery", t, source="sqs", what="redelivery", keys=[r["key"]], inv=None, detail={})
        else:
            h.append("note", t, text="ünïcode ✓ note")
    return h


@settings(max_examples=60, deadline=None)
@given(st.lists(record, max_size=30))
def test_round_trip_and_checker_agrees_with_counting(records):
    h = _build(records)
    again = History.from_json(h.to_json())
    assert again == h and again.to_json() == h.to_json()
    assert [e["seq"] for e in again] == list(range(len(h)))
    v = check(again)
    owed = {(r["kind"], r["key"]) for r in records if r["type"] == "accept"}
    performed = {}
    for r in records:
        if r["type"] == "effect" and r["status"] in ("done", "indefinite"):
            performed[(r["kind"], r["key"])] = performed.get((r["kind"], r["key"]), 0) + 1
    expect_valid = all(performed.get(p, 0) == 1 for p in owed) and set(performed) <= owed
    # No delivery is ever "pending" here, so nothing is uncertain: valid or invalid, never unknown.
    assert v.status == ("valid" if expect_valid else "invalid"), v.explain()


def test_save_and_load(tmp_path):
    h = clean_history()
    h.save(tmp_path / "h.json")
    assert History.load(tmp_path / "h.json") == h
    assert json.loads((tmp_path / "h.json").read_text())["meta"]["scenario"] == "hand-built"


@pytest.mark.parametrize("bad", [{"meta": {}}, {"events": [{"type": "nonsense", "t": 0}]}, [1, 2]])
def test_malformed_history_is_rejected_clearly(bad):
    with pytest.raises(ValueError, match="history"):
        History.from_dict(bad)


def test_history_is_append_only_to_readers():
    h = clean_history()
    before = h.to_json()
    h.events[0]["key"] = "tampered"
    h[0]["key"] = "tampered"
    h[-1]["detail"] = {"tampered": True}
    for record in h:
        record["t"] = -1.0
        record.get("detail", {})["tampered"] = True
    h.to_dict()["events"][0]["key"] = "tampered"
    h.to_dict()["meta"]["seed"] = 99
    h.meta["scenario"] = "tampered"
    h.of_type("effect")[0]["status"] = "failed"
    h.effects()[0]["key"] = "tampered"
    h.since(0)[0]["key"] = "tampered"
    for inv in h.invocations().values():
        inv["keys"].append("tampered")
        inv["outcome"] = "crashed"
    appended = h.append("note", 9, text="appended")  # the record itself, frozen
    with pytest.raises(dataclasses.FrozenInstanceError):
        appended.text = "tampered"  # type: ignore[misc]
    after = History.from_json(h.to_json())
    assert History.from_json(before).events == after.events[:-1]
    assert after[-1]["text"] == "appended" and after.meta == History.from_json(before).meta
    with pytest.raises(ValueError, match="unknown history record type"):
        h.append("mystery", 1)


@pytest.mark.parametrize("record, words", [
    (dict(type="invoke_end", inv="inv-1", outcome="exploded", error=None), "outcome='exploded'"),
    (dict(type="effect", inv="inv-1", kind="fax", key="o-1", status="done", detail={}), "kind='fax'"),
    (dict(type="effect", inv="inv-1", kind="email", key="o-1", status="sent", detail={}), "status='sent'"),
    (dict(type="delivery", source="sqs", what="teleported", keys=[], inv=None, detail={}), "what='teleported'"),
    (dict(type="invoke_start", inv="inv-1", source="carrier-pigeon", cause="first delivery", container=None,
          request_id="r", keys=[], prev=None, timeout=3), "source='carrier-pigeon'"),
    (dict(type="invoke_start", inv="inv-1", source="sqs", cause="retry two", container=None,
          request_id="r", keys=[], prev=None, timeout=3), "cause='retry two'"),
])
def test_records_must_use_the_vocabulary(record, words):
    h = History()
    kind = record.pop("type")
    with pytest.raises(ValueError, match=words):
        h.append(kind, 0.0, **record)
    assert len(h) == 0


def test_the_checker_and_the_timeline_find_the_same_stale_write():
    """One ownership rule: inv-2 takes o-1 over while inv-1 still runs (a lock overlap), inv-1 then deletes
    inv-2's record (stale), and inv-3, which never held the key, writes it without being stale."""
    from sandbox.present.timeline.reading import read_history

    h = History({"seed": 1, "scenario": "hand-built", "table": "idempotency", "epoch": 0})
    h.append("accept", 0, key="o-1", expects=["email"], source="sqs")

    def write(t, inv, op, status=None):
        h.append("aws", t, inv=inv, actor=inv, service="dynamodb", op=op, target="idempotency", key="o-1",
                 result="ok", detail={"status": status} if status else {})

    end_1 = _run(h, "inv-1", 0.0, keys=["o-1"])
    write(0.1, "inv-1", "PutItem", "IN_PROGRESS")
    end_2 = _run(h, "inv-2", 5.0, cause="redelivery", prev="inv-1", keys=["o-1"])
    write(5.1, "inv-2", "PutItem", "IN_PROGRESS")
    write(6.0, "inv-1", "DeleteItem")
    end_1(6.5)
    h.append("effect", 7.0, inv="inv-2", kind="email", key="o-1", status="done", detail={})
    end_2(7.5)
    end_3 = _run(h, "inv-3", 8.0, keys=["o-1"])
    write(8.1, "inv-3", "UpdateItem", "COMPLETED")
    end_3(8.5)

    notes = [(f.kind, f.invocations) for f in check(h).notes]
    assert notes == [("lock overlap", ["inv-1", "inv-2"]), ("stale write", ["inv-1", "inv-2"])]
    stale = [(m.inv, m.t, m.warning) for m in read_history(h).marks if m.style == "stale_write"]
    assert stale == [("inv-1", 6.0, "stale write: deleted inv-2's o-1 record")]


@given(st.integers(0, 119_999), st.integers(1, 5_000))
def test_the_checkers_times_tell_apart_two_moments_a_millisecond_or_more_apart(ms, gap):
    """Under two minutes a time reads to the millisecond: it names its moment, and two moments apart never read
    alike (one decimal once put 0.350 s and 0.375 s at "0.3 s" and "0.4 s")."""
    from sandbox.verdict.facts import fmt as _fmt

    first, later = ms / 1000, (ms + gap) / 1000
    text = _fmt(first)
    assert text.endswith(" s") and abs(float(text.removesuffix(" s")) - first) < 5e-4
    assert "." in text
    if later < 120:
        assert _fmt(later) != text


def test_a_lost_order_says_when_its_handler_never_ran(tmp_path):
    """An order lost because the handler's init failed says so, not only "-> error" (a new learner's note)."""
    from sandbox import run_scenario

    path = tmp_path / "broken_init.py"
    path.write_text("import no_such_module_here\n\ndef handler(event, context):\n    return None\n")
    result = run_scenario("no-fault", f"{path}:handler")
    lost = [f.text for f in result.verdict.lost]
    assert lost and all("the handler never ran" in text for text in lost), lost
