# Key facts of notebooks/12_the_remaining_window.ipynb, run in its kernel after its last cell.
# ruff: noqa: F821  (the names are the notebook's own variables, defined in its kernel)
# A crash after the email and before the save repeats the email for every strategy: the remaining window.
assert set(window) == {"article", "improved", "powertools"}
for name, result in window.items():
    assert result.status == "invalid", name
    [dup] = result.verdict.duplicates
    assert dup.effect == "email" and dup.remaining_window and "Remaining window" in dup.text, name
    assert result.verdict.effects_per_key["o-1"]["email"] == 2, name

# With the crash after the charge, the charge's downstream key deduplicates the retry's charge.
assert charged.valid
assert charges == [("inv-1", "done"), ("inv-2", "deduplicated")]

# A lock shorter than the work: the article deletes inv-2's COMPLETED record and the retry emails again;
# the improved handler's fenced delete is refused and the retry replays with one call.
article, improved = lock["article"], lock["improved"]
assert article.status == "invalid" and article.verdict.effects_per_key["o-1"]["email"] == 2
assert [f.kind for f in article.verdict.notes] == ["lock overlap", "stale write"]
assert ("DeleteItem", "ok") in [(op, res) for _, op, res in table_calls(article, "inv-1")]
assert improved.valid and [f.kind for f in improved.verdict.notes] == ["lock overlap"]
assert ("DeleteItem", "ConditionalCheckFailed") in [(op, res) for _, op, res in table_calls(improved, "inv-1")]
assert [(op, res) for _, op, res in table_calls(improved, "inv-3")] == [("PutItem", "ConditionalCheckFailed")]
assert sized.valid and sized.verdict.notes == []  # a lock sized from the remaining time: no overlap

# DynamoDB calls per invocation (first run, duplicate, work fails).
assert calls["improved"] == (2, 1, 2) and calls["article"] == (2, 2, 2)
assert costs["article"]["duplicate"] == ("PutItem", "GetItem") and costs["improved"]["duplicate"] == ("PutItem",)
assert calls["powertools-function"][1] == 1  # Powertools also reads the old item from the failed claim

# Try it (as stored): the crash after the charge stays valid with one charge per order.
assert try_it.valid
assert [s for _, key, s in charges_in_try if key == "o-1"] == ["done", "deduplicated"]
# Its own retried claim: the article and Powertools refuse it and lose the order; the improved run_once goes on.
assert {name: r.status for name, r in own.items()} == {"article": "invalid", "improved": "valid",
                                                        "powertools": "invalid"}
assert [f.kind for f in own["article"].verdict.findings] == ["lost"]
assert [c[1:] for c in table_calls(own["improved"], "inv-1")] == [
    ("PutItem", "ok"), ("PutItem", "ConditionalCheckFailed"), ("UpdateItem", "ok")]

# Durable functions: one step for both orders emails o-1 again on the step's retry; one step per order does not.
_d = {run: r.status for run, r in durable.items()}
assert _d == {("durable-step-retry", "durable_one_step"): "invalid", ("durable-step-retry", "durable_steps"): "valid",
              ("durable-replay", "durable_email_outside_step"): "invalid",
              ("durable-replay", "durable_email_in_step"): "valid",
              ("durable-esm-start", "durable_steps"): "invalid", ("durable-esm-start", "durable_idempotent"): "valid"}, _d
assert durable["durable-step-retry", "durable_one_step"].verdict.effects_per_key["o-1"] == {"email": 2}
# The replay's second email comes from the durable replay, and the caller's re-sent Invoke started nothing new.
_replay = durable["durable-replay", "durable_email_outside_step"]
assert [v["cause"] for v in _replay.history.invocations().values()] == ["first delivery", "durable replay"]
assert any(d["what"] == "execution deduplicated" for d in _replay.history.of_type("delivery"))
# Behind SQS every delivery is a new execution: steps do not carry over, run_once inside them holds.
assert "redelivery" in {v["cause"] for v in durable["durable-esm-start", "durable_steps"].history.invocations().values()}
