"""Grading a real class around the grader (issue 21): what is assigned, every file accounted for, nbgrader's
layout, rosters, late work, Canvas's and Moodle's import files and the one watchdog. Nothing here runs a
submission: discovery and the exports are tested on folders and grades made for the purpose (the class run in
test_grade.py grades)."""
import csv
import inspect
import shutil

import nbformat
import pytest

from sandbox.errors import BadInput
from sandbox.grading import batch, catalog, discovery, gradebook
from sandbox.grading import classroom as grade_cli
from sandbox.grading.grader import Limits, not_graded

from conftest import ROOT

S, E, MUTANTS = ROOT / "solutions", ROOT / "exercises", ROOT / "tests" / "mutants"
NAMES = {"02": "02_claim_the_key", "03": "03_store_and_replay", "05": "05_choose_the_key",
         "07": "07_sqs_partial_batch"}
ASSIGNED = list(NAMES)


@pytest.fixture(scope="module")
def cat():
    return catalog.grading_catalogue()


def _put(root, rel, source=None, text=None):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if text is not None:
        path.write_text(text)
    else:
        shutil.copyfile(source, path)


def _class_of_thirty_two(root):
    """32 students on exercises 02, 03, 05 and 07: honest (files and notebooks), wrong, misnamed, noisy, hostile."""
    for i, s in enumerate(["ada", "ben", "cleo", "dev", "eli", "fern", "gabe", "hal"]):
        for ex in ASSIGNED[: 1 + i % 4]:
            suffix = ".py" if i % 2 else ".ipynb"
            _put(root, f"{s}/{NAMES[ex]}{suffix}", S / f"{NAMES[ex]}{suffix}")
    for s, mutant in {"ivy": "02_read_then_write", "jay": "03_no_result_stored", "kai": "05_keyed_on_message_id",
                      "lin": "07_whole_batch_fails", "mo": "02_effect_before_claim"}.items():
        _put(root, f"{s}/{NAMES[mutant[:2]]}.py", MUTANTS / f"{mutant}.py")
    _put(root, "oli/claim key FINAL v2.py", S / f"{NAMES['02']}.py")
    notebook = nbformat.read(S / f"{NAMES['05']}.ipynb", as_version=4)
    notebook.metadata.pop("retries_exercise", None)
    _put(root, "pat/homework.ipynb", text=nbformat.writes(notebook))
    _put(root, "quin/my answer.py", E / f"{NAMES['03']}.py")
    _put(root, "rae/final.py", text="\n".join((S / f"{NAMES['07']}.py").read_text().splitlines()[6:]) + "\n")
    for s in ("sol", "tom", "uma", "vic"):
        _put(root, f"{s}/{NAMES['02']}.py", S / f"{NAMES['02']}.py")
        _put(root, f"{s}/README.md", text="notes\n")
        _put(root, f"{s}/.DS_Store", text="x")
        _put(root, f"{s}/__pycache__/{NAMES['02']}.cpython-311.pyc", text="x")
        _put(root, f"{s}/.ipynb_checkpoints/{NAMES['02']}-checkpoint.ipynb", text="{}")
    _put(root, f"tom/{NAMES['02']}.ipynb", S / f"{NAMES['02']}.ipynb")
    _put(root, "uma/01_name_the_source.py", S / "01_name_the_source.py")
    for i, cheat in enumerate(["busy_loop", "real_sleep", "reads_solutions", "patches_checker", "prints_megabytes",
                               "rewrites_pipe", "raises", "walks_frames", "spawns_copier", "hides_effects"]):
        _put(root, f"x{i:02d}/{NAMES['02']}.py", MUTANTS / "cheats" / f"{cheat}.py")
    _put(root, f"dot/{NAMES['02']}.py", E / f"{NAMES['02']}.py")  # the stubs, as handed out
    _put(root, f"dot/{NAMES['07']}.py", E / f"{NAMES['07']}.py")
    _put(root, "notes.txt", text="class notes\n")
    _put(root, ".DS_Store", text="x")


def test_a_class_of_thirty_two_is_found_with_every_file_graded_or_named(tmp_path, cat):
    _class_of_thirty_two(tmp_path)
    found = discovery.discover_class(tmp_path, cat, ASSIGNED)
    subs = {s.student: s for s in found.submissions}
    assert len(subs) == 32 and sum(len(s.files) for s in subs.values()) >= 30
    assert sorted({i for s in subs.values() for i in s.files}) == ASSIGNED
    for s in subs.values():  # every file: graded, or named with its reason
        for path in (p for p in (tmp_path / s.student).rglob("*") if p.is_file()):
            rel = path.relative_to(tmp_path / s.student)
            named = any(e.startswith((f"{rel}: ", f"{rel.parts[0]}/ (")) for e in s.ignored)
            assert (path in s.files.values()) != named, (s.student, rel, s.ignored)
    assert {k: (sorted(subs[k].files), subs[k].notes[i].split(":")[1].strip())
            for k, i in (("oli", "02"), ("pat", "05"), ("quin", "03"), ("rae", "07"))} == {
        "oli": (["02"], "its name has exercise 02's words (claim key)"),
        "pat": (["05"], "it defines exercise 05's functions (fulfil, handler, key_for)"),
        "quin": (["03"], "its code carries exercise 03's header"),
        "rae": (["07"], "it defines exercise 07's functions (fulfil, handler)")}
    assert subs["tom"].files["02"].suffix == ".ipynb" and any(
        "the notebook's answer cell is the answer, the .py its copy; the two hold the same code" in e
        for e in subs["tom"].ignored)
    assert "01_name_the_source.py: exercise 01 is not assigned" in subs["uma"].ignored
    assert found.strays == [".DS_Store: a hidden file, no student's",
                            "notes.txt: not a student's folder, a .py file or a notebook"]
    assert all(s.submitted_at and s.time_source == "file time" for s in subs.values())


def test_nbgrader_layout_is_read_with_its_timestamps(tmp_path, cat):
    course = tmp_path / "course"
    for student, stamp in (("ann", "2025-03-07 22:10:05.123456 UTC"), ("bo", "2025-03-08 01:00:00.000000 UTC")):
        folder = course / "submitted" / student / "week3"
        _put(folder, f"{NAMES['02']}.ipynb", S / f"{NAMES['02']}.ipynb")
        _put(folder, "timestamp.txt", text=stamp + "\n")
    _put(course / "submitted" / "bo" / "week1", "answers.ipynb", text="{}")
    _put(course / "submitted" / "bo" / "week1", "timestamp.txt", text="2025-02-01 00:00:00 UTC")
    with pytest.raises(BadInput, match="nbgrader assignments week1, week3: name the one"):
        discovery.discover_class(course, cat, [])
    found = discovery.discover_class(course, cat, [], nbgrader_assignment="week3")
    subs = {s.student: s for s in found.submissions}
    assert found.layout == "nbgrader" and found.assignment == "week3" and sorted(subs) == ["ann", "bo"]
    assert {s: sorted(sub.files) for s, sub in subs.items()} == {"ann": ["02"], "bo": ["02"]}
    assert subs["ann"].ignored == [] and subs["bo"].ignored == ["week1/: not assignment week3"]
    assert subs["bo"].time_source == "nbgrader timestamp.txt"
    assert subs["bo"].submitted_at.isoformat() == "2025-03-08T01:00:00+00:00"
    deadline = gradebook.parse_time("2025-03-07T23:59:00+00:00", "--deadline")
    assert gradebook.late_text(gradebook.late_seconds(subs["bo"].submitted_at, deadline)) == "01:01:00"
    assert gradebook.late_seconds(subs["ann"].submitted_at, deadline) == 0
    # the submitted/ folder itself is the same class
    assert [s.student for s in discovery.discover_class(course / "submitted", cat, [], "week3").submissions] == \
        ["ann", "bo"]


@pytest.mark.parametrize("name, text", [
    ("week.toml", 'name = "Week 3"\nexercises = ["02", "03_store_and_replay"]\ndeadline = 2025-03-07T23:59:00Z\n'),
    ("week.json", '{"name": "Week 3", "exercises": ["02", "03_store_and_replay"], "deadline": "2025-03-07T23:59:00Z"}'),
])
def test_an_assignment_file_names_its_exercises_name_and_deadline(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    a = gradebook.read_assignment(tmp_path / name)
    assert (a.name, a.exercises, a.deadline.isoformat()) == ("Week 3", ["02", "03_store_and_replay"],
                                                            "2025-03-07T23:59:00+00:00")
    (tmp_path / "plain.txt").write_text("# week 3\n02\n07  # the SQS one\n")
    plain = gradebook.read_assignment(tmp_path / "plain.txt")
    assert (plain.name, plain.exercises, plain.deadline) == (None, ["02", "07"], None)


def _students(cat):
    """ann handed in 02 (it scored 0) and not 07; bo handed in nothing."""
    ann = [not_graded(cat["02"], "does not load", "02_claim_the_key.py"), not_graded(cat["07"], "not submitted")]
    bo = [not_graded(cat[i], "not submitted") for i in ("02", "07")]
    return [batch.StudentGrade("ann", ann), batch.StudentGrade("bo", bo)]


def test_canvas_and_moodle_files_have_the_headers_their_imports_document(tmp_path, cat):
    roster = tmp_path / "roster.csv"
    roster.write_text("Student,ID,Email,Section,canvas_id,name\nann,s-1,ann@uni.example,A,77,\"Lee, Ann\"\n"
                      "bo,s-2,bo@uni.example,B,,\n")
    people = gradebook.read_roster(roster)
    students = _students(cat)
    exercises = [cat["02"], cat["07"]]
    canvas, moodle = gradebook.write_lms(tmp_path, ["canvas", "moodle"], students, exercises, people)
    rows = list(csv.reader(canvas.open()))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", NAMES["02"], NAMES["07"]]
    assert rows[1] == ["Points Possible", "", "", "", "", str(cat["02"].max_score), str(cat["07"].max_score)]
    # a zero is a zero; nothing handed in is an empty cell, which both gradebooks read as no grade
    assert rows[2] == ["Lee, Ann", "77", "s-1", "ann@uni.example", "A", "0", ""]
    assert rows[3] == ["bo", "", "s-2", "bo@uni.example", "B", "", ""]
    assert list(csv.reader(moodle.open())) == [["Student", "ID number", "Email address", NAMES["02"], NAMES["07"]],
                                               ["Lee, Ann", "s-1", "ann@uni.example", "0", ""],
                                               ["bo", "s-2", "bo@uni.example", "", ""]]
    # an assignment with a name is one gradebook column: its total
    gradebook.write_canvas(canvas, students, exercises, people, "Week 3")
    total = cat["02"].max_score + cat["07"].max_score
    assert list(csv.reader(canvas.open())) == [gradebook.CANVAS_IDENTITY + ["Week 3"],
                                               ["Points Possible", "", "", "", "", str(total)],
                                               ["Lee, Ann", "77", "s-1", "ann@uni.example", "A", "0"],
                                               ["bo", "", "s-2", "bo@uni.example", "B", ""]]
    results = batch.gradescope_results(students[0])
    assert results["execution_time"] == 0 and isinstance(results["execution_time"], int)


@pytest.mark.parametrize("extra, message", [
    (["--lms", "canvas"], "--lms canvas needs --roster"),
    (["--exercise", "02", "--assignment", "{assignment}"], "give --exercise or --assignment, not both"),
    (["--assignment", "{missing}"], "--assignment"),
    (["--assignment", "{unknown}"], "exercise 42: no such exercise"),
    (["--deadline", "next friday"], "--deadline: 'next friday' is not an ISO 8601 time"),
    (["--roster", "{badroster}"], "no id, email column"),
    (["--submitted-at", "{badtimes}"], "line 2: 'tuesday' is not an ISO 8601 time"),
    (["--watchdog", "0"], "--watchdog"),
])
def test_bad_gradebook_options_get_one_clear_error_and_exit_2(tmp_path, capsys, extra, message):
    paths = {"assignment": tmp_path / "a.toml", "missing": tmp_path / "nope.toml", "unknown": tmp_path / "u.txt",
             "badroster": tmp_path / "r.csv", "badtimes": tmp_path / "t.csv"}
    paths["assignment"].write_text('exercises = ["02"]\n')
    paths["unknown"].write_text("42\n")
    paths["badroster"].write_text("student,name\nann,Ann\n")
    paths["badtimes"].write_text("student,submitted_at\nann,tuesday\n")
    _put(tmp_path, f"subs/ann/{NAMES['02']}.py", text="")
    argv = [str(tmp_path / "subs"), "--out", str(tmp_path / "out"), *[a.format(**paths) for a in extra]]
    try:
        code = grade_cli.main(argv)
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_one_watchdog_for_check_and_the_grader():
    from sandbox.core.scheduler import DEFAULT_WATCHDOG
    from sandbox.grading import runner
    from sandbox.grading.exercise_check import check

    assert runner.WATCHDOG == Limits().watchdog == DEFAULT_WATCHDOG >= 10
    assert grade_cli.parser().parse_args(["s", "--out", "o"]).watchdog == runner.WATCHDOG
    assert "watchdog" in inspect.signature(check).parameters
    assert "watchdog=job.get(\"watchdog\", WATCHDOG)" in (ROOT / "sandbox" / "grading" / "child.py").read_text()
    assert f"after {runner.WATCHDOG:g} s" in (ROOT / "INSTRUCTORS.md").read_text()


@pytest.mark.parametrize("ex", ["07", "09"])
def test_an_answer_without_its_header_is_told_apart_from_the_other_exercise_with_the_same_functions(ex, cat):
    """Exercises 07 and 09 both ask for ``fulfil`` and ``handler``: the names the code uses tell them apart
    (run_once for 07, Powertools' idempotent_function for 09), even with the header and imports cut off."""
    solution = next((ROOT / "solutions").glob(f"{ex}_*.py")).read_text().splitlines()
    body = "\n".join(line for line in solution if not line.startswith(("#", "from ", "import ")))
    found = discovery._by_functions(ROOT / "answer.py", body, cat)
    assert found is not None and found[0] == ex and "fulfil, handler" in found[1]
