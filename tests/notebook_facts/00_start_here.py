# Key facts of notebooks/00_start_here.ipynb, run in its kernel after its last cell.
assert result.status == "valid", result.verdict.explain()
assert result.verdict.effects_per_key == {"o-1": {"email": 1}, "o-2": {"email": 1}, "o-3": {"email": 1}}
assert bad.status == "invalid" and len(bad.verdict.duplicates) == 3, bad.verdict.explain() + str(bad.history.logs())
assert try_it.status == "valid" and len(try_it.verdict.effects_per_key) == 5
assert invocation.outcome == "ok"

# "Reading the marks": every mark the table names is in the run, in the order the story tells.
assert marks.status == "valid" and marks.verdict.effects_per_key == {"o-1": {"email": 1}}, marks.verdict.explain()
_outcomes = {inv: v["outcome"] for inv, v in marks.history.invocations().items()}
assert _outcomes == {"inv-1": "timeout", "inv-2": "error", "inv-3": "ok", "inv-4": "ok"}, _outcomes
_claims = [(e["inv"], e["result"]) for e in marks.history.of_type("aws") if e["op"] == "PutItem"]
assert _claims == [("inv-1", "ok"), ("inv-2", "ConditionalCheckFailed"), ("inv-3", "ok"),
                   ("inv-4", "ConditionalCheckFailed")], _claims  # won, lost, won (takeover), lost
_reads = [(e["inv"], e["detail"]["status"]) for e in marks.history.of_type("aws") if e["op"] == "GetItem"]
assert _reads == [("inv-2", "IN_PROGRESS"), ("inv-4", "COMPLETED")], _reads
assert marks.report()["dynamodb_calls"] == {"GetItem": 2, "PutItem": 4, "UpdateItem": 1}
# The table under the picture quotes two of its words: the axis break's and inv-2's magnification.
from matplotlib.text import Text as _Text  # noqa: E402

_words = {t.get_text() for t in marks.plot(title="the common marks: the article's handler, ttl-lag, a duplicate at 1 s")
          .findobj(_Text)}
assert {"57.2 s skipped", "inv-2 ×225"} <= _words, sorted(w for w in _words if "skipped" in w or "×" in w)
# The copy arrow there carries no label; the table says so, and that inv-2's title names the duplicate.
assert "inv-2 · spontaneous duplicate" in _words and not any(w.startswith("duplicate at") for w in _words), \
    sorted(w for w in _words if "duplicate" in w)
# The marks table's rule for axis breaks is the axis' own: quiet at least four times the longest busy stretch, and
# 10 s at least.
from sandbox.present.timeline import axis as _axis  # noqa: E402

assert (_axis.GAP_FACTOR, _axis.BREAK_MIN_S) == (4, 10.0)
