"""What the grader tells whom: the student's feedback (feedback.txt, Gradescope's top-level output) counts the
hidden tests and tells nothing else of them; the instructor's report.json keeps every detail and the command
that replays each failure against the submitted file itself; a submission that does not load is told once,
by the submitted file's name."""
import json
import shlex
import subprocess
import sys

from sandbox.grading import classroom as grade_cli

from conftest import ROOT

CLAIM = "02_claim_the_key"


def _grade(tmp_path, files):
    sub = tmp_path / "submissions"
    for name, text in files.items():
        (sub / name).parent.mkdir(parents=True, exist_ok=True)
        (sub / name).write_text(text)
    out = tmp_path / "results"
    assert grade_cli.main([str(sub), "--out", str(out), "--exercise", "02", "--jobs", "2", "--seed", "5000",
                           "--no-progress"]) == 0
    return sub, out


def _hidden_details(report):
    """Every text that would give a hidden test away: its name, what it tests, its replay command."""
    texts = []
    for item in report["exercises"][0]["items"]:
        if item["hidden"]:
            texts += [item["item"], item["what"]]
            texts += [t["failure"]["replay"] for t in item["tests"] if t["failure"]]
    return texts


def test_student_feedback_counts_hidden_tests_and_the_report_keeps_them_with_a_replay_of_the_submitted_file(
        tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    wrong = (ROOT / "tests" / "mutants" / "02_read_then_write.py").read_text()
    sub, out = _grade(tmp_path, {f"dina/{CLAIM}.py": wrong})
    report = json.loads((out / "dina" / "report.json").read_text())
    ex = report["exercises"][0]
    hidden = [i for i in ex["items"] if i["hidden"]]
    failed_hidden = [i for i in hidden if not i["passed"]]
    assert hidden and failed_hidden, "the mutant should lose a hidden item"
    secrets = _hidden_details(report)

    feedback = (out / "dina" / "feedback.txt").read_text()
    gradescope = json.loads((out / "dina" / "results.json").read_text())
    for student_text in (feedback, gradescope["output"], ex["feedback"]):
        for secret in secrets:
            assert secret not in student_text, secret
        passed = sum(i["passed"] for i in hidden)
        assert f"hidden tests: {passed} of {len(hidden)} items passed" in student_text
        assert "one-winner failed" in student_text  # the public failure is still told in full
    # Gradescope's rule: a hidden item's own entry is shown once grades are published
    assert {t["visibility"] for t in gradescope["tests"] if t["name"].split(" · ")[1] in secrets} == \
        {"after_published"}

    # the instructor's report keeps everything, and replays each failure against the submitted file
    replays = {r["item"]: r for r in ex["replays"]}
    for secret in secrets:
        assert secret in ex["full_feedback"] or secret in [r["student"] for r in replays.values()]
    assert set(replays) == {i["item"] for i in ex["items"] if not i["passed"]}
    submitted = f"submissions/dina/{CLAIM}.py:handler"
    for r in replays.values():
        assert f"exercises/{CLAIM}.py:handler" in r["student"]
        assert r["submitted"] == r["student"].replace(f"exercises/{CLAIM}.py:handler", submitted)
    words = shlex.split(replays["one-winner"]["submitted"])
    done = subprocess.run([sys.executable, *words[1:]], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert "invalid" in done.stdout and "email sent 2 times" in done.stdout, done.stdout + done.stderr


def test_a_notebook_submission_is_replayed_from_the_code_the_grader_ran(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    notebook = json.loads((ROOT / "exercises" / f"{CLAIM}.ipynb").read_text())  # the stub fails every test
    _, out = _grade(tmp_path, {"ezra.ipynb": json.dumps(notebook)})
    ex = json.loads((out / "ezra" / "report.json").read_text())["exercises"][0]
    assert ex["replays"] and all(r["submitted"].split(" --handler ")[1].startswith(f"results/ezra/{CLAIM}.py:handler")
                                 for r in ex["replays"])
    cell = "".join(next(c["source"] for c in notebook["cells"] if "answer" in c["metadata"].get("tags", [])))
    assert (out / "ezra" / f"{CLAIM}.py").read_text() == cell


def test_a_submission_that_does_not_load_is_told_once_by_its_own_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _, out = _grade(tmp_path, {f"fred/{CLAIM}.py": "def handler(event, context:\n    return {}\n",
                               "gina.ipynb": (ROOT / "exercises" / f"{CLAIM}.ipynb").read_text().replace(
                                   "import os", "import os)", 1)})
    fred = (out / "fred" / "feedback.txt").read_text()
    assert fred.count("syntax error") == 1, fred
    assert f"handler file {CLAIM}.py has a syntax error on line 1" in fred
    gina = (out / "gina" / "feedback.txt").read_text()
    assert gina.count("syntax error") == 1 and "gina.ipynb (its answer cell) has a syntax error on line 1" in gina, gina
    for text in (fred, gina, (out / "grades.csv").read_text(), (out / "fred" / "report.json").read_text()):
        assert "grading-" not in text and "/tmp" not in text
