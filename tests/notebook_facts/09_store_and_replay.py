# Key facts of notebooks/09_store_and_replay.ipynb, run in its kernel after its last cell.
# ruff: noqa: F821  (the names are the notebook's: this file runs in its kernel)
# One record's life: IN_PROGRESS, a duplicate refused mid-work, COMPLETED, the retry replays.
assert record_states == [
    ("inv-1", "PutItem", "ok", "IN_PROGRESS"),
    ("inv-2", "PutItem", "ConditionalCheckFailed", "IN_PROGRESS"),
    ("inv-2", "GetItem", "ok", "IN_PROGRESS"),
    ("inv-1", "UpdateItem", "ok", "COMPLETED"),
    ("inv-3", "PutItem", "ConditionalCheckFailed", "COMPLETED"),
    ("inv-3", "GetItem", "ok", "COMPLETED"),
]
assert dup_run.status == "valid" and dup_run.verdict.effects_per_key == {"o-1": {"email": 1}}
invocations = dup_run.history.invocations()
assert "StillInProgressError" in invocations["inv-2"]["error"] and invocations["inv-3"]["cause"] == "retry 1"
assert invocations["inv-3"]["outcome"] == "ok"
# Behind API Gateway: 504 (gave up waiting), 409 (in progress), 200 (the stored result).
assert [status for _, status in answers] == [504, 409, 200]
assert http.status == "valid" and http.verdict.effects_per_key == {"o-1": {"email": 1}}
# Delete on failure: the order claim-only lost is delivered, the others replayed.
assert batch.status == "valid"
assert batch.verdict.effects_per_key == {"o-1": {"email": 1}, "o-2": {"email": 1}, "o-3": {"email": 1}}
assert ("inv-1", "DeleteItem", "o-3", "ok") in idempotency_calls
assert ("inv-2", "PutItem", "o-3", "ok") in idempotency_calls
# No expiry: a crash strands the claim and the order is lost; the article's lock expires and recovers it.
assert stuck.status == "invalid" and [f.key for f in stuck.verdict.lost] == ["o-1"]
assert stuck.verdict.effects_per_key == {"o-1": {"charge": 1, "email": 0}}
assert sum("StillInProgressError" in e for e in stuck.errors()) == 2
assert recovered.status == "valid" and recovered.verdict.effects_per_key == {"o-1": {"charge": 1, "email": 1}}
# Try it, as stored: both retries land while the first invocation works.
try_statuses = [c["detail"]["status"] for c in try_it.history.of_type("aws") if c["service"] == "execute-api"]
assert try_statuses == [504, 409, 409]
