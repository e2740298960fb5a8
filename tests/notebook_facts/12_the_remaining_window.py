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
