"""History records are typed: frozen dataclasses, one per record type, written once and read as they are."""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox import History
from sandbox.core.records import RECORD_CLASSES, AwsCall, InvokeStart, from_plain

WORDS = st.text("abcdefghij-", min_size=1, max_size=8)
DETAILS = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | WORDS,
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(WORDS, inner, max_size=3),
                       max_leaves=8)


@st.composite
def histories(draw) -> History:
    """A history written through the typed writers, as the world writes one."""
    h = History({"seed": draw(st.integers(0, 9)), "scenario": "hand-built"})
    for i in range(draw(st.integers(0, 8))):
        t, key, inv = float(i), draw(WORDS), f"inv-{i}"
        h.accept(t, key=key, expects=["email"], source="sqs", group=draw(st.none() | WORDS))
        h.invoke_start(t, inv=inv, source="sqs", cause="first delivery", container=draw(st.none() | WORDS),
                       request_id="r", keys=[key], prev=None, timeout=3.0, cold_start=draw(st.booleans()))
        h.aws(t, inv=draw(st.none() | st.just(inv)), actor="a", service="dynamodb", op="PutItem",
              target="idempotency", key=key, result="ok", detail=draw(st.dictionaries(WORDS, DETAILS, max_size=3)))
        h.effect(t, inv=inv, kind="email", key=key, status="done", detail={})
        h.invoke_end(t + 0.5, inv=inv, outcome=draw(st.sampled_from(["ok", "error"])), error=None,
                     blocked=draw(st.booleans()), where=draw(st.none() | st.just("app.py:3 in handler")))
    return h


@settings(max_examples=60, deadline=None)
@given(histories())
def test_a_history_round_trips_through_its_json_record_for_record(h):
    again = History.from_json(h.to_json())
    assert again == h and again.records() == h.records()
    assert [r.as_dict() for r in again.records()] == h.events


@settings(max_examples=60, deadline=None)
@given(histories())
def test_an_unset_flag_is_left_out_of_the_json_form_and_a_set_one_kept(h):
    for start in h.of_type("invoke_start"):
        assert ("cold_start" in start) is (start.get("cold_start") is True)
        assert "restored" not in start and "environment" not in start
    for end in h.of_type("invoke_end"):
        assert ("blocked" in end) is (end.get("blocked") is True)
    for accept in h.of_type("accept"):
        assert ("group" in accept) is (accept.get("group") is not None)


def test_a_record_and_its_detail_cannot_be_changed_by_a_reader():
    h = History()
    h.aws(0.0, inv="inv-1", actor="a", service="dynamodb", op="PutItem", target="idempotency", key="k",
          result="ok", detail={"status": "IN_PROGRESS", "path": ["a"]})
    [record] = h.records(AwsCall)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.result = "ConditionalCheckFailed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        record.detail["status"] = "COMPLETED"  # type: ignore[index]
    copy = h.events[0]
    copy["detail"]["status"] = "tampered"  # a dict read is the reader's own copy
    assert h.records(AwsCall)[0].detail["status"] == "IN_PROGRESS" and h.records(InvokeStart) == []


@pytest.mark.parametrize("record, words", [
    ({"seq": 0, "t": 0.0, "type": "effect", "kind": "email", "key": "o-1", "status": "done", "detial": {}},
     "no field 'detial'"),
    ({"seq": 0, "t": 0.0, "type": "invoke_start", "inv": "inv-1", "keys": "o-1"}, "keys is 'o-1'"),
    ({"seq": 0, "t": 0.0, "type": "aws", "detail": ["not", "a", "mapping"]}, "detail is"),
    ({"seq": 0, "t": "soon", "type": "note", "text": "x"}, "bad time"),
    ({"seq": True, "t": 0.0, "type": "note", "text": "x"}, "bad time or position"),
    ({"seq": 0, "t": 0.0, "type": "telegram"}, "unknown history record type 'telegram'"),
    ("a line of text", "not a valid record"),
])
def test_a_saved_record_of_the_wrong_shape_is_refused_by_name(record, words):
    with pytest.raises(ValueError, match="history record 3") as caught:
        from_plain(record, 3)
    assert words in str(caught.value)


def test_every_record_type_has_its_class_and_every_class_leaves_seq_t_and_type_first():
    from sandbox.vocab import RecordType

    assert set(RECORD_CLASSES) == {str(t) for t in RecordType}
    for word, cls in RECORD_CLASSES.items():
        assert [f.name for f in dataclasses.fields(cls)][:2] == ["seq", "t"] and cls.type == word


def test_record_json_names_every_field_of_every_record_class_and_no_other():
    """``RecordJson`` is written out by hand: a field added to a record class and not to it would be a key no
    reader of the JSON form can name without a type error."""
    from sandbox.core.records import RecordJson

    fields = {"type"} | {f.name for cls in RECORD_CLASSES.values() for f in dataclasses.fields(cls)}
    assert set(RecordJson.__annotations__) == fields
