# Key facts of notebooks/10_locks_and_ttl.ipynb, run in its kernel after its last cell.
# ruff: noqa: F821  (the names are the notebook's: this file runs in its kernel)
import json
import os
import re
from pathlib import Path

# Crash recovery: the lock runs out and the retry finishes the order, the charge deduplicated downstream.
assert crash.status == "valid" and crash.verdict.effects_per_key == {"o-1": {"charge": 1, "email": 1}}
assert crash.history.invocations()["inv-1"]["outcome"] == "crashed"
# Lazy TTL: trusting TTL loses the order; checking expiresAt at read time does not.
assert ttl_waits.status == "invalid" and [f.key for f in ttl_waits.verdict.lost] == ["o-1"]
assert ttl_checks.status == "valid" and ttl_checks.verdict.effects_per_key == {"o-1": {"email": 1}}
# Lock shorter than work: the article's unconditional delete, noted as lock overlap and stale write.
assert overlap.status == "invalid" and overlap.verdict.effects_per_key == {"o-1": {"charge": 1, "email": 2}}
assert [str(n.kind) for n in overlap.verdict.notes] == ["lock overlap", "stale write"]
assert overlap.settings["duplicate_delay"] == 12 and overlap.settings["lock_seconds"] == 10
# The fencing token refuses the stale delete; the overlap is still noted.
assert fenced.status == "valid" and fenced.verdict.effects_per_key == {"o-1": {"charge": 1, "email": 1}}
assert [str(n.kind) for n in fenced.verdict.notes] == ["lock overlap"]
assert ("inv-1", "DeleteItem", "ConditionalCheckFailed") in fenced_calls
# The verdict map: invalid exactly where a fixed lock (plus the duplicate's 2 s) is shorter than the work.
grid = dashboard.grid
assert len(grid.cells) == 20
for (lock_s, work_s), status in grid.cells.items():
    assert status == ("invalid" if lock_s and lock_s + 2 < work_s else "valid"), (lock_s, work_s, status)
assert all(grid.status(0, w) == "valid" for w in grid.y.values)
# As the text says, the grid's values stand evenly spaced (30 to 45 s as wide as 10 to 20), and a value between two
# of them stands in proportion: 37.5 s halfway between the 30 and 45 columns.
_x = grid.x
assert [round(_x.centre(b) - _x.centre(a), 9) for a, b in ((10, 20), (20, 30), (30, 45))] == [1.0, 1.0, 1.0]
assert [round(_x.position(v) - (_x.centre(a) + _x.centre(b)) / 2, 9) for v, a, b in ((37.5, 30, 45), (15, 10, 20))] == [
    0.0, 0.0]
# The exact edge beside the dashed line, as the text says: at work 30 s the first attempt ends at 30.5 s; a lock of
# 28 s brings the duplicate in at 30 s (invalid), one of 29 s at 31 s (valid).
for _lock, _status, _at in ((28, "invalid", 30.0), (29, "valid", 31.0)):
    _edge = run_scenario(LOCK, ARTICLE, settings=duplicate_after_lock(
        {"lock_seconds": _lock, "slow_email_seconds": 30, "function_timeout": 60}))
    _invs = _edge.history.invocations()
    assert _edge.status == _status and _invs["inv-2"]["t"] == _at and round(_invs["inv-1"]["end"], 1) == 30.5
# Retention shorter than the late retry repeats the email; the visibility timeout costs only invocations.
assert short_retention.status == "invalid" and short_retention.verdict.effects_per_key == {"o-1": {"email": 2}}
assert any(f.retention_too_short for f in short_retention.verdict.duplicates)
assert early_redelivery.status == "valid" and len(early_redelivery.history.invocations()) == 2
# Try it, as stored: lock 0 follows the invocation's remaining time, and the dashboard stays as first drawn (a static
# copy of the page shows what its text describes: lock 10 s, invalid).
assert tried_run.status == "valid" and tried["lock_seconds"] == 0
# The answer for 0: the first attempt ends (its email failed) and deletes its own record at 30.5 s; the duplicate
# comes at 62 s, to a free key, and the retry replays; no run overlaps another.
_tried = tried_run.history.invocations()
assert round(_tried["inv-1"]["end"], 1) == 30.5 and _tried["inv-1"]["outcome"] == "error"
assert [round(r["t"], 1) for r in tried_run.history.of_type("aws") if r["op"] == "DeleteItem"] == [30.5]
assert _tried["inv-2"]["t"] == 62.0 and _tried["inv-2"]["cause"] == "spontaneous duplicate"
assert not tried_run.verdict.notes and tried_run.verdict.effects_per_key["o-1"]["email"] == 1
assert lock.result.status == "invalid" and dashboard.mark == {"lock_seconds": 10, "slow_email_seconds": 30}
# Between the grid's values, as the text says: lock 13 at work 30 frames the invalid 10 s cell (no ring), notched three
# tenths of the way to the 20 s column; its words stay whole.
lock.controls["lock_seconds"].value = 13
_now = dashboard.figure.now_mark
assert lock.result.status == "invalid" and not _now.point[0].get_visible() and _now.frames[0].get_visible()
_frame_x = _now.frames[0].get_x() + _now.frames[0].get_width() / 2
assert round(_frame_x - grid.x.centre(10), 9) == 0 and round(_now.pointers[0].get_xydata()[0][0] - _frame_x, 9) == 0.3
assert dashboard.figure.cell_words[(10, 30)].get_text() == "✗ invalid"
# Each cell reaches halfway to its neighbours: lock 18 frames the 20 s cell. Lock 27 and 28 (invalid, in the valid
# 30 s cell's half) put a ring on the line between the 20 and 30 columns, the same place for both.
lock.controls["lock_seconds"].value = 18
assert _now.frames[0].get_visible() and round(_now.frames[0].get_x() + _now.frames[0].get_width() / 2
                                              - grid.x.centre(20), 9) == 0
_rings = []
for _lock in (27, 28):
    lock.controls["lock_seconds"].value = _lock
    assert lock.result.status == "invalid" and _now.point[0].get_visible() and not _now.frames[0].get_visible()
    _rings.append(tuple(_now.point[0].get_xydata()[0]))
assert _rings[0] == _rings[1] and round(_rings[0][0] - (grid.x.centre(20) + grid.x.centre(30)) / 2, 9) == 0
# The widget flip, live in this kernel: the verdict and the map's frame follow the lock control.
lock.controls["lock_seconds"].value = 10
assert lock.result.status == "invalid" and dashboard.mark == {"lock_seconds": 10, "slow_email_seconds": 30}
lock.controls["lock_seconds"].value = 45
assert lock.result.status == "valid" and dashboard.mark["lock_seconds"] == 45
# What the prose says of the other controls (tests/test_widgets_lesson.py drives them as widgets).
assert run_scenario("ttl-lag", TTL_ONLY, settings={"ttl_lag": 30}).status == "valid"
assert run_scenario("async-late-retry", ARTICLE, settings={"keep_for": 14400}).status == "valid"
assert all(run_scenario("sqs-visibility-timeout", ARTICLE, settings={"visibility_timeout": v}).status == "valid"
           for v in (3, 5, 30, 60))
# As the text says, no cell is "valid*" as first drawn, and a function timeout of 20 s makes the lock-10 cells at work
# 20, 30 and 45 so. The controls go back after.
assert not any(grid.shown(*cell) == "valid with notes" for cell in grid.cells)
lock.controls["function_timeout"].value = 20
_noted = sorted(cell for cell in dashboard.grid.cells if dashboard.grid.shown(*cell) == "valid with notes")
lock.controls["function_timeout"].value = 60
assert _noted == [(10, 20), (10, 30), (10, 45)], _noted
# The controls are labelled in words, the setting's name in the tooltip; the verdict sits beside them.
assert lock.controls["slow_email_seconds"].description == "work seconds"
assert lock.controls["lock_seconds"].tooltip.startswith("lock_seconds: ")
assert dashboard.widget.children[0].children == (lock.controls_box, lock.stage.slots["verdict"])
# Every timeline states the lock and the function timeout it ran with: the lesson is about how they compare, and a
# new learner could not tell them from the pictures. (The figure audit records every figure the kernel drew.)
if os.environ.get("RWH_FIGURE_AUDIT"):
    drawn = [json.loads(p.read_text()) for p in Path(os.environ["RWH_FIGURE_AUDIT"]).glob("*.json")]
    titles = [f["title"].replace("\n", " ") for f in drawn if f["kind"] == "timeline"]
    assert len(titles) >= 7, titles
    assert all(re.search(r"\block \d+ s\b", t) and re.search(r"\bfunction timeout \d+ s\b", t) for t in titles), titles
    assert any(re.search(r"\block 10 s\W+function timeout 60 s", t) for t in titles), titles
    assert titled(tried_run).endswith("lock 60 s (the rest of the run) · function timeout 60 s")
    # A slider's timeline names the value it was drawn for: a learner read "lock 3 s" over the keep_for slider's
    # and asked which setting the picture showed.
    for _name, _explorer in (("ttl_lag", ttl), ("keep_for", retention), ("visibility_timeout", visibility)):
        _said = f"{_name} {_explorer.result.settings[_name]:g} s"
        assert any(_said in t and _explorer.result.scenario in t for t in titles), (_said, titles)
