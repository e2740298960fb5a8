# Key facts of notebooks/05_timeouts_and_producers.ipynb, run in its kernel after its last cell.
# A timeout after o-1's email: Lambda retries the event and the naive handler emails o-1 again.
_invs = timeout_naive.history.invocations()
assert _invs["inv-1"]["outcome"] == "timeout" and _invs["inv-2"]["cause"] == "retry 1"
assert timeout_naive.verdict.effects_per_key == {"o-1": {"email": 2}, "o-2": {"email": 1}}, timeout_naive.verdict.explain()
assert timeout_fixed.status == "valid" and timeout_fixed.verdict.effects_per_key == {"o-1": {"email": 1}, "o-2": {"email": 1}}
# The fault between the email and the save: even the improved handler repeats it, and the checker says why.
assert window.status == "invalid" and [f.remaining_window for f in window.verdict.duplicates] == [True]
# What the text says of its timeline: o-1's email at 2.995 s, the stop at 3 s, the retry at 63 s claiming o-1 again.
_emails = [(e["inv"], e["t"], e["key"]) for e in window.history.of_type("effect")]
assert _emails[:2] == [("inv-1", 2.995, "o-1"), ("inv-2", 63.21, "o-1")], _emails
assert {inv: (v["outcome"], v["t"], v["end"]) for inv, v in window.history.invocations().items()}["inv-1"] == (
    "timeout", 0.0, 3.0)
assert [(e["inv"], e["result"]) for e in window.history.of_type("aws") if e["op"] == "PutItem"][:2] == [
    ("inv-1", "ok"), ("inv-2", "ok")]
assert window.history.invocations()["inv-2"]["t"] == 63.0
# The producer's SDK re-sends a request that took effect: a second copy with a new id, a second email.
for _run in (sqs_naive, eventbridge_naive, kinesis_naive):
    assert _run.status == "invalid" and _run.verdict.effects_per_key["o-2"] == {"email": 2}, _run.verdict.explain()
    _order, _ids = resent(_run)
    assert _order == "o-2" and len(_ids) == 2 and _ids[0] != _ids[1], (_run.scenario, _ids)
    assert "producer re-send" in {v["cause"] for v in _run.history.invocations().values()}
# A key on the delivery id breaks; the order's key holds.
assert by_key == {
    "producer-resend": {"naive": "invalid", "by_message_id": "invalid", "improved (order id)": "valid"},
    "eventbridge-producer-resend": {"naive": "invalid", "by_event_id": "invalid", "improved (order id)": "valid"},
    "kinesis-producer-resend": {"naive": "invalid", "by_stream_event_id": "invalid", "improved (order id)": "valid"},
    "kafka-producer-resend": {"naive": "invalid", "by_kafka_offset": "invalid", "improved (order id)": "valid"},
}, by_key
assert try_it.scenario == "producer-resend"
