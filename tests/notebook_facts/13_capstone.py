# Key facts of notebooks/13_capstone.ipynb, run in its kernel after its last cell.
# ruff: noqa: F821 (the names come from the notebook's kernel)
# The board: every stage, then the two Powertools handlers, against every scenario setting, one seed each.
assert board.strategies == [*STAGES, "powertools-function", "powertools-decorator"]
from sandbox.analysis.campaign import columns as _columns  # noqa: E402 (facts run after the notebook's cells)

assert len(board.columns) == len(_columns()) and sum(not c.variant.within for c in board.columns) == 7
assert board.runs == 10 * len(board.columns)
# Each stage fails in fewer columns within the assumptions than the one before it (or as few), down to none.
_failing = [sum(1 for col in board.columns if col.variant.within and board.cell(name, col).failure)
            for name in STAGES]
assert _failing == sorted(_failing, reverse=True) and _failing[-1] == 0, _failing
# The article fails within the assumptions in two columns: a cart under one Idempotency-Key (o-2 replays o-1's
# result and is lost), and its own claim retried by botocore.
assert [col.name for col in board.columns if col.variant.within and board.cell("article", col).failure] == [
    "alb-client-retry", "own-write-retried"]
assert "o-2: accepted but no email" in [board.cell("article", c).failure[2] for c in board.columns
                                        if c.name == "alb-client-retry"][0]
# The live reruns agree with the stored board, for every weaker stage's counterexample and the improved stage.
assert len(checks) == 12 and all(c.agrees for c in checks), [(c.strategy, c.column.name, c.status, c.on_board)
                                                            for c in checks if not c.agrees]
assert {c.strategy: c.status for c in checks if c.strategy != "improved"} == {name: "invalid" for name in weaker}
assert all(c.status == "valid" for c in checks if c.strategy == "improved")
# The improved stage fails only outside its assumptions, in these six columns.
assert broken == ["timeout-after-effect/fault in window", "timeout-after-effect/cut-off email sent",
                  "async-late-retry/kept 1 h", "sqs-batch-failure/partial batch off",
                  "stream-batch-retry/partial batch off", "crash-mid-work/crash after email"]
assert set(broken) <= set(outside)
# Powertools per order differs from the improved stage only outside the assumptions, both ways.
assert differences("powertools-function") == [("sqs-batch-failure/partial batch off", "valid", "invalid"),
                                              ("stream-batch-retry/partial batch off", "valid", "invalid"),
                                              ("lock-shorter-than-work", "invalid", "valid"),
                                              ("own-write-retried", "invalid", "valid")]
_pd = differences("powertools-decorator")
assert len(_pd) == 24 and {theirs for _, theirs, _ in _pd} == {"invalid"} and ("sqs-batch-failure", "invalid",
                                                                               "valid") in _pd
# The decorator's one key per batch: the half-done batch comes back and o-1, o-2 are emailed again, in the
# remaining window of that batch-wide key.
assert decorator.agrees and decorator.status == "invalid"
assert decorator.result.verdict.effects_per_key == {"o-1": {"email": 2}, "o-2": {"email": 2}, "o-3": {"email": 1}}
assert [f.remaining_window for f in decorator.result.verdict.duplicates] == [True, True]
# Try it: results kept an hour, the retry two hours later: the checker names the retention.
assert try_it.status == "invalid" and [f.retention_too_short for f in try_it.verdict.duplicates] == [True]
