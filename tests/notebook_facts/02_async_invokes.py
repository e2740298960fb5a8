# Key facts of notebooks/02_async_invokes.ipynb, run in its kernel after its last cell.
# A function error: Lambda runs the whole event again a minute later, and o-1 is emailed twice.
assert async_naive.status == "invalid"
assert async_naive.verdict.effects_per_key == {"o-1": {"email": 2}, "o-2": {"email": 1}}, async_naive.verdict.explain()
# Both retries: one minute, then two; o-1 three times; the request id is the same on every attempt.
assert retry_gaps == [60, 120], retry_gaps
assert async_twice.verdict.effects_per_key["o-1"] == {"email": 3}
assert len({v["request_id"] for v in async_twice.history.invocations().values()}) == 1
assert [v["cause"] for v in async_twice.history.invocations().values()] == ["first delivery", "retry 1", "retry 2"]
# A duplicate with no error: every order twice, every invocation ok, and (by default) a new request id.
assert duplicate_naive.verdict.effects_per_key == {"o-1": {"email": 2}, "o-2": {"email": 2}}
assert all(v["outcome"] == "ok" for v in duplicate_naive.history.invocations().values())
assert len({v["request_id"] for v in duplicate_naive.history.invocations().values()}) == 4
assert by_request_id == {"new": "invalid", "same": "valid"}
# The late retry: two hours later; the naive handler emails twice; the improved one holds with a day's retention ...
_late = late_naive.history.invocations()
assert _late["inv-1"]["outcome"] == "timeout" and _late["inv-2"]["t"] > 2 * 3600
assert late_naive.verdict.effects_per_key == {"o-1": {"email": 2}}
assert late_fixed.status == "valid"
# ... and not with an hour's: the checker names retention shorter than the redelivery horizon.
assert late_short.status == "invalid" and late_short.verdict.effects_per_key == {"o-1": {"email": 2}}
assert [f.retention_too_short for f in late_short.verdict.duplicates] == [True]
assert "retention shorter than the redelivery horizon" in late_short.verdict.explain().lower()
# What the text says of its figure: the record was never deleted (no TTL sweep, so no ▼), and the retry's claim took
# the expired record itself.
assert not late_short.history.of_type("sweep")
_retry_claim = [e for e in late_short.history.of_type("aws") if e["inv"] == "inv-2" and e["op"] == "PutItem"]
assert [e["result"] for e in _retry_claim] == ["ok"] and "keepUntil < :now" in _retry_claim[0]["detail"]["condition"]
# ... and where it says the figure shows the retry's time: in its arrow's label and on its detail row's axis.
_fig = late_short.plot(title="improved handler, results kept 1 h · the retry at 2:04:34 finds the record expired")
_main, *_details = _fig.axes
assert any("2:04:34" in t.get_text() and t.get_text().startswith("retry") for t in _main.texts), \
    sorted(t.get_text() for t in _main.texts)
assert any(t.get_text().startswith("2:04:34") for d in _details for t in d.get_xticklabels()), \
    [[t.get_text() for t in d.get_xticklabels()] for d in _details]
# EventBridge's refused deliveries run nothing; Lambda's retry repeats o-1.
assert eventbridge_naive.verdict.effects_per_key == {"o-1": {"email": 2}, "o-2": {"email": 1}}
assert [v["cause"] for v in eventbridge_naive.history.invocations().values()] == ["first delivery", "retry 1"]
# The improved handler holds in every async scenario.
assert improved_async == {name: "valid" for name in async_scenarios}, improved_async
assert duplicate_fixed.verdict.effects_per_key == {"o-1": {"email": 1}, "o-2": {"email": 1}}
# As the text says: a duplicate's lost claim has no read after it (the failed put returns the record, ALL_OLD).
_lost = {r["inv"] for r in duplicate_fixed.history.of_type("aws") if r["op"] == "PutItem" and r["result"] != "ok"}
assert _lost and not any(r["op"] in ("GetItem", "Query") for r in duplicate_fixed.history.of_type("aws"))
assert try_it.scenario == "async-retry"

# A CloudFormation custom resource: Lambda's retry emails o-1 again; the unanswered Create rolls back an hour later
# with a Delete (the same orders), which goes unanswered too: ROLLBACK_FAILED two hours in.
assert cfn_naive.verdict.effects_per_key == {"o-1": {"email": 3}, "o-2": {"email": 2}}, cfn_naive.verdict.explain()
_cfn = [v["cause"] for v in cfn_naive.history.invocations().values()]
assert _cfn == ["first delivery", "retry 1", "rollback delete"], _cfn
_stack = [n for n in cfn_naive.history.of_type("note") if "stack orders-stack" in n["text"]]
assert [round(n["t"]) for n in _stack] == [3600, 7200] and "ROLLBACK_FAILED" in _stack[-1]["text"]
# The orphan the text names: the ∅ at the rollback's end, for the Create's two attempts (the fixed stack has none).
_orphan = [d for d in cfn_naive.history.of_type("delivery") if d["what"] == "orphaned"]
assert [(round(d["t"]), d["detail"]["creates"]) for d in _orphan] == [(7200, ["inv-1", "inv-2"])], _orphan
assert not [d for d in cfn_fixed.history.of_type("delivery") if d["what"] == "orphaned"]
assert cfn_fixed.status == "valid" and "CREATE_COMPLETE" in [n["text"] for n in cfn_fixed.history.of_type("note")][-1]
