# Key facts of notebooks/07_read_then_write.ipynb, run in its kernel after its last cell.
# ruff: noqa: F821  (the names are the notebook's: this file runs in its kernel)
# Played by hand: both reads before either write, and both send.
assert [s.does for s in both_read] == ["dynamodb.GetItem", "dynamodb.GetItem"]
assert all(r.get("detail", {}).get("found") is False for s in both_read for r in s.records if r["type"] == "aws")
assert table_after_reads == []
assert race.status == "invalid" and race.verdict.effects_per_key == {"o-1": {"email": 2}}
# One invocation finishing before the other reads is safe.
assert safe.status == "valid" and safe.verdict.effects_per_key == {"o-1": {"email": 1}}
# The exhaustive (reduced) search: read-then-write has bad interleavings, and some good ones; claim-only none.
assert search.reduction and not search.truncated
assert search.status == "invalid" and 0 < search.broken < search.schedules
assert (search.schedules, search.broken) == (6, 4)  # as the text reads the summary: four classes of six broke
assert search.first_broken_script[:2] == ["inv-1:dynamodb.GetItem", "inv-2:dynamodb.GetItem"]
assert claim_search.status == "valid" and claim_search.broken == 0 and not claim_search.truncated
# A module-level set: fails across containers, holds in a warm one, and no schedule saves it.
assert module_set_together.status == "invalid" and module_set_together.verdict.effects_per_key == {"o-1": {"email": 2}}
assert len({v["container"] for v in module_set_together.history.invocations().values()}) == 2
assert module_set_warm.status == "valid"
assert len({v["container"] for v in module_set_warm.history.invocations().values()}) == 1
assert module_search.status == "invalid" and module_search.broken == module_search.schedules
assert try_it.status in ("valid", "invalid")
# "Only the last writer's record is kept: inv-1's blue band ends at 0.125 s, where inv-2's put overwrites it."
_puts = [(e["inv"], round(e["t"], 3)) for e in race.history.of_type("aws") if e["op"] == "PutItem"]
assert _puts == [("inv-1", 0.1), ("inv-2", 0.125)], _puts
