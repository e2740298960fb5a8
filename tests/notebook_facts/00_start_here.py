# Key facts of notebooks/00_start_here.ipynb, run in its kernel after its last cell.
assert result.status == "valid", result.verdict.explain()
assert result.verdict.effects_per_key == {"o-1": {"email": 1}, "o-2": {"email": 1}, "o-3": {"email": 1}}
assert bad.status == "invalid" and len(bad.verdict.duplicates) == 3
assert try_it.status == "valid" and len(try_it.verdict.effects_per_key) == 5
assert invocation.outcome == "ok"
