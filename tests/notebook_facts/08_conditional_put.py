# Key facts of notebooks/08_conditional_put.ipynb, run in its kernel after its last cell.
# ruff: noqa: F821  (the names are the notebook's: this file runs in its kernel)
# N concurrent claims, exactly one winner, for 3, 4 and 5 copies and three seeds each.
assert sorted(claims) == [(n, s) for n in (3, 4, 5) for s in (0, 1, 2)]
for (copies, seed), result in claims.items():
    answers = [answer for _, answer in claim_results(result)]
    assert answers.count("ok") == 1 and answers.count("ConditionalCheckFailed") == copies - 1, (copies, seed)
    assert len(winners[(copies, seed)]) == 1
    assert result.status == "valid" and result.verdict.effects_per_key == {"o-1": {"email": 1}}
assert len({w[0] for w in winners.values()}) > 1, "the winner is not always the same invocation"
# Stepping: the table holds one CLAIMED item from the winning claim on, and refused claims change nothing.
assert [answer for _, answer, _ in table_after].count("ok") == 1 and len(table_after) == 3
first_ok = next(i for i, (_, answer, _) in enumerate(table_after) if answer == "ok")
assert all(rows == [] for _, _, rows in table_after[:first_ok])
assert all(rows == [("order-confirmation#o-1", "CLAIMED")] for _, _, rows in table_after[first_ok:])
assert walked.status == "valid"
# Claim-only loses o-3 in sqs-batch-failure: the claim stays after the work failed.
assert lost_run.status == "invalid" and not lost_run.verdict.duplicates
assert [f.key for f in lost_run.verdict.lost] == ["o-3"]
assert lost_run.verdict.effects_per_key == {"o-1": {"email": 1}, "o-2": {"email": 1}, "o-3": {"email": 0}}
o3_claims = [c["result"] for c in lost_run.history.of_type("aws") if c["op"] == "PutItem" and c["key"].endswith("#o-3")]
assert o3_claims == ["ok", "ConditionalCheckFailed"]
assert [answer for _, answer in claim_results(try_it)].count("ok") == 1
# Is this only the simulator? On free threads, the wall clock and moto's HTTP server, the same verdicts and emails.
assert [(r["scenario"], r["deterministic"], r["real-threads"]) for r in modes] == [
    ("concurrent-claims", "valid", "valid"), ("sqs-batch-failure", "invalid", "invalid")]
assert all(r["effects_deterministic"] == r["effects_real-threads"] for r in modes)
assert modes[1]["effects_real-threads"]["o-3"] == {"email": 0}
