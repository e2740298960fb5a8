"""``check("02")``: what a learner reads. On a failure: the scenario, the schedule or seed, the checker's
explanation, a hint naming the flaw, the timeline and the one replay command, the same one the shell's
exhaustive search prints; on success: what was verified and what the next exercise adds."""
import linecache
import shlex
import shutil
import subprocess
import sys

from sandbox.grading import check
from sandbox.grading.catalog import exercise

from conftest import ROOT

MUTANTS = ROOT / "tests" / "mutants"


def _sandbox(*args):
    done = subprocess.run([sys.executable, "-m", "sandbox", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    return done.stdout + done.stderr


def test_a_failed_check_shows_the_counterexample_and_the_shell_finds_and_replays_the_same_one(tmp_path):
    answer = tmp_path / "02_claim_the_key.py"
    shutil.copyfile(MUTANTS / "02_read_then_write.py", answer)
    result = check("02", str(answer), campaign_seed=5)
    text = str(result)
    assert not result.passed and result.score < result.max_score
    failed = result.failed[0]
    assert failed.item == "one-winner" and "read-then-write" in failed.hint_codes
    f = failed.failure.failure
    for piece in ("one-winner failed: scenario concurrent-claims (copies=2), the schedule " + ",".join(f.script),
                  "what happened:", "email sent 2 times", "hint: you read, then wrote", "timeline:",
                  "<-- 2nd email for o-1", "replay it (from the repository root):", f.replay):
        assert piece in text, piece
    assert f.replay.startswith("python -m sandbox run concurrent-claims --handler ") and "--script" in f.replay

    shell = _sandbox("run", "concurrent-claims", "--handler", f"{answer}:handler", "--policy", "exhaustive")
    assert "first broken schedule (invalid)" in shell
    assert ",".join(f.script) in shell and f.replay in shell  # the same counterexample, the same command

    words = shlex.split(f.replay)
    assert words[:3] == ["python", "-m", "sandbox"]
    replayed = _sandbox(*words[3:])
    assert "invalid" in replayed and "o-1: email sent 2 times" in replayed


def test_a_passed_check_says_what_was_verified_and_what_comes_next():
    ex = exercise("02")
    result = check("02", str(ROOT / "solutions" / "02_claim_the_key.py"), campaign_seed=7)
    text = str(result)
    assert result.passed and result.score == result.max_score
    assert "All the public tests pass. The grader also runs hidden tests, with fresh seeds." in text
    assert f"Next: {ex.next}" in text and ex.next
    for test in ex.tests:
        assert f"✓ {test.item} ({test.points}/{test.points}): {test.what}" in text
    assert "Campaign: fresh seeds from 7" in text
    assert "<div>" in result._repr_html_() and ex.next.split()[0] in result._repr_html_()


def test_check_in_a_notebook_takes_the_answer_cell_and_saves_it_beside_the_notebook(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "02_claim_the_key.ipynb").write_text("{}")
    cell = (ROOT / "tests" / "mutants" / "02_swallows_conditional_check.py").read_text()
    name = "<ipython-input-7-0123456789ab>"
    linecache.cache[name] = (len(cell), None, cell.splitlines(keepends=True), name)
    namespace = {"__name__": "__main__", "check": check}
    try:
        exec(compile(cell, name, "exec"), namespace)
        exec("result = check('02')", namespace)
    finally:
        linecache.cache.pop(name, None)
    result = namespace["result"]
    saved = tmp_path / "02_claim_the_key.py"
    assert result.saved_to == str(saved) and saved.read_text().endswith(cell)
    assert not result.passed and "claim-ignored" in result.hints
    assert f"(your answer cell was saved to {saved})" in str(result)
