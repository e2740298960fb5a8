"""Partial credit and the HTML feedback page: an item judged per seed earns the share of its seeds that held,
said in its feedback line; the rest stay all or nothing; a score with a fraction adds up and prints cleanly;
a student's feedback.html escapes what came from the submission, draws a failure inline and keeps hidden
items to a count."""
import base64
import csv
import io
import json
import re

from sandbox.core.history import History
from sandbox.grading import scoring
from sandbox.grading.batch import StudentGrade, gradescope_results
from sandbox.grading.catalog import Exercise
from sandbox.grading.catalog import Test as Spec  # (a name pytest does not take for a test class)
from sandbox.grading.grader import ExerciseGrade
from sandbox.grading.render import CREDIT_RULE, check_text, credit_text, failure_text, item_line
from sandbox.grading.report_html import student_html, write_feedback_html
from sandbox.grading.scoring import Points, RunInfo

HOSTILE = "<script>alert('pwned')</script>"


def _history(seed, twice, error=None):
    """An async order delivered twice: emailed once (it held) or twice (it broke)."""
    h = History({"seed": seed, "scenario": "async-duplicate"})
    h.accept(0.0, key="o-1", expects=["email"], source="async")
    for n, t in ((1, 0.0), (2, 5.0)):
        h.append("invoke_start", t, inv=f"inv-{n}", source="async", cause="first delivery" if n == 1 else "retry 1",
                 container="c1", request_id=f"r-{n}", keys=["o-1"], prev=None)
        if n == 1 or twice:
            h.append("effect", t + 0.1, inv=f"inv-{n}", kind="email", key="o-1", status="done", detail={})
        h.append("invoke_end", t + 0.2, inv=f"inv-{n}", outcome="error" if error and n == 2 else "ok",
                 error=error if n == 2 else None)
    return h


def _judged(test, broken, error=None):
    """``test`` judged from one run per seed; the seeds in ``broken`` sent the email twice."""
    seeds = range(test.seeds)
    histories = {s + 1: _history(s, s in broken, error) for s in seeds}
    infos = [RunInfo(0, group=s + 1, seed=s) for s in seeds]
    return scoring.judge_test(test, infos, histories.get, "exercises/02_claim_the_key.py:handler")


def _exercise(*tests):
    return Exercise("02", "claim_the_key", "Claim the key", tuple(tests))


SEEDED = Spec("async-duplicate", points=2, what="one email per order", scenario="async-duplicate", seeds=4)


def test_an_item_run_over_seeds_earns_the_share_of_its_seeds_that_held_and_says_so():
    result = _judged(SEEDED, broken={1})
    assert not result.passed and result.held == 3 and result.failure.seed == 1  # the failure told: the first
    [item] = scoring.items(_exercise(SEEDED), [result])
    assert not item.passed and item.partial and item.seeds == (3, 4)
    assert item.score == 1.5 and isinstance(item.score, Points)
    assert credit_text(item) == "3 of 4 seeds held: 1.5 of 2 points"
    assert "(1.5/2)" in item_line(item) and "credit per seed: 3 of 4 held" in item_line(item)
    assert "  3 of 4 seeds held: 1.5 of 2 points (credit per seed)" in failure_text(item)
    assert item.to_dict()["score"] == 1.5 and item.to_dict()["seeds_held"] == [3, 4]

    [whole] = scoring.items(_exercise(SEEDED), [_judged(SEEDED, broken=set())])
    assert whole.passed and whole.score == 2 and type(whole.score) is int  # whole scores read as before
    assert "(2/2)" in item_line(whole) and "credit per seed]" in item_line(whole)
    [none] = scoring.items(_exercise(SEEDED), [_judged(SEEDED, broken={0, 1, 2, 3})])
    assert none.score == 0 and type(none.score) is int


def test_searches_drills_questions_single_seeds_hangs_and_tampering_stay_all_or_nothing():
    drill = Spec("replay", points=2, drill="replay", seeds=2)
    exhaustive = Spec("one-winner", points=3, scenario="concurrent-claims", exhaustive=True)
    question = Spec("A", points=1, question="A", answer="sqs-batch-failure")
    single = Spec("sqs-resend", points=2, scenario="producer-resend", seeds=1)
    assert not any(t.partial for t in (drill, exhaustive, question, single)) and SEEDED.partial

    broken_drill = scoring.TestResult(drill, False, 2, scoring.Failure("failed", "no replay"))
    [item] = scoring.items(_exercise(drill), [broken_drill])
    assert item.score == 0 and "all or nothing" in item_line(item) and credit_text(item) is None

    # an item whose all-or-nothing test failed earns nothing, whatever its seeded test held
    both = (SEEDED, Spec("async-duplicate", points=2, drill="replay", seeds=1))
    [item] = scoring.items(_exercise(*both), [_judged(SEEDED, broken={1}), scoring.TestResult(both[1], False, 1)])
    assert item.score == 0

    hung = _judged(SEEDED, broken={3})
    hung.reason = "made no progress for 2 s; stopped"
    assert scoring.items(_exercise(SEEDED), [hung])[0].score == 0

    # a submission caught tampering earns nothing (the grader's reason starts with scoring.TAMPERING)
    cheat = Spec("sqs-resend", points=1, scenario="producer-resend")
    results = [_judged(SEEDED, broken={1}), scoring.TestResult(cheat, False, 1, reason=scoring.TAMPERING + "rewrote")]
    assert sum(i.score for i in scoring.items(_exercise(SEEDED, cheat), results)) == 0


def test_fractional_scores_add_up_in_hundredths_and_print_as_scores():
    third = scoring.as_score(1 / 3)
    total = sum([third, third, third, 2])
    assert str(total) == "2.99" and f"{total}" == "2.99"  # item scores in hundredths, their sum exact
    assert str(sum([Points(0.5), Points(0.5), 1])) == "2" and f"{sum([Points(0.25), Points(0.75)]):>3}" == "  1"
    assert str(sum([Points(0.67), Points(0.1), 5])) == "5.77" and f"{Points(7.5):>4}" == " 7.5"
    assert json.loads(json.dumps({"score": Points(1.5)})) == {"score": 1.5}
    out = io.StringIO()
    csv.writer(out).writerow(["dina", sum([2, Points(0.5)]), 9])
    assert out.getvalue().strip() == "dina,2.5,9"
    assert scoring.as_score(2.0) == 2 and type(scoring.as_score(2.0)) is int

    class Checked:  # check()'s text: the score with its fraction, and the rule said once
        exercise = _exercise(SEEDED)
        handler, seconds, campaign_seeds = "exercises/02_claim_the_key.py:handler", 1.0, []
        preview = saved_to = backup = tests_changed = None
        items = scoring.items(exercise, [_judged(SEEDED, broken={0})])
        passed, failed, score, max_score = False, items, items[0].score, 2

    text = check_text(Checked())
    assert "1.5/2 on the public tests" in text and text.count(CREDIT_RULE) == 1


def test_a_students_html_page_escapes_the_submission_draws_a_failure_and_keeps_hidden_items_to_a_count(tmp_path):
    hidden = Spec("secret-redrive", points=1, what="the redrive nobody told you of", scenario="sqs-dlq-redrive",
                  hidden=True)
    ex = _exercise(SEEDED, hidden)
    results = [_judged(SEEDED, broken={1, 2}, error=HOSTILE), _judged(hidden, broken={0})]
    grade = ExerciseGrade(ex, scoring.items(ex, results), source=f"claim{HOSTILE}.py")
    student = StudentGrade(f"eve{HOSTILE}", [grade], ignored=[f"notes{HOSTILE}.txt: not an answer file"])
    page = write_feedback_html(tmp_path, student).read_text()
    assert page == student_html(student) and page.startswith("<!doctype html>")

    assert "<script" not in page and "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in page
    assert "eve&lt;script&gt;" in page and "claim&lt;script&gt;" in page and "notes&lt;script&gt;" in page
    assert not re.search(r"(src|href)=['\"]?(https?:|//)", page) and "default-src 'none'" in page
    [png] = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)  # one picture: the public failure
    assert base64.b64decode(png).startswith(b"\x89PNG")

    assert "Claim the key: 1/3" in page and "(1/2)" in page and "credit per seed: 2 of 4 held" in page
    assert "2 of 4 seeds held: 1 of 2 points" in page and "timeline in words" in page
    assert "hidden tests: 0 of 1 items passed (0/1 points); what they test is not shown" in page
    for secret in ("secret-redrive", "the redrive nobody", "sqs-dlq-redrive"):
        assert secret not in page, secret


def test_an_item_whose_all_or_nothing_test_failed_says_that_test_is_why_it_earned_nothing():
    """Exercise 09's blind answers read "2 of 2 seeds held: 0 of 2 points" and "0/2 ... credit per seed: 2 of 2 held"
    when a single-seed test of the item (a hidden one) had failed: each line must name what failed."""
    single = Spec("async-duplicate", what="a batch redriven from its dead-letter queue", scenario="sqs-dlq-redrive")
    twice = scoring.Failure("failed", "o-1 twice")
    results = [_judged(SEEDED, broken=set()), scoring.TestResult(single, False, 1, twice)]
    [item] = scoring.items(_exercise(SEEDED, single), results)
    assert item.score == 0 and item.seeds == (4, 4) and item.blocker is results[1]
    line, told = item_line(item), "\n".join(failure_text(item))
    assert "held" not in line and "no credit: scenario sqs-dlq-redrive failed, and it is all or nothing" in line
    assert "4 of 4 seeds held" not in told and "(credit per seed)" not in told
    assert ("0 of 2 points: this test is all or nothing (a single seed), so the item earns nothing while it fails, "
            "whatever the seeds of its per-seed tests held (4 of 4)") in told

    # the seeded test failed first (its failure is the one told), and the single-seed one failed too
    twice = scoring.Failure("failed", "o-1 twice")
    results = [_judged(SEEDED, broken={0}), scoring.TestResult(single, False, 1, twice)]
    [item] = scoring.items(_exercise(SEEDED, single), results)
    assert item.failure is results[0] and item.blocker is results[1]
    assert "0 of 2 points: scenario sqs-dlq-redrive, which failed too, is all or nothing" in credit_text(item)


def test_an_item_of_several_tests_is_told_by_the_test_that_failed_and_counts_its_points_once():
    """Exercise 09's retention item has two tests (two hours, almost six hours late): an answer that kept records
    three hours failed the second only, and its line showed the first one's words, as if that had failed."""
    two_hours = Spec("retention", points=2, what="a retry two hours late sends nothing twice",
                     scenario="async-duplicate")
    six_hours = Spec("retention", what="a retry almost six hours late sends nothing twice",
                     scenario="async-duplicate")
    ex = _exercise(two_hours, six_hours)
    assert ex.max_score == 2 and ex.items == {"retention": 2}
    [item] = scoring.items(ex, [_judged(two_hours, broken=set()), _judged(six_hours, broken={0})])
    line = item_line(item)
    assert "(0/2): a retry almost six hours late sends nothing twice" in line and "two hours" not in line
    assert "[2 tests (1 failed), 2 runs, all or nothing]" in line
    grade = ExerciseGrade(ex, [item], source="retention.py")
    [test] = gradescope_results(StudentGrade("dina", [grade]))["tests"]  # Gradescope's entry says the same
    assert test["max_score"] == 2 and test["output"].startswith("a retry almost six hours late sends nothing twice")
    [passed] = scoring.items(ex, [_judged(two_hours, broken=set()), _judged(six_hours, broken=set())])
    assert "(2/2): a retry two hours late sends nothing twice [2 tests, 2 runs, all or nothing]" in item_line(passed)
