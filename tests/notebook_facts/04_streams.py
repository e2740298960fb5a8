# Key facts of notebooks/04_streams.ipynb, run in its kernel after its last cell.
# ruff: noqa: F821  (the names are the notebook's variables: this file runs in its kernel)
once, twice = {"email": 1}, {"email": 2}
# A failed batch is retried from its first record, on Kinesis and on DynamoDB Streams.
for result in (kinesis, dynamodb):
    assert result.verdict.effects_per_key == {"o-1": twice, "o-2": twice, "o-3": once, "o-4": once}, result.scenario
    assert [inv["cause"] for inv in result.report()["invocations"]] == ["first delivery", "retry 1"]
# A poison record blocks its shard: o-3 and o-4 wait until o-2 is dropped after 1 + 3 attempts.
assert [f.key for f in poison.verdict.lost] == ["o-2"] and dropped["keys"] == ["o-2"]
assert "orders-stream-failures" in dropped["detail"]["reason"]
assert [inv["keys"] for inv in poison.report()["invocations"]].count(["o-2"]) == 4
poison_waits = waits(poison)
assert poison_waits["o-3"] >= 2 and poison_waits["o-4"] >= 2 and poison_waits["o-1"] < 0.5
# With the defaults it is still blocked after a minute.
assert blocked.status == "unknown" and len(blocked.report()["invocations"]) > 20
assert "o-3" not in waits(blocked) and "o-4" not in waits(blocked)
# Bisecting saves o-3 and o-4 but runs o-1 three times.
assert bisect.verdict.effects_per_key == {"o-1": {"email": 3}, "o-2": {"email": 0}, "o-3": once, "o-4": once}
# A partial batch response retries from the lowest failed record: o-3 and o-4, already sent, come again.
assert partial.verdict.effects_per_key == {"o-1": once, "o-2": once, "o-3": twice, "o-4": twice}
assert [inv["keys"] for inv in partial.report()["invocations"]][1] == ["o-2", "o-3", "o-4"]
# A producer's re-send: two records, same order, different eventIDs; an eventID key does not help.
ids = [line.split()[4] for line in resend.logs() if line.split()[2] == "o-2"]
assert len(ids) == 2 and ids[0] != ids[1]
assert resend.verdict.effects_per_key["o-2"] == twice and by_event_id.status == "invalid"
# TTL deletions are REMOVE records with the service's userIdentity; the customer's delete has none.
ttl_removes = [line for line in removes.logs() if " REMOVE " in line]
assert sum("dynamodb.amazonaws.com" in line for line in ttl_removes) == 2 and len(ttl_removes) == 3
assert on_remove.status == "invalid"
assert {f.key for f in on_remove.verdict.findings} == {"o-1", "o-3"}
assert unless_ttl.valid and unless_ttl.verdict.effects_per_key["o-2"] == {"cancellation": 1, "email": 1}
# The fix.
assert improved.valid and fixed == dict.fromkeys(STREAMS, "valid")
assert try_it.status == "invalid"
# MaximumRecordAgeInSeconds=60: the records behind the poison wait until it is a minute old.
assert [f.key for f in aged.verdict.lost] == ["o-2"] and waits(aged)["o-3"] > 55 and waits(aged)["o-4"] > 55
# Kafka: a failed batch comes back whole; a named record comes back alone.
assert kafka.verdict.effects_per_key["o-1"] == kafka.verdict.effects_per_key["o-2"] == twice
assert named.valid and [inv["keys"] for inv in named.history.invocations().values()] == [
    ["o-1", "o-2", "o-3", "o-4"], ["o-2"]]
# A Kafka topic as the on-failure destination: the whole failed batch is written there, and its reader emails
# o-1 and o-2 again, linked to the failed invocation as "dead-letter topic".
assert dead_letters.verdict.effects_per_key["o-1"] == dead_letters.verdict.effects_per_key["o-2"] == twice
assert [(v["cause"], v["prev"]) for v in dead_letters.history.invocations().values()] == [
    ("first delivery", None), ("dead-letter topic", "inv-1")]
