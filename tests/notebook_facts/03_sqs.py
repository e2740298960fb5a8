# Key facts of notebooks/03_sqs.ipynb, run in its kernel after its last cell.
# ruff: noqa: F821  (the names are the notebook's variables: this file runs in its kernel)
twice = {"email": 2}
# A failed batch comes back whole: o-1 and o-2, already emailed, are emailed again.
assert naive.verdict.effects_per_key == {"o-1": twice, "o-2": twice, "o-3": {"email": 1}}, naive.verdict.explain()
# With ReportBatchItemFailures only o-3 comes back.
assert partial.valid, partial.verdict.explain()
assert [inv["keys"] for inv in partial.report()["invocations"]] == [["o-1", "o-2", "o-3"], ["o-3"]]
# Without it the handler's batchItemFailures are ignored and o-3 is lost, with no duplicate.
assert partial_off.status == "invalid" and not partial_off.verdict.duplicates
assert [f.key for f in partial_off.verdict.lost] == ["o-3"]
assert len(partial_off.report()["invocations"]) == 1 and any("ignored" in text for text in ignored)
# Work outlasting the visibility timeout: nothing fails, every order twice; 6 x 3 s + 4 s = 22 s fixes it.
assert slow.verdict.effects_per_key == {k: twice for k in ("o-1", "o-2", "o-3")}
assert [inv["outcome"] for inv in slow.report()["invocations"]] == ["ok", "ok"]
assert first["start"] < again["t"] < first["end"], "redelivered while inv-1 was still running"
assert safe_visibility == 22 and slow_fixed.valid
# A duplicate with no error.
assert spont.verdict.effects_per_key == {k: twice for k in ("o-1", "o-2", "o-3")}
assert {inv["outcome"] for inv in spont.report()["invocations"]} == {"ok"}
# The redrive: o-1 emailed again, both messages back under new MessageIds, a messageId key does not help.
assert redrive.verdict.effects_per_key == {"o-1": twice, "o-2": {"email": 1}}
assert len(moves) == 2 and all(m["detail"]["messageId"] != m["detail"]["deadLetterMessageId"] for m in moves)
assert by_message_id.status == "invalid" and [f.key for f in by_message_id.verdict.duplicates] == ["o-1"]
# FIFO: a re-send after the 5-minute window is a new message; inside it SQS stores nothing.
assert fifo.verdict.effects_per_key["o-2"] == twice and fifo.settings["resend_after"] > 300
assert fifo_inside.valid and dropped["keys"] == ["o-2"]
# The fix: per-record run_once keyed on the order, valid in every SQS scenario of the lesson.
assert improved.valid and [inv["keys"] for inv in improved.report()["invocations"]][-1] == ["o-3"]
assert sqs_matrix.status == "valid" and len(sqs_matrix.rows) == 5
assert try_it.status == "invalid"
