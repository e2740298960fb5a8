"""``check("02")``: what a learner reads. On a failure: the scenario, the schedule or seed, the checker's
explanation, a hint naming the flaw, the timeline and the one replay command, the same one the shell's
exhaustive search prints; on success: what was verified and what the next exercise adds."""
import html
import linecache
import shlex
import shutil
import subprocess
import sys

import nbformat

from sandbox.grading import check
from sandbox.grading.catalog import exercise
from sandbox.grading.exercise_check import difference_in_tests

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
                  "what happened:", "email sent 2 times", "read the key, then wrote it unconditionally", "timeline:",
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
    firsts: dict = {}
    for test in ex.tests:
        firsts.setdefault(test.item, test)  # an item of several tests is said in its first test's words
    for test in firsts.values():
        assert f"✓ {test.item} ({test.points}/{test.points}): {test.what}" in text
    assert "Campaign: fresh seeds from 7" in text
    assert "<div>" in result._repr_html_() and ex.next.split()[0] in result._repr_html_()
    assert "Campaign: fresh seeds from 7" in result._repr_html_()  # the notebook shows what the shell prints


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


def _run_in_notebook(cell, code="result = check('02')", extra=None):
    """Run ``cell`` as a notebook's answer cell (IPython keeps each cell in linecache), then ``code``."""
    name = f"<ipython-input-{abs(hash(cell)) % 1000}-0123456789ab>"
    linecache.cache[name] = (len(cell), None, cell.splitlines(keepends=True), name)
    namespace = {"__name__": "__main__", "check": check, **(extra or {})}
    try:
        exec(compile(cell, name, "exec"), namespace)
        exec(code, namespace)
    finally:
        linecache.cache.pop(name, None)
    return namespace["result"]


def _stub_cell():
    notebook = nbformat.read(ROOT / "exercises" / "02_claim_the_key.ipynb", as_version=4)
    return next(c.source for c in notebook.cells if "answer" in c.metadata.get("tags", []))


def test_check_keeps_an_answer_written_in_the_file_as_bak_and_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copyfile(ROOT / "exercises" / "02_claim_the_key.ipynb", tmp_path / "02_claim_the_key.ipynb")
    answer_file = tmp_path / "02_claim_the_key.py"
    shutil.copyfile(ROOT / "exercises" / "02_claim_the_key.py", answer_file)  # as generated: nothing to keep
    first = _run_in_notebook(_stub_cell())
    assert first.backup is None and not list(tmp_path.glob("*.bak*")) and "NOTE" not in str(first)

    # the learner writes the answer in the .py (header and all), while the notebook's cell is still the stub
    mine = answer_file.read_text().replace(_stub_cell(), (ROOT / "solutions" / "02_claim_the_key.py").read_text())
    answer_file.write_text(mine)
    result = _run_in_notebook(_stub_cell())
    backup = tmp_path / "02_claim_the_key.py.bak"
    assert backup.read_text() == mine
    assert answer_file.read_text().endswith(_stub_cell() + "\n") and "NotImplementedError" in answer_file.read_text()
    assert result.backup and result.backup.endswith("02_claim_the_key.py.bak")
    text = str(result)
    assert f"is kept as {result.backup}" in text and "copy what you want from the .bak file into that cell" in text
    assert "02_claim_the_key.py.bak" in result._repr_html_()

    # checking again changes nothing kept; another hand edit gets a backup of its own
    again = _run_in_notebook(_stub_cell())
    assert again.backup is None and backup.read_text() == mine
    answer_file.write_text("# edited by hand, the header gone\n" + mine)
    third = _run_in_notebook(_stub_cell())
    assert third.backup.endswith("02_claim_the_key.py.bak2") and backup.read_text() == mine
    assert (tmp_path / "02_claim_the_key.py.bak2").read_text().startswith("# edited by hand")

    # a file written by hand that holds just the cell's code (under comments of its own) loses nothing: no backup
    answer_file.write_text("# my copy, saved from the editor\n\n" + _stub_cell() + "\n")
    fourth = _run_in_notebook(_stub_cell())
    assert fourth.backup is None and not (tmp_path / "02_claim_the_key.py.bak3").exists()


def test_check_runs_the_exercises_own_tests_whatever_the_notebooks_tests_list_says(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copyfile(ROOT / "exercises" / "02_claim_the_key.ipynb", tmp_path / "02_claim_the_key.ipynb")
    ex = exercise("02")
    own = [t.to_dict() for t in ex.tests]
    kept = [t for t in own if t["item"] == "async-duplicate"]  # the learner deleted the tests their answer fails
    cell = (MUTANTS / "02_swallows_conditional_check.py").read_text()
    result = _run_in_notebook(cell, extra={"TESTS": kept})
    assert [i.item for i in result.items] == list(ex.items) and not result.passed
    text = str(result)
    assert ("NOTE: the TESTS list in your notebook is not exercise 02's (it lacks one-winner, dynamodb-errors, "
            "campaign-copies)") in text
    assert f"check ran the exercise's own {len(ex.tests)} public tests" in text
    assert "All the public tests pass" not in text
    assert _run_in_notebook(cell, extra={"TESTS": own}).tests_changed is None

    # the notebook saved with a shorter TESTS cell, checked from the shell: the same tests, the same note
    notebook = nbformat.read(tmp_path / "02_claim_the_key.ipynb", as_version=4)
    cell_ = next(c for c in notebook.cells if "tests" in c.metadata.get("tags", []))
    cell_.source = f"TESTS = {kept!r}\n"
    nbformat.write(notebook, tmp_path / "02_claim_the_key.ipynb")
    shell = check("02", str(tmp_path / "02_claim_the_key.py"), campaign_seed=3)
    assert [i.item for i in shell.items] == list(ex.items)
    assert shell.tests_changed == "it lacks one-winner, dynamodb-errors, campaign-copies"
    changed = [dict(t, seeds=1) if t["item"] == "async-duplicate" else t for t in own]
    assert difference_in_tests(ex, changed) == "it changes async-duplicate"


def test_the_public_tests_come_from_the_package_not_from_the_notebooks_a_learner_saves(tmp_path, monkeypatch):
    from sandbox.grading import catalog

    own = exercise("02").tests
    for path in (ROOT / "exercises").glob("[0-9][0-9]_*.ipynb"):
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            if "tests" in cell.metadata.get("tags", []):
                cell.source = "TESTS = []\n"  # every test deleted, and the notebook saved
        nbformat.write(notebook, tmp_path / path.name)
    monkeypatch.setattr(catalog, "EXERCISES_DIR", tmp_path)
    catalog._public_catalogue.cache_clear()
    try:
        assert exercise("02").tests == own and len(own) >= 2
    finally:
        catalog._public_catalogue.cache_clear()


def test_check_explains_every_failing_item_each_with_its_replay():
    """The unanswered exercise fails every item: each one is explained, not only the first."""
    result = check("03", str(ROOT / "exercises" / "03_store_and_replay.py"), campaign_seed=11)
    assert len(result.failed) >= 2
    text, page = str(result), result._repr_html_()
    for item in result.failed:
        assert f"{item.item} failed" in text, item.item
        assert item.failure.failure.replay in text
        assert html.escape(item.failure.failure.replay) in page


def test_check_grades_the_answer_cell_as_last_run_not_the_function_an_earlier_run_left(tmp_path, monkeypatch):
    """The learner fixed the answer, then broke its import: the kernel still holds the old, working handler.
    check() grades the cell as it stands and says why it fails, instead of passing the old code."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "02_claim_the_key.ipynb").write_text("{}")
    good = (ROOT / "solutions" / "02_claim_the_key.py").read_text()
    broken = good.replace("import boto3", "import boto4", 1)
    assert broken != good
    result = _run_in_notebook(good, extra={"In": ["", good, broken, "result = check('02')"]})
    saved = tmp_path / "02_claim_the_key.py"
    assert "import boto4" in saved.read_text()
    assert not result.passed and "boto4" in str(result)


def test_a_failed_drill_says_so_first_and_a_closed_pipe_ends_it_quietly(capsys, monkeypatch):
    """`drill ... | head` shows the outcome in its first line, and no BrokenPipeError once head has read it: the
    command ends with 141, as `python -m sandbox` does, whatever the result."""
    import os

    from sandbox.grading.__main__ import main

    args = ["drill", "stale-owner", "--handler", f"{MUTANTS / '08_unfenced_save.py'}:handler"]
    assert main(args) == 1
    out = capsys.readouterr().out
    first, second = out.splitlines()[:2]
    assert "FAILED" in first and second.startswith("what went wrong:")
    assert "carries o-1" in out and "carries no order" not in out
    read, write = os.pipe()
    os.close(read)
    saved = os.dup(1)
    try:
        os.dup2(write, 1)
        monkeypatch.setattr(sys, "stdout", os.fdopen(os.dup(1), "w", buffering=1))
        assert main(args) == 141  # as `python -m sandbox` ends on a closed pipe (the README's promise)
    finally:
        os.dup2(saved, 1)
        os.close(write)


def test_the_quiz_answers_are_salted_and_stretched_not_a_bare_sha256_of_the_name():
    import hashlib

    from sandbox.grading.quiz import candidate_names
    from sandbox.grading.scoring import answer_hash

    tests = [t for t in exercise("01").tests if t.question]
    assert len({t.answer_salt for t in tests}) == len(tests)
    public = (ROOT / "sandbox" / "grading" / "public_tests.json").read_text()
    for t in tests:
        for name in candidate_names():
            assert hashlib.sha256(f"{t.question}:{name}".encode()).hexdigest() not in public
        assert answer_hash(t.question, "async-retry", "") != answer_hash(t.question, "async-retry", t.answer_salt)


def test_the_quiz_lists_each_invocation_with_its_lane_times_and_request_id_in_columns():
    import re

    from sandbox.grading.quiz import invocation_table, load

    history = load("B")
    invs = history.invocations()
    lines = invocation_table(history).splitlines()
    assert lines[0].split() == ["inv", "lane", "start", "end", "ended", "request", "id", "carries"]
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[2:2 + len(invs)]]
    assert [r[0] for r in rows] == list(invs) and len(invs) >= 2
    for row, inv in zip(rows, invs.values()):
        assert row[1:3] == [inv["source"], f"{inv['t']:.1f} s"] and row[5] == inv["request_id"][:8]


def test_a_batch_response_naming_orders_fails_its_replay_as_it_failed_the_check(tmp_path):
    """Exercise 07 answered with order ids in batchItemFailures: Lambda fails the whole batch, and run_once keeps
    the redelivery from emailing twice. The failure the check reports is the broken response, said once and
    consistently, and each replay command it prints reproduces it (exit code 1), not a "valid" run."""
    answer = tmp_path / "07_sqs_partial_batch.py"
    shutil.copyfile(MUTANTS / "07_names_order_in_batch_failures.py", answer)
    shutil.copyfile(ROOT / "exercises" / "run_once_kit.py", tmp_path / "run_once_kit.py")
    result = check("07", str(answer), campaign_seed=3)
    failed = {item.item: item for item in result.failed}
    # one order's email fails once in both runs; the in-progress drill reads the response by the same rule (issue 30)
    assert set(failed) == {"batch-failure", "poison", "in-progress"}, failed
    assert failed["in-progress"].hint_codes == ["wrong-identifier"]
    # batch-failure fails a record mid-batch (o-2), so the records after it must be handled too; poison fails o-3
    for item, order in ((failed["batch-failure"], "o-2"), (failed["poison"], "o-3")):
        f = item.failure.failure
        assert "not the messageId of any record in the batch" in f.explanation and f"'{order}'" in f.explanation
        assert "no record was named" not in f.explanation
        assert "wrong-identifier" in item.hint_codes
        done = subprocess.run([sys.executable, "-m", "sandbox", *shlex.split(f.replay)[3:]], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 1, (f.replay, done.stdout + done.stderr)
        assert "invalid" in done.stdout and "not the messageId of any record in the batch" in done.stdout
    assert "--set poison=1" in failed["poison"].failure.failure.replay


def test_the_quiz_skeleton_is_a_dict_and_a_whole_answer_that_is_not_one_is_explained_once(tmp_path):
    """Exercise 01's answer cell hands the learner the shape (a dict, a letter each); an answer of another shape
    fails every question for one reason, said once, and a letter left at None is told it has no answer yet."""
    stub = (ROOT / "exercises" / "01_name_the_source.py").read_text()
    assert 'named = {"A": None, "B": None, "C": None, "D": None, "E": None, "F": None}' in stub
    skeleton = tmp_path / "01_name_the_source.py"
    skeleton.write_text("".join(line for line in stub.splitlines(keepends=True)
                                if "YOUR CODE HERE" not in line and "NotImplementedError" not in line))
    text = str(check("01", str(skeleton)))
    assert text.count("no answer yet") == 6 and "answers() should return a dict" not in text

    as_list = tmp_path / "list" / "01_name_the_source.py"
    as_list.parent.mkdir()
    as_list.write_text('def answers():\n    return ["sqs-batch-failure", "async-retry"]\n')
    result = check("01", str(as_list))
    text = str(result)
    assert len(result.failed) == 6 and text.count("answers() should return a dict") == 1
    assert "questions A, B, C, D, E and F failed, all for one reason" in text
    assert "it returned ['sqs-batch-failure', 'async-retry']" in text
    assert result._repr_html_().count("answers() should return a dict") == 1


def test_a_handler_outside_exercises_finds_the_kit_beside_it(tmp_path, monkeypatch):
    """``check NN --handler elsewhere/file.py`` for an exercise whose answer imports run_once_kit: the exercises' kit
    is put in the handler's folder (its task root, as a deployment package holds it), and the handler runs."""
    import importlib

    from sandbox.grading import catalog

    module = importlib.import_module("sandbox.grading.exercise_check")
    ex = next(e for e in catalog.exercises().values() if e.kit)
    answer = tmp_path / "elsewhere" / "mine.py"
    answer.parent.mkdir()
    shutil.copyfile(ROOT / "solutions" / f"{ex.name}.py", answer)
    first = catalog.Exercise(ex.id, ex.slug, ex.title, ex.tests[:1], ex.function, kit=ex.kit)
    monkeypatch.setattr(module, "exercise", lambda ref: first)
    result = module.check(ex.id, handler=str(answer), campaign_seed=1)
    assert (answer.parent / catalog.KIT).read_text() == (ROOT / "exercises" / catalog.KIT).read_text()
    assert result.passed, str(result)
    kept = (answer.parent / catalog.KIT).stat().st_mtime_ns
    module.kit_beside(ex, answer)  # a kit already there is the learner's: left as it is
    assert (answer.parent / catalog.KIT).stat().st_mtime_ns == kept
